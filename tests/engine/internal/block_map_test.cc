// BlockMap: where each bucket's block lies, against a model of the places
// the last durable checkpoint refers to, through Stage and Load.
#include "engine/internal/block_map.h"

#include <algorithm>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <vector>

#include "engine/internal/block_format.h"
#include "engine/internal/coding.h"
#include "gtest/gtest.h"
#include "io/memory_device.h"

namespace roundtable::internal {
namespace {

constexpr uint32_t kBlock = 512;

// A block file and a map file in memory, and the bucket blocks a table
// would hold between checkpoints.
struct Files {
  std::unique_ptr<io::BlockDevice> blocks = io::NewMemoryDevice(kBlock);
  std::unique_ptr<io::BlockDevice> map = io::NewMemoryDevice(kBlock);
  std::unique_ptr<BlockMap> places =
      std::make_unique<BlockMap>(blocks.get(), map.get());
  // Stands for the bucket store's deferred device: the held blocks.
  DeferredDevice held{places.get()};

  // A new table's block file and places: bucket b at block b + 2.
  explicit Files(uint64_t buckets) {
    EXPECT_TRUE(blocks->Resize(kHeaderBlocks + buckets).ok());
    for (uint64_t b = 0; b < buckets; ++b) WriteBlock(kHeaderBlocks + b, b);
    EXPECT_TRUE(places->Load(buckets, /*stored=*/false).ok());
    EXPECT_TRUE(held.ExtendFromInner(kHeaderBlocks + buckets).ok());
  }

  void WriteBlock(uint64_t at, uint64_t b) {
    io::AlignedBuffer bytes(kBlock);
    EncodedBlock block(bytes.span());
    block.Init(b);
    block.Seal();
    ASSERT_TRUE(blocks->Write(at, bytes.span()).ok());
  }

  // Holds bucket b's block (changed since the last checkpoint).
  void Hold(uint64_t b) {
    if (held.num_blocks() <= kHeaderBlocks + b) {
      ASSERT_TRUE(held.Resize(kHeaderBlocks + b + 1).ok());
    }
    EncodedBlock block(held.Hold(kHeaderBlocks + b));
    block.Init(b);
  }

  // A checkpoint of `buckets` buckets: the held blocks placed and written
  // there, the map's changed blocks written to its file (all of it
  // durable at once).
  void Checkpoint(uint64_t buckets, uint64_t sequence) {
    ASSERT_TRUE(held.Resize(kHeaderBlocks + buckets).ok());
    ASSERT_TRUE(
        places->Stage(held.held(), buckets, sequence, sequence - 1).ok());
    if (blocks->num_blocks() < places->end()) {
      ASSERT_TRUE(blocks->Resize(places->end()).ok());
    }
    held.Freeze();
    for (const auto& [block, bytes] : held.frozen()) {
      EncodedBlock(bytes.span()).Seal();
      ASSERT_TRUE(blocks->Write(places->PlaceOf(block), bytes.span()).ok());
    }
    held.ReleaseFrozen();
    DeferredDevice& d = places->device();
    ASSERT_TRUE(map->Resize(d.num_blocks()).ok());
    d.Freeze();
    for (const auto& [block, bytes] : d.frozen()) {
      ASSERT_TRUE(map->Write(block, bytes.span()).ok());
    }
    d.ReleaseFrozen();
  }

  std::vector<uint64_t> Places(uint64_t buckets) const {
    std::vector<uint64_t> out;
    for (uint64_t b = 0; b < buckets; ++b) {
      out.push_back(places->PlaceOf(kHeaderBlocks + b));
    }
    return out;
  }
};

TEST(BlockMapTest, ANewTableHasEachBucketAfterTheSuperblocks) {
  Files f(5);
  EXPECT_EQ(f.Places(5), (std::vector<uint64_t>{2, 3, 4, 5, 6}));
  EXPECT_EQ(f.places->end(), 7u);
  EXPECT_EQ(f.places->num_blocks(), 7u);
  EXPECT_EQ(f.places->PlaceOf(1), 1u);  // a superblock is where it is
  io::AlignedBuffer bytes(kBlock);
  ASSERT_TRUE(f.places->Read(kHeaderBlocks + 3, bytes.span()).ok());
  EXPECT_EQ(EncodedBlock(bytes.span()).bucket(), 3u);
}

TEST(BlockMapTest, ARewrittenBlockMovesAndItsOldPlaceWaitsForTheCheckpoint) {
  Files f(4);
  f.Hold(1);
  f.Hold(2);
  f.Checkpoint(4, 2);
  // Nothing was free: both went past the end; 3 and 4 wait for checkpoint 2.
  std::vector<uint64_t> after = f.Places(4);
  EXPECT_EQ(after[0], 2u);
  EXPECT_EQ(after[3], 5u);
  EXPECT_EQ(std::set<uint64_t>({after[1], after[2]}),
            std::set<uint64_t>({6, 7}));
  EXPECT_EQ(f.places->end(), 8u);
  EXPECT_EQ(f.places->free_blocks(), 0u);
  // Checkpoint 2 durable: the next one reuses 3 and 4, the lowest first.
  f.Hold(0);
  f.Checkpoint(4, 3);
  EXPECT_EQ(f.places->PlaceOf(kHeaderBlocks + 0), 3u);
  EXPECT_EQ(f.places->free_blocks(), 1u);  // 4; 2 waits for checkpoint 3
  io::AlignedBuffer bytes(kBlock);
  for (uint64_t b = 0; b < 4; ++b) {
    ASSERT_TRUE(f.places->Read(kHeaderBlocks + b, bytes.span()).ok());
    EXPECT_TRUE(VerifyBlock(bytes.span(), b).ok()) << b;
  }
}

TEST(BlockMapTest, BucketsGivenUpFreeTheirPlacesAndTheEndComesDown) {
  Files f(6);
  f.Checkpoint(3, 2);  // buckets 3..5 given up: blocks 5..7 wait
  EXPECT_EQ(f.places->end(), 8u);
  f.Checkpoint(3, 3);  // checkpoint 2 durable: they are free, at the end
  EXPECT_EQ(f.places->end(), 5u);
  EXPECT_EQ(f.places->free_blocks(), 0u);
  EXPECT_EQ(f.places->num_blocks(), 5u);
}

TEST(BlockMapTest, TheMapLoadsAsItWasStored) {
  Files f(40);  // 60 places a 512-byte map block: one block
  std::mt19937_64 rng(7);
  uint64_t buckets = 40;
  for (uint64_t seq = 2; seq < 30; ++seq) {
    buckets = std::max<uint64_t>(1, buckets + rng() % 30 - 14);
    for (uint64_t b = 0; b < buckets; ++b) {
      if (b >= f.places->num_blocks() - kHeaderBlocks || rng() % 3 == 0) {
        f.Hold(b);
      }
    }
    f.Checkpoint(buckets, seq);
    BlockMap loaded(f.blocks.get(), f.map.get());
    ASSERT_TRUE(loaded.Load(buckets, /*stored=*/true).ok()) << seq;
    for (uint64_t b = 0; b < buckets; ++b) {
      ASSERT_EQ(loaded.PlaceOf(kHeaderBlocks + b),
                f.places->PlaceOf(kHeaderBlocks + b));
    }
  }
}

// A crafted map: each entry of block 0 set by `edit`, the checksum made
// right again.
void Craft(io::BlockDevice& map, uint64_t bucket, uint64_t place) {
  io::AlignedBuffer bytes(kBlock);
  ASSERT_TRUE(map.Read(0, bytes.span()).ok());
  char* p = reinterpret_cast<char*>(bytes.data());
  PutFixed64(p + 32 + 8 * bucket, place);
  PutFixed64(p + 24, BlockChecksum(p, kBlock));
  ASSERT_TRUE(map.Write(0, bytes.span()).ok());
}

TEST(BlockMapTest, AMapNoTableCouldHaveWrittenIsDataLoss) {
  Files f(4);
  f.Checkpoint(4, 2);
  struct Case {
    const char* what;
    uint64_t bucket, place;
  };
  for (const Case& c :
       {Case{"a superblock's", 1, 1}, Case{"past the block file", 2, 99},
        Case{"another bucket's", 3, 2}, Case{"past the table", 5, 3}}) {
    SCOPED_TRACE(c.what);
    Files g(4);
    g.Checkpoint(4, 2);
    Craft(*g.map, c.bucket, c.place);
    BlockMap loaded(g.blocks.get(), g.map.get());
    EXPECT_TRUE(absl::IsDataLoss(loaded.Load(4, true))) << c.what;
  }
  // A flipped bit anywhere in the map block.
  io::AlignedBuffer bytes(kBlock);
  ASSERT_TRUE(f.map->Read(0, bytes.span()).ok());
  bytes.data()[100] ^= std::byte{4};
  ASSERT_TRUE(f.map->Write(0, bytes.span()).ok());
  BlockMap loaded(f.blocks.get(), f.map.get());
  EXPECT_TRUE(absl::IsDataLoss(loaded.Load(4, true)));
  // Fewer map blocks than the buckets need.
  EXPECT_TRUE(absl::IsDataLoss(loaded.Load(61, true)));
}

TEST(BlockMapTest, ABucketCountNoFileCouldHoldIsRefusedBeforeAnythingIsSized) {
  Files f(4);
  f.Checkpoint(4, 2);
  // A count the block file (and the map) is far too short for, as a sealed
  // but crafted superblock gives: refused from the files' sizes, before the
  // places are sized by it (which for these counts would not fit in memory).
  for (const uint64_t buckets : {uint64_t{50}, (uint64_t{3} << 29) + 34,
                                 uint64_t{1} << 60}) {
    SCOPED_TRACE(buckets);
    BlockMap loaded(f.blocks.get(), f.map.get());
    EXPECT_TRUE(absl::IsDataLoss(loaded.Load(buckets, true)));
  }
  BlockMap loaded(f.blocks.get(), f.map.get());
  EXPECT_TRUE(loaded.Load(4, true).ok());
}

TEST(BlockMapTest, OnlyNewBucketsAreWrittenStraightToTheFile) {
  Files f(3);
  io::AlignedBuffer bytes(2 * kBlock);
  EXPECT_EQ(f.places->Write(kHeaderBlocks + 1, bytes.span().subspan(0, kBlock))
                .code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(f.places->Resize(kHeaderBlocks + 2).code(),
            absl::StatusCode::kFailedPrecondition);
  // Two new buckets, written in one run at the end of the file.
  ASSERT_TRUE(f.places->Resize(kHeaderBlocks + 5).ok());
  for (int i = 0; i < 2; ++i) {
    EncodedBlock block(bytes.span().subspan(i * kBlock, kBlock));
    block.Init(3 + i);
    block.Seal();
  }
  ASSERT_TRUE(f.places->Write(kHeaderBlocks + 3, bytes.span()).ok());
  EXPECT_EQ(f.Places(5), (std::vector<uint64_t>{2, 3, 4, 5, 6}));
  EXPECT_EQ(f.places->end(), 7u);
}

// The rule that makes a block torn on its way to its place harmless: a
// checkpoint never places a block where the last durable checkpoint has
// a bucket, and the places stay distinct and inside the file's end.
TEST(BlockMapTest, NoCheckpointWritesWhereTheLastDurableOneRefers) {
  for (const uint64_t seed : {1, 2, 3, 4}) {
    SCOPED_TRACE(seed);
    std::mt19937_64 rng(seed);
    Files f(20);
    uint64_t buckets = 20;
    std::vector<uint64_t> durable = f.Places(buckets);
    for (uint64_t seq = 2; seq < 200; ++seq) {
      buckets = std::clamp<uint64_t>(buckets + rng() % 9 - 4, 1, 300);
      const uint64_t share = 1 + rng() % 4;
      for (uint64_t b = 0; b < buckets; ++b) {
        if (b >= f.places->num_blocks() - kHeaderBlocks || rng() % share == 0) {
          f.Hold(b);
        }
      }
      std::set<uint64_t> moved;
      for (const auto& [block, bytes] : f.held.held()) {
        if (block - kHeaderBlocks < buckets) moved.insert(block);
      }
      f.Checkpoint(buckets, seq);
      const std::set<uint64_t> before(durable.begin(), durable.end());
      durable = f.Places(buckets);
      std::set<uint64_t> seen;
      for (uint64_t b = 0; b < buckets; ++b) {
        const uint64_t place = durable[b];
        ASSERT_GE(place, kHeaderBlocks);
        ASSERT_LT(place, f.places->end());
        ASSERT_TRUE(seen.insert(place).second) << "shared place " << place;
        if (moved.count(kHeaderBlocks + b)) {
          ASSERT_EQ(before.count(place), 0u)
              << "bucket " << b << " placed over the durable checkpoint";
        }
      }
      // The file holds at most the table and one checkpoint's moves.
      ASSERT_LE(f.places->end(), kHeaderBlocks + 2 * 300 + 1);
    }
  }
}

// Between checkpoints, held blocks written ahead to new places (as the
// bucket store does once a table outgrows its held blocks' budget), new
// buckets among them, and given back: no place written ahead is one the
// last durable checkpoint refers to, no two buckets share one, reads find
// each bucket's newest block (through the held blocks' device, past the
// blocks it otherwise reads as cut off), and the map loads as it was.
TEST(BlockMapTest, BlocksWrittenAheadNeverOverwriteTheDurableCheckpoint) {
  for (const uint64_t seed : {1, 2, 3, 4}) {
    SCOPED_TRACE(seed);
    std::mt19937_64 rng(seed);
    Files f(20);
    uint64_t buckets = 20;
    std::vector<uint32_t> newest(buckets, 0);  // by bucket: its last stamp
    uint32_t stamp = 0;
    auto write = [&](uint64_t b) {
      if (f.held.num_blocks() <= kHeaderBlocks + b) {
        ASSERT_TRUE(f.held.Resize(kHeaderBlocks + b + 1).ok());
      }
      EncodedBlock block(f.held.Hold(kHeaderBlocks + b));
      block.Init(b);
      block.set_checkpoint(++stamp);
      if (b >= newest.size()) newest.resize(b + 1, 0);
      newest[b] = stamp;
    };
    uint64_t written_ahead = 0;
    for (uint64_t seq = 2; seq < 150; ++seq) {
      const std::vector<uint64_t> durable = f.Places(buckets);
      const std::set<uint64_t> durable_set(durable.begin(), durable.end());
      // The table grows or shrinks by a few buckets; new ones are written.
      const uint64_t next = std::clamp<uint64_t>(buckets + rng() % 7 - 3, 1, 80);
      for (uint64_t b = buckets; b < next; ++b) write(b);
      if (next < buckets) ASSERT_TRUE(f.held.Resize(kHeaderBlocks + next).ok());
      buckets = next;
      for (int round = 0; round < 3; ++round) {
        for (uint64_t b = 0; b < buckets; ++b) {
          if (rng() % 4 == 0) write(b);
        }
        // Some held blocks go ahead, as WriteAhead's caller takes them:
        // drawn in the blocks' order, so that a seed is one run (the held
        // blocks' map iterates in an order of its own).
        std::vector<io::WriteRequest> ahead;
        std::map<uint64_t, std::span<std::byte>> held;
        for (auto& [block, bytes] : f.held.held()) held[block] = bytes.span();
        for (const auto& [block, bytes] : held) {
          if (rng() % 2 == 0) {
            EncodedBlock(bytes).Seal();
            ahead.push_back({block - kHeaderBlocks, bytes});
          }
        }
        std::vector<uint64_t> buckets_ahead;
        for (const io::WriteRequest& r : ahead) {
          buckets_ahead.push_back(r.block);
          f.held.Detach(kHeaderBlocks + r.block);
        }
        ASSERT_TRUE(f.places->PlaceAhead(ahead, seq).ok());
        written_ahead += ahead.size();
        for (size_t i = 0; i < ahead.size(); ++i) {
          const uint64_t place = ahead[i].block;
          ASSERT_EQ(place, f.places->PlaceOf(kHeaderBlocks + buckets_ahead[i]));
          ASSERT_EQ(durable_set.count(place), 0u)
              << "bucket " << buckets_ahead[i]
              << " written over the durable checkpoint";
          ASSERT_LT(place, f.blocks->num_blocks());
        }
        // Until written, reads find the blocks where they wait.
        for (const uint64_t b : buckets_ahead) {
          io::AlignedBuffer bytes(kBlock);
          ASSERT_TRUE(f.held.Read(kHeaderBlocks + b, bytes.span()).ok());
          ASSERT_EQ(EncodedBlock(bytes.span()).checkpoint(), newest[b]);
        }
        ASSERT_TRUE(f.places->file().WriteBatch(ahead).ok());
        f.held.FinishLeaving(/*written=*/true);
      }
      f.Checkpoint(buckets, seq);
      std::set<uint64_t> seen;
      io::AlignedBuffer bytes(kBlock);
      for (uint64_t b = 0; b < buckets; ++b) {
        const uint64_t place = f.places->PlaceOf(kHeaderBlocks + b);
        ASSERT_GE(place, kHeaderBlocks);
        ASSERT_LT(place, f.places->end());
        ASSERT_TRUE(seen.insert(place).second) << "shared place " << place;
        ASSERT_TRUE(f.held.Read(kHeaderBlocks + b, bytes.span()).ok());
        ASSERT_TRUE(VerifyBlock(bytes.span(), b).ok()) << b;
        ASSERT_EQ(EncodedBlock(bytes.span()).checkpoint(), newest[b]) << b;
      }
      BlockMap loaded(f.blocks.get(), f.map.get());
      ASSERT_TRUE(loaded.Load(buckets, /*stored=*/true).ok());
      for (uint64_t b = 0; b < buckets; ++b) {
        ASSERT_EQ(loaded.PlaceOf(kHeaderBlocks + b),
                  f.places->PlaceOf(kHeaderBlocks + b));
      }
    }
    EXPECT_GT(written_ahead, 1000u);
  }
}

// A resize of the block file can wait for the file system's journal (a
// checkpoint's sync holds it): the blocks written ahead grow the file by
// an eighth or 16 blocks at once, and the next batches fit without one.
TEST(BlockMapTest, BlocksWrittenAheadGrowTheFileAheadOfThem) {
  Files f(20);
  std::vector<io::WriteRequest> ahead;
  auto place_ahead = [&](uint64_t first, uint64_t n, uint64_t seq) {
    ahead.clear();
    for (uint64_t b = first; b < first + n; ++b) {
      f.Hold(b);
      const std::span<std::byte> bytes(f.held.Held(kHeaderBlocks + b), kBlock);
      EncodedBlock(bytes).Seal();
      ahead.push_back({b, bytes});
      f.held.Detach(kHeaderBlocks + b);
    }
    ASSERT_TRUE(f.places->PlaceAhead(ahead, seq).ok());
    ASSERT_TRUE(f.places->file().WriteBatch(ahead).ok());
    f.held.FinishLeaving(/*written=*/true);
  };
  place_ahead(0, 20, 2);
  // All past the end: places 22..41.
  EXPECT_EQ(f.places->end(), kHeaderBlocks + 40);
  const uint64_t grown = f.blocks->num_blocks();
  EXPECT_EQ(grown, f.places->end() + 16);
  place_ahead(0, 10, 2);  // their places of the last batch are free again
  place_ahead(10, 10, 2);
  EXPECT_EQ(f.blocks->num_blocks(), grown);
  // The blocks past the last place are free: a load finds every bucket.
  f.Checkpoint(20, 2);
  BlockMap loaded(f.blocks.get(), f.map.get());
  ASSERT_TRUE(loaded.Load(20, /*stored=*/true).ok());
  for (uint64_t b = 0; b < 20; ++b) {
    EXPECT_EQ(loaded.PlaceOf(kHeaderBlocks + b),
              f.places->PlaceOf(kHeaderBlocks + b));
  }
  EXPECT_LE(loaded.end(), f.places->end());
}

// FreePlaces against a std::set: inserts and erases anywhere, the lowest
// taken, over places spread across many words and clustered in a few.
TEST(FreePlacesTest, ActsAsAnOrderedSetOfPlaces) {
  for (const uint64_t range : {uint64_t{70}, uint64_t{5000}}) {
    std::mt19937_64 rng(range);
    FreePlaces free;
    std::set<uint64_t> model;
    for (int step = 0; step < 20000; ++step) {
      const uint64_t place = rng() % range;
      switch (rng() % 3) {
        case 0:
          if (!model.count(place)) {
            free.Insert(place);
            model.insert(place);
          }
          break;
        case 1:
          if (model.count(place)) {
            free.Erase(place);
            model.erase(place);
          }
          break;
        default:
          if (!model.empty()) {
            ASSERT_EQ(free.TakeLowest(), *model.begin());
            model.erase(model.begin());
          }
      }
      ASSERT_EQ(free.size(), model.size());
      ASSERT_EQ(free.empty(), model.empty());
      ASSERT_EQ(free.contains(place), model.count(place) == 1);
    }
    free.clear();
    EXPECT_TRUE(free.empty());
    EXPECT_FALSE(free.contains(1));
  }
}

}  // namespace
}  // namespace roundtable::internal
