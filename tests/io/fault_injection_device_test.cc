// The fault-injection wrapper's own promises: the Nth operation fails once,
// exactly the unsynced writes vanish on power loss, a kept subset keeps
// exactly what the report says, a torn block is torn where the report says,
// and a flipped bit is one bit. Run over a memory device and a POSIX file.
#include "io/fault_injection_device.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <set>

#include "gtest/gtest.h"
#include "io/memory_device.h"

namespace roundtable::io {
namespace {

constexpr uint32_t kBlock = 4096;

AlignedBuffer Filled(unsigned char value) {
  AlignedBuffer b(kBlock);
  std::memset(b.data(), value, kBlock);
  return b;
}

class FaultInjectionTest : public testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    std::unique_ptr<BlockDevice> inner;
    if (GetParam()) {
      static int counter = 0;
      path_ = testing::TempDir() + "/rt_fault_" + std::to_string(getpid()) +
              "_" + std::to_string(counter++);
      DeviceOptions options;
      options.backend = Backend::kPosix;
      auto opened = OpenBlockDevice(path_, options);
      ASSERT_TRUE(opened.ok()) << opened.status();
      inner = *std::move(opened);
    } else {
      inner = NewMemoryDevice(kBlock);
    }
    device_ = std::make_unique<FaultInjectionDevice>(std::move(inner));
  }
  void TearDown() override {
    device_.reset();
    if (!path_.empty()) unlink(path_.c_str());
  }

  // The first byte of every byte of block b, checking the block is uniform.
  unsigned char ValueOf(uint64_t b) {
    AlignedBuffer got(kBlock);
    EXPECT_TRUE(device_->Read(b, got.span()).ok());
    const auto first = static_cast<unsigned char>(got.data()[0]);
    for (size_t i = 0; i < kBlock; ++i) {
      if (static_cast<unsigned char>(got.data()[i]) != first) return 0xEE;
    }
    return first;
  }

  std::string path_;
  std::unique_ptr<FaultInjectionDevice> device_;
};

TEST_P(FaultInjectionTest, NthOperationFailsOnceAtN) {
  ASSERT_TRUE(device_->Resize(8).ok());
  device_->FailNth(FaultInjectionDevice::Op::kWrite, 3,
                   absl::ResourceExhaustedError("disk full"));
  for (uint64_t b = 0; b < 5; ++b) {
    const absl::Status s = device_->Write(b, Filled(10 + b).span());
    if (b == 2) {
      EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << b;
    } else {
      EXPECT_TRUE(s.ok()) << b << ": " << s;
    }
  }
  EXPECT_EQ(ValueOf(1), 11);
  EXPECT_EQ(ValueOf(2), 0);  // the failed write transferred nothing
  EXPECT_EQ(ValueOf(3), 13);

  device_->FailNth(FaultInjectionDevice::Op::kRead, 1,
                   absl::DataLossError("bad sector"));
  AlignedBuffer got(kBlock);
  EXPECT_EQ(device_->Read(0, got.span()).code(), absl::StatusCode::kDataLoss);
  EXPECT_TRUE(device_->Read(0, got.span()).ok());

  device_->FailNth(FaultInjectionDevice::Op::kSync, 2,
                   absl::UnavailableError("fsync failed"));
  EXPECT_TRUE(device_->Sync().ok());
  EXPECT_EQ(device_->Sync().code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(device_->Sync().ok());
}

TEST_P(FaultInjectionTest, FailureInsideABatchStopsThere) {
  ASSERT_TRUE(device_->Resize(4).ok());
  device_->FailNth(FaultInjectionDevice::Op::kWrite, 2,
                   absl::InternalError("injected"));
  AlignedBuffer a = Filled(1), b = Filled(2), c = Filled(3);
  std::vector<WriteRequest> batch = {
      {0, a.span()}, {1, b.span()}, {2, c.span()}};
  EXPECT_EQ(device_->WriteBatch(batch).code(), absl::StatusCode::kInternal);
  EXPECT_EQ(ValueOf(0), 1);
  EXPECT_EQ(ValueOf(1), 0);
  EXPECT_EQ(ValueOf(2), 0);
}

TEST_P(FaultInjectionTest, PowerLossDropsExactlyTheUnsyncedWrites) {
  ASSERT_TRUE(device_->Resize(4).ok());
  ASSERT_TRUE(device_->Write(0, Filled(1).span()).ok());
  ASSERT_TRUE(device_->Write(1, Filled(2).span()).ok());
  ASSERT_TRUE(device_->Sync().ok());
  ASSERT_TRUE(device_->Write(1, Filled(3).span()).ok());  // overwrite
  ASSERT_TRUE(device_->Write(2, Filled(4).span()).ok());  // new
  ASSERT_TRUE(device_->Resize(6).ok());                   // grow
  ASSERT_TRUE(device_->Write(5, Filled(5).span()).ok());  // past durable end
  EXPECT_EQ(device_->UnsyncedBlocks(), (std::vector<uint64_t>{1, 2, 5}));

  auto report = device_->LosePower({});
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->kept.empty());
  EXPECT_EQ(report->dropped, (std::vector<uint64_t>{1, 2, 5}));
  EXPECT_EQ(report->num_blocks, 4u);
  EXPECT_EQ(device_->num_blocks(), 4u);  // the growth was never synced
  EXPECT_EQ(ValueOf(0), 1);
  EXPECT_EQ(ValueOf(1), 2);
  EXPECT_EQ(ValueOf(2), 0);
  EXPECT_EQ(ValueOf(3), 0);
  EXPECT_TRUE(device_->UnsyncedBlocks().empty());
}

TEST_P(FaultInjectionTest, PowerLossBringsBackUnsyncedTruncation) {
  ASSERT_TRUE(device_->Resize(4).ok());
  ASSERT_TRUE(device_->Write(3, Filled(7).span()).ok());
  ASSERT_TRUE(device_->Sync().ok());
  ASSERT_TRUE(device_->Resize(2).ok());
  auto report = device_->LosePower({});
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(device_->num_blocks(), 4u);
  EXPECT_EQ(ValueOf(3), 7);
}

TEST_P(FaultInjectionTest, KeptSubsetIsExactlyWhatTheReportSays) {
  const uint64_t n = 64;
  ASSERT_TRUE(device_->Resize(n).ok());
  for (uint64_t b = 0; b < n; ++b) {
    ASSERT_TRUE(device_->Write(b, Filled(1).span()).ok());
  }
  ASSERT_TRUE(device_->Sync().ok());
  for (uint64_t b = 0; b < n; b += 2) {
    ASSERT_TRUE(device_->Write(b, Filled(9).span()).ok());
  }
  FaultInjectionDevice::PowerLoss how;
  how.keep_random_subset = true;
  how.seed = 12345;
  auto report = device_->LosePower(how);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->kept.size() + report->dropped.size(), n / 2);
  // A fair coin over 32 blocks keeps some and drops some.
  EXPECT_FALSE(report->kept.empty());
  EXPECT_FALSE(report->dropped.empty());
  const std::set<uint64_t> kept(report->kept.begin(), report->kept.end());
  for (uint64_t b = 0; b < n; ++b) {
    EXPECT_EQ(ValueOf(b), kept.count(b) ? 9 : 1) << "block " << b;
  }
  // The same seed decides the same way.
  ASSERT_TRUE(device_->Write(0, Filled(5).span()).ok());
  EXPECT_EQ(device_->UnsyncedBlocks(), (std::vector<uint64_t>{0}));
}

TEST_P(FaultInjectionTest, TornBlockIsTornAtSectorsAsReported) {
  ASSERT_TRUE(device_->Resize(2).ok());
  ASSERT_TRUE(device_->Write(1, Filled(0x11).span()).ok());
  ASSERT_TRUE(device_->Sync().ok());
  ASSERT_TRUE(device_->Write(1, Filled(0x22).span()).ok());
  FaultInjectionDevice::PowerLoss how;
  how.tear_one = true;
  how.seed = 99;
  auto report = device_->LosePower(how);
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_EQ(report->torn, std::optional<uint64_t>(1));
  ASSERT_EQ(report->torn_sectors_new.size(), kBlock / 512);
  AlignedBuffer got(kBlock);
  ASSERT_TRUE(device_->Read(1, got.span()).ok());
  size_t new_sectors = 0;
  for (size_t s = 0; s < kBlock / 512; ++s) {
    const unsigned char want = report->torn_sectors_new[s] ? 0x22 : 0x11;
    new_sectors += report->torn_sectors_new[s];
    for (size_t i = 0; i < 512; ++i) {
      ASSERT_EQ(static_cast<unsigned char>(got.data()[s * 512 + i]), want)
          << "sector " << s;
    }
  }
  EXPECT_GT(new_sectors, 0u);
  EXPECT_LT(new_sectors, kBlock / 512);
}

TEST_P(FaultInjectionTest, FlipBitChangesExactlyOneBit) {
  ASSERT_TRUE(device_->Resize(1).ok());
  ASSERT_TRUE(device_->Write(0, Filled(0x0F).span()).ok());
  ASSERT_TRUE(device_->FlipBit(0, 8 * 100 + 7).ok());
  AlignedBuffer got(kBlock);
  ASSERT_TRUE(device_->Read(0, got.span()).ok());
  for (size_t i = 0; i < kBlock; ++i) {
    ASSERT_EQ(static_cast<unsigned char>(got.data()[i]), i == 100 ? 0x8F : 0x0F)
        << i;
  }
  EXPECT_EQ(device_->FlipBit(1, 0).code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(device_->FlipBit(0, 8 * kBlock).code(),
            absl::StatusCode::kOutOfRange);
}

// Random writes, syncs and resizes against a model of what is durable, then a
// power loss, many times over: the device must hold exactly the model's
// durable state (drop mode), or exactly what the report says survived (kept
// subset mode). Each byte value stands for a block's content.
TEST_P(FaultInjectionTest, RandomHistoriesMatchTheModelAfterPowerLoss) {
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    SCOPED_TRACE(testing::Message() << "seed " << seed);
    std::mt19937_64 rng(seed);
    // Start from a synced, empty device.
    ASSERT_TRUE(device_->Resize(0).ok());
    ASSERT_TRUE(device_->Sync().ok());
    std::vector<unsigned char> durable, current;  // value per block
    for (int step = 0; step < 60; ++step) {
      const int op = static_cast<int>(rng() % 10);
      if (op < 6 && !current.empty()) {
        const uint64_t b = rng() % current.size();
        const auto v = static_cast<unsigned char>(1 + rng() % 250);
        ASSERT_TRUE(device_->Write(b, Filled(v).span()).ok());
        current[b] = v;
      } else if (op < 8) {
        const uint64_t n = rng() % 12;
        ASSERT_TRUE(device_->Resize(n).ok());
        current.resize(n, 0);
      } else {
        ASSERT_TRUE(device_->Sync().ok());
        durable = current;
      }
    }
    FaultInjectionDevice::PowerLoss how;
    how.keep_random_subset = seed % 2 == 0;
    how.tear_one = seed % 3 == 0;
    how.seed = seed;
    auto report = device_->LosePower(how);
    ASSERT_TRUE(report.ok()) << report.status();
    // What should be there: the durable state, with each kept block's
    // current bytes on top, as long as the durable size or just past the
    // highest block that kept new bytes (kept or torn).
    uint64_t size = durable.size();
    for (const uint64_t b : report->kept) size = std::max(size, b + 1);
    if (report->torn) size = std::max(size, *report->torn + 1);
    EXPECT_EQ(report->num_blocks, size);
    std::vector<unsigned char> want = durable;
    want.resize(size, 0);
    for (const uint64_t b : report->kept) {
      ASSERT_LT(b, current.size());
      want[b] = current[b];
    }
    if (!how.keep_random_subset) {
      EXPECT_TRUE(report->kept.empty());
    }
    if (report->torn) {
      ASSERT_LT(*report->torn, current.size());
      ASSERT_GE(want.size(), *report->torn + 1);
    }
    ASSERT_EQ(device_->num_blocks(), want.size());
    for (uint64_t b = 0; b < want.size(); ++b) {
      if (b != report->torn) {
        ASSERT_EQ(ValueOf(b), want[b]) << "block " << b;
        continue;
      }
      // Sector by sector: the new bytes or the durable ones, as reported.
      AlignedBuffer got(kBlock);
      ASSERT_TRUE(device_->Read(b, got.span()).ok());
      const unsigned char old_value = b < durable.size() ? durable[b] : 0;
      for (size_t i = 0; i < kBlock; ++i) {
        const unsigned char v =
            report->torn_sectors_new[i / 512] ? current[b] : old_value;
        ASSERT_EQ(static_cast<unsigned char>(got.data()[i]), v)
            << "torn block " << b << " byte " << i;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Inner, FaultInjectionTest, testing::Bool(),
                         [](const testing::TestParamInfo<bool>& info) {
                           return info.param ? "posix" : "memory";
                         });

}  // namespace
}  // namespace roundtable::io
