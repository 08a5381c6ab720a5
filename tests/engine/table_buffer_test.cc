// Deletes in the write buffer: a delete whose block is not in memory waits
// there as a tombstone, reading nothing; every read (Get, MultiGet, Locate,
// the walk, Count) takes the key as absent; the tombstones outlive a close
// in the buffer's copy, its drain removes the stored records, salvage
// reads them from the copy, and a table of format version 10 opens and is
// written as the current version.
#include <fcntl.h>
#include <unistd.h>

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/internal/superblock.h"
#include "gtest/gtest.h"
#include "io/block_device.h"
#include "roundtable/table.h"
#include "tests/engine/table_dirs.h"

namespace roundtable {
namespace {

std::string TempDir(const std::string& tag) {
  return FreshTableDir("rt_buffer", tag);
}

std::unique_ptr<Table> OpenOrDie(const Options& o, const std::string& dir) {
  auto t = Table::Open(o, dir);
  EXPECT_TRUE(t.ok()) << t.status();
  return t.ok() ? *std::move(t) : nullptr;
}

// 1 KiB blocks, no cache, a write buffer: once a checkpoint has written
// the held blocks, no block is in memory and every put or delete waits.
Options Buffered() {
  Options o;
  o.backend = io::Backend::kPosix;
  o.block_size = 1024;
  o.s0 = 4;
  o.block_cache_bytes = 0;
  o.write_buffer_bytes = 1 << 20;
  return o;
}

std::string Key(int i) { return absl::StrCat("key", i); }
std::string Value(int i) { return absl::StrCat("value of ", i); }

std::map<std::string, std::string> Walk(Table& table) {
  std::map<std::string, std::string> out;
  auto it = table.NewIterator();
  for (; it->Valid(); it->Next()) {
    EXPECT_TRUE(out.emplace(it->key(), it->value()).second) << it->key();
  }
  EXPECT_TRUE(it->status().ok()) << it->status();
  return out;
}

// Every read agrees with the model.
void ExpectContents(Table& table,
                    const std::map<std::string, std::string>& model,
                    int keys) {
  for (int i = 0; i < keys; ++i) {
    auto got = table.Get(Key(i));
    auto it = model.find(Key(i));
    if (it == model.end()) {
      ASSERT_TRUE(absl::IsNotFound(got.status())) << Key(i);
    } else {
      ASSERT_TRUE(got.ok()) << Key(i) << " " << got.status();
      ASSERT_EQ(*got, it->second);
    }
  }
  std::vector<std::string> names;
  for (int i = 0; i < keys; ++i) names.push_back(Key(i));
  const std::vector<std::string_view> views(names.begin(), names.end());
  const auto many = table.MultiGet(views);
  for (int i = 0; i < keys; ++i) {
    auto it = model.find(Key(i));
    if (it == model.end()) {
      EXPECT_TRUE(absl::IsNotFound(many[i].status())) << Key(i);
    } else {
      ASSERT_TRUE(many[i].ok()) << Key(i);
      EXPECT_EQ(*many[i], it->second);
    }
  }
  EXPECT_EQ(Walk(table), model);
  auto count = table.Count();
  ASSERT_TRUE(count.ok()) << count.status();
  EXPECT_EQ(*count, model.size());
  EXPECT_TRUE(table.Check().ok()) << table.Check();
}

// Stored keys 0..n-1, then deletes of every third stored key and of absent
// keys, a put then a delete of a new key, and a delete then a put of a
// stored one: the deletes read no block. A deleted key that was in the
// stash is removed there at once (no block to read).
struct Deleted {
  std::map<std::string, std::string> model;
  int keys = 0;  // Key(0..keys-1) covers every key touched
  std::vector<std::string> tombstones;  // deleted keys waiting as tombstones
};

Deleted DeleteWhileNothingIsInMemory(Table& table, int n) {
  Deleted d;
  for (int i = 0; i < n; ++i) {
    EXPECT_TRUE(table.Put(Key(i), Value(i)).ok());
    d.model[Key(i)] = Value(i);
  }
  EXPECT_TRUE(table.Flush().ok());
  EXPECT_TRUE(table.Checkpoint().ok());
  uint64_t stashed = 0;
  for (int i = 0; i < n; i += 3) {
    auto at = table.Locate(Key(i));
    EXPECT_TRUE(at.ok()) << at.status();
    if (at.ok() && at->where == KeyLocation::Where::kStash) {
      ++stashed;
    } else {
      d.tombstones.push_back(Key(i));
    }
  }
  const TableStats start = table.GetStats();
  EXPECT_EQ(start.buffered_records, 0u);
  EXPECT_EQ(start.records, static_cast<uint64_t>(n));
  for (int i = 0; i < n; i += 3) {
    EXPECT_TRUE(table.Delete(Key(i)).ok());
    d.model.erase(Key(i));
  }
  for (int i = n; i < n + 20; ++i) EXPECT_TRUE(table.Delete(Key(i)).ok());
  EXPECT_TRUE(table.Put(Key(n + 20), "briefly").ok());
  EXPECT_TRUE(table.Delete(Key(n + 20)).ok());
  EXPECT_TRUE(table.Delete(Key(1)).ok());
  EXPECT_TRUE(table.Put(Key(1), "back").ok());
  d.model[Key(1)] = "back";
  d.keys = n + 21;
  const TableStats after = table.GetStats();
  EXPECT_EQ(after.physical_blocks.blocks_read,
            start.physical_blocks.blocks_read)
      << "a buffered delete reads no block";
  EXPECT_EQ(after.records, n - stashed) << "only the stash's removed yet";
  // Each touched key waits once: the stored ones deleted (but those of the
  // stash), the absent ones, the new key (its put now a tombstone), key 1
  // (its tombstone now a put again).
  EXPECT_EQ(after.buffered_records, d.tombstones.size() + 20 + 1 + 1);
  return d;
}

TEST(TableBufferTest, DeletesWaitAsTombstonesAndEveryReadTakesThemAsAbsent) {
  const std::string dir = TempDir("tombstones");
  auto table = OpenOrDie(Buffered(), dir);
  ASSERT_NE(table, nullptr);
  const int n = 600;
  const Deleted d = DeleteWhileNothingIsInMemory(*table, n);
  ASSERT_GT(d.tombstones.size(), 150u);
  const uint64_t reads = table->GetStats().logical.get_reads;
  for (const std::string& key : d.tombstones) {
    ASSERT_TRUE(absl::IsNotFound(table->Get(key).status())) << key;
    auto at = table->Locate(key);
    ASSERT_TRUE(at.ok()) << at.status();
    EXPECT_EQ(at->where, KeyLocation::Where::kAbsent) << key;
  }
  EXPECT_EQ(table->GetStats().logical.get_reads, reads)
      << "the tombstones answer the reads of deleted keys";
  ExpectContents(*table, d.model, d.keys);

  // The tombstones outlive a close, in the buffer's copy.
  const uint64_t buffered = table->GetStats().buffered_records;
  ASSERT_TRUE(table->Close().ok());
  table = OpenOrDie(Buffered(), dir);
  ASSERT_NE(table, nullptr);
  EXPECT_EQ(table->GetStats().buffered_records, buffered);
  ExpectContents(*table, d.model, d.keys);

  // Drained: the stored records are gone, each bucket's block read once
  // for all its tombstones (and its shrinks' reads), not once a delete.
  const TableStats before = table->GetStats();
  ASSERT_TRUE(table->Flush().ok());
  const TableStats flushed = table->GetStats();
  EXPECT_EQ(flushed.buffered_records, 0u);
  EXPECT_EQ(flushed.records, d.model.size());
  EXPECT_LE(flushed.physical_blocks.blocks_read -
                before.physical_blocks.blocks_read,
            2 * before.buckets);
  EXPECT_LT(2 * before.buckets, d.tombstones.size());
  ExpectContents(*table, d.model, d.keys);
  ASSERT_TRUE(table->Close().ok());
  table = OpenOrDie(Buffered(), dir);
  ASSERT_NE(table, nullptr);
  ExpectContents(*table, d.model, d.keys);
}

// A delete whose block is held edits it at once, as a put does, and drops
// a buffered put of its key there and then.
TEST(TableBufferTest, ADeleteOfAHeldBlockEditsItAtOnce) {
  const std::string dir = TempDir("held");
  auto table = OpenOrDie(Buffered(), dir);
  ASSERT_NE(table, nullptr);
  for (int i = 0; i < 300; ++i) ASSERT_TRUE(table->Put(Key(i), "v").ok());
  // The buffered puts drained, and nothing checkpointed yet: every block is
  // held.
  ASSERT_TRUE(table->Flush().ok());
  const TableStats start = table->GetStats();
  ASSERT_EQ(start.buffered_records, 0u);
  for (int i = 0; i < 300; i += 2) ASSERT_TRUE(table->Delete(Key(i)).ok());
  const TableStats after = table->GetStats();
  EXPECT_EQ(after.buffered_records, 0u);
  EXPECT_EQ(after.records, 150u);
  EXPECT_GE(after.logical.delete_writes - start.logical.delete_writes, 150u);
}

// The tombstones a closed table's buffer copy holds are applied by
// salvage: a key deleted there is not saved.
TEST(TableBufferTest, SalvageTakesTheCopysTombstonesAsDeletes) {
  const std::string dir = TempDir("salvage");
  const std::string saved = dir + ".saved";
  ASSERT_TRUE(DestroyTable(saved).ok());
  Deleted d;
  {
    auto table = OpenOrDie(Buffered(), dir);
    ASSERT_NE(table, nullptr);
    d = DeleteWhileNothingIsInMemory(*table, 600);
    ASSERT_TRUE(table->Close().ok());  // the log is empty after it
  }
  // Both superblocks damaged: the table does not open, and salvage reads
  // its files one by one (the layout from the journal's superblock).
  const int fd = open((dir + "/blocks").c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  for (const off_t at : {off_t{100}, off_t{1024 + 100}}) {
    ASSERT_EQ(pwrite(fd, "DAMAGE!!", 8, at), 8);
  }
  close(fd);
  ASSERT_EQ(Table::Open(Buffered(), dir).status().code(),
            absl::StatusCode::kDataLoss);
  auto report = SalvageTable(dir, saved);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_FALSE(report->opened);
  EXPECT_EQ(report->saved, d.model.size());
  auto table = OpenOrDie(Buffered(), saved);
  ASSERT_NE(table, nullptr);
  ExpectContents(*table, d.model, d.keys);
}

uint32_t FormatVersion(const std::string& dir) {
  const int fd = open((dir + "/blocks").c_str(), O_RDONLY);
  EXPECT_GE(fd, 0);
  io::AlignedBuffer buffer(4096);
  uint32_t newest = 0;
  for (uint64_t slot = 0; slot < 2; ++slot) {
    EXPECT_EQ(pread(fd, buffer.data(), 4096, slot * 4096), 4096);
    auto sb = internal::DecodeSuperblock(buffer.span());
    if (sb.ok()) newest = std::max(newest, sb->format_version);
  }
  close(fd);
  return newest;
}

// Version 10, whose buffer copy holds no tombstones, opens as it is and
// is the current version once a writer has checkpointed.
TEST(TableBufferTest, AVersion10TableOpensAndIsWrittenAsTheCurrentVersion) {
  const std::string dir = TempDir("v10");
  Options o;
  o.backend = io::Backend::kPosix;
  {
    auto table = OpenOrDie(o, dir);
    ASSERT_NE(table, nullptr);
    for (int i = 0; i < 100; ++i) {
      ASSERT_TRUE(table->Put(Key(i), Value(i)).ok());
    }
    ASSERT_TRUE(table->Close().ok());
  }
  ASSERT_EQ(FormatVersion(dir), internal::kFormatVersion);
  const int fd = open((dir + "/blocks").c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  for (uint64_t slot = 0; slot < 2; ++slot) {
    io::AlignedBuffer buffer(4096);
    ASSERT_EQ(pread(fd, buffer.data(), 4096, slot * 4096), 4096);
    auto sb = internal::DecodeSuperblock(buffer.span());
    if (!sb.ok()) continue;
    sb->format_version = 10;
    internal::EncodeSuperblock(*sb, buffer.span());
    ASSERT_EQ(pwrite(fd, buffer.data(), 4096, slot * 4096), 4096);
  }
  close(fd);
  ASSERT_EQ(FormatVersion(dir), 10u);
  auto table = OpenOrDie(o, dir);
  ASSERT_NE(table, nullptr);
  EXPECT_EQ(*table->Get(Key(7)), Value(7));
  ASSERT_TRUE(table->Delete(Key(7)).ok());
  ASSERT_TRUE(table->Close().ok());
  EXPECT_EQ(FormatVersion(dir), internal::kFormatVersion);
  table = OpenOrDie(o, dir);
  ASSERT_NE(table, nullptr);
  EXPECT_TRUE(absl::IsNotFound(table->Get(Key(7)).status()));
  EXPECT_EQ(*table->Count(), 99u);
  EXPECT_TRUE(table->Check().ok()) << table->Check();
}

}  // namespace
}  // namespace roundtable
