// Blocks written ahead of a checkpoint (docs/durability.md, step 2a): a
// table larger than its held blocks' budget, driven by random puts,
// overwrites and deletes against std::map, in several shapes. It writes
// blocks ahead, stays whole (Check, every key read back, the iterator
// equal to the model) through checkpoints and a reopen, and keeps its
// block file within the bound its checkpoints promise.
#include <sys/stat.h>
#include <unistd.h>

#include <map>
#include <random>
#include <string>

#include "absl/strings/str_cat.h"
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

INSTANTIATE_TEST_SUITE_P(
    Shapes, TableWriteAheadTest,
    testing::Values(Shape{1024, 32 << 10, 32 << 10, 0},
                    Shape{1024, 0, 16 << 10, 8 << 10},
                    Shape{4096, 64 << 10, 64 << 10, 16 << 10},
                    Shape{512, 16 << 10, 32 << 10, 1 << 20}));

}  // namespace
}  // namespace roundtable
