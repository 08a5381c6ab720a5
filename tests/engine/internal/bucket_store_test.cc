// BucketStore: where a bucket's block lies (held, cached, on the device),
// edits in place, the held blocks' tag filters, and verification of what
// the device returns.
#include "engine/internal/bucket_store.h"

#include <unistd.h>

#include <string>
#include <vector>

#include "engine/internal/table_files.h"
#include "gtest/gtest.h"
#include "io/memory_device.h"

namespace roundtable::internal {
namespace {

constexpr uint32_t kBlock = 512;
constexpr uint64_t kBuckets = 8;

class BucketStoreTest : public testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(FormatNewBlocks(*file_, kBuckets).ok()); }

  // Puts key -> value into bucket b's block through an edit.
  void PutInBlock(BucketStore& store, uint64_t b, std::string_view key,
                  std::string_view value) {
    absl::StatusOr<EncodedBlock> block = store.Edit(b);
    ASSERT_TRUE(block.ok()) << block.status();
    ASSERT_TRUE(block->Append(key, value, Tag(key)));
  }
  static uint16_t Tag(std::string_view key) {
    return static_cast<uint16_t>(std::hash<std::string_view>()(key));
  }
  // Find of `key` in bucket b: its value, or "" when absent.
  static std::string FindIn(BucketStore& store, uint64_t b,
                            std::string_view key) {
    std::string value;
    absl::StatusOr<bool> found = store.Find(b, key, Tag(key), &value);
    EXPECT_TRUE(found.ok()) << found.status();
    return found.ok() && *found ? value : "";
  }

  std::unique_ptr<io::BlockDevice> file_ = io::NewMemoryDevice(kBlock);
  std::unique_ptr<io::BlockDevice> map_ = io::NewMemoryDevice(kBlock);
};

TEST_F(BucketStoreTest, AnEditIsHeldAndAnsweredWithoutTheDevice) {
  BucketStore store(file_.get(), map_.get(), kBlock, 0, 64 * kBlock);
  ASSERT_TRUE(store.LoadPlaces(kBuckets, /*stored=*/false).ok());
  const io::IoStats before = file_->stats();
  EXPECT_FALSE(store.Held(3));
  PutInBlock(store, 3, "k", "v");
  EXPECT_TRUE(store.Held(3));
  EXPECT_TRUE(store.InMemory(3));
  // Before the filters are made again the edited block passes every tag.
  EXPECT_EQ(FindIn(store, 3, "k"), "v");
  store.RefreshFilters();
  EXPECT_EQ(FindIn(store, 3, "k"), "v");
  EXPECT_EQ(FindIn(store, 3, "absent"), "");
  EXPECT_EQ(store.held_hits(), 3u);
  // Nothing reached the file: the held block is the write.
  EXPECT_EQ(file_->stats().blocks_written, before.blocks_written);
  EXPECT_EQ(file_->stats().blocks_read, before.blocks_read + 1);
  EXPECT_EQ(store.device().held().size(), 1u);
}

TEST_F(BucketStoreTest, AReadIsVerifiedAndCached) {
  BucketStore store(file_.get(), map_.get(), kBlock, 0, 64 * kBlock);
  ASSERT_TRUE(store.LoadPlaces(kBuckets, /*stored=*/false).ok());
  EXPECT_EQ(FindIn(store, 5, "k"), "");
  EXPECT_EQ(store.cache_misses(), 1u);
  EXPECT_TRUE(store.Cached(5));
  EXPECT_EQ(FindIn(store, 5, "k"), "");
  EXPECT_EQ(store.cache_hits(), 1u);
  EXPECT_EQ(file_->stats().blocks_read, 1u);
}

TEST_F(BucketStoreTest, ADamagedBlockIsDataLossNeverAValue) {
  io::AlignedBuffer bytes(kBlock);
  ASSERT_TRUE(file_->Read(kHeaderBlocks + 2, bytes.span()).ok());
  bytes.data()[100] ^= std::byte{1};
  ASSERT_TRUE(file_->Write(kHeaderBlocks + 2, bytes.span()).ok());
  BucketStore store(file_.get(), map_.get(), kBlock, 0, 64 * kBlock);
  ASSERT_TRUE(store.LoadPlaces(kBuckets, /*stored=*/false).ok());
  std::string value;
  EXPECT_EQ(store.Find(2, "k", 1, &value).status().code(),
            absl::StatusCode::kDataLoss);
  EXPECT_EQ(store.Edit(2).status().code(), absl::StatusCode::kDataLoss);
  io::AlignedBuffer out(kBlock);
  EXPECT_EQ(store.Load(2, out.span()).code(), absl::StatusCode::kDataLoss);
  // A block stored in another bucket's place is refused too.
  ASSERT_TRUE(file_->Read(kHeaderBlocks + 1, bytes.span()).ok());
  ASSERT_TRUE(file_->Write(kHeaderBlocks + 4, bytes.span()).ok());
  EXPECT_EQ(store.Load(4, out.span()).code(), absl::StatusCode::kDataLoss);
}

TEST_F(BucketStoreTest, AFreshHoldThatChangedNothingGoesBackToTheCache) {
  BucketStore store(file_.get(), map_.get(), kBlock, 0, 64 * kBlock);
  ASSERT_TRUE(store.LoadPlaces(kBuckets, /*stored=*/false).ok());
  bool fresh = false;
  ASSERT_TRUE(store.Edit(6, &fresh).ok());
  EXPECT_TRUE(fresh);
  store.Unhold(6);
  EXPECT_FALSE(store.Held(6));
  EXPECT_TRUE(store.Cached(6));
  // Held already: not fresh.
  PutInBlock(store, 1, "a", "b");
  fresh = false;
  ASSERT_TRUE(store.Edit(1, &fresh).ok());
  EXPECT_FALSE(fresh);
}

TEST_F(BucketStoreTest, ABatchReadsEachUncachedBlockOnce) {
  BucketStore store(file_.get(), map_.get(), kBlock, 0, 64 * kBlock);
  ASSERT_TRUE(store.LoadPlaces(kBuckets, /*stored=*/false).ok());
  PutInBlock(store, 0, "held", "h");
  EXPECT_EQ(FindIn(store, 1, "x"), "");  // cached
  const std::vector<uint64_t> buckets = {0, 1, 2, 3, 7};
  std::vector<io::AlignedBuffer> out;
  for (size_t i = 0; i < buckets.size(); ++i) out.emplace_back(kBlock);
  const io::IoStats before = file_->stats();
  ASSERT_TRUE(store.ReadBlocks(buckets, out).ok());
  const io::IoStats after = file_->stats();
  EXPECT_EQ(after.blocks_read - before.blocks_read, 3u);
  for (size_t i = 0; i < buckets.size(); ++i) {
    EXPECT_EQ(EncodedBlock(out[i].span()).bucket(), buckets[i]);
  }
  EXPECT_TRUE(EncodedBlock(out[0].span()).Find("held", Tag("held")));
  EXPECT_TRUE(store.Cached(7));
}

// A grow's or shrink's read of the blocks it makes anew next caches none:
// the same reads, verified, and the cache as it was.
TEST_F(BucketStoreTest, ABatchForBlocksMadeAnewCachesNone) {
  BucketStore store(file_.get(), map_.get(), kBlock, 0, 64 * kBlock);
  ASSERT_TRUE(store.LoadPlaces(kBuckets, /*stored=*/false).ok());
  EXPECT_EQ(FindIn(store, 1, "x"), "");  // cached
  const std::vector<uint64_t> buckets = {1, 2, 3};
  std::vector<io::AlignedBuffer> out;
  for (size_t i = 0; i < buckets.size(); ++i) out.emplace_back(kBlock);
  const io::IoStats before = file_->stats();
  ASSERT_TRUE(store.ReadBlocks(buckets, out, /*cache=*/false).ok());
  EXPECT_EQ(file_->stats().blocks_read - before.blocks_read, 2u);
  for (size_t i = 0; i < buckets.size(); ++i) {
    EXPECT_EQ(EncodedBlock(out[i].span()).bucket(), buckets[i]);
  }
  EXPECT_TRUE(store.Cached(1));
  EXPECT_FALSE(store.Cached(2));
  EXPECT_FALSE(store.Cached(3));
}

TEST_F(BucketStoreTest, APreloadReadsTheMissingBlocksOnceAndTheirEditsNone) {
  BucketStore store(file_.get(), map_.get(), kBlock, 0, 64 * kBlock);
  ASSERT_TRUE(store.LoadPlaces(kBuckets, /*stored=*/false).ok());
  PutInBlock(store, 0, "held", "h");
  EXPECT_EQ(FindIn(store, 1, "x"), "");  // cached
  const std::vector<uint64_t> buckets = {0, 1, 2, 3, 7};
  const uint64_t reads = file_->stats().blocks_read;
  ASSERT_TRUE(store.Preload(buckets).ok());
  EXPECT_EQ(file_->stats().blocks_read, reads + 3);
  for (const uint64_t b : {2, 3, 7}) EXPECT_TRUE(store.Cached(b)) << b;
  for (const uint64_t b : {2, 3, 7}) PutInBlock(store, b, "k", "v");
  ASSERT_TRUE(store.Preload(buckets).ok());  // all in memory now
  EXPECT_EQ(file_->stats().blocks_read, reads + 3);
  for (const uint64_t b : {2, 3, 7}) EXPECT_EQ(FindIn(store, b, "k"), "v");

  // With no cache there is nowhere to keep them: nothing is read.
  BucketStore uncached(file_.get(), map_.get(), kBlock, 0, 0);
  ASSERT_TRUE(uncached.LoadPlaces(kBuckets, /*stored=*/false).ok());
  ASSERT_TRUE(uncached.Preload(buckets).ok());
  EXPECT_EQ(file_->stats().blocks_read, reads + 3);
}

// On io_uring the blocks of a preload are one submission.
TEST(BucketStorePreloadTest, ReadsItsBlocksInOneSubmission) {
  if (!io::UringAvailable()) GTEST_SKIP() << "no io_uring here";
  const std::string path =
      testing::TempDir() + "/rt_preload_" + std::to_string(getpid());
  io::DeviceOptions options;
  options.backend = io::Backend::kUring;
  options.block_size = kBlock;
  auto file = io::OpenBlockDevice(path, options);
  ASSERT_TRUE(file.ok()) << file.status();
  const uint64_t buckets = 64;
  ASSERT_TRUE(FormatNewBlocks(**file, buckets).ok());
  auto map = io::NewMemoryDevice(kBlock);
  BucketStore store(file->get(), map.get(), kBlock, 0, 128 * kBlock);
  ASSERT_TRUE(store.LoadPlaces(buckets, /*stored=*/false).ok());
  std::vector<uint64_t> some;
  for (uint64_t b = 1; b < buckets; b += 3) some.push_back(b);
  const io::IoStats before = (*file)->stats();
  ASSERT_TRUE(store.Preload(some).ok());
  const io::IoStats after = (*file)->stats();
  EXPECT_EQ(after.blocks_read - before.blocks_read, some.size());
  EXPECT_EQ(after.submissions - before.submissions, 1u);
  for (const uint64_t b : some) ASSERT_TRUE(store.Edit(b).ok());
  EXPECT_EQ((*file)->stats().blocks_read, after.blocks_read);
  file->reset();
  unlink(path.c_str());
}

TEST_F(BucketStoreTest, ARebuiltBlockIsEmptyHeldAndNotCached) {
  BucketStore store(file_.get(), map_.get(), kBlock, 0, 64 * kBlock);
  ASSERT_TRUE(store.LoadPlaces(kBuckets, /*stored=*/false).ok());
  EXPECT_EQ(FindIn(store, 4, "x"), "");
  ASSERT_TRUE(store.Cached(4));
  EncodedBlock block = store.Rebuild(4);
  EXPECT_EQ(block.count(), 0u);
  EXPECT_EQ(block.bucket(), 4u);
  EXPECT_TRUE(store.Held(4));
  EXPECT_FALSE(store.Cached(4));
  ASSERT_TRUE(block.Append("r", "1", Tag("r")));
  EXPECT_EQ(FindIn(store, 4, "r"), "1");
}

// What a checkpoint does to the held blocks: frozen, sealed and written to
// the file by its thread, then released.
void Checkpoint(BucketStore& store, io::BlockDevice& file) {
  DeferredDevice& held = store.device();
  ASSERT_TRUE(file.Resize(held.num_blocks()).ok());
  held.Freeze();
  held.SealFrozen();
  for (const auto& [block, bytes] : held.frozen()) {
    ASSERT_TRUE(file.Write(block, bytes.span()).ok());
  }
  held.ReleaseFrozen();
}

TEST_F(BucketStoreTest, ACheckpointLeavesTheHeldBlocksCachedWhereTheyLie) {
  BucketStore store(file_.get(), map_.get(), kBlock, 0, 64 * kBlock);
  ASSERT_TRUE(store.LoadPlaces(kBuckets, /*stored=*/false).ok());
  PutInBlock(store, 2, "a", "1");
  PutInBlock(store, 5, "b", "2");
  store.RefreshFilters();
  const std::byte* slot = store.device().Held(2 + kHeaderBlocks);
  store.device().Freeze();
  store.device().SealFrozen();
  // Frozen, they answer reads (held hits) and count as in memory, with no
  // read.
  const uint64_t reads = file_->stats().blocks_read;
  const uint64_t hits = store.held_hits();
  EXPECT_TRUE(store.Cached(2));
  EXPECT_EQ(FindIn(store, 2, "a"), "1");
  EXPECT_EQ(store.held_hits(), hits + 1);
  for (const auto& [block, bytes] : store.device().frozen()) {
    ASSERT_TRUE(file_->Write(block, bytes.span()).ok());
  }
  store.device().ReleaseFrozen();
  EXPECT_TRUE(store.Cached(2));
  EXPECT_TRUE(store.Cached(5));
  EXPECT_EQ(FindIn(store, 5, "b"), "2");
  EXPECT_EQ(file_->stats().blocks_read, reads);
  // The next edit holds the cached block where it lies: the same slot.
  PutInBlock(store, 2, "c", "3");
  EXPECT_EQ(store.device().Held(2 + kHeaderBlocks), slot);
  EXPECT_FALSE(store.Cached(2));
  EXPECT_EQ(FindIn(store, 2, "a"), "1");
  EXPECT_EQ(FindIn(store, 2, "c"), "3");
}

TEST_F(BucketStoreTest, ABlockWrittenAgainOrReleasedIsNotCachedFromItsImage) {
  BucketStore store(file_.get(), map_.get(), kBlock, 0, 64 * kBlock);
  ASSERT_TRUE(store.LoadPlaces(kBuckets, /*stored=*/false).ok());
  for (uint64_t b = 0; b < kBuckets; ++b) {
    PutInBlock(store, b, "k" + std::to_string(b), "v");
  }
  store.RefreshFilters();
  store.device().Freeze();
  store.device().SealFrozen();
  // Written again while frozen: held anew, its image stale.
  PutInBlock(store, 4, "new", "w");
  store.RefreshFilters();
  // The last bucket released.
  ASSERT_TRUE(store.Resize(kBuckets - 1).ok());
  for (const auto& [block, bytes] : store.device().frozen()) {
    ASSERT_TRUE(file_->Write(block, bytes.span()).ok());
  }
  store.device().ReleaseFrozen();
  for (uint64_t b = 0; b < kBuckets - 1; ++b) {
    EXPECT_EQ(store.Cached(b), b != 4) << b;
    EXPECT_EQ(FindIn(store, b, "k" + std::to_string(b)), "v");
  }
  EXPECT_EQ(FindIn(store, 4, "new"), "w");
  EXPECT_TRUE(store.Held(4));
  EXPECT_FALSE(store.Cached(kBuckets - 1));
}

TEST_F(BucketStoreTest, AnEditOfAFrozenBlockCopiesItWithoutARead) {
  BucketStore store(file_.get(), map_.get(), kBlock, 0, 64 * kBlock);
  ASSERT_TRUE(store.LoadPlaces(kBuckets, /*stored=*/false).ok());
  PutInBlock(store, 3, "a", "1");
  store.RefreshFilters();
  store.device().Freeze();  // not sealed yet: the copy needs no checksum
  const uint64_t reads = file_->stats().blocks_read;
  bool fresh = false;
  absl::StatusOr<EncodedBlock> block = store.Edit(3, &fresh);
  ASSERT_TRUE(block.ok()) << block.status();
  EXPECT_TRUE(fresh);
  ASSERT_TRUE(block->Append("b", "2", Tag("b")));
  store.RefreshFilters();
  EXPECT_EQ(FindIn(store, 3, "a"), "1");
  EXPECT_EQ(FindIn(store, 3, "b"), "2");
  EXPECT_EQ(file_->stats().blocks_read, reads);
  // The frozen image is as it was.
  EXPECT_EQ(EncodedBlock(store.device().frozen().at(3 + kHeaderBlocks).span())
                .count(),
            1u);
}

TEST_F(BucketStoreTest, MayContainTrustsTheFiltersOfBlocksInMemory) {
  BucketStore store(file_.get(), map_.get(), kBlock, 0, 64 * kBlock);
  ASSERT_TRUE(store.LoadPlaces(kBuckets, /*stored=*/false).ok());
  // On the device only: anything may be there.
  EXPECT_TRUE(store.MayContain(1, Tag("a")));
  PutInBlock(store, 1, "a", "1");
  // Being edited: every tag passes until the write ends.
  EXPECT_TRUE(store.MayContain(1, Tag("zzz")));
  store.RefreshFilters();
  EXPECT_TRUE(store.MayContain(1, Tag("a")));
  int ruled_out = 0;
  for (int i = 0; i < 100; ++i) {
    ruled_out += !store.MayContain(1, Tag("x" + std::to_string(i)));
  }
  EXPECT_GT(ruled_out, 50);
  // Frozen, then cached where it lies: the same answers.
  Checkpoint(store, *file_);
  EXPECT_TRUE(store.Cached(1));
  EXPECT_TRUE(store.MayContain(1, Tag("a")));
  int still = 0;
  for (int i = 0; i < 100; ++i) {
    still += !store.MayContain(1, Tag("x" + std::to_string(i)));
  }
  EXPECT_EQ(still, ruled_out);
}

TEST_F(BucketStoreTest, HeldBlocksBorrowAtMostHalfTheCache) {
  // A cache of 4 blocks lends 2; the other held blocks use the device's
  // own memory, and are cached as copies once written.
  BucketStore store(file_.get(), map_.get(), kBlock, 0, 4 * kBlock);
  ASSERT_TRUE(store.LoadPlaces(kBuckets, /*stored=*/false).ok());
  for (uint64_t b = 0; b < kBuckets; ++b) {
    PutInBlock(store, b, "k" + std::to_string(b), "v");
  }
  store.RefreshFilters();
  Checkpoint(store, *file_);
  for (uint64_t b = 0; b < kBuckets; ++b) {
    EXPECT_EQ(FindIn(store, b, "k" + std::to_string(b)), "v");
  }
  uint64_t cached = 0;
  for (uint64_t b = 0; b < kBuckets; ++b) cached += store.Cached(b);
  EXPECT_EQ(cached, 4u);
}

TEST_F(BucketStoreTest, WithNoCacheEveryReadGoesToTheDevice) {
  BucketStore store(file_.get(), map_.get(), kBlock, 0, 0);
  ASSERT_TRUE(store.LoadPlaces(kBuckets, /*stored=*/false).ok());
  EXPECT_EQ(FindIn(store, 3, "k"), "");
  EXPECT_EQ(FindIn(store, 3, "k"), "");
  EXPECT_FALSE(store.Cached(3));
  EXPECT_EQ(file_->stats().blocks_read, 2u);
}

TEST_F(BucketStoreTest, ResizeChangesTheBucketsTheFileHolds) {
  BucketStore store(file_.get(), map_.get(), kBlock, 0, 0);
  ASSERT_TRUE(store.LoadPlaces(kBuckets, /*stored=*/false).ok());
  ASSERT_TRUE(store.Resize(kBuckets + 1).ok());
  EXPECT_EQ(store.device().num_blocks(), kHeaderBlocks + kBuckets + 1);
  // The file itself changes only at a checkpoint.
  EXPECT_EQ(file_->num_blocks(), kHeaderBlocks + kBuckets);
}

}  // namespace
}  // namespace roundtable::internal
