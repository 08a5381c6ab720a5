// Table::Reserve: the buckets for the records expected, taken at once (an
// empty table's as empty blocks written in one pass), so that a fill adds
// none; a floor that survives reopening and that deletes do not go below;
// lifted by Reserve(0, 0, 0); a table with records grows to it; a crash
// in the middle leaves a table that opens, checks and holds its records.
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/internal/kill_points.h"
#include "gtest/gtest.h"
#include "roundtable/table.h"

namespace roundtable {
namespace {

std::string Key(uint64_t i) {
  return absl::StrFormat("%016x", (i * 0x9E3779B97F4A7C15ULL) ^ 0x1234);
}

std::string Dir(const std::string& name) {
  const std::string dir =
      testing::TempDir() + "/reserve_" + name + "_" + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  return dir;
}

Options Layout(uint32_t block_size) {
  Options o;
  o.block_size = block_size;
  o.s0 = 4;
  return o;
}

TEST(TableReserveTest, AFillOfWhatWasReservedAddsNoBucket) {
  for (const uint32_t block_size : {512u, 4096u}) {
    SCOPED_TRACE(block_size);
    const std::string dir = Dir("fill");
    auto table = *Table::Open(Layout(block_size), dir);
    const uint64_t n = 20000;
    ASSERT_TRUE(table->Reserve(n, 16, 60).ok());
    const TableStats reserved = table->GetStats();
    EXPECT_EQ(reserved.min_buckets, reserved.buckets);
    // (1 - epsilon) of the blocks' record space holds the n records of
    // 16 + 60 bytes, their two lengths and their slots (82 bytes, inline
    // even in 512-byte blocks).
    const double per_block = 0.9 * (block_size - 32);
    EXPECT_GE(reserved.buckets, n * 82 / per_block);
    EXPECT_LE(reserved.buckets, n * 82 / per_block + 2);
    // The empty blocks went to the file in one pass, not through the
    // journal, which holds the block map (8 bytes a bucket) besides.
    EXPECT_GE(reserved.physical_blocks.blocks_written, reserved.buckets);
    const uint64_t map_blocks = (reserved.buckets + (block_size - 32) / 8 - 1) /
                                ((block_size - 32) / 8);
    EXPECT_LT(reserved.physical_journal.blocks_written, 16u + map_blocks);
    const std::string value(60, 'v');
    for (uint64_t i = 0; i < n; ++i) {
      ASSERT_TRUE(table->Put(Key(i), value).ok()) << i;
    }
    ASSERT_TRUE(table->Flush().ok());
    const TableStats full = table->GetStats();
    EXPECT_EQ(full.logical.grows, 0u);
    EXPECT_EQ(full.buckets, reserved.buckets);
    EXPECT_EQ(full.records, n);
    ASSERT_TRUE(table->Check().ok()) << table->Check();
    for (uint64_t i = 0; i < n; i += 97) EXPECT_EQ(*table->Get(Key(i)), value);
    // A smaller reservation adds no bucket; it lowers the floor.
    ASSERT_TRUE(table->Reserve(n / 2, 16, 60).ok());
    EXPECT_EQ(table->GetStats().buckets, full.buckets);
    EXPECT_LT(table->GetStats().min_buckets, full.buckets * 6 / 10);
    ASSERT_TRUE(table->Close().ok());
    std::filesystem::remove_all(dir);
  }
}

// The reserved empty blocks are cached (as many as the cache holds), so a
// fill of a table that fits the cache reads no block and puts nothing in
// the write buffer: each put edits its block in memory.
TEST(TableReserveTest, AFillOfReservedCachedBlocksReadsNothing) {
  const std::string dir = Dir("cached");
  Options o = Layout(1024);
  o.block_cache_bytes = 4 << 20;
  auto opened = Table::Open(o, dir);
  ASSERT_TRUE(opened.ok()) << opened.status();
  std::unique_ptr<Table> table = *std::move(opened);
  constexpr uint64_t kRecords = 20000;
  ASSERT_TRUE(table->Reserve(kRecords, 16, 20).ok());
  const TableStats reserved = table->GetStats();
  ASSERT_LE(reserved.buckets * 1024, o.block_cache_bytes);
  for (uint64_t i = 0; i < kRecords; ++i) {
    ASSERT_TRUE(table->Put(Key(i), std::string(20, 'v')).ok());
  }
  const TableStats filled = table->GetStats();
  EXPECT_EQ(filled.physical_blocks.blocks_read,
            reserved.physical_blocks.blocks_read);
  EXPECT_EQ(filled.buffered_records, 0u);
  EXPECT_EQ(filled.buckets, reserved.buckets);
  for (uint64_t i = 0; i < kRecords; i += 97) {
    ASSERT_EQ(*table->Get(Key(i)), std::string(20, 'v')) << i;
  }
  EXPECT_TRUE(table->Check().ok());
  ASSERT_TRUE(table->Close().ok());
  ASSERT_TRUE(DestroyTable(dir).ok());
}

TEST(TableReserveTest, TheFloorSurvivesReopeningUntilLifted) {
  const std::string dir = Dir("floor");
  uint64_t reserved = 0;
  {
    auto table = *Table::Open(Layout(1024), dir);
    ASSERT_TRUE(table->Reserve(10000, 10, 20).ok());
    reserved = table->GetStats().buckets;
    for (uint64_t i = 0; i < 500; ++i) {
      ASSERT_TRUE(table->Put(Key(i), "twenty bytes of data").ok());
    }
    ASSERT_TRUE(table->Close().ok());
  }
  auto table = *Table::Open(Options(), dir);
  EXPECT_EQ(table->GetStats().buckets, reserved);
  EXPECT_EQ(table->GetStats().min_buckets, reserved);
  // Deletes leave the floor as it is.
  for (uint64_t i = 0; i < 400; ++i) ASSERT_TRUE(table->Delete(Key(i)).ok());
  ASSERT_TRUE(table->Flush().ok());
  EXPECT_EQ(table->GetStats().buckets, reserved);
  // Lifted: the next write lets the table shrink to its data.
  ASSERT_TRUE(table->Reserve(0, 0, 0).ok());
  EXPECT_EQ(table->GetStats().min_buckets, 0u);
  ASSERT_TRUE(table->Delete(Key(400)).ok());
  ASSERT_TRUE(table->Flush().ok());
  EXPECT_LT(table->GetStats().buckets, 20u);
  ASSERT_TRUE(table->Check().ok()) << table->Check();
  for (uint64_t i = 401; i < 500; ++i) {
    EXPECT_EQ(*table->Get(Key(i)), "twenty bytes of data");
  }
  ASSERT_TRUE(table->Close().ok());
  // Read-only and closed tables refuse it.
  Options ro;
  ro.read_only = true;
  auto reader = *Table::Open(ro, dir);
  EXPECT_EQ(reader->Reserve(10, 1, 1).code(),
            absl::StatusCode::kFailedPrecondition);
  reader.reset();
  EXPECT_EQ(table->Reserve(10, 1, 1).code(),
            absl::StatusCode::kFailedPrecondition);
  std::filesystem::remove_all(dir);
}

TEST(TableReserveTest, ATableWithRecordsGrowsToTheReservation) {
  const std::string dir = Dir("grow");
  Options o = Layout(512);
  auto table = *Table::Open(o, dir);
  std::map<std::string, std::string> model;
  for (uint64_t i = 0; i < 3000; ++i) {
    const std::string value(i % 90, static_cast<char>('a' + i % 26));
    ASSERT_TRUE(table->Put(Key(i), value).ok());
    model[Key(i)] = value;
  }
  const uint64_t before = table->GetStats().buckets;
  // Values too large for a block count as their references.
  ASSERT_TRUE(table->Reserve(30000, 16, 5000).ok());
  const TableStats grown = table->GetStats();
  EXPECT_GT(grown.buckets, 5 * before);
  EXPECT_EQ(grown.buckets, grown.min_buckets);
  EXPECT_LT(grown.buckets, 30000u);  // references, not 5000-byte values
  ASSERT_TRUE(table->Check().ok()) << table->Check();
  for (const auto& [key, value] : model) EXPECT_EQ(*table->Get(key), value);
  ASSERT_TRUE(table->Close().ok());
  std::filesystem::remove_all(dir);
}

TEST(TableReserveTest, PutsWaitingInTheWriteBufferFollowTheirKeys) {
  const std::string dir = Dir("buffered");
  // Reopened with no cache: the puts' blocks are not in memory, so the
  // puts wait in the buffer (a few a bucket: none fills a block).
  Options many = Layout(1024);
  many.s0 = 512;
  ASSERT_TRUE((*Table::Open(many, dir))->Close().ok());
  Options o;
  o.block_cache_bytes = 0;
  o.write_buffer_bytes = 8 << 20;
  auto table = *Table::Open(o, dir);
  for (uint64_t i = 0; i < 200; ++i) {
    ASSERT_TRUE(table->Put(Key(i), "buffered").ok());
  }
  const uint64_t before = table->GetStats().buckets;
  ASSERT_GT(table->GetStats().buffered_records, 0u);
  ASSERT_TRUE(table->Reserve(100000, 16, 8).ok());
  EXPECT_GT(table->GetStats().buckets, 2 * before);
  for (uint64_t i = 0; i < 200; ++i) {
    ASSERT_EQ(*table->Get(Key(i)), "buffered") << i;
  }
  ASSERT_TRUE(table->Flush().ok());
  ASSERT_TRUE(table->Check().ok()) << table->Check();
  EXPECT_EQ(*table->Count(), 200u);
  ASSERT_TRUE(table->Close().ok());
  std::filesystem::remove_all(dir);
}

// Ends the process at the named kill point (in the child only).
std::string_view g_die_at;
void DieAt(std::string_view point) {
  if (point == g_die_at) _exit(9);
}

TEST(TableReserveTest, ACrashInTheMiddleLeavesAWholeTable) {
  for (const char* point :
       {"reserve: buckets added", "checkpoint: journal synced",
        "checkpoint: superblock synced"}) {
    SCOPED_TRACE(point);
    const std::string dir = Dir("crash");
    {
      // Records written and deleted: the table is empty again.
      auto table = *Table::Open(Layout(1024), dir);
      for (uint64_t i = 0; i < 2000; ++i) {
        ASSERT_TRUE(table->Put(Key(i), "value").ok());
      }
      for (uint64_t i = 0; i < 2000; ++i) {
        ASSERT_TRUE(table->Delete(Key(i)).ok());
      }
      ASSERT_TRUE(table->Put("kept", "value").ok());
      ASSERT_TRUE(table->Delete("kept").ok());
      ASSERT_TRUE(table->Put("kept", "kept value").ok());
      ASSERT_TRUE(table->Delete("kept").ok());
      ASSERT_TRUE(table->Close().ok());
    }
    std::fflush(nullptr);
    const pid_t child = fork();
    if (child == 0) {
      g_die_at = point;
      internal::SetKillHandler(DieAt);
      auto table = Table::Open(Options(), dir);
      if (!table.ok()) _exit(1);
      (*table)->Reserve(50000, 16, 100).IgnoreError();
      _exit(0);
    }
    int status = 0;
    waitpid(child, &status, 0);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 9);
    auto table = *Table::Open(Options(), dir);
    ASSERT_TRUE(table->Check().ok()) << table->Check();
    EXPECT_EQ(*table->Count(), 0u);
    // The table takes records as before, and a reservation finishes.
    for (uint64_t i = 0; i < 1000; ++i) {
      ASSERT_TRUE(table->Put(Key(i), "after").ok());
    }
    ASSERT_TRUE(table->Reserve(50000, 16, 100).ok());
    ASSERT_TRUE(table->Check().ok()) << table->Check();
    EXPECT_EQ(*table->Count(), 1000u);
    EXPECT_EQ(*table->Get(Key(999)), "after");
    ASSERT_TRUE(table->Close().ok());
    std::filesystem::remove_all(dir);
  }
}

}  // namespace
}  // namespace roundtable
