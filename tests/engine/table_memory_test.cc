// One memory budget (Options::memory_bytes): the cache gives the write
// buffer twice the memory its records take, in steps, and takes it back
// once the buffer is drained; the table holds what a std::map holds
// through puts, overwrites, deletes and reopens, whatever the budget.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <random>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "io/block_device.h"
#include "roundtable/table.h"
#include "tests/engine/table_dirs.h"

namespace roundtable {
namespace {

std::string TempDir(const std::string& tag) {
  return FreshTableDir("rt_memory", tag);
}

Options Budget(uint64_t bytes) {
  Options o;
  o.backend = io::Backend::kPosix;
  o.block_size = 1024;
  o.s0 = 4;
  o.memory_bytes = bytes;
  // Ignored with one budget.
  o.block_cache_bytes = 1 << 30;
  o.write_buffer_bytes = 1 << 30;
  return o;
}

// What the buffered records take, as the budget counts them.
uint64_t BufferMemory(const TableStats& s) {
  return s.buffered_bytes + 32 * s.buffered_records;
}

TEST(TableMemoryTest, TheCacheGivesTheBufferItsShareAndTakesItBack) {
  constexpr uint64_t kBudget = 256 << 10;
  constexpr uint64_t kStep = kBudget / 32;
  const std::string dir = TempDir("share");
  auto table = *Table::Open(Budget(kBudget), dir);
  EXPECT_EQ(table->GetStats().cache_bytes, kBudget);
  std::mt19937_64 rng(11);
  uint64_t least_cache = kBudget, most_buffered = 0;
  // Random keys into a table several times the budget: past the held
  // blocks' budget, puts wait in the buffer.
  for (int i = 0; i < 20000; ++i) {
    const absl::Status put =
        table->Put(absl::StrCat("key", rng() % 100000), std::string(60, 'v'));
    ASSERT_TRUE(put.ok()) << i << ": " << put;
    if (i % 50 != 0) continue;
    const TableStats s = table->GetStats();
    const uint64_t buffer = BufferMemory(s);
    // The buffer's limit is a quarter of the budget, and the cache never
    // keeps more than the budget less twice the buffer (but a step).
    EXPECT_LE(buffer, kBudget / 4 + 2048) << i;
    EXPECT_LE(s.cache_bytes + std::min(kBudget / 2, 2 * buffer),
              kBudget + kStep)
        << i;
    EXPECT_GE(s.cache_bytes, kBudget / 2 - kStep) << i;
    least_cache = std::min(least_cache, s.cache_bytes);
    most_buffered = std::max(most_buffered, s.buffered_records);
  }
  const TableStats s = table->GetStats();
  ASSERT_GT(s.buckets * s.block_size, 2 * kBudget);
  // The memory outside the budget, as the table counts it: the stash's
  // records and more, and the per-bucket arrays (two 2-byte filters, the
  // cache's 4-byte index and the block map's 8-byte places at least).
  EXPECT_GT(s.stash_memory_bytes, s.stash_bytes);
  EXPECT_GE(s.bucket_memory_bytes, s.buckets * 16);
  EXPECT_GT(most_buffered, 0u);
  EXPECT_LT(least_cache, kBudget - kBudget / 4);
  // Drained: the cache takes the whole budget back.
  ASSERT_TRUE(table->Flush().ok());
  EXPECT_EQ(table->GetStats().buffered_records, 0u);
  EXPECT_EQ(table->GetStats().cache_bytes, kBudget);
  EXPECT_TRUE(table->Check().ok());
}

TEST(TableMemoryTest, EveryBudgetHoldsWhatTheModelHolds) {
  for (const uint64_t budget : {uint64_t{1024}, uint64_t{64} << 10,
                                uint64_t{1} << 20, uint64_t{16} << 20}) {
    SCOPED_TRACE(budget);
    const std::string dir = TempDir("model");
    std::map<std::string, std::string> model;
    std::mt19937_64 rng(budget);
    {
      auto table = *Table::Open(Budget(budget), dir);
      for (int i = 0; i < 6000; ++i) {
        const std::string key = absl::StrCat("k", rng() % 3000);
        if (rng() % 4 == 0) {
          ASSERT_TRUE(table->Delete(key).ok());
          model.erase(key);
        } else {
          const std::string value(rng() % 120, static_cast<char>('a' + i % 26));
          ASSERT_TRUE(table->Put(key, value).ok());
          model[key] = value;
        }
      }
      for (const auto& [key, value] : model) {
        auto got = table->Get(key);
        ASSERT_TRUE(got.ok()) << key << ": " << got.status();
        EXPECT_EQ(*got, value);
      }
      EXPECT_EQ(*table->Count(), model.size());
      EXPECT_TRUE(table->Check().ok());
      EXPECT_LE(table->GetStats().cache_bytes, std::max<uint64_t>(budget, 1024));
    }
    // Reopened with the budget, and without it: the same records.
    for (const uint64_t again : {budget, uint64_t{0}}) {
      Options o = Budget(again);
      if (again == 0) o.block_cache_bytes = 8 << 20;
      auto table = *Table::Open(o, dir);
      std::map<std::string, std::string> found;
      auto it = table->NewIterator();
      for (; it->Valid(); it->Next()) found[std::string(it->key())] = it->value();
      ASSERT_TRUE(it->status().ok()) << it->status();
      EXPECT_TRUE(found == model);
      EXPECT_TRUE(table->Check().ok());
    }
    ASSERT_TRUE(DestroyTable(dir).ok());
  }
}

TEST(TableMemoryTest, ABudgetNoMachineHasIsRefused) {
  const std::string dir = TempDir("refused");
  for (const bool one : {true, false}) {
    Options o = Budget(0);
    (one ? o.memory_bytes : o.block_cache_bytes) = uint64_t{1} << 62;
    const auto table = Table::Open(o, dir);
    ASSERT_FALSE(table.ok());
    EXPECT_EQ(table.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(table.status().message().find("machine's memory"),
              std::string_view::npos)
        << table.status();
  }
  EXPECT_FALSE(std::filesystem::exists(dir));  // nothing was made
}

}  // namespace
}  // namespace roundtable
