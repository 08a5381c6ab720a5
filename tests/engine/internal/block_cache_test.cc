// The block cache on its own: hits and misses, CLOCK eviction writing dirty
// blocks out first, Flush in bucket order, a clean copy never replacing a
// dirty one, Drop, and the disabled cache.
#include "engine/internal/block_cache.h"

#include <cstring>
#include <map>
#include <vector>

#include "gtest/gtest.h"

namespace roundtable::internal {
namespace {

constexpr uint32_t kBlock = 512;

io::AlignedBuffer Filled(unsigned char v) {
  io::AlignedBuffer b(kBlock);
  std::memset(b.data(), v, kBlock);
  return b;
}

unsigned char FirstByte(std::span<const std::byte> bytes) {
  return static_cast<unsigned char>(bytes[0]);
}

class BlockCacheTest : public testing::Test {
 protected:
  BlockCache MakeCache(uint64_t blocks) {
    return BlockCache(blocks * kBlock, kBlock,
                      [this](uint64_t b, std::span<std::byte> bytes) {
                        written_.emplace_back(b, FirstByte(bytes));
                        return absl::OkStatus();
                      });
  }
  std::vector<std::pair<uint64_t, unsigned char>> written_;
};

TEST_F(BlockCacheTest, HitsMissesAndEvictionWritesDirtyBlocksFirst) {
  BlockCache cache = MakeCache(4);
  for (uint64_t b = 0; b < 4; ++b) {
    ASSERT_TRUE(cache.Insert(b, Filled(10 + b).span(), /*dirty=*/true).ok());
  }
  EXPECT_EQ(cache.dirty_blocks(), 4u);
  io::AlignedBuffer out(kBlock);
  ASSERT_TRUE(cache.Lookup(2, out.span()));
  EXPECT_EQ(FirstByte(out.span()), 12);
  EXPECT_FALSE(cache.Lookup(9, out.span()));
  EXPECT_EQ(cache.hits(), 1u);
  EXPECT_EQ(cache.misses(), 1u);
  EXPECT_TRUE(written_.empty());
  // A fifth block evicts one of the four, writing it out first.
  ASSERT_TRUE(cache.Insert(4, Filled(14).span(), /*dirty=*/false).ok());
  ASSERT_EQ(written_.size(), 1u);
  const uint64_t evicted = written_[0].first;
  EXPECT_EQ(written_[0].second, 10 + evicted);
  EXPECT_FALSE(cache.Lookup(evicted, out.span()));
  EXPECT_EQ(cache.dirty_blocks(), 3u);
  // Flush writes the rest in bucket order and leaves them clean.
  written_.clear();
  ASSERT_TRUE(cache.Flush().ok());
  ASSERT_EQ(written_.size(), 3u);
  EXPECT_LT(written_[0].first, written_[1].first);
  EXPECT_LT(written_[1].first, written_[2].first);
  EXPECT_EQ(cache.dirty_blocks(), 0u);
  written_.clear();
  ASSERT_TRUE(cache.Flush().ok());
  EXPECT_TRUE(written_.empty());
}

TEST_F(BlockCacheTest, ReferencedBlocksSurviveTheClock) {
  BlockCache cache = MakeCache(3);
  for (uint64_t b = 0; b < 3; ++b) {
    ASSERT_TRUE(cache.Insert(b, Filled(b).span(), /*dirty=*/false).ok());
  }
  io::AlignedBuffer out(kBlock);
  // Insert sets every reference bit; the first sweep clears them all and
  // evicts slot 0's block. Touch block 1 so that the next eviction skips it.
  ASSERT_TRUE(cache.Insert(3, Filled(3).span(), false).ok());
  EXPECT_FALSE(cache.Lookup(0, out.span()));
  ASSERT_TRUE(cache.Lookup(1, out.span()));
  ASSERT_TRUE(cache.Insert(4, Filled(4).span(), false).ok());
  EXPECT_TRUE(cache.Lookup(1, out.span()));
  EXPECT_FALSE(cache.Lookup(2, out.span()));
}

TEST_F(BlockCacheTest, CleanCopyNeverReplacesDirtyBytes) {
  BlockCache cache = MakeCache(2);
  ASSERT_TRUE(cache.Insert(5, Filled(1).span(), /*dirty=*/true).ok());
  ASSERT_TRUE(cache.Insert(5, Filled(2).span(), /*dirty=*/false).ok());
  io::AlignedBuffer out(kBlock);
  ASSERT_TRUE(cache.Lookup(5, out.span()));
  EXPECT_EQ(FirstByte(out.span()), 1);
  EXPECT_EQ(cache.dirty_blocks(), 1u);
  // A newer dirty copy does replace it.
  ASSERT_TRUE(cache.Insert(5, Filled(3).span(), /*dirty=*/true).ok());
  ASSERT_TRUE(cache.Lookup(5, out.span()));
  EXPECT_EQ(FirstByte(out.span()), 3);
  EXPECT_EQ(cache.dirty_blocks(), 1u);
}

TEST_F(BlockCacheTest, DropForgetsADirtyBlockWithoutWritingIt) {
  BlockCache cache = MakeCache(2);
  ASSERT_TRUE(cache.Insert(7, Filled(1).span(), /*dirty=*/true).ok());
  cache.Drop(7);
  cache.Drop(8);  // absent: nothing happens
  io::AlignedBuffer out(kBlock);
  EXPECT_FALSE(cache.Lookup(7, out.span()));
  EXPECT_EQ(cache.dirty_blocks(), 0u);
  ASSERT_TRUE(cache.Flush().ok());
  EXPECT_TRUE(written_.empty());
  // The freed slot is reused without evicting anyone.
  ASSERT_TRUE(cache.Insert(1, Filled(1).span(), true).ok());
  ASSERT_TRUE(cache.Insert(2, Filled(2).span(), true).ok());
  EXPECT_TRUE(written_.empty());
}

TEST_F(BlockCacheTest, DisabledCacheKeepsNothing) {
  BlockCache cache = MakeCache(0);
  EXPECT_FALSE(cache.enabled());
  ASSERT_TRUE(cache.Insert(1, Filled(1).span(), true).ok());
  io::AlignedBuffer out(kBlock);
  EXPECT_FALSE(cache.Lookup(1, out.span()));
  EXPECT_EQ(cache.dirty_blocks(), 0u);
  EXPECT_TRUE(written_.empty());
}

}  // namespace
}  // namespace roundtable::internal
