// BucketTable: the round-table against a std::map through random puts and
// deletes that grow and shrink it, its invariants after every step, and
// what it tells its DistributeObserver.
#include "engine/internal/bucket_table.h"

#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/internal/stash_log.h"
#include "tests/engine/internal/engine_parts.h"
#include "gtest/gtest.h"

namespace roundtable::internal {
namespace {

// Records each distribute, and checks that its rebuilt buckets are where
// the sources' keys may go.
class RecordingObserver final : public DistributeObserver {
 public:
  void OnDistribute(const mapping::RoundMapping& mapping,
                    std::span<const uint64_t> sources,
                    std::span<const uint64_t> rebuilt) override {
    ++calls;
    EXPECT_FALSE(sources.empty());
    EXPECT_FALSE(rebuilt.empty());
    for (const uint64_t b : rebuilt) EXPECT_LT(b, mapping.num_buckets());
    last_rebuilt.assign(rebuilt.begin(), rebuilt.end());
  }
  int calls = 0;
  std::vector<uint64_t> last_rebuilt;
};

// m stays within one bucket of what the data needs, and never below s0.
void ExpectSized(const BucketTable& table) {
  const uint64_t needed =
      std::max<uint64_t>(table.needed_buckets(), table.layout().s0);
  EXPECT_GE(table.num_buckets(), std::max<uint64_t>(table.needed_buckets(), 1));
  EXPECT_LE(table.num_buckets(), needed + 1);
}

std::string Value(std::mt19937_64& rng) {
  return std::string(1 + rng() % 90, static_cast<char>('a' + rng() % 26));
}

TEST(BucketTableTest, MatchesAMapThroughGrowthAndShrinkage) {
  for (const uint64_t seed : {1, 2, 3}) {
    SCOPED_TRACE(absl::StrCat("seed ", seed));
    std::mt19937_64 rng(seed);
    EngineParts parts(512, 2, seed == 2 ? 0 : 16 * 512);
    RecordingObserver observer;
    parts.table->set_observer(&observer);
    std::map<std::string, std::string> model;
    uint64_t most_buckets = 0;
    for (int step = 0; step < 6000; ++step) {
      // Mostly puts for the first half, mostly deletes after.
      const bool put = rng() % 10 < (step < 3000 ? 8u : 2u);
      const std::string key = absl::StrCat("key", rng() % 700);
      const uint64_t h = parts.table->Hash(key);
      if (put) {
        const std::string value = Value(rng);
        ASSERT_TRUE(parts.table->Put(key, value, h).ok());
        model[key] = value;
      } else {
        ASSERT_TRUE(parts.table->Delete(key, h).ok());
        model.erase(key);
      }
      ASSERT_TRUE(parts.table->MaybeShrink().ok());
      parts.store->RefreshFilters();
      if (step % 100 == 99) parts.CheckpointBlocks();
      most_buckets = std::max(most_buckets, parts.table->num_buckets());
      ExpectSized(*parts.table);
      ASSERT_EQ(parts.table->record_count(), model.size());
      if (step % 500 == 0 || step == 5999) {
        for (const auto& [k, v] : model) ASSERT_EQ(parts.Lookup(k), v) << k;
      }
    }
    uint64_t bytes = 0;
    for (const auto& [k, v] : model) bytes += EncodedSize(k, v);
    EXPECT_EQ(parts.table->data_bytes(), bytes);
    EXPECT_GT(most_buckets, 20u);
    const LogicalLedger l = parts.table->logical();
    EXPECT_GT(l.grows, 0u);
    EXPECT_GT(l.shrinks, 0u);
    EXPECT_EQ(observer.calls, l.grows + l.shrinks);
    EXPECT_TRUE(parts.error.ok());
  }
}

// A grow or shrink makes its blocks in slots that held other blocks; the
// format keeps a block's free bytes (between its directory and its
// records) zero all the same.
TEST(BucketTableTest, RebuiltBlocksKeepTheirFreeBytesZero) {
  std::mt19937_64 rng(5);
  EngineParts parts(512, 2, 16 * 512);
  io::AlignedBuffer block(512);
  auto expect_free_zero = [&] {
    for (uint64_t b = 0; b < parts.table->num_buckets(); ++b) {
      ASSERT_TRUE(parts.store->Load(b, block.span()).ok());
      const EncodedBlock view(block.span());
      const char* p = reinterpret_cast<const char*>(block.data());
      const size_t from = kBlockHeaderBytes + kSlotBytes * view.count();
      for (size_t i = from; i < from + view.room(); ++i) {
        ASSERT_EQ(p[i], 0) << "bucket " << b << " byte " << i;
      }
    }
  };
  uint64_t checked = 0;
  for (int step = 0; step < 4000; ++step) {
    const bool put = rng() % 10 < (step < 2000 ? 9u : 1u);
    const std::string key = absl::StrCat("key", rng() % 600);
    const uint64_t h = parts.table->Hash(key);
    ASSERT_TRUE((put ? parts.table->Put(key, Value(rng), h)
                     : parts.table->Delete(key, h))
                    .ok());
    ASSERT_TRUE(parts.table->MaybeShrink().ok());
    parts.store->RefreshFilters();
    if (step % 100 == 99) parts.CheckpointBlocks();
    if (step % 250 == 0) {
      expect_free_zero();
      ++checked;
    }
  }
  const LogicalLedger l = parts.table->logical();
  EXPECT_GT(l.grows, 20u);
  EXPECT_GT(l.shrinks, 20u);
  EXPECT_EQ(checked, 16u);
}

TEST(BucketTableTest, AFullBlockOverflowsIntoTheStashAndRefillsFromIt) {
  // Records of a quarter of a block's record space: few fit a block, so
  // a bucket's block fills before the table grows past it.
  EngineParts parts(512, 64, 0);
  const size_t value_bytes = parts.table->layout().max_record() - 12;
  std::map<std::string, std::string> model;
  int key = 0;
  while (parts.table->stash().records() == 0 && key < 10000) {
    const std::string k = absl::StrCat("k", key++);
    const std::string v(value_bytes, 'x');
    ASSERT_TRUE(parts.table->Put(k, v, parts.table->Hash(k)).ok());
    model[k] = v;
  }
  ASSERT_GT(parts.table->stash().records(), 0u) << "no block filled";
  for (const auto& [k, v] : model) ASSERT_EQ(parts.Lookup(k), v);
  // Deleting the other records of a stashed record's bucket lets it back
  // into its block: the stash keeps only what its block has no room for.
  while (parts.table->stash().records() > 0) {
    std::string stashed_bucket_key;
    uint64_t bucket = 0;
    parts.table->stash().ForEachList(
        [&](uint64_t b, const Stash::List&) { bucket = b; });
    for (const auto& [k, v] : model) {
      const uint64_t h = parts.table->Hash(k);
      if (parts.table->BucketOf(h) == bucket &&
          parts.table->FindStashed(bucket, k, h) == nullptr) {
        stashed_bucket_key = k;
        break;
      }
    }
    ASSERT_FALSE(stashed_bucket_key.empty());
    ASSERT_TRUE(parts.table
                    ->Delete(stashed_bucket_key,
                             parts.table->Hash(stashed_bucket_key))
                    .ok());
    model.erase(stashed_bucket_key);
  }
  for (const auto& [k, v] : model) ASSERT_EQ(parts.Lookup(k), v);
  EXPECT_EQ(parts.table->record_count(), model.size());
}

TEST(BucketTableTest, ADeleteOfAnAbsentKeyLeavesNothingHeld) {
  EngineParts parts(512, 4, 16 * 512);
  const std::string key = "nobody";
  ASSERT_TRUE(parts.table->Delete(key, parts.table->Hash(key)).ok());
  EXPECT_TRUE(parts.store->device().held().empty());
  EXPECT_EQ(parts.table->logical().delete_writes, 0u);
  EXPECT_EQ(parts.table->logical().delete_reads, 1u);
}

TEST(BucketTableTest, AGrowReportsTheBucketsItRebuilt) {
  EngineParts parts(512, 4, 0);
  RecordingObserver observer;
  parts.table->set_observer(&observer);
  int key = 0;
  while (observer.calls == 0) {
    const std::string k = absl::StrCat("k", key++);
    ASSERT_TRUE(parts.table->Put(k, "value", parts.table->Hash(k)).ok());
  }
  // Each rebuilt block is held, and holds only its own bucket's records.
  for (const uint64_t b : observer.last_rebuilt) {
    EXPECT_TRUE(parts.store->Held(b)) << b;
  }
  for (int i = 0; i < key; ++i) {
    const std::string k = absl::StrCat("k", i);
    EXPECT_EQ(parts.Lookup(k), "value") << k;
  }
  EXPECT_EQ(parts.table->logical().grows, 1u);
  EXPECT_EQ(parts.table->num_buckets(), 5u);
}

// The stash copy made again at a checkpoint (LoggedStash::Snapshot of a
// logged copy): once its log has grown well past the stash, the copy is
// due; the snapshot's views stay as they were while puts, deletes, grows
// and shrinks go on (records leave the stash for blocks, for good, or
// take new values); encoded into the copy's first blocks, with the
// entries logged since after them, the copy loads as the stash is then.
TEST(BucketTableTest, AStashSnapshotStaysAsItWasAndTheLogGoesOnAfterIt) {
  std::mt19937_64 rng(4);
  EngineParts parts(512, 2, 0);
  LoggedStash& stash = parts.table->stash();
  auto write = [&](int step) {
    const bool put = rng() % 10 < (step % 4000 < 2500 ? 8u : 3u);
    const std::string key = absl::StrCat("key", rng() % 900);
    const uint64_t h = parts.table->Hash(key);
    if (put) {
      ASSERT_TRUE(parts.table->Put(key, Value(rng), h).ok());
    } else {
      ASSERT_TRUE(parts.table->Delete(key, h).ok());
    }
    ASSERT_TRUE(parts.table->MaybeShrink().ok());
    parts.store->RefreshFilters();
    if (step % 100 == 99) parts.CheckpointBlocks();
  };
  auto current = [&] {
    std::map<std::string, std::string> records;
    stash.ForEachList([&](uint64_t, const Stash::List& list) {
      for (const Stash::Entry& e : list) {
        records[std::string(e.record.key())] = std::string(e.record.value());
      }
    });
    return records;
  };
  int snapshots = 0;
  for (int step = 0; step < 40000 && snapshots < 6; ++step) {
    write(step);
    if (!stash.snapshot_due()) continue;
    SCOPED_TRACE(absl::StrCat("step ", step));
    const uint64_t log_blocks = stash.blocks();
    auto live = stash.Snapshot();
    ASSERT_TRUE(live.ok()) << live.status();
    const LoggedStash::Views& views = **live;
    EXPECT_FALSE(stash.snapshot_due());
    EXPECT_LT(stash.blocks(), log_blocks);
    const std::map<std::string, std::string> expected =
        MapOf(views.records);
    ASSERT_EQ(expected, current());
    EXPECT_EQ(views.epoch, stash.epoch());
    // The copy's new blocks, held for the encoding.
    ASSERT_EQ(views.blocks.size(), stash.blocks());
    for (uint64_t b = 0; b < stash.blocks(); ++b) {
      EXPECT_EQ(views.blocks[b], stash.device().Held(b)) << b;
    }
    const uint64_t grows = parts.table->logical().grows;
    const uint64_t shrinks = parts.table->logical().shrinks;
    for (int i = 0; i < 300; ++i) write(++step);
    EXPECT_GT(parts.table->logical().grows + parts.table->logical().shrinks,
              grows + shrinks);
    const std::map<std::string, std::string> viewed = MapOf(views.records);
    ASSERT_EQ(viewed, expected);
    StashLog::Encode(views.records, views.epoch, views.blocks, 512);
    ASSERT_TRUE(stash.Flush().ok());
    auto loaded = StashLog::Load(stash.device(), stash.epoch(), stash.blocks());
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    const std::map<std::string, std::string> in_copy(loaded->begin(),
                                                     loaded->end());
    EXPECT_EQ(in_copy, current());
    stash.SnapshotDone(/*made=*/true);
    ++snapshots;
  }
  EXPECT_GE(snapshots, 3);
  EXPECT_TRUE(parts.error.ok());
}

}  // namespace
}  // namespace roundtable::internal
