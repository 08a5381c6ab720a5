// The stash copy's log against a model (a key-value map): random puts and
// removals, flushes, rewrites and reopenings (Load, then ResumeTail and more
// appends), with Load checked against the model after every flush. Every
// block it writes holds zeros past its entries, and a tail block whose
// entry count runs past the block is refused.
#include "engine/internal/stash_log.h"

#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/internal/block_format.h"
#include "engine/internal/coding.h"
#include "gtest/gtest.h"
#include "io/memory_device.h"

namespace roundtable::internal {
namespace {

using Model = std::map<std::string, std::string>;

Model Loaded(io::BlockDevice& device, const StashLog& log) {
  auto live = StashLog::Load(device, log.epoch(), log.blocks());
  EXPECT_TRUE(live.ok()) << live.status();
  if (!live.ok()) return {};
  return Model(live->begin(), live->end());
}

// Bytes of block b past its header and `used` entry bytes are all zero.
bool ZeroPastEntries(io::BlockDevice& device, uint64_t b) {
  io::AlignedBuffer block(device.block_size());
  EXPECT_TRUE(device.Read(b, block.span()).ok());
  const char* p = reinterpret_cast<const char*>(block.data());
  const uint32_t used = GetFixed32(p + 16);
  for (size_t i = kBlockHeaderBytes + used; i < block.size(); ++i) {
    if (p[i] != 0) return false;
  }
  return true;
}

// The model's records, and the list of them that a rewrite reads.
struct LiveModel {
  explicit LiveModel(const Model& model) {
    records.reserve(model.size());
    for (const auto& [key, value] : model) records.emplace_back(key, value);
    for (const Record& r : records) {
      live.push_back({r.bytes(), r.key_size(), r.value_size()});
    }
  }
  std::vector<Record> records;
  StashLog::Live live;
};

TEST(StashLogTest, MatchesAModelThroughFlushesRewritesAndReopens) {
  constexpr uint32_t kBlockSize = 512;
  std::mt19937_64 rng(7);
  auto device = io::NewMemoryDevice(kBlockSize);
  auto log = std::make_unique<StashLog>(device.get(), 1, 0);
  Model model;
  for (int step = 0; step < 6000; ++step) {
    const std::string key = absl::StrCat("k", rng() % 300);
    const int op = static_cast<int>(rng() % 100);
    if (op < 55) {
      // Values from empty to a quarter of the block, so that entries of
      // every size share blocks.
      const std::string value(rng() % (kBlockSize / 4), 'a' + step % 26);
      ASSERT_TRUE(log->AppendPut(key, value).ok());
      model[key] = value;
    } else if (op < 90) {
      ASSERT_TRUE(log->AppendRemove(key).ok());
      model.erase(key);
    } else if (op < 96) {
      ASSERT_TRUE(log->Flush().ok());
      ASSERT_EQ(Loaded(*device, *log), model) << "step " << step;
    } else if (op < 98) {
      ASSERT_TRUE(log->Rewrite(LiveModel(model).live).ok());
      ASSERT_EQ(Loaded(*device, *log), model) << "step " << step;
      ASSERT_EQ(device->num_blocks(), log->blocks());
    } else {
      // Reopen: the next appends join the tail block's entries.
      ASSERT_TRUE(log->Flush().ok());
      const uint64_t epoch = log->epoch(), blocks = log->blocks();
      log = std::make_unique<StashLog>(device.get(), epoch, blocks);
      ASSERT_EQ(Loaded(*device, *log), model) << "step " << step;
      ASSERT_TRUE(log->ResumeTail().ok());
    }
  }
  ASSERT_TRUE(log->Flush().ok());
  EXPECT_EQ(Loaded(*device, *log), model);
  EXPECT_GT(log->blocks(), 1u);
  for (uint64_t b = 0; b < log->blocks(); ++b) {
    EXPECT_TRUE(ZeroPastEntries(*device, b)) << "block " << b;
  }
}

// Restart and Encode, the rewrite in two halves a checkpoint's thread
// finishes, make the very bytes Rewrite writes, in the blocks BlocksFor
// says, for live sets from empty to many blocks and entries of every size.
TEST(StashLogTest, EncodeMakesTheBlocksRewriteWrites) {
  std::mt19937_64 rng(11);
  int joined = 0;
  for (const uint32_t block_size : {512u, 4096u}) {
    for (int round = 0; round < 40; ++round) {
      Model model;
      const int records = round == 0 ? 0 : static_cast<int>(rng() % 400);
      for (int i = 0; i < records; ++i) {
        model[absl::StrCat("key", rng() % 100000)] =
            std::string(rng() % (block_size / 4), 'a' + i % 26);
      }
      const LiveModel of(model);
      const StashLog::Live& live = of.live;
      auto rewritten = io::NewMemoryDevice(block_size);
      StashLog log(rewritten.get(), 3, 0);
      ASSERT_TRUE(log.AppendPut("old", "entry").ok());
      ASSERT_TRUE(log.Flush().ok());
      ASSERT_TRUE(log.Rewrite(live).ok());

      auto made = io::NewMemoryDevice(block_size);
      StashLog restarted(made.get(), 3, 1);
      ASSERT_TRUE(restarted.Restart(live).ok());
      EXPECT_EQ(restarted.epoch(), log.epoch());
      ASSERT_EQ(restarted.blocks(), log.blocks());
      ASSERT_EQ(StashLog::BlocksFor(live, block_size), log.blocks());
      EXPECT_EQ(made->num_blocks(), log.blocks());
      io::AlignedBuffer bytes(restarted.blocks() * block_size);
      // Encode writes every byte, whatever the blocks held.
      std::memset(bytes.data(), 0xab, bytes.size());
      std::vector<std::byte*> blocks;
      for (uint64_t b = 0; b < restarted.blocks(); ++b) {
        blocks.push_back(bytes.data() + b * block_size);
      }
      StashLog::Encode(live, restarted.epoch(), blocks, block_size);
      io::AlignedBuffer block(block_size);
      for (uint64_t b = 0; b < log.blocks(); ++b) {
        ASSERT_TRUE(rewritten->Read(b, block.span()).ok());
        ASSERT_EQ(std::memcmp(block.data(), bytes.data() + b * block_size,
                              block_size),
                  0)
            << "block " << b << " of " << log.blocks();
      }
      if (restarted.blocks() > 0) {
        ASSERT_TRUE(made->Write(0, bytes.span()).ok());
      }
      EXPECT_EQ(Loaded(*made, restarted), model);
      // Appends after a Rewrite join its last block where they fit.
      ASSERT_TRUE(log.AppendPut("next", "value").ok());
      ASSERT_TRUE(log.Flush().ok());
      EXPECT_LE(log.blocks(), restarted.blocks() + 1);
      joined += restarted.blocks() > 0 && log.blocks() == restarted.blocks();
      model["next"] = "value";
      EXPECT_EQ(Loaded(*rewritten, log), model);
    }
  }
  EXPECT_GT(joined, 40);
}

TEST(StashLogTest, ResumeTailRefusesEntryBytesPastTheBlock) {
  auto device = io::NewMemoryDevice(512);
  StashLog log(device.get(), 1, 0);
  ASSERT_TRUE(log.AppendPut("key", "value").ok());
  ASSERT_TRUE(log.Flush().ok());
  io::AlignedBuffer block(512);
  ASSERT_TRUE(device->Read(0, block.span()).ok());
  PutFixed32(reinterpret_cast<char*>(block.data()) + 16, 600);
  ASSERT_TRUE(device->Write(0, block.span()).ok());
  StashLog reopened(device.get(), 1, 1);
  EXPECT_TRUE(absl::IsDataLoss(reopened.ResumeTail()));
  // Load, which checks the checksum first, refuses it too.
  EXPECT_TRUE(absl::IsDataLoss(StashLog::Load(*device, 1, 1).status()));
}

}  // namespace
}  // namespace roundtable::internal
