// Growth from empty to 10^6 records and back to empty, with the table's
// invariants checked along the way and every record read back. Labelled
// slow: tools/test.sh --all runs it.
#include <unistd.h>

#include <string>

#include "absl/strings/str_format.h"
#include "roundtable/table.h"
#include "gtest/gtest.h"

namespace roundtable {
namespace {

std::string Key(uint64_t i) {
  return absl::StrFormat("%016x", (i * 0x9E3779B97F4A7C15ULL) ^ 0x2545F491);
}

TEST(TableGrowthTest, ToAMillionRecordsAndBackToEmpty) {
  const std::string dir =
      testing::TempDir() + "/rt_growth_" + std::to_string(getpid());
  ASSERT_TRUE(DestroyTable(dir).ok());
  Options o;
  o.block_cache_bytes = uint64_t{256} << 20;
  auto opened = Table::Open(o, dir);
  ASSERT_TRUE(opened.ok()) << opened.status();
  auto table = *std::move(opened);
  const uint64_t n = 1000000;
  const std::string value(100, 'v');
  uint64_t buckets_seen = 0;
  for (uint64_t i = 0; i < n; ++i) {
    ASSERT_TRUE(table->Put(Key(i), value).ok()) << i;
    if ((i + 1) % 200000 == 0) {
      ASSERT_TRUE(table->Check().ok()) << table->Check() << " at " << i;
      const TableStats s = table->GetStats();
      EXPECT_GT(s.buckets, buckets_seen);
      buckets_seen = s.buckets;
      EXPECT_GE(s.utilization, 0.85);
    }
  }
  for (uint64_t i = 0; i < n; ++i) {
    auto v = table->Get(Key(i));
    ASSERT_TRUE(v.ok()) << i << ": " << v.status();
    ASSERT_EQ(*v, value);
  }
  // Close and reopen: the same million records.
  ASSERT_TRUE(table->Close().ok());
  opened = Table::Open(o, dir);
  ASSERT_TRUE(opened.ok()) << opened.status();
  table = *std::move(opened);
  // Every key is new: the buffered puts are the rest of them.
  const TableStats reopened = table->GetStats();
  EXPECT_EQ(reopened.records + reopened.buffered_records, n);
  ASSERT_TRUE(table->Check().ok()) << table->Check();
  ASSERT_TRUE(table->Flush().ok());
  EXPECT_EQ(table->GetStats().records, n);
  for (uint64_t i = 0; i < n; ++i) {
    ASSERT_TRUE(table->Delete(Key(i)).ok()) << i;
    if ((i + 1) % 200000 == 0) {
      ASSERT_TRUE(table->Check().ok()) << table->Check() << " at " << i;
    }
  }
  // Deletes whose blocks were not in memory wait in the write buffer.
  EXPECT_EQ(*table->Count(), 0u);
  ASSERT_TRUE(table->Flush().ok());
  const TableStats s = table->GetStats();
  EXPECT_EQ(s.records, 0u);
  EXPECT_EQ(s.buckets, Options::kDefaultS0);  // the default layout
  EXPECT_EQ(s.stash_records, 0u);
  table.reset();
  ASSERT_TRUE(DestroyTable(dir).ok());
}

}  // namespace
}  // namespace roundtable
