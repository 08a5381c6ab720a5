// Blocks written ahead of a checkpoint (docs/durability.md, step 2a): a
// table larger than its held blocks' budget, driven by random puts,
// overwrites and deletes against std::map, in several shapes. It writes
// blocks ahead, stays whole (Check, every key read back, the iterator
// equal to the model) through checkpoints and a reopen, and keeps its
// block file within the bound its checkpoints promise.
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <map>
#include <random>
#include <string>
#include <string_view>
#include <thread>

#include "absl/strings/str_cat.h"
#include "engine/internal/kill_points.h"
#include "roundtable/table.h"
#include "gtest/gtest.h"

namespace roundtable {
namespace {

using Model = std::map<std::string, std::string>;

struct Shape {
  uint32_t block_size;
  uint64_t cache_bytes;
  uint64_t checkpoint_bytes;
  uint64_t write_buffer_bytes;
};

class TableWriteAheadTest : public testing::TestWithParam<Shape> {};

void ExpectContents(Table& table, const Model& model) {
  Model seen;
  auto it = table.NewIterator();
  for (; it->Valid(); it->Next()) seen.emplace(it->key(), it->value());
  ASSERT_TRUE(it->status().ok()) << it->status();
  ASSERT_EQ(seen.size(), model.size());
  EXPECT_TRUE(seen == model);
  for (const auto& [key, value] : model) {
    auto got = table.Get(key);
    ASSERT_TRUE(got.ok()) << key << ": " << got.status();
    ASSERT_EQ(*got, value) << key;
  }
}

uint64_t FileBytes(const std::string& path) {
  struct stat st;
  EXPECT_EQ(stat(path.c_str(), &st), 0) << path;
  return static_cast<uint64_t>(st.st_size);
}

TEST_P(TableWriteAheadTest, ATablePastItsBudgetWritesAheadAndStaysWhole) {
  const Shape shape = GetParam();
  const std::string dir = testing::TempDir() + "/rt_ahead_" +
                          std::to_string(getpid()) + "_" +
                          std::to_string(shape.block_size);
  ASSERT_TRUE(DestroyTable(dir).ok());
  Options o;
  o.block_size = shape.block_size;
  o.s0 = 4;
  o.block_cache_bytes = shape.cache_bytes;
  o.checkpoint_bytes = shape.checkpoint_bytes;
  o.write_buffer_bytes = shape.write_buffer_bytes;
  const uint64_t budget = std::max(shape.cache_bytes, shape.checkpoint_bytes);
  auto opened = Table::Open(o, dir);
  ASSERT_TRUE(opened.ok()) << opened.status();
  auto table = *std::move(opened);
  std::mt19937_64 rng(shape.block_size + shape.write_buffer_bytes);
  Model model;
  constexpr int kKeys = 4000;
  constexpr int kOps = 40000;
  uint64_t largest = 0;
  for (int i = 0; i < kOps; ++i) {
    const std::string key = absl::StrCat("key", rng() % kKeys);
    if (rng() % 5 == 0) {
      ASSERT_TRUE(table->Delete(key).ok()) << i;
      model.erase(key);
    } else {
      const std::string value(20 + rng() % 180, static_cast<char>('a' + i % 26));
      ASSERT_TRUE(table->Put(key, value).ok()) << i;
      model[key] = value;
    }
    if ((i + 1) % 10000 == 0) {
      ASSERT_TRUE(table->Check().ok()) << table->Check() << " at " << i;
      ExpectContents(*table, model);
      const TableStats s = table->GetStats();
      // Past the budget, so blocks went ahead.
      ASSERT_GT(s.buckets * shape.block_size, budget);
      EXPECT_GT(s.written_ahead, 0u);
      largest = std::max(largest, s.buckets);
      // A checkpoint is due once the blocks written ahead since the last
      // pass the table (or the budget): their places and their old ones
      // keep the file within about three times the largest table, besides
      // the last checkpoint's own moves.
      EXPECT_LE(FileBytes(dir + "/blocks"),
                3 * largest * shape.block_size + 4 * budget +
                    64 * uint64_t{shape.block_size})
          << "at " << i;
    }
  }
  const TableStats before = table->GetStats();
  ASSERT_TRUE(table->Close().ok());
  opened = Table::Open(o, dir);
  ASSERT_TRUE(opened.ok()) << opened.status();
  table = *std::move(opened);
  ASSERT_TRUE(table->Check().ok()) << table->Check();
  ExpectContents(*table, model);
  std::printf("%u-byte blocks: %llu buckets, %llu blocks written ahead, "
              "%llu checkpoints\n",
              shape.block_size, (unsigned long long)before.buckets,
              (unsigned long long)before.written_ahead,
              (unsigned long long)before.checkpoints);
  ASSERT_TRUE(table->Close().ok());
  ASSERT_TRUE(DestroyTable(dir).ok());
}

// Puts made so far; a checkpoint's thread, once it has placed its blocks,
// waits for 500 more (at most a second), as a thread writing a large
// table's blocks would take that long, or until the writer asks for the
// table's stats (which wait for that thread).
std::atomic<uint64_t> puts_made{0};
std::atomic<bool> stats_wanted{false};
void SlowCheckpoints(std::string_view point) {
  if (point != "checkpoint: blocks placed") return;
  const uint64_t until = puts_made.load() + 500;
  for (int ms = 0;
       ms < 1000 && puts_made.load() < until && !stats_wanted.load(); ++ms) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

// A table of about its budget's size, held whole between checkpoints:
// while a checkpoint's thread writes the frozen blocks, the blocks the
// writes hold anew are written ahead, so that the held, frozen and
// leaving blocks together stay within the budget (less an eighth, which
// the blocks of one write may take), never the table twice over.
TEST(TableWriteAheadBudgetTest, FrozenAndHeldBlocksStayWithinTheBudget) {
  internal::SetKillHandler(SlowCheckpoints);
  const std::string dir =
      testing::TempDir() + "/rt_ahead_budget_" + std::to_string(getpid());
  ASSERT_TRUE(DestroyTable(dir).ok());
  Options o;
  o.block_size = 1024;
  o.s0 = 4;
  o.block_cache_bytes = 256 << 10;
  o.checkpoint_bytes = 256 << 10;
  o.write_buffer_bytes = 0;
  const uint64_t budget_blocks = o.block_cache_bytes / 1024;
  auto opened = Table::Open(o, dir);
  ASSERT_TRUE(opened.ok()) << opened.status();
  auto table = *std::move(opened);
  std::mt19937_64 rng(11);
  Model model;
  constexpr int kKeys = 1400;  // about 200 blocks of the budget's 256
  uint64_t most = 0;
  for (int i = 0; i < 60000; ++i) {
    const std::string key = absl::StrCat("key", rng() % kKeys);
    const std::string value(60 + rng() % 80, static_cast<char>('a' + i % 26));
    ASSERT_TRUE(table->Put(key, value).ok()) << i;
    puts_made.fetch_add(1);
    model[key] = value;
    if ((i + 1) % 250 != 0) continue;
    // After the checkpoint's thread, before its frozen blocks are given
    // back: the most the writes since can have held.
    stats_wanted.store(true);
    const TableStats s = table->GetStats();
    stats_wanted.store(false);
    most = std::max(most, s.unwritten_blocks);
    ASSERT_LE(s.unwritten_blocks, budget_blocks)
        << "at " << i << ", " << s.buckets << " buckets";
  }
  const TableStats s = table->GetStats();
  EXPECT_LE(s.buckets, budget_blocks);
  EXPECT_GT(s.buckets, budget_blocks / 2);
  EXPECT_GT(s.checkpoints, 10u);
  EXPECT_GT(s.written_ahead, 0u);
  EXPECT_GT(most, s.buckets);  // frozen and held anew, in part
  ASSERT_TRUE(table->Check().ok()) << table->Check();
  ExpectContents(*table, model);
  ASSERT_TRUE(table->Close().ok());
  internal::SetKillHandler(nullptr);
  opened = Table::Open(o, dir);
  ASSERT_TRUE(opened.ok()) << opened.status();
  table = *std::move(opened);
  ExpectContents(*table, model);
  ASSERT_TRUE(table->Close().ok());
  ASSERT_TRUE(DestroyTable(dir).ok());
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, TableWriteAheadTest,
    testing::Values(Shape{1024, 32 << 10, 32 << 10, 0},
                    Shape{1024, 0, 16 << 10, 8 << 10},
                    Shape{4096, 64 << 10, 64 << 10, 16 << 10},
                    Shape{512, 16 << 10, 32 << 10, 1 << 20}));

}  // namespace
}  // namespace roundtable
