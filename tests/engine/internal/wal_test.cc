// The write-ahead log: records read back exactly, in order; a log restarted
// under a later number, or over zeros; the number of its first whole record;
// power losses that drop, keep or tear unsynced blocks leave a prefix holding
// every synced record; a flipped bit ends the log before the damaged record,
// never returning wrong bytes. The commit log calls its encoded hook before the
// record reaches the file.
#include "engine/internal/wal.h"

#include <algorithm>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/internal/commit_log.h"
#include "engine/internal/log_record.h"
#include "gtest/gtest.h"
#include "io/fault_injection_device.h"
#include "io/memory_device.h"

namespace roundtable::internal {
namespace {

// A payload of random length (up to three blocks, often tiny) whose bytes
// depend on the record number.
std::string Payload(std::mt19937_64& rng, uint64_t seq, uint32_t bs) {
  const size_t sizes[] = {0, 1, 17, 100, bs / 2, bs - 20, bs, 3 * bs + 5};
  std::string p(sizes[rng() % 8] + rng() % 7, '\0');
  for (size_t i = 0; i < p.size(); ++i) p[i] = static_cast<char>(seq * 31 + i);
  return p;
}

// Replays `device` after `after_seq` into a vector.
std::vector<std::pair<uint64_t, std::string>> ReadAll(
    io::BlockDevice& device, uint64_t after_seq, WalReplay* out = nullptr) {
  std::vector<std::pair<uint64_t, std::string>> got;
  auto replay =
      ReplayWal(device, after_seq, [&](uint64_t seq, std::string_view payload) {
        got.emplace_back(seq, std::string(payload));
        return absl::OkStatus();
      });
  EXPECT_TRUE(replay.ok()) << replay.status();
  if (replay.ok() && out != nullptr) *out = *replay;
  return got;
}

TEST(WalTest, RecordsComeBackInOrder) {
  for (const uint32_t bs : {512u, 4096u}) {
    std::mt19937_64 rng(bs);
    auto device = io::NewMemoryDevice(bs);
    WalWriter wal(device.get());
    ASSERT_TRUE(wal.Start(1000, 999).ok());
    std::vector<std::pair<uint64_t, std::string>> written;
    uint64_t bytes = 0;
    for (uint64_t seq = 1000; seq < 1300; ++seq) {
      written.emplace_back(seq, Payload(rng, seq, bs));
      ASSERT_EQ(wal.next_seq(), seq);
      ASSERT_TRUE(wal.Append(written.back().second).ok());
      bytes += kWalHeaderBytes + written.back().second.size();
    }
    EXPECT_EQ(wal.bytes(), bytes);
    WalReplay replay;
    EXPECT_EQ(ReadAll(*device, 999, &replay), written);
    EXPECT_EQ(replay.records, 300u);
    EXPECT_EQ(replay.last_seq, 1299u);
    EXPECT_EQ(replay.bytes, bytes);
    // Records the reader was told are covered are skipped.
    auto tail = ReadAll(*device, 1199);
    ASSERT_EQ(tail.size(), 100u);
    EXPECT_EQ(tail.front().first, 1200u);
    EXPECT_EQ(tail.back(), written.back());
  }
}

// A memory device that records the window hints: which blocks were given
// up, and whether a write ever came back to one of them.
class HintRecorder final : public io::BlockDevice {
 public:
  explicit HintRecorder(uint32_t bs)
      : BlockDevice("hints"), inner_(io::NewMemoryDevice(bs)) {}
  const io::Capabilities& capabilities() const override {
    return inner_->capabilities();
  }
  uint64_t num_blocks() const override { return inner_->num_blocks(); }
  uint64_t announced = 0;  // blocks announced by WillWrite
  uint64_t announced_to = 0;  // the end of the blocks announced so far
  // Whether a write ended less than `lead` blocks before the end of what
  // was announced, where the device reaches that far.
  uint64_t lead = 0;
  bool short_lead = false;
  uint64_t given_up = 0;   // blocks given up by DoneWith
  // Blocks before this were given up; a write below it is a finding.
  uint64_t done_below = 0;
  bool wrote_given_up = false;

 protected:
  absl::Status DoRead(uint64_t block, std::span<std::byte> buffer) override {
    return inner_->Read(block, buffer);
  }
  absl::Status DoWrite(uint64_t block,
                       std::span<const std::byte> buffer) override {
    if (block < done_below) wrote_given_up = true;
    const uint64_t end = block + buffer.size() / block_size();
    if (announced_to < std::min(end + lead, num_blocks())) short_lead = true;
    return inner_->Write(block, buffer);
  }
  absl::Status DoSync() override { return inner_->Sync(); }
  absl::Status DoResize(uint64_t n) override {
    if (n == 0) done_below = announced_to = 0;  // the log starts over
    return inner_->Resize(n);
  }
  void DoWillWrite(uint64_t block, uint64_t n) override {
    announced += n;
    announced_to = std::max(announced_to, block + n);
  }
  void DoDoneWith(uint64_t block, uint64_t n) override {
    EXPECT_EQ(block, done_below) << "given up out of order";
    given_up += n;
    done_below = block + n;
  }

 private:
  std::unique_ptr<io::BlockDevice> inner_;
};

// The log keeps a window of its file in memory: what lies ahead is
// announced, at least half a window (512 KiB) ahead of every write where
// the file reaches that far, what lies more than a window behind its tail
// given up, and no write ever returns to a block it gave up; every record
// reads back.
TEST(WalTest, TheLogGivesUpOnlyBlocksItWillNotWriteAgain) {
  for (const uint32_t bs : {512u, 4096u}) {
    std::mt19937_64 rng(bs + 1);
    HintRecorder device(bs);
    device.lead = (uint64_t{1} << 19) / bs;
    WalWriter wal(&device);
    for (int round = 0; round < 2; ++round) {
      ASSERT_TRUE(wal.Start(1, 0).ok());
      std::vector<std::pair<uint64_t, std::string>> written;
      for (uint64_t seq = 1; seq < 12000; ++seq) {
        written.emplace_back(seq, Payload(rng, seq, bs));
        ASSERT_TRUE(wal.Append(written.back().second).ok());
      }
      EXPECT_FALSE(device.wrote_given_up);
      EXPECT_FALSE(device.short_lead);
      // Several MiB of records: most of the file given up, all of it
      // announced before it was written.
      const uint64_t written_blocks = (wal.bytes() + bs - 1) / bs;
      EXPECT_GT(wal.bytes(), uint64_t{4} << 20);
      EXPECT_GE(device.announced, written_blocks);
      EXPECT_GT(device.given_up, written_blocks / 2);
      EXPECT_EQ(ReadAll(device, 0), written);
    }
  }
}

TEST(WalTest, RestartForgetsTheOldLog) {
  auto device = io::NewMemoryDevice(512);
  WalWriter wal(device.get());
  ASSERT_TRUE(wal.Start(1, 0).ok());
  for (int i = 0; i < 50; ++i)
    ASSERT_TRUE(wal.Append(std::string(300, 'a')).ok());
  ASSERT_TRUE(wal.Start(51, 50).ok());
  ASSERT_TRUE(wal.Append("b").ok());
  ASSERT_TRUE(wal.Append("c").ok());
  const auto got = ReadAll(*device, 50);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0], std::make_pair(uint64_t{51}, std::string("b")));
  EXPECT_EQ(got[1], std::make_pair(uint64_t{52}, std::string("c")));
  // A gap in the numbers ends the log: records after 52 are not there.
  EXPECT_TRUE(ReadAll(*device, 60).empty());
}

// A log started over zeros (a file cut, synced, then grown with zeros)
// keeps the file's size, and its records read back as from a cut file,
// including past the zeros it started with.
TEST(WalTest, StartOverZerosKeepsTheSize) {
  auto device = io::NewMemoryDevice(512);
  ASSERT_TRUE(device->Resize(8).ok());
  WalWriter wal(device.get());
  ASSERT_TRUE(wal.Start(7, 6, /*zeroed=*/true).ok());
  EXPECT_EQ(device->num_blocks(), 8u);
  std::mt19937_64 rng(3);
  std::vector<std::pair<uint64_t, std::string>> want;
  for (uint64_t seq = 7; seq < 40; ++seq) {
    want.emplace_back(seq, Payload(rng, seq, 512));
    ASSERT_TRUE(wal.Append(want.back().second).ok());
  }
  EXPECT_GT(device->num_blocks(), 8u);
  EXPECT_EQ(ReadAll(*device, 6), want);
  EXPECT_EQ(FirstWalSeq(*device).value(), std::optional<uint64_t>(7));
}

// FirstWalSeq, which orders the log's two files at recovery: the number of
// a whole first record (one that spans blocks too), none for an empty log
// or a damaged first record.
TEST(WalTest, FirstSeqIsThatOfAWholeFirstRecord) {
  io::FaultInjectionDevice device(io::NewMemoryDevice(512));
  EXPECT_EQ(*FirstWalSeq(device), std::nullopt);
  WalWriter wal(&device);
  ASSERT_TRUE(wal.Start(41, 40).ok());
  EXPECT_EQ(*FirstWalSeq(device), std::nullopt);
  ASSERT_TRUE(wal.Append(std::string(1500, 'f')).ok());  // over 3 blocks
  ASSERT_TRUE(wal.Append("next").ok());
  EXPECT_EQ(*FirstWalSeq(device), std::optional<uint64_t>(41));
  // A bit flipped in the first record's last block: no first record.
  ASSERT_TRUE(device.FlipBit(2, 8 * 100).ok());
  EXPECT_EQ(*FirstWalSeq(device), std::nullopt);
  ASSERT_TRUE(device.FlipBit(2, 8 * 100).ok());
  EXPECT_EQ(*FirstWalSeq(device), std::optional<uint64_t>(41));
  // Restarted under a later number, the new first record counts.
  ASSERT_TRUE(wal.Start(90, 89).ok());
  ASSERT_TRUE(wal.Append("x").ok());
  EXPECT_EQ(*FirstWalSeq(device), std::optional<uint64_t>(90));
}

TEST(WalTest, ACallbackErrorIsReturned) {
  auto device = io::NewMemoryDevice(512);
  WalWriter wal(device.get());
  ASSERT_TRUE(wal.Start(1, 0).ok());
  ASSERT_TRUE(wal.Append("x").ok());
  auto replay = ReplayWal(*device, 0, [](uint64_t, std::string_view) {
    return absl::DataLossError("bad payload");
  });
  EXPECT_EQ(replay.status().code(), absl::StatusCode::kDataLoss);
}

// Power loss at random moments: what replays is a prefix of what was
// appended, byte-exact, and holds every record appended before the last
// successful Sync.
TEST(WalTest, PowerLossLeavesAPrefixWithEverySyncedRecord) {
  for (uint64_t seed = 1; seed <= 400; ++seed) {
    SCOPED_TRACE(absl::StrCat("seed ", seed));
    std::mt19937_64 rng(seed);
    const uint32_t bs = seed % 2 ? 1024 : 4096;
    io::FaultInjectionDevice device(io::NewMemoryDevice(bs));
    WalWriter wal(&device);
    ASSERT_TRUE(wal.Start(1, 0).ok());
    ASSERT_TRUE(wal.Sync().ok());
    std::vector<std::string> written;
    uint64_t synced = 0;  // records covered by a Sync
    const int n = 1 + static_cast<int>(rng() % 60);
    for (int i = 0; i < n; ++i) {
      written.push_back(Payload(rng, i + 1, bs));
      ASSERT_TRUE(wal.Append(written.back()).ok());
      if (rng() % 5 == 0) {
        ASSERT_TRUE(wal.Sync().ok());
        synced = written.size();
      }
    }
    io::FaultInjectionDevice::PowerLoss how;
    how.keep_random_subset = rng() % 2;
    how.tear_one = rng() % 2;
    how.seed = rng();
    ASSERT_TRUE(device.LosePower(how).ok());
    const auto got = ReadAll(device, 0);
    ASSERT_GE(got.size(), synced);
    ASSERT_LE(got.size(), written.size());
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_EQ(got[i].first, i + 1);
      ASSERT_EQ(got[i].second, written[i]) << "record " << i + 1;
    }
  }
}

// A restart whose cut was never synced: after a power loss the old log comes
// back, and a reader told that a checkpoint covered it replays nothing.
TEST(WalTest, UnsyncedRestartFallsBackToTheCoveredLog) {
  io::FaultInjectionDevice device(io::NewMemoryDevice(1024));
  WalWriter wal(&device);
  ASSERT_TRUE(wal.Start(1, 0).ok());
  for (int i = 0; i < 20; ++i)
    ASSERT_TRUE(wal.Append(std::string(200, 'o')).ok());
  ASSERT_TRUE(wal.Sync().ok());
  ASSERT_TRUE(wal.Start(21, 20).ok());
  ASSERT_TRUE(wal.Append("new").ok());
  ASSERT_TRUE(device.LosePower({}).ok());
  WalReplay replay;
  EXPECT_TRUE(ReadAll(device, 20, &replay).empty());
  EXPECT_EQ(replay.last_seq, 20u);
}

// A single flipped bit (300 random positions) ends the log at or before the
// damaged record; no record comes back with other bytes than were written.
TEST(WalTest, AFlippedBitNeverYieldsWrongBytes) {
  std::mt19937_64 rng(7);
  auto inner = io::NewMemoryDevice(512);
  io::FaultInjectionDevice device(std::move(inner));
  WalWriter wal(&device);
  ASSERT_TRUE(wal.Start(1, 0).ok());
  std::vector<std::string> written;
  for (int i = 0; i < 40; ++i) {
    written.push_back(Payload(rng, i + 1, 512));
    ASSERT_TRUE(wal.Append(written.back()).ok());
  }
  ASSERT_TRUE(wal.Sync().ok());
  const uint64_t bits = wal.bytes() * 8;
  for (int trial = 0; trial < 300; ++trial) {
    const uint64_t bit = rng() % bits;
    ASSERT_TRUE(device.FlipBit(bit / (512 * 8), bit % (512 * 8)).ok());
    const auto got = ReadAll(device, 0);
    ASSERT_LT(got.size(), written.size()) << "bit " << bit;
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_EQ(got[i].second, written[i]) << "bit " << bit;
    }
    ASSERT_TRUE(device.FlipBit(bit / (512 * 8), bit % (512 * 8)).ok());
  }
  EXPECT_EQ(ReadAll(device, 0).size(), written.size());
}

// A synced record damaged on the medium is DataLoss, not a shorter log:
// with a sync after every record, each record's durable mark covers the one
// before, so a flipped bit (300 random positions) in any record but the last
// fails the replay; in the last it only ends the log before it.
TEST(WalTest, ADamagedSyncedRecordIsDataLoss) {
  std::mt19937_64 rng(11);
  io::FaultInjectionDevice device(io::NewMemoryDevice(512));
  WalWriter wal(&device);
  ASSERT_TRUE(wal.Start(1, 0).ok());
  std::vector<uint64_t> ends;  // stream offset where each record ends
  for (int i = 0; i < 40; ++i) {
    ASSERT_TRUE(wal.Append(Payload(rng, i + 1, 512)).ok());
    ASSERT_TRUE(wal.Sync().ok());
    ends.push_back(wal.bytes());
  }
  const uint64_t bits = wal.bytes() * 8;
  for (int trial = 0; trial < 300; ++trial) {
    const uint64_t bit = rng() % bits;
    const size_t record =
        std::upper_bound(ends.begin(), ends.end(), bit / 8) - ends.begin();
    ASSERT_TRUE(device.FlipBit(bit / (512 * 8), bit % (512 * 8)).ok());
    auto replay = ReplayWal(device, 0, [](uint64_t, std::string_view) {
      return absl::OkStatus();
    });
    if (record + 1 < ends.size()) {
      EXPECT_EQ(replay.status().code(), absl::StatusCode::kDataLoss)
          << "bit " << bit << " of record " << record + 1;
    } else {
      ASSERT_TRUE(replay.ok()) << replay.status();
      EXPECT_EQ(replay->records, ends.size() - 1);
    }
    ASSERT_TRUE(device.FlipBit(bit / (512 * 8), bit % (512 * 8)).ok());
  }
}

// The commit log's hook between encoding a record and writing it: called
// once per record, when the record is encoded and nothing of it has reached
// the file yet; the record read back is the ops as given.
TEST(CommitLogTest, TheEncodedHookRunsOnceBeforeTheRecordReachesTheFile) {
  auto first = io::NewMemoryDevice(512);
  auto second = io::NewMemoryDevice(512);
  CommitLog log({first.get(), second.get()}, [] { return absl::OkStatus(); });
  ASSERT_TRUE(log.Start(0, /*left_uncovered=*/false).ok());
  std::vector<std::string> values;
  for (int i = 0; i < 20; ++i) values.push_back(std::string(37 * i, 'a' + i));
  for (int i = 0; i < 20; ++i) {
    const std::string key = absl::StrCat("key", i);
    const std::vector<Op> ops = {{true, key, values[i]}, {false, "gone", ""}};
    const uint64_t before = first->stats().bytes_written;
    int calls = 0;
    auto seq = log.Append(ops, [&] {
      ++calls;
      EXPECT_EQ(first->stats().bytes_written, before) << "record " << i;
    });
    ASSERT_TRUE(seq.ok()) << seq.status();
    EXPECT_EQ(calls, 1) << "record " << i;
    EXPECT_GT(first->stats().bytes_written, before) << "record " << i;
  }
  std::vector<std::pair<uint64_t, std::string>> got = ReadAll(*first, 0);
  ASSERT_EQ(got.size(), 20u);
  for (int i = 0; i < 20; ++i) {
    auto ops = DecodeOps(got[i].second, got[i].first);
    ASSERT_TRUE(ops.ok()) << ops.status();
    ASSERT_EQ(ops->size(), 2u);
    EXPECT_EQ((*ops)[0].key, absl::StrCat("key", i));
    EXPECT_EQ((*ops)[0].value, values[i]);
    EXPECT_FALSE((*ops)[1].put);
    EXPECT_EQ((*ops)[1].key, "gone");
  }
}

}  // namespace
}  // namespace roundtable::internal
