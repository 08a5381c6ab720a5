// Table::Scan: a walk resumed from a cursor gives every key present from
// its first step to its last exactly once, while writes between the steps
// grow and shrink the table by many buckets, over block sizes, s0, write
// buffers and caches; and nothing it gives was never written.
#include <unistd.h>

#include <functional>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "roundtable/table.h"

namespace roundtable {
namespace {

struct ScanShape {
  uint32_t block_size;
  uint64_t s0;
  uint64_t write_buffer_bytes;
  uint64_t block_cache_bytes;
};

class TableScanTest : public testing::TestWithParam<ScanShape> {
 protected:
  void SetUp() override {
    static int counter = 0;
    dir_ = absl::StrCat(testing::TempDir(), "/rt_scan_", getpid(), "_",
                        counter++);
    ASSERT_TRUE(DestroyTable(dir_).ok());
    Options o;
    o.block_size = GetParam().block_size;
    o.s0 = GetParam().s0;
    o.write_buffer_bytes = GetParam().write_buffer_bytes;
    o.block_cache_bytes = GetParam().block_cache_bytes;
    auto t = Table::Open(o, dir_);
    ASSERT_TRUE(t.ok()) << t.status();
    table_ = *std::move(t);
  }
  void TearDown() override {
    if (table_) EXPECT_TRUE(table_->Close().ok());
    EXPECT_TRUE(DestroyTable(dir_).ok());
  }

  // Every step of a walk from cursor 0; `between` runs after each step.
  std::vector<std::string> Walk(size_t count,
                                const std::function<void()>& between) {
    std::vector<std::string> keys;
    uint64_t cursor = 0;
    size_t steps = 0;
    do {
      auto next = table_->Scan(cursor, count, &keys);
      EXPECT_TRUE(next.ok()) << next.status();
      if (!next.ok()) break;
      // Each step moves the cursor forward, or ends the walk.
      EXPECT_TRUE(*next == 0 || *next > cursor);
      cursor = *next;
      ++steps;
      between();
    } while (cursor != 0 && steps < 1000000);
    return keys;
  }

  std::string dir_;
  std::unique_ptr<Table> table_;
};

std::string Key(const char* kind, uint64_t i) {
  return absl::StrCat(kind, i, "-", i * 0x9E3779B97F4A7C15ULL);
}

TEST_P(TableScanTest, AQuietTableGivesEachKeyOnceForEveryCount) {
  std::set<std::string> all;
  for (uint64_t i = 0; i < 3000; ++i) {
    all.insert(Key("k", i));
    ASSERT_TRUE(table_->Put(Key("k", i), std::string(i % 50, 'v')).ok());
  }
  for (const size_t count : {size_t{0}, size_t{1}, size_t{10}, size_t{100000}}) {
    SCOPED_TRACE(count);
    const std::vector<std::string> keys = Walk(count, [] {});
    EXPECT_EQ(keys.size(), all.size());
    EXPECT_EQ(std::set<std::string>(keys.begin(), keys.end()), all);
  }
  // An empty table: one walk, nothing given.
  for (const std::string& k : all) ASSERT_TRUE(table_->Delete(k).ok());
  EXPECT_TRUE(Walk(10, [] {}).empty());
}

TEST_P(TableScanTest, KeysPresentThroughoutAreGivenOnceWhileTheTableGrowsAndShrinks) {
  std::mt19937_64 rng(GetParam().block_size * 31 + GetParam().s0);
  // Stable keys stay for the whole walk; churn keys come and go between
  // its steps, in waves large enough to double the table and take it
  // back.
  std::set<std::string> stable, ever;
  for (uint64_t i = 0; i < 1500; ++i) {
    stable.insert(Key("s", i));
    ASSERT_TRUE(table_->Put(Key("s", i), std::string(20, 's')).ok());
  }
  ever = stable;
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE(round);
    std::map<std::string, bool> churn;  // key -> present
    uint64_t next_churn = 0;
    const uint64_t start = table_->GetStats().logical.grows;
    const uint64_t shrinks = table_->GetStats().logical.shrinks;
    size_t step = 0;
    const std::vector<std::string> keys = Walk(1 + rng() % 20, [&] {
      // Grow through the first part of the walk, shrink after it.
      const bool grow = (step++ / 8) % 2 == 0;
      for (int i = 0; i < 200; ++i) {
        if (grow) {
          const std::string k = Key("c", round * 1000000 + next_churn++);
          ASSERT_TRUE(table_->Put(k, std::string(rng() % 60, 'c')).ok());
          churn[k] = true;
          ever.insert(k);
        } else if (!churn.empty()) {
          auto it = churn.begin();
          std::advance(it, rng() % churn.size());
          ASSERT_TRUE(table_->Delete(it->first).ok());
          churn.erase(it);
        }
      }
    });
    std::map<std::string, int> seen;
    for (const std::string& k : keys) ++seen[k];
    for (const std::string& k : stable) {
      ASSERT_EQ(seen[k], 1) << k;
    }
    for (const auto& [k, times] : seen) {
      ASSERT_TRUE(ever.contains(k)) << "never written: " << k;
      ASSERT_EQ(times, 1) << k;
    }
    // The walk crossed both kinds of change.
    EXPECT_GT(table_->GetStats().logical.grows, start);
    EXPECT_GT(table_->GetStats().logical.shrinks, shrinks);
    for (const auto& [k, present] : churn) {
      ASSERT_TRUE(table_->Delete(k).ok());
    }
  }
}

TEST_P(TableScanTest, AnyCursorStartsAWalkFromThatHash) {
  for (uint64_t i = 0; i < 2000; ++i) {
    ASSERT_TRUE(table_->Put(Key("k", i), "v").ok());
  }
  // A walk from the middle of the circle, and one from 0 stopped once it
  // passed the middle: between them every key, and the first none twice.
  const uint64_t middle = uint64_t{1} << 63;
  std::vector<std::string> second;
  uint64_t cursor = middle;
  do {
    auto next = table_->Scan(cursor, 50, &second);
    ASSERT_TRUE(next.ok());
    cursor = *next;
  } while (cursor != 0);
  std::vector<std::string> first;
  cursor = 0;
  while (true) {
    auto next = table_->Scan(cursor, 0, &first);
    ASSERT_TRUE(next.ok());
    if (*next == 0 || *next > middle) break;
    cursor = *next;
  }
  std::set<std::string> both(second.begin(), second.end());
  EXPECT_EQ(both.size(), second.size());
  for (const std::string& k : first) both.insert(k);
  EXPECT_EQ(both.size(), 2000u);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, TableScanTest,
    testing::Values(ScanShape{512, 1, 0, 8 << 20}, ScanShape{512, 3, 0, 0},
                    ScanShape{512, 4, 1 << 20, 8 << 20},
                    ScanShape{4096, 2, 64 << 20, 0},
                    ScanShape{4096, 8, 0, 8 << 20}),
    [](const testing::TestParamInfo<ScanShape>& info) {
      return absl::StrCat("bs", info.param.block_size, "_s0_", info.param.s0,
                          "_buffer", info.param.write_buffer_bytes >> 10,
                          "k_cache", info.param.block_cache_bytes >> 20, "m");
    });

TEST(TableScanClosedTest, AClosedTableRefusesAStep) {
  const std::string dir =
      absl::StrCat(testing::TempDir(), "/rt_scan_closed_", getpid());
  ASSERT_TRUE(DestroyTable(dir).ok());
  auto t = Table::Open(Options{}, dir);
  ASSERT_TRUE(t.ok());
  ASSERT_TRUE((*t)->Close().ok());
  std::vector<std::string> keys;
  EXPECT_EQ((*t)->Scan(0, 10, &keys).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(DestroyTable(dir).ok());
}

}  // namespace
}  // namespace roundtable
