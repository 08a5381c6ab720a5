// WriteBuffer: buffered puts and deletes and their drain policy over a
// BucketTable, against a std::map; buffered puts following their keys through
// distributes; the memory bound; the copy, a snapshot at each checkpoint.
#include "engine/internal/write_buffer.h"

#include <map>
#include <random>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "tests/engine/internal/engine_parts.h"
#include "gtest/gtest.h"

namespace roundtable::internal {
namespace {

constexpr uint32_t kBlock = 512;

// Every buffered put sits in the list of its key's bucket.
void ExpectBuffersByBucket(EngineParts& parts) {
  parts.buffer->records().ForEachList(
      [&](uint64_t b, const Stash::List& list) {
        for (const Stash::Entry& e : list) {
          EXPECT_EQ(parts.table->BucketOf(e.hash), b);
          EXPECT_EQ(parts.table->Hash(e.record.key()), e.hash);
        }
      });
}

TEST(WriteBufferTest, APutWaitsReadingNothingUntilItsBucketIsDrained) {
  EngineParts parts(kBlock, 8, 0, /*buffer_bytes=*/1 << 20);
  const io::IoStats before = parts.blocks->stats();
  parts.buffer->Begin(1);
  ASSERT_TRUE(parts.buffer->Put("a", "1").ok());
  ASSERT_TRUE(parts.buffer->Put("a", "2").ok());  // replaced where it waits
  ASSERT_TRUE(parts.buffer->Put("b", "3").ok());
  parts.EndWrite();
  EXPECT_EQ(parts.blocks->stats().blocks_read, before.blocks_read);
  EXPECT_EQ(parts.buffer->records().records(), 2u);
  EXPECT_EQ(parts.table->record_count(), 0u);
  EXPECT_EQ(parts.Lookup("a"), "2");
  while (!parts.buffer->empty()) ASSERT_TRUE(parts.buffer->DrainNext().ok());
  EXPECT_EQ(parts.table->record_count(), 2u);
  EXPECT_EQ(parts.Lookup("a"), "2");
  EXPECT_EQ(parts.Lookup("b"), "3");
  EXPECT_EQ(parts.buffer->drains(), parts.table->logical().put_writes);
}

TEST(WriteBufferTest, ADeleteDropsTheBufferedPutAndTheStoredRecord) {
  EngineParts parts(kBlock, 8, 0, 1 << 20);
  parts.buffer->Begin(1);
  ASSERT_TRUE(parts.buffer->Put("k", "stored").ok());
  while (!parts.buffer->empty()) ASSERT_TRUE(parts.buffer->DrainNext().ok());
  ASSERT_TRUE(parts.buffer->Put("k", "buffered").ok());
  EXPECT_EQ(parts.Lookup("k"), "buffered");
  ASSERT_TRUE(parts.buffer->Delete("k").ok());
  parts.EndWrite();
  EXPECT_EQ(parts.Lookup("k"), std::nullopt);
  EXPECT_TRUE(parts.buffer->empty());
  EXPECT_EQ(parts.table->record_count(), 0u);
}

// A delete whose block is not in memory waits as a tombstone, reading
// nothing; its drain removes the stored record.
TEST(WriteBufferTest, ADeleteWaitsAsATombstoneUntilItsBucketIsDrained) {
  EngineParts parts(kBlock, 8, 0, 1 << 20);
  parts.buffer->Begin(2);
  ASSERT_TRUE(parts.buffer->Put("k", "stored").ok());
  ASSERT_TRUE(parts.buffer->Put("j", "stored").ok());
  while (!parts.buffer->empty()) ASSERT_TRUE(parts.buffer->DrainNext().ok());
  parts.EndWrite();
  parts.CheckpointBlocks();  // no block held, none cached
  const io::IoStats before = parts.blocks->stats();
  parts.buffer->Begin(2);
  ASSERT_TRUE(parts.buffer->Delete("k").ok());
  ASSERT_TRUE(parts.buffer->Delete("absent").ok());
  parts.EndWrite();
  EXPECT_EQ(parts.blocks->stats().blocks_read, before.blocks_read);
  EXPECT_EQ(parts.buffer->records().records(), 2u);
  EXPECT_EQ(parts.buffer->deletes(), 2u);
  EXPECT_EQ(parts.table->record_count(), 2u);
  EXPECT_EQ(parts.Lookup("k"), std::nullopt);
  EXPECT_EQ(parts.Lookup("j"), "stored");
  // A put takes the tombstone's place, and a delete the put's.
  parts.buffer->Begin(1);
  ASSERT_TRUE(parts.buffer->Put("absent", "now").ok());
  parts.EndWrite();
  EXPECT_EQ(parts.buffer->deletes(), 1u);
  EXPECT_EQ(parts.Lookup("absent"), "now");
  parts.buffer->Begin(1);
  ASSERT_TRUE(parts.buffer->Delete("absent").ok());
  parts.EndWrite();
  EXPECT_EQ(parts.buffer->deletes(), 2u);
  while (!parts.buffer->empty()) ASSERT_TRUE(parts.buffer->DrainNext().ok());
  EXPECT_EQ(parts.buffer->deletes(), 0u);
  EXPECT_EQ(parts.table->record_count(), 1u);
  EXPECT_EQ(parts.Lookup("k"), std::nullopt);
  EXPECT_EQ(parts.Lookup("absent"), std::nullopt);
  EXPECT_EQ(parts.Lookup("j"), "stored");
}

TEST(WriteBufferTest, WithNoBufferEveryPutGoesToItsBlock) {
  EngineParts parts(kBlock, 8, 0, /*buffer_bytes=*/0);
  parts.buffer->Begin(1);
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(parts.buffer->Put(absl::StrCat("k", i), "v").ok());
  }
  parts.EndWrite();
  EXPECT_TRUE(parts.buffer->empty());
  EXPECT_EQ(parts.table->record_count(), 20u);
}

TEST(WriteBufferTest, APutWhoseBlockIsHeldEditsItInPlace) {
  EngineParts parts(kBlock, 8, 0, 1 << 20);
  const std::string key = "k";
  const uint64_t b = parts.table->BucketOf(parts.table->Hash(key));
  ASSERT_TRUE(parts.store->Edit(b).ok());
  parts.buffer->Begin(1);
  ASSERT_TRUE(parts.buffer->Put(key, "v").ok());
  parts.EndWrite();
  EXPECT_TRUE(parts.buffer->empty());
  EXPECT_EQ(parts.table->record_count(), 1u);
}

TEST(WriteBufferTest, StaysWithinItsMemoryAndMatchesAMapThroughDistributes) {
  for (const uint64_t seed : {11, 12}) {
    SCOPED_TRACE(absl::StrCat("seed ", seed));
    std::mt19937_64 rng(seed);
    const uint64_t limit = 4096;
    // A held blocks' budget past the whole table lets cached blocks be
    // edited in place.
    EngineParts parts(kBlock, 2, 8 * kBlock, limit,
                      /*held_limit=*/seed == 11 ? 0 : 1 << 20);
    std::map<std::string, std::string> model;
    for (int step = 0; step < 8000; ++step) {
      // A write of one to three ops: mostly puts, then mostly deletes.
      const uint64_t ops = 1 + rng() % 3;
      const uint64_t drained = parts.buffer->distribute_drains();
      parts.buffer->Begin(ops);
      for (uint64_t n = ops; n > 0; --n) {
        const std::string key = absl::StrCat("key", rng() % 600);
        if (rng() % 10 < (step < 4000 ? 8u : 2u)) {
          const std::string value(1 + rng() % 60, 'a' + rng() % 26);
          ASSERT_TRUE(parts.buffer->Put(key, value).ok());
          model[key] = value;
        } else {
          ASSERT_TRUE(parts.buffer->Delete(key).ok());
          model.erase(key);
        }
      }
      parts.EndWrite();
      ASSERT_LE(parts.buffer->memory_bytes(), limit);
      // The chains of drains and grows are spread over the writes.
      ASSERT_LE(parts.buffer->distribute_drains() - drained,
                WriteBuffer::kRebuiltDrainsPerOp * ops);
      if (step % 50 == 49) parts.CheckpointBlocks();
      if (step % 400 == 0) {
        ExpectBuffersByBucket(parts);
        for (int i = 0; i < 600; ++i) {
          const std::string key = absl::StrCat("key", i);
          const auto it = model.find(key);
          ASSERT_EQ(parts.Lookup(key), it == model.end()
                                           ? std::nullopt
                                           : std::optional(it->second))
              << key;
        }
      }
    }
    const LogicalLedger l = parts.table->logical();
    EXPECT_GT(l.grows, 0u);
    EXPECT_GT(l.shrinks, 0u);
    EXPECT_GT(parts.buffer->drains(), 0u);
    EXPECT_GT(parts.buffer->distribute_drains(), 0u);
    while (!parts.buffer->empty()) ASSERT_TRUE(parts.buffer->DrainNext().ok());
    EXPECT_EQ(parts.table->record_count(), model.size());
    for (const auto& [k, v] : model) ASSERT_EQ(parts.Lookup(k), v) << k;
    EXPECT_TRUE(parts.error.ok());
  }
}

// A growing table with a full buffer: each drain of a rebuilt bucket may
// grow the table, which rebuilds more. The chain is spread over the
// writes after it (at most kRebuiltDrainsPerOp drains of rebuilt buckets
// an operation), and the buffered puts still all land where they belong.
TEST(WriteBufferTest, ChainsOfDrainsAndGrowsAreSpreadOverTheWrites) {
  EngineParts parts(kBlock, 2, 16 * kBlock, /*buffer_bytes=*/16384);
  std::map<std::string, std::string> model;
  uint64_t longest = 0;
  for (int i = 0; i < 6000; ++i) {
    const uint64_t drained = parts.buffer->distribute_drains();
    parts.buffer->Begin(1);
    const std::string key = absl::StrCat("key", i);
    const std::string value(8 + i % 24, 'a' + i % 26);
    ASSERT_TRUE(parts.buffer->Put(key, value).ok());
    model[key] = value;
    parts.EndWrite();
    longest = std::max(longest, parts.buffer->distribute_drains() - drained);
    if (i % 100 == 99) parts.CheckpointBlocks();
  }
  EXPECT_LE(longest, WriteBuffer::kRebuiltDrainsPerOp);
  EXPECT_GT(parts.buffer->distribute_drains(), 500u);
  for (const auto& [k, v] : model) ASSERT_EQ(parts.Lookup(k), v) << k;
  EXPECT_EQ(parts.table->record_count() + parts.buffer->records().records(),
            model.size());
  EXPECT_TRUE(parts.error.ok());
}

// The buffer's copy is a snapshot: no change writes it; a checkpoint's
// Flush writes the buffered puts as they are then (and nothing when none
// changed since the last), which is what the next open loads.
TEST(WriteBufferTest, ItsCopyIsTheBufferedPutsAsOfTheLastFlush) {
  std::mt19937_64 rng(5);
  EngineParts parts(kBlock, 8, 0, /*buffer_bytes=*/8192);
  LoggedStash& copy = parts.buffer->records();
  std::map<std::string, std::string> buffered;  // as of the last Flush
  for (int round = 0; round < 40; ++round) {
    const uint64_t writes = copy.block_writes();
    for (int i = 0; i < 30; ++i) {
      parts.buffer->Begin(1);
      const std::string key = absl::StrCat("key", rng() % 200);
      if (rng() % 4 != 0) {
        ASSERT_TRUE(
            parts.buffer->Put(key, std::string(1 + rng() % 40, 'v')).ok());
      } else {
        ASSERT_TRUE(parts.buffer->Delete(key).ok());
      }
      parts.EndWrite();
    }
    // The changes wrote nothing of the copy.
    EXPECT_EQ(copy.block_writes(), writes);
    if (round % 5 == 4) {
      while (!parts.buffer->empty()) {
        ASSERT_TRUE(parts.buffer->DrainNext().ok());
      }
    }
    ASSERT_TRUE(copy.Flush().ok());
    buffered.clear();
    copy.ForEachList([&](uint64_t, const Stash::List& list) {
      for (const Stash::Entry& e : list) {
        buffered[std::string(e.record.key())] = std::string(e.record.value());
      }
    });
    auto loaded = StashLog::Load(copy.device(), copy.epoch(), copy.blocks());
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    const std::map<std::string, std::string> in_copy(loaded->begin(),
                                                     loaded->end());
    EXPECT_EQ(in_copy, buffered);
    // Nothing changed since: a second Flush writes nothing.
    const uint64_t flushed = copy.block_writes();
    ASSERT_TRUE(copy.Flush().ok());
    EXPECT_EQ(copy.block_writes(), flushed);
  }
  EXPECT_TRUE(parts.error.ok());
}

// A snapshot made off the writer's path (LoggedStash::Snapshot): its views
// of the buffered puts stay as they were while the writes go on, the
// same-size values that would be written where they lie, deletes, drains
// and distributes among them; encoded then, they are the copy the next
// open loads. SnapshotDone lets the records kept aside go.
TEST(WriteBufferTest, ASnapshotsViewsStayAsTheyWereWhileTheWritesGoOn) {
  std::mt19937_64 rng(9);
  EngineParts parts(kBlock, 8, 0, /*buffer_bytes=*/16384);
  LoggedStash& copy = parts.buffer->records();
  auto write = [&](int n) {
    for (int i = 0; i < n; ++i) {
      parts.buffer->Begin(1);
      const std::string key = absl::StrCat("key", rng() % 300);
      if (rng() % 5 != 0) {
        // Values of 8 bytes half the time, so that a buffered put often
        // takes a value of its own size.
        const size_t size = rng() % 2 == 0 ? 8 : 1 + rng() % 40;
        ASSERT_TRUE(parts.buffer->Put(key, std::string(size, 'a' + i % 26))
                        .ok());
      } else {
        ASSERT_TRUE(parts.buffer->Delete(key).ok());
      }
      parts.EndWrite();
    }
  };
  for (int round = 0; round < 20; ++round) {
    write(200);
    ASSERT_TRUE(copy.snapshot_due());
    auto live = copy.Snapshot();
    ASSERT_TRUE(live.ok()) << live.status();
    const LoggedStash::Views& views = **live;
    EXPECT_TRUE(copy.snapshotting());
    EXPECT_FALSE(copy.snapshot_due());
    const std::map<std::string, std::string> expected =
        MapOf(views.records);
    EXPECT_EQ(expected.size(), copy.records());
    ASSERT_EQ(views.blocks.size(), copy.blocks());
    for (uint64_t b = 0; b < copy.blocks(); ++b) {
      EXPECT_EQ(views.blocks[b], copy.device().Held(b)) << b;
    }
    // As a checkpoint does: the blocks are no longer held, so that the
    // puts that follow wait in the buffer.
    parts.CheckpointBlocks();
    const uint64_t buckets = parts.table->num_buckets();
    write(400);
    if (round % 4 == 3) {
      while (!parts.buffer->empty()) {
        ASSERT_TRUE(parts.buffer->DrainNext().ok());
      }
    }
    EXPECT_TRUE(copy.snapshot_due());
    if (round == 0) EXPECT_GT(parts.table->num_buckets(), buckets);
    const std::map<std::string, std::string> viewed = MapOf(views.records);
    ASSERT_EQ(viewed, expected) << "round " << round;
    StashLog::Encode(views.records, views.epoch, views.blocks, kBlock);
    auto loaded = StashLog::Load(copy.device(), copy.epoch(), copy.blocks());
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    const std::map<std::string, std::string> in_copy(loaded->begin(),
                                                     loaded->end());
    EXPECT_EQ(in_copy, expected);
    copy.SnapshotDone(/*made=*/true);
    EXPECT_FALSE(copy.snapshotting());
    EXPECT_TRUE(copy.snapshot_due());
  }
  // A snapshot dropped before its blocks were made leaves the copy to be
  // made again, though nothing changed since.
  ASSERT_TRUE(copy.Snapshot().ok());
  EXPECT_FALSE(copy.snapshot_due());
  copy.SnapshotDone(/*made=*/false);
  EXPECT_TRUE(copy.snapshot_due());
  EXPECT_TRUE(parts.error.ok());
}

}  // namespace
}  // namespace roundtable::internal
