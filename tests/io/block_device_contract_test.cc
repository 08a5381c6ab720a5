// The BlockDevice contract (io/block_device.h), run against every backend:
// memory, POSIX, mmap and io_uring (buffered and direct), and the
// fault-injection wrapper. io_uring cases skip where no ring can be created;
// direct cases skip where the file system refuses O_DIRECT.
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "io/block_device.h"
#include "io/fault_injection_device.h"
#include "io/memory_device.h"

namespace roundtable::io {
namespace {

constexpr uint32_t kBlock = 4096;

struct BackendCase {
  std::string name;
  Backend backend;
  bool direct;
  bool fault_wrapper;
};

void PrintTo(const BackendCase& c, std::ostream* os) { *os << c.name; }

std::string TempPath(const std::string& tag) {
  static int counter = 0;
  return testing::TempDir() + "/rt_io_" + tag + "_" + std::to_string(getpid()) +
         "_" + std::to_string(counter++);
}

class BlockDeviceContractTest : public testing::TestWithParam<BackendCase> {
 protected:
  void SetUp() override {
    const BackendCase& c = GetParam();
    if (c.backend == Backend::kUring) {
      std::string why;
      if (!UringAvailable(&why)) GTEST_SKIP() << "no io_uring here: " << why;
    }
    path_ = TempPath(c.name);
    auto device = Open();
    if (!device.ok() && c.direct &&
        device.status().code() == absl::StatusCode::kInvalidArgument) {
      GTEST_SKIP() << "O_DIRECT refused here: " << device.status();
    }
    ASSERT_TRUE(device.ok()) << device.status();
    device_ = *std::move(device);
  }

  void TearDown() override {
    device_.reset();
    if (!path_.empty()) unlink(path_.c_str());
  }

  absl::StatusOr<std::unique_ptr<BlockDevice>> Open(uint32_t queue_depth = 8) {
    const BackendCase& c = GetParam();
    DeviceOptions options;
    options.backend = c.backend;
    options.block_size = kBlock;
    options.direct_io = c.direct;
    options.queue_depth = queue_depth;
    auto device = OpenBlockDevice(path_, options);
    if (!device.ok() || !c.fault_wrapper) return device;
    return std::unique_ptr<BlockDevice>(
        std::make_unique<FaultInjectionDevice>(*std::move(device)));
  }

  bool persistent() const { return GetParam().backend != Backend::kMemory; }

  // A buffer of `blocks` blocks whose every byte derives from (block, seed).
  static AlignedBuffer Pattern(uint64_t first_block, size_t blocks,
                               uint64_t seed) {
    AlignedBuffer buffer(blocks * kBlock);
    for (size_t i = 0; i < buffer.size(); ++i) {
      const uint64_t block = first_block + i / kBlock;
      buffer.data()[i] = static_cast<std::byte>(
          (block * 131 + seed * 31 + (i % kBlock) * 7) & 0xff);
    }
    return buffer;
  }

  static bool Same(const AlignedBuffer& a, const AlignedBuffer& b) {
    return a.size() == b.size() &&
           std::memcmp(a.data(), b.data(), a.size()) == 0;
  }

  std::string path_;
  std::unique_ptr<BlockDevice> device_;
};

TEST_P(BlockDeviceContractTest, StartsEmptyAndReportsItsShape) {
  EXPECT_EQ(device_->num_blocks(), 0u);
  EXPECT_EQ(device_->block_size(), kBlock);
  EXPECT_EQ(device_->capabilities().direct_io, GetParam().direct);
  if (GetParam().direct) {
    EXPECT_EQ(device_->capabilities().buffer_alignment, 4096u);
  }
}

TEST_P(BlockDeviceContractTest, ReadsWhatWasWritten) {
  ASSERT_TRUE(device_->Resize(16).ok());
  const AlignedBuffer one = Pattern(3, 1, 1);
  ASSERT_TRUE(device_->Write(3, one.span()).ok());
  const AlignedBuffer run = Pattern(8, 5, 2);
  ASSERT_TRUE(device_->Write(8, run.span()).ok());

  AlignedBuffer got(kBlock);
  ASSERT_TRUE(device_->Read(3, got.span()).ok());
  EXPECT_TRUE(Same(got, one));
  AlignedBuffer got_run(5 * kBlock);
  ASSERT_TRUE(device_->Read(8, got_run.span()).ok());
  EXPECT_TRUE(Same(got_run, run));
  // A block never written reads as zeros.
  AlignedBuffer zeros(kBlock), fresh(kBlock);
  ASSERT_TRUE(device_->Read(0, fresh.span()).ok());
  EXPECT_TRUE(Same(fresh, zeros));
}

// WriteChanged: the caller vouches for the bytes outside the range; every
// backend ends up holding the whole buffer, and one that stores part of a
// block counts only the bytes it stored.
TEST_P(BlockDeviceContractTest, WriteChangedLeavesTheWholeBuffer) {
  ASSERT_TRUE(device_->Resize(8).ok());
  AlignedBuffer tail = Pattern(2, 2, 7);
  ASSERT_TRUE(device_->Write(2, tail.span()).ok());
  const size_t begin = kBlock - 100, end = kBlock + 200;
  for (size_t i = begin; i < end; ++i) {
    tail.data()[i] = static_cast<std::byte>(i * 13 & 0xff);
  }
  const IoStats before = device_->stats();
  ASSERT_TRUE(device_->WriteChanged(2, tail.span(), begin, end).ok());
  const IoStats after = device_->stats();
  AlignedBuffer got(2 * kBlock);
  ASSERT_TRUE(device_->Read(2, got.span()).ok());
  EXPECT_TRUE(Same(got, tail));
  EXPECT_EQ(after.blocks_written - before.blocks_written, 2u);
  EXPECT_EQ(after.bytes_written - before.bytes_written,
            device_->capabilities().partial_writes ? end - begin
                                                   : tail.size());
  EXPECT_EQ(device_->capabilities().partial_writes,
            GetParam().backend == Backend::kMmap && !GetParam().fault_wrapper);
  EXPECT_EQ(device_->WriteChanged(2, tail.span(), 0, tail.size() + 1).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(device_->WriteChanged(2, tail.span(), 9, 8).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(device_->WriteChanged(7, tail.span(), 0, 1).code(),
            absl::StatusCode::kOutOfRange);
}

TEST_P(BlockDeviceContractTest, BatchesInAnyOrder) {
  const size_t n = 100;  // more than the queue depth of 8
  ASSERT_TRUE(device_->Resize(n).ok());
  std::vector<uint64_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 rng(7);
  std::shuffle(order.begin(), order.end(), rng);

  std::vector<AlignedBuffer> data;
  std::vector<WriteRequest> writes;
  for (const uint64_t b : order) data.push_back(Pattern(b, 1, 9));
  for (size_t i = 0; i < n; ++i) writes.push_back({order[i], data[i].span()});
  ASSERT_TRUE(device_->WriteBatch(writes).ok());

  std::shuffle(order.begin(), order.end(), rng);
  std::vector<AlignedBuffer> got;
  std::vector<ReadRequest> reads;
  for (size_t i = 0; i < n; ++i) got.emplace_back(kBlock);
  for (size_t i = 0; i < n; ++i) reads.push_back({order[i], got[i].span()});
  ASSERT_TRUE(device_->ReadBatch(reads).ok());
  for (size_t i = 0; i < n; ++i) {
    ASSERT_TRUE(Same(got[i], Pattern(order[i], 1, 9))) << "block " << order[i];
  }
}

// Adjacent requests (which the file backends join into one vectored write)
// mixed with gaps, multi-block requests and a run longer than IOV_MAX
// buffers, in shuffled order: every block reads back as written and the
// gaps stay as they were.
TEST_P(BlockDeviceContractTest, BatchesOfAdjacentRunsAndGaps) {
  const uint64_t n = 2600;
  ASSERT_TRUE(device_->Resize(n).ok());
  const AlignedBuffer before = Pattern(0, n, 3);
  ASSERT_TRUE(device_->Write(0, before.span()).ok());
  std::mt19937_64 rng(11);
  std::vector<std::pair<uint64_t, size_t>> shape;  // (block, blocks)
  uint64_t b = 0;
  // One run of 1500 single blocks, then requests of 1 to 3 blocks with a
  // gap of 0 to 2 blocks before each.
  for (; b < 1500; ++b) shape.push_back({b, 1});
  while (true) {
    b += rng() % 3;
    const size_t len = 1 + rng() % 3;
    if (b + len > n) break;
    shape.push_back({b, len});
    b += len;
  }
  std::shuffle(shape.begin(), shape.end(), rng);
  std::vector<AlignedBuffer> data;
  std::vector<WriteRequest> writes;
  for (const auto& [block, len] : shape) data.push_back(Pattern(block, len, 4));
  for (size_t i = 0; i < shape.size(); ++i) {
    writes.push_back({shape[i].first, data[i].span()});
  }
  ASSERT_TRUE(device_->WriteBatch(writes).ok());

  AlignedBuffer expected(n * kBlock);
  std::memcpy(expected.data(), before.data(), before.size());
  for (size_t i = 0; i < shape.size(); ++i) {
    std::memcpy(expected.data() + shape[i].first * kBlock, data[i].data(),
                data[i].size());
  }
  AlignedBuffer got(n * kBlock);
  ASSERT_TRUE(device_->Read(0, got.span()).ok());
  for (uint64_t block = 0; block < n; ++block) {
    ASSERT_EQ(std::memcmp(got.data() + block * kBlock,
                          expected.data() + block * kBlock, kBlock),
              0)
        << "block " << block;
  }
  EXPECT_EQ(device_->stats().write_ops, 1 + shape.size());
}

TEST_P(BlockDeviceContractTest, TransfersPastTheEndAreOutOfRange) {
  ASSERT_TRUE(device_->Resize(4).ok());
  AlignedBuffer buffer(2 * kBlock);
  EXPECT_EQ(device_->Read(4, buffer.span().first(kBlock)).code(),
            absl::StatusCode::kOutOfRange);
  EXPECT_EQ(device_->Read(3, buffer.span()).code(),
            absl::StatusCode::kOutOfRange);
  EXPECT_EQ(device_->Write(4, buffer.span().first(kBlock)).code(),
            absl::StatusCode::kOutOfRange);
  EXPECT_EQ(device_->Write(~uint64_t{0}, buffer.span().first(kBlock)).code(),
            absl::StatusCode::kOutOfRange);
  std::vector<ReadRequest> reads = {{0, buffer.span().first(kBlock)},
                                    {9, buffer.span().last(kBlock)}};
  EXPECT_EQ(device_->ReadBatch(reads).code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(device_->num_blocks(), 4u);
  EXPECT_EQ(device_->stats().blocks_written, 0u);
  // The message names the operation, the offset and the length.
  const absl::Status s = device_->Read(4, buffer.span().first(kBlock));
  EXPECT_NE(s.message().find("offset 16384 length 4096"), std::string::npos)
      << s;
}

TEST_P(BlockDeviceContractTest, BadShapesAreInvalidArgument) {
  ASSERT_TRUE(device_->Resize(4).ok());
  AlignedBuffer buffer(2 * kBlock);
  EXPECT_EQ(device_->Read(0, buffer.span().first(0)).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(device_->Write(0, buffer.span().first(kBlock - 1)).code(),
            absl::StatusCode::kInvalidArgument);
  if (GetParam().direct) {
    // Misaligned buffer address for direct I/O.
    EXPECT_EQ(device_->Read(0, buffer.span().subspan(512, kBlock)).code(),
              absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(device_->Write(0, buffer.span().subspan(8, kBlock)).code(),
              absl::StatusCode::kInvalidArgument);
  }
  EXPECT_EQ(device_->stats().write_ops, 0u);
}

TEST_P(BlockDeviceContractTest, GrowAndTruncate) {
  ASSERT_TRUE(device_->Resize(10).ok());
  EXPECT_EQ(device_->num_blocks(), 10u);
  const AlignedBuffer data = Pattern(9, 1, 3);
  ASSERT_TRUE(device_->Write(9, data.span()).ok());
  ASSERT_TRUE(device_->Resize(5).ok());
  EXPECT_EQ(device_->num_blocks(), 5u);
  AlignedBuffer got(kBlock);
  EXPECT_EQ(device_->Read(9, got.span()).code(), absl::StatusCode::kOutOfRange);
  // Growing again brings zero blocks, not the old bytes.
  ASSERT_TRUE(device_->Resize(10).ok());
  ASSERT_TRUE(device_->Read(9, got.span()).ok());
  EXPECT_TRUE(Same(got, AlignedBuffer(kBlock)));
}

// WriteBack is a hint: the bytes stay as written, it counts as no sync, and
// under the fault wrapper a power cut after it still drops what no Sync
// covered.
TEST_P(BlockDeviceContractTest, WriteBackChangesNothingAndPromisesNothing) {
  ASSERT_TRUE(device_->Resize(4).ok());
  ASSERT_TRUE(device_->Sync().ok());
  const AlignedBuffer data = Pattern(1, 2, 8);
  ASSERT_TRUE(device_->Write(1, data.span()).ok());
  ASSERT_TRUE(device_->WriteBack().ok());
  AlignedBuffer got(2 * kBlock);
  ASSERT_TRUE(device_->Read(1, got.span()).ok());
  EXPECT_TRUE(Same(got, data));
  EXPECT_EQ(device_->stats().syncs, 1u);
  if (!GetParam().fault_wrapper) return;
  auto& fault = static_cast<FaultInjectionDevice&>(*device_);
  ASSERT_TRUE(fault.LosePower({}).ok());
  ASSERT_TRUE(device_->Read(1, got.span()).ok());
  EXPECT_TRUE(Same(got, AlignedBuffer(2 * kBlock)));
}

// WillWrite and DoneWith are hints: blocks announced are written as any
// others, blocks given up (the memory map drops their pages from the
// process) still read as written, a later write to them lands, and a sync
// makes them all durable; no ledger counts them.
TEST_P(BlockDeviceContractTest, WindowHintsChangeNothing) {
  constexpr uint64_t kBlocks = 64;  // several pages at any page size
  ASSERT_TRUE(device_->Resize(kBlocks).ok());
  const IoStats before = device_->stats();
  device_->WillWrite(0, kBlocks);
  device_->WillWrite(kBlocks - 1, 10);  // past the end: ignored
  AlignedBuffer data = Pattern(0, kBlocks, 5);
  ASSERT_TRUE(device_->Write(0, data.span()).ok());
  device_->DoneWith(0, kBlocks);
  device_->DoneWith(3, 1000);
  const IoStats hinted = device_->stats();
  EXPECT_EQ(hinted.blocks_written, before.blocks_written + kBlocks);
  EXPECT_EQ(hinted.blocks_read, before.blocks_read);
  AlignedBuffer got(kBlocks * kBlock);
  ASSERT_TRUE(device_->Read(0, got.span()).ok());
  EXPECT_TRUE(Same(got, data));
  const AlignedBuffer again = Pattern(7, 2, 6);
  ASSERT_TRUE(device_->Write(7, again.span()).ok());
  ASSERT_TRUE(device_->Sync().ok());
  if (!persistent()) return;
  device_.reset();
  auto reopened = Open();
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  device_ = *std::move(reopened);
  ASSERT_TRUE(device_->Read(0, got.span()).ok());
  std::memcpy(data.data() + 7 * kBlock, again.data(), again.size());
  EXPECT_TRUE(Same(got, data));
}

TEST_P(BlockDeviceContractTest, SyncedDataAndSizeSurviveReopen) {
  if (!persistent()) GTEST_SKIP() << "memory devices do not outlive the object";
  ASSERT_TRUE(device_->Resize(6).ok());
  const AlignedBuffer data = Pattern(2, 3, 4);
  ASSERT_TRUE(device_->Write(2, data.span()).ok());
  ASSERT_TRUE(device_->Sync().ok());
  EXPECT_EQ(device_->stats().syncs, 1u);
  device_.reset();
  auto reopened = Open();
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  device_ = *std::move(reopened);
  EXPECT_EQ(device_->num_blocks(), 6u);
  AlignedBuffer got(3 * kBlock);
  ASSERT_TRUE(device_->Read(2, got.span()).ok());
  EXPECT_TRUE(Same(got, data));
}

TEST_P(BlockDeviceContractTest, LedgerCountsTransfers) {
  ASSERT_TRUE(device_->Resize(8).ok());
  const AlignedBuffer data = Pattern(0, 2, 5);
  ASSERT_TRUE(device_->Write(0, data.span()).ok());
  AlignedBuffer a(kBlock), b(kBlock), c(kBlock);
  std::vector<ReadRequest> reads = {
      {0, a.span()}, {1, b.span()}, {5, c.span()}};
  ASSERT_TRUE(device_->ReadBatch(reads).ok());
  ASSERT_TRUE(device_->Sync().ok());
  const IoStats s = device_->stats();
  EXPECT_EQ(s.blocks_written, 2u);
  EXPECT_EQ(s.bytes_written, 2u * kBlock);
  EXPECT_EQ(s.write_ops, 1u);
  EXPECT_EQ(s.blocks_read, 3u);
  EXPECT_EQ(s.bytes_read, 3u * kBlock);
  EXPECT_EQ(s.read_ops, 3u);
  EXPECT_EQ(s.syncs, 1u);
  if (GetParam().backend == Backend::kMmap && !GetParam().fault_wrapper) {
    // Copies into the mapping, a pread for each read, then the sync.
    EXPECT_EQ(s.submissions, 4u);
  } else if (persistent() && !GetParam().fault_wrapper) {
    EXPECT_GE(s.submissions, 3u);  // at least one call for each transfer kind
  }
  EXPECT_GT(s.wait_ns, 0u);
}

// WriteChanged times what it waits for: a backend that stores the changed
// bytes into a map waits for nothing and counts no wait; the others write
// the block and count the time.
TEST_P(BlockDeviceContractTest, WriteChangedCountsWaitOnlyForTransfers) {
  ASSERT_TRUE(device_->Resize(2).ok());
  const AlignedBuffer data = Pattern(0, 1, 3);
  const uint64_t before = device_->stats().wait_ns;
  for (int i = 0; i < 100; ++i) {
    ASSERT_TRUE(device_->WriteChanged(1, data.span(), 16, 80).ok());
  }
  const IoStats s = device_->stats();
  EXPECT_EQ(s.write_ops, 100u);
  if (device_->capabilities().partial_writes) {
    EXPECT_EQ(s.wait_ns, before);
    EXPECT_EQ(s.bytes_written, 100u * 64);
  } else {
    EXPECT_GT(s.wait_ns, before);
  }
  // The changed bytes are there (a map stores only those).
  AlignedBuffer got(kBlock);
  ASSERT_TRUE(device_->Read(1, got.span()).ok());
  EXPECT_EQ(std::memcmp(got.span().data() + 16, data.span().data() + 16, 64),
            0);
}

TEST_P(BlockDeviceContractTest, ConcurrentBatchesFromTwoThreads) {
  const uint64_t per_thread = 64;
  ASSERT_TRUE(device_->Resize(2 * per_thread).ok());
  auto work = [&](uint64_t first, uint64_t seed, bool* ok) {
    std::vector<AlignedBuffer> data;
    std::vector<WriteRequest> writes;
    for (uint64_t b = first; b < first + per_thread; ++b) {
      data.push_back(Pattern(b, 1, seed));
    }
    for (uint64_t i = 0; i < per_thread; ++i) {
      writes.push_back({first + i, data[i].span()});
    }
    *ok = device_->WriteBatch(writes).ok();
    std::vector<AlignedBuffer> got;
    std::vector<ReadRequest> reads;
    for (uint64_t i = 0; i < per_thread; ++i) got.emplace_back(kBlock);
    for (uint64_t i = 0; i < per_thread; ++i) {
      reads.push_back({first + i, got[i].span()});
    }
    *ok = *ok && device_->ReadBatch(reads).ok();
    for (uint64_t i = 0; i < per_thread; ++i) {
      *ok = *ok && Same(got[i], data[i]);
    }
  };
  bool ok1 = false, ok2 = false;
  std::thread t1(work, 0, 11, &ok1);
  std::thread t2(work, per_thread, 12, &ok2);
  t1.join();
  t2.join();
  EXPECT_TRUE(ok1);
  EXPECT_TRUE(ok2);
}

std::vector<BackendCase> Cases() {
  return {
      {"memory", Backend::kMemory, false, false},
      {"posix", Backend::kPosix, false, false},
      {"mmap", Backend::kMmap, false, false},
      {"posix_direct", Backend::kPosix, true, false},
      {"uring", Backend::kUring, false, false},
      {"uring_direct", Backend::kUring, true, false},
      {"fault_memory", Backend::kMemory, false, true},
      {"fault_posix", Backend::kPosix, false, true},
      {"fault_mmap", Backend::kMmap, false, true},
  };
}

// Hints given while the device grows, shrinks and is written (the memory
// map gives them on a thread of its own, which a resize remaps under),
// then the device closed with some perhaps still waiting: every block
// reads as the last write left it, and no hint changed a byte.
TEST_P(BlockDeviceContractTest, HintsBesideResizesChangeNothing) {
  std::mt19937_64 rng(17);
  std::vector<AlignedBuffer> model;  // each block's bytes
  for (int step = 0; step < 300; ++step) {
    const uint64_t n = model.size();
    if (step % 7 == 6 && n > 8) {
      const uint64_t cut = n - 1 - rng() % (n / 2);
      ASSERT_TRUE(device_->Resize(cut).ok());
      model.resize(cut);
    } else {
      const uint64_t grown = n + 1 + rng() % 24;
      ASSERT_TRUE(device_->Resize(grown).ok());
      while (model.size() < grown) model.emplace_back(kBlock);
    }
    const uint64_t m = model.size();
    const uint64_t first = rng() % m;
    const uint64_t count = 1 + rng() % std::min<uint64_t>(m - first, 16);
    device_->WillWrite(first, 2 * count + 300);
    const AlignedBuffer data = Pattern(first, count, step);
    ASSERT_TRUE(device_->Write(first, data.span()).ok());
    for (uint64_t i = 0; i < count; ++i) {
      std::memcpy(model[first + i].data(), data.data() + i * kBlock, kBlock);
    }
    device_->DoneWith(rng() % m, 1 + rng() % 64);
  }
  AlignedBuffer got(kBlock);
  for (uint64_t b = 0; b < model.size(); ++b) {
    ASSERT_TRUE(device_->Read(b, got.span()).ok());
    ASSERT_TRUE(Same(got, model[b])) << "block " << b;
  }
  // A burst of hints far apart (more than the mmap backend lets wait),
  // then the device closed at once, some perhaps still waiting.
  for (int i = 0; i < 200; ++i) {
    const uint64_t at = rng() % model.size();
    if (i % 2 == 0) {
      device_->WillWrite(at, 1 + rng() % 8);
    } else {
      device_->DoneWith(at, 1 + rng() % 8);
    }
  }
  device_.reset();
  if (!persistent()) return;
  auto reopened = Open();
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  device_ = *std::move(reopened);
  ASSERT_EQ(device_->num_blocks(), model.size());
  for (uint64_t b = 0; b < model.size(); ++b) {
    ASSERT_TRUE(device_->Read(b, got.span()).ok());
    ASSERT_TRUE(Same(got, model[b])) << "block " << b << " after reopening";
  }
}

// A log's appends, a few bytes at a time front to back, with the window
// ahead announced as they go and the one behind given up: the mmap backend
// faults the window in and stores to each of its pages on a thread of its
// own, while the appends store into the same pages (the page being
// appended to among them). Every byte reads as appended: no store of that
// thread undid one of the writer's.
TEST_P(BlockDeviceContractTest, AppendsBesideWindowHintsKeepEveryByte) {
  constexpr uint64_t kBlocks = 512;  // 2 MiB
  constexpr size_t kRecord = 61;     // not a divisor of a page
  ASSERT_TRUE(device_->Resize(kBlocks).ok());
  AlignedBuffer stage(kBlock);       // the block being appended to
  AlignedBuffer expected(kBlocks * kBlock);
  uint64_t block = 0;
  size_t fill = 0;
  uint8_t next = 1;
  while (block < kBlocks) {
    // The window from the block being appended to on, as a log announces
    // it, so that the thread's stores meet the appends' pages.
    if (fill == 0) {
      device_->WillWrite(block, 8);
      if (block >= 16) device_->DoneWith(block - 16, 8);
    }
    const size_t end = std::min<size_t>(fill + kRecord, kBlock);
    for (size_t i = fill; i < end; ++i) {
      stage.data()[i] = static_cast<std::byte>(next);
      next = static_cast<uint8_t>(next % 255 + 1);  // never zero
    }
    ASSERT_TRUE(device_->WriteChanged(block, stage.span(), fill, end).ok());
    std::memcpy(expected.data() + block * kBlock + fill, stage.data() + fill,
                end - fill);
    fill = end;
    if (fill == kBlock) {
      ++block;
      fill = 0;
      std::memset(stage.data(), 0, kBlock);
    }
  }
  AlignedBuffer got(kBlocks * kBlock);
  ASSERT_TRUE(device_->Read(0, got.span()).ok());
  for (uint64_t b = 0; b < kBlocks; ++b) {
    ASSERT_EQ(std::memcmp(got.data() + b * kBlock,
                          expected.data() + b * kBlock, kBlock),
              0)
        << "block " << b;
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, BlockDeviceContractTest,
                         testing::ValuesIn(Cases()),
                         [](const testing::TestParamInfo<BackendCase>& info) {
                           return info.param.name;
                         });

// Buffered writes of the file backends: a batch of adjacent blocks costs a
// pwritev per 256 KiB of them, not a call (or a ring entry) per block.
TEST(FileBackendTest, BufferedWriteBatchesJoinAdjacentBlocks) {
  for (const Backend backend : {Backend::kPosix, Backend::kUring}) {
    if (backend == Backend::kUring && !UringAvailable()) continue;
    const std::string path = TempPath("join");
    DeviceOptions options;
    options.backend = backend;
    auto device = OpenBlockDevice(path, options);
    ASSERT_TRUE(device.ok()) << device.status();
    const uint64_t n = 1500;
    ASSERT_TRUE((*device)->Resize(n + 10).ok());
    std::vector<AlignedBuffer> data;
    std::vector<WriteRequest> writes;
    for (uint64_t b = 0; b < n; ++b) {
      data.emplace_back(kBlock);
      std::memset(data.back().data(), static_cast<int>(1 + b % 251), kBlock);
    }
    for (uint64_t b = 0; b < n; ++b) writes.push_back({n - 1 - b, data[b].span()});
    writes.push_back({n + 5, data[0].span()});  // a second run
    ASSERT_TRUE((*device)->WriteBatch(writes).ok());
    // 1500 blocks at 64 a call, and the second run.
    EXPECT_EQ((*device)->stats().submissions, (n + 63) / 64 + 1)
        << (*device)->capabilities().backend;
    // Every block where the batch put it.
    AlignedBuffer got(kBlock);
    for (uint64_t b = 0; b < n; b += 97) {
      ASSERT_TRUE((*device)->Read(b, got.span()).ok());
      EXPECT_EQ(std::memcmp(got.data(), data[n - 1 - b].data(), kBlock), 0)
          << "block " << b;
    }
    device->reset();
    unlink(path.c_str());
  }
}

TEST(OpenBlockDeviceTest, FallsBackToPosixWhenTheUringProbeFails) {
  setenv("ROUNDTABLE_IO_URING", "off", 1);
  std::string why;
  EXPECT_FALSE(UringAvailable(&why));
  EXPECT_EQ(why, "ROUNDTABLE_IO_URING=off");
  const std::string path = TempPath("fallback");
  DeviceOptions options;
  auto device = OpenBlockDevice(path, options);  // Backend::kAuto
  ASSERT_TRUE(device.ok()) << device.status();
  EXPECT_EQ((*device)->capabilities().backend, "posix");
  ASSERT_TRUE((*device)->Resize(2).ok());
  AlignedBuffer data(4096), got(4096);
  data.data()[17] = std::byte{42};
  ASSERT_TRUE((*device)->Write(1, data.span()).ok());
  ASSERT_TRUE((*device)->Read(1, got.span()).ok());
  EXPECT_EQ(got.data()[17], std::byte{42});
  options.backend = Backend::kUring;
  EXPECT_EQ(OpenBlockDevice(path, options).status().code(),
            absl::StatusCode::kUnavailable);
  unsetenv("ROUNDTABLE_IO_URING");
  device->reset();
  unlink(path.c_str());
}

TEST(OpenBlockDeviceTest, AutoPrefersUringWhereARingCanBeCreated) {
  if (!UringAvailable()) GTEST_SKIP() << "no io_uring here";
  const std::string path = TempPath("auto");
  auto device = OpenBlockDevice(path, DeviceOptions{});
  ASSERT_TRUE(device.ok()) << device.status();
  EXPECT_EQ((*device)->capabilities().backend, "uring");
  EXPECT_TRUE((*device)->capabilities().parallel_batches);
  device->reset();
  unlink(path.c_str());
}

TEST(OpenBlockDeviceTest, RejectsBadOptionsAndMissingFiles) {
  DeviceOptions options;
  options.block_size = 1000;
  EXPECT_EQ(OpenBlockDevice(TempPath("bad"), options).status().code(),
            absl::StatusCode::kInvalidArgument);
  options.block_size = 256;
  EXPECT_EQ(OpenBlockDevice(TempPath("bad"), options).status().code(),
            absl::StatusCode::kInvalidArgument);
  options.block_size = 4096;
  options.queue_depth = 0;
  EXPECT_EQ(OpenBlockDevice(TempPath("bad"), options).status().code(),
            absl::StatusCode::kInvalidArgument);
  options.queue_depth = 8;
  options.create_if_missing = false;
  options.backend = Backend::kPosix;
  const absl::Status missing =
      OpenBlockDevice("/nonexistent/dir/file", options).status();
  EXPECT_EQ(missing.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(missing.message().find("/nonexistent/dir/file"), std::string::npos);
  EXPECT_EQ(ParseBackend("zfs").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(*ParseBackend("posix"), Backend::kPosix);
  EXPECT_EQ(*ParseBackend("mmap"), Backend::kMmap);
  // A mapping always goes through the page cache.
  options.backend = Backend::kMmap;
  options.direct_io = true;
  options.create_if_missing = true;
  EXPECT_EQ(OpenBlockDevice(TempPath("mmap_direct"), options).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// A moved-from buffer is empty, so that code which keeps a buffer for
// reuse and checks its size never takes a moved-from one for a full one.
TEST(AlignedBufferTest, AMovedFromBufferIsEmpty) {
  AlignedBuffer a(2 * kBlock);
  std::memset(a.data(), 7, a.size());
  AlignedBuffer b(std::move(a));
  EXPECT_EQ(a.size(), 0u);  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(a.data(), nullptr);
  ASSERT_EQ(b.size(), 2 * kBlock);
  EXPECT_EQ(static_cast<int>(b.data()[kBlock]), 7);
  AlignedBuffer c(kBlock);
  c = std::move(b);
  EXPECT_EQ(b.size(), 0u);  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(b.data(), nullptr);
  ASSERT_EQ(c.size(), 2 * kBlock);
  EXPECT_EQ(static_cast<int>(c.data()[2 * kBlock - 1]), 7);
}

}  // namespace
}  // namespace roundtable::io
