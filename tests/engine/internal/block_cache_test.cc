// The block cache on its own: hits and misses, CLOCK eviction, a newer copy
// replacing an older one, Drop, lookups through the blocks' tag
// filters, lent slots, slots withheld for a shared memory budget, and the
// disabled cache.
#include "engine/internal/block_cache.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/internal/block_format.h"
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

TEST(BlockCacheTest, HitsMissesAndEviction) {
  BlockCache cache(4 * kBlock, kBlock);
  for (uint64_t b = 0; b < 4; ++b) cache.Insert(b, Filled(10 + b).span());
  io::AlignedBuffer out(kBlock);
  ASSERT_TRUE(cache.Lookup(2, out.span()));
  EXPECT_EQ(FirstByte(out.span()), 12);
  EXPECT_FALSE(cache.Lookup(9, out.span()));
  EXPECT_EQ(cache.hits(), 1u);
  EXPECT_EQ(cache.misses(), 1u);
  // A fifth block evicts one of the four; the others stay, with their bytes.
  cache.Insert(4, Filled(14).span());
  int cached = 0;
  for (uint64_t b = 0; b < 5; ++b) {
    if (cache.Lookup(b, out.span())) {
      ++cached;
      EXPECT_EQ(FirstByte(out.span()), 10 + b);
    }
  }
  EXPECT_EQ(cached, 4);
}

TEST(BlockCacheTest, ReferencedBlocksSurviveTheClock) {
  BlockCache cache(3 * kBlock, kBlock);
  for (uint64_t b = 0; b < 3; ++b) cache.Insert(b, Filled(b).span());
  io::AlignedBuffer out(kBlock);
  // Insert sets every reference bit; the first sweep clears them all and
  // evicts slot 0's block. Touch block 1 so that the next eviction skips it.
  cache.Insert(3, Filled(3).span());
  EXPECT_FALSE(cache.Lookup(0, out.span()));
  ASSERT_TRUE(cache.Lookup(1, out.span()));
  cache.Insert(4, Filled(4).span());
  EXPECT_TRUE(cache.Lookup(1, out.span()));
  EXPECT_FALSE(cache.Lookup(2, out.span()));
}

TEST(BlockCacheTest, ANewerCopyReplacesTheOld) {
  BlockCache cache(2 * kBlock, kBlock);
  cache.Insert(5, Filled(1).span());
  cache.Insert(5, Filled(2).span());
  io::AlignedBuffer out(kBlock);
  ASSERT_TRUE(cache.Lookup(5, out.span()));
  EXPECT_EQ(FirstByte(out.span()), 2);
  // Still one slot taken: a second bucket evicts nothing.
  cache.Insert(6, Filled(6).span());
  EXPECT_TRUE(cache.Lookup(5, out.span()));
  EXPECT_TRUE(cache.Lookup(6, out.span()));
}

TEST(BlockCacheTest, DropFreesTheSlot) {
  BlockCache cache(2 * kBlock, kBlock);
  cache.Insert(7, Filled(1).span());
  cache.Insert(8, Filled(2).span());
  cache.Drop(7);
  cache.Drop(9);  // absent: nothing happens
  io::AlignedBuffer out(kBlock);
  EXPECT_FALSE(cache.Lookup(7, out.span()));
  // The freed slot is reused without evicting bucket 8.
  cache.Insert(1, Filled(1).span());
  EXPECT_TRUE(cache.Lookup(8, out.span()));
  EXPECT_TRUE(cache.Lookup(1, out.span()));
}

// A bucket block of bucket b holding records with `tags`.
io::AlignedBuffer BlockWithTags(uint64_t b, std::vector<uint16_t> tags) {
  io::AlignedBuffer bytes(kBlock);
  EncodedBlock block(bytes.span());
  block.Init(b);
  for (uint16_t t : tags) block.Append(absl::StrCat("k", t), "v", t);
  return bytes;
}

// With a summarizer, a hit visits the block unless its filter rules the tag
// out; a newer copy brings its own filter. Without one, every hit visits.
TEST(BlockCacheTest, VisitTaggedSkipsBlocksTheFilterRulesOut) {
  BlockCache cache(2 * kBlock, kBlock, &TagFilterOf);
  BlockCache plain(2 * kBlock, kBlock);
  const io::AlignedBuffer first = BlockWithTags(3, {0x0102, 0x0304});
  cache.Insert(3, first.span());
  plain.Insert(3, first.span());
  int visits = 0;
  auto visit = [&](std::span<const std::byte>) { ++visits; };
  EXPECT_TRUE(cache.VisitTagged(3, 0x0102, visit));
  EXPECT_TRUE(cache.VisitTagged(3, 0x0304, visit));
  EXPECT_EQ(visits, 2);
  // Bits 5 and 6 are clear: a hit, and no visit.
  EXPECT_TRUE(cache.VisitTagged(3, 0x0506, visit));
  EXPECT_EQ(visits, 2);
  EXPECT_TRUE(plain.VisitTagged(3, 0x0506, visit));
  EXPECT_EQ(visits, 3);
  EXPECT_FALSE(cache.VisitTagged(4, 0x0102, visit));
  EXPECT_EQ(cache.hits(), 3u);
  EXPECT_EQ(cache.misses(), 1u);
  cache.Insert(3, BlockWithTags(3, {0x0506}).span());
  EXPECT_TRUE(cache.VisitTagged(3, 0x0506, visit));
  EXPECT_EQ(visits, 4);
  EXPECT_TRUE(cache.VisitTagged(3, 0x0102, visit));
  EXPECT_EQ(visits, 4);
}

TEST(BlockCacheTest, LentSlotsAreNeverEvictedAndComeBackFreeOrCached) {
  constexpr uint64_t kSlots = 16, kLendable = 14;  // an eighth kept clean
  BlockCache cache(kSlots * kBlock, kBlock);
  ASSERT_EQ(cache.lendable_slots(), kLendable);
  // A cache full of clean blocks lends all but an eighth of its slots
  // (the clock's victims); then Lend says no.
  for (uint64_t bucket = 100; bucket < 100 + kSlots; ++bucket) {
    cache.Insert(bucket, Filled(bucket).span());
  }
  std::vector<std::byte*> lent;
  for (uint64_t i = 0; i < kLendable; ++i) {
    lent.push_back(cache.Lend());
    ASSERT_NE(lent.back(), nullptr);
    EXPECT_TRUE(cache.Owns(lent.back()));
  }
  std::sort(lent.begin(), lent.end());
  EXPECT_EQ(std::adjacent_find(lent.begin(), lent.end()), lent.end());
  EXPECT_EQ(cache.Lend(), nullptr);
  EXPECT_EQ(cache.lent_slots(), kLendable);
  const io::AlignedBuffer outside(kBlock);
  EXPECT_FALSE(cache.Owns(outside.data()));
  // Inserts take only the other two slots, never a lent one.
  for (uint64_t bucket = 0; bucket < 6; ++bucket) {
    cache.Insert(bucket, Filled(20 + bucket).span());
  }
  int cached = 0;
  io::AlignedBuffer out(kBlock);
  for (uint64_t bucket = 0; bucket < 6; ++bucket) {
    cached += cache.Lookup(bucket, out.span());
  }
  EXPECT_EQ(cached, static_cast<int>(kSlots - kLendable));
  // A lent slot adopted as bucket 9's block, bytes as they are; the others
  // returned free.
  std::byte* a = lent.front();
  std::memset(a, 99, kBlock);
  cache.Adopt(9, a);
  ASSERT_TRUE(cache.Lookup(9, out.span()));
  EXPECT_EQ(FirstByte(out.span()), 99);
  for (size_t i = 1; i < lent.size(); ++i) cache.Return(lent[i]);
  EXPECT_EQ(cache.lent_slots(), 0u);
  // A cached block lent where it lies: the same bytes, no longer cached.
  std::byte* nine = cache.LendCached(9);
  EXPECT_EQ(nine, a);
  EXPECT_EQ(FirstByte({nine, kBlock}), 99);
  EXPECT_FALSE(cache.Contains(9));
  EXPECT_EQ(cache.LendCached(9), nullptr);
  // With every lendable slot lent, a cached block is still lent where it
  // lies (it was in memory already).
  for (uint64_t i = 1; i < kLendable; ++i) ASSERT_NE(cache.Lend(), nullptr);
  EXPECT_EQ(cache.Lend(), nullptr);
  cache.Insert(7, Filled(7).span());
  std::byte* seven = cache.LendCached(7);
  ASSERT_NE(seven, nullptr);
  EXPECT_EQ(cache.lent_slots(), kLendable + 1);
  // Adopting a bucket already cached frees the older copy's slot.
  cache.Insert(5, Filled(5).span());
  std::memset(nine, 50, kBlock);
  cache.Adopt(5, nine);
  ASSERT_TRUE(cache.Lookup(5, out.span()));
  EXPECT_EQ(FirstByte(out.span()), 50);
  EXPECT_EQ(cache.lent_slots(), kLendable);
}

TEST(BlockCacheTest, FreeSlotsAreLentPastTheLendableOnes) {
  BlockCache cache(4 * kBlock, kBlock);
  ASSERT_EQ(cache.lendable_slots(), 3u);  // one slot at least stays clean
  cache.Insert(0, Filled(1).span());
  // Three free slots: each is lent.
  std::vector<std::byte*> lent;
  for (int i = 0; i < 3; ++i) {
    lent.push_back(cache.Lend());
    ASSERT_NE(lent.back(), nullptr);
  }
  EXPECT_EQ(cache.lent_slots(), 3u);
  // With no free slot, the clean block is not evicted.
  EXPECT_EQ(cache.Lend(), nullptr);
  io::AlignedBuffer out(kBlock);
  ASSERT_TRUE(cache.Lookup(0, out.span()));
  EXPECT_EQ(FirstByte(out.span()), 1);
  // A free slot is lent past the lendable ones: it displaces nothing.
  cache.Return(lent.back());
  lent.pop_back();
  cache.Drop(0);
  lent.push_back(cache.Lend());
  ASSERT_NE(lent.back(), nullptr);
  lent.push_back(cache.Lend());
  ASSERT_NE(lent.back(), nullptr);
  EXPECT_EQ(cache.lent_slots(), 4u);
  EXPECT_EQ(cache.Lend(), nullptr);
  for (std::byte* slot : lent) cache.Return(slot);
  EXPECT_EQ(cache.lent_slots(), 0u);
}

TEST(BlockCacheTest, InsertIfRoomEvictsNothing) {
  BlockCache cache(2 * kBlock, kBlock);
  EXPECT_TRUE(cache.InsertIfRoom(0, Filled(1).span()));
  EXPECT_TRUE(cache.InsertIfRoom(1, Filled(2).span()));
  // Full: a new bucket is not kept, and both cached ones stay.
  EXPECT_FALSE(cache.InsertIfRoom(2, Filled(3).span()));
  io::AlignedBuffer out(kBlock);
  EXPECT_FALSE(cache.Lookup(2, out.span()));
  ASSERT_TRUE(cache.Lookup(0, out.span()));
  EXPECT_EQ(FirstByte(out.span()), 1);
  ASSERT_TRUE(cache.Lookup(1, out.span()));
  EXPECT_EQ(FirstByte(out.span()), 2);
  // A cached bucket takes its new bytes in its own slot.
  EXPECT_TRUE(cache.InsertIfRoom(1, Filled(4).span()));
  ASSERT_TRUE(cache.Lookup(1, out.span()));
  EXPECT_EQ(FirstByte(out.span()), 4);
  EXPECT_FALSE(BlockCache(0, kBlock).InsertIfRoom(0, Filled(1).span()));
}

// A checkpoint's give-back in one call, across several runs of the lock:
// lent slots adopted with their bytes and filters or returned free;
// blocks from elsewhere copied in only where a slot is free, or over
// their bucket's own copy, never evicting a clean block.
TEST(BlockCacheTest, TakeBackAdoptsReturnsAndCopiesWhereThereIsRoom) {
  BlockCache cache(600 * kBlock, kBlock, &TagFilterOf);
  auto make = [](std::span<std::byte> bytes, uint64_t b) {
    EncodedBlock block(bytes);
    block.Init(b);
    ASSERT_TRUE(block.Append(absl::StrCat("k", b), "v",
                             static_cast<uint16_t>(b * 7 + 1)));
  };
  auto holds = [&](uint64_t b) {
    io::AlignedBuffer out(kBlock);
    if (!cache.Lookup(b, out.span())) return false;
    EXPECT_EQ(EncodedBlock(out.span()).bucket(), b);
    EXPECT_TRUE(cache.MayContain(b, static_cast<uint16_t>(b * 7 + 1))) << b;
    return true;
  };
  io::AlignedBuffer clean(kBlock);
  for (uint64_t b = 1000; b < 1100; ++b) {
    make(clean.span(), b);
    cache.Insert(b, clean.span());
  }
  std::vector<BlockCache::Returning> back;
  for (uint64_t b = 0; b < 400; ++b) {
    std::byte* slot = cache.Lend();
    ASSERT_NE(slot, nullptr);
    make({slot, kBlock}, b);
    back.push_back({b, slot, b % 4 != 0});
  }
  EXPECT_EQ(cache.lent_slots(), 400u);
  // 100 slots free, and 100 more once the lent ones are back.
  std::vector<io::AlignedBuffer> elsewhere;
  for (uint64_t b = 2000; b < 2250; ++b) {
    elsewhere.emplace_back(kBlock);
    make(elsewhere.back().span(), b);
    back.push_back({b, elsewhere.back().data(), true});
  }
  elsewhere.emplace_back(kBlock);
  make(elsewhere.back().span(), 1000);
  EncodedBlock(elsewhere.back().span()).set_checkpoint(5);  // a newer copy
  back.push_back({1000, elsewhere.back().data(), true});
  cache.TakeBack(back);
  EXPECT_EQ(cache.lent_slots(), 0u);
  for (uint64_t b = 0; b < 400; ++b) EXPECT_EQ(holds(b), b % 4 != 0) << b;
  for (uint64_t b = 2000; b < 2250; ++b) EXPECT_EQ(holds(b), b < 2200) << b;
  for (uint64_t b = 1000; b < 1100; ++b) EXPECT_TRUE(holds(b)) << b;
  io::AlignedBuffer out(kBlock);
  ASSERT_TRUE(cache.Lookup(1000, out.span()));
  EXPECT_EQ(EncodedBlock(out.span()).checkpoint(), 5u);
}

// A block given back with its filter keeps that filter, and the cache
// reads nothing of the block for it; one given back without is summarized.
TEST(BlockCacheTest, TakeBackKeepsTheFilterItIsGiven) {
  static int summarized = 0;
  BlockCache cache(8 * kBlock, kBlock, [](std::span<const std::byte> block) {
    ++summarized;
    return TagFilterOf(block);
  });
  TagFilter given;
  given.Add(0x0102);
  std::vector<BlockCache::Returning> back;
  for (uint64_t b = 0; b < 4; ++b) {
    std::byte* slot = cache.Lend();
    ASSERT_NE(slot, nullptr);
    EncodedBlock block(std::span<std::byte>(slot, kBlock));
    block.Init(b);
    ASSERT_TRUE(block.Append(absl::StrCat("k", b), "v", 0x0304));
    back.push_back({b, slot, true, b % 2 == 0 ? &given : nullptr});
  }
  summarized = 0;
  cache.TakeBack(back);
  EXPECT_EQ(summarized, 2);
  for (uint64_t b = 0; b < 4; ++b) {
    // The given filter knows 0x0102 only; the block's own, 0x0304.
    EXPECT_EQ(cache.MayContain(b, 0x0102), b % 2 == 0) << b;
    EXPECT_EQ(cache.MayContain(b, 0x0304), b % 2 == 1) << b;
  }
}

TEST(BlockCacheTest, AllSlotsLentLeavesInsertsUncached) {
  BlockCache cache(2 * kBlock, kBlock);
  cache.Insert(0, Filled(1).span());
  cache.Insert(1, Filled(2).span());
  ASSERT_NE(cache.LendCached(0), nullptr);
  ASSERT_NE(cache.LendCached(1), nullptr);
  cache.Insert(2, Filled(3).span());  // no slot: not cached, no hang
  io::AlignedBuffer out(kBlock);
  EXPECT_FALSE(cache.Lookup(2, out.span()));
  EXPECT_EQ(cache.Lend(), nullptr);
}

// Whether the page holding `bytes` is in memory.
bool Resident(const std::byte* bytes) {
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t at = reinterpret_cast<uintptr_t>(bytes) & ~(page - 1);
  unsigned char in = 0;
  EXPECT_EQ(mincore(reinterpret_cast<void*>(at), page, &in), 0);
  return (in & 1) != 0;
}

TEST(BlockCacheTest, WithheldSlotsAreUnusedAndTheirMemoryGivenBack) {
  // Slots of a page each, so that each slot's memory is its own page.
  const uint32_t block = static_cast<uint32_t>(sysconf(_SC_PAGESIZE));
  constexpr uint64_t kSlots = 16, kUsable = 8;
  BlockCache cache(kSlots * block, block);
  io::AlignedBuffer bytes(block), out(block);
  auto insert = [&](uint64_t b, int fill) {
    std::memset(bytes.data(), fill, block);
    cache.Insert(b, bytes.span());
  };
  auto cached = [&](uint64_t from, uint64_t to) {
    std::vector<uint64_t> found;
    for (uint64_t b = from; b < to; ++b) {
      if (cache.Lookup(b, out.span())) found.push_back(b);
    }
    return found;
  };
  // Bucket b in slot b; buckets 3 and 12 then lent where they lie.
  for (uint64_t b = 0; b < kSlots; ++b) insert(b, static_cast<int>(b));
  std::byte* three = cache.LendCached(3);
  std::byte* twelve = cache.LendCached(12);
  ASSERT_NE(three, nullptr);
  ASSERT_NE(twelve, nullptr);
  const std::byte* base = three - 3 * block;
  ASSERT_EQ(twelve, base + 12 * block);
  for (uint32_t slot = 0; slot < kSlots; ++slot) {
    EXPECT_TRUE(Resident(base + slot * block)) << slot;
  }

  cache.SetUsableBlocks(kUsable);
  EXPECT_EQ(cache.usable_blocks(), kUsable);
  EXPECT_EQ(cache.lendable_slots(), kUsable - 1);
  EXPECT_EQ(cached(0, kSlots), (std::vector<uint64_t>{0, 1, 2, 4, 5, 6, 7}));
  // The slots past the end are given back, but the one still lent.
  for (uint32_t slot = 0; slot < kSlots; ++slot) {
    const bool kept = slot < kUsable || slot == 12;
    EXPECT_EQ(Resident(base + slot * block), kept) << slot;
  }
  // Inserts and lends use only the slots in use.
  for (uint64_t b = 100; b < 140; ++b) insert(b, static_cast<int>(b));
  EXPECT_EQ(cached(100, 140).size(), kUsable - 1);  // slot 3 is lent
  std::vector<std::byte*> lent;
  while (std::byte* slot = cache.Lend()) lent.push_back(slot);
  EXPECT_EQ(lent.size(), kUsable - 2);  // lendable, less slot 3
  for (std::byte* slot : lent) EXPECT_LT(slot, base + kUsable * block);
  EXPECT_EQ(cache.lent_slots(), lent.size() + 2);
  for (std::byte* slot : lent) cache.Return(slot);

  // Slot 12 comes back past the end: not cached, its memory given back,
  // and the older copy of its bucket cached meanwhile goes too.
  insert(12, 1);
  ASSERT_EQ(cached(12, 13).size(), 1u);
  std::memset(twelve, 2, block);
  cache.Adopt(12, twelve);
  EXPECT_TRUE(cached(12, 13).empty());
  EXPECT_FALSE(Resident(twelve));
  // Slot 3 comes back within: cached as it was.
  cache.Adopt(3, three);
  ASSERT_TRUE(cache.Lookup(3, out.span()));
  EXPECT_EQ(FirstByte(out.span()), 3);
  EXPECT_EQ(cache.lent_slots(), 0u);

  // Every slot in use again.
  cache.SetUsableBlocks(kSlots);
  EXPECT_EQ(cache.lendable_slots(), kSlots - kSlots / 8);
  lent.clear();
  while (std::byte* slot = cache.Lend()) lent.push_back(slot);
  EXPECT_EQ(lent.size(), kSlots - kSlots / 8);
  EXPECT_TRUE(std::any_of(lent.begin(), lent.end(), [&](std::byte* slot) {
    return slot >= base + kUsable * block;
  }));
  for (std::byte* slot : lent) cache.Return(slot);
  for (uint64_t b = 300; b < 300 + kSlots; ++b) insert(b, 9);
  cache.SetUsableBlocks(0);  // one slot at least
  EXPECT_EQ(cache.usable_blocks(), 1u);
  EXPECT_LE(cached(300, 300 + kSlots).size(), 1u);
  EXPECT_EQ(cache.lendable_slots(), 0u);
}

TEST(BlockCacheTest, WithheldSlotsSmallerThanAPageLeaveTheirNeighboursBe) {
  // 512-byte slots, eight to a page: a page is given back only when no
  // slot of it is in use.
  constexpr uint64_t kSlots = 64;
  BlockCache cache(kSlots * kBlock, kBlock);
  for (uint64_t b = 0; b < kSlots; ++b) {
    cache.Insert(b, Filled(static_cast<unsigned char>(b)).span());
  }
  std::byte* five = cache.LendCached(5);
  ASSERT_NE(five, nullptr);
  cache.SetUsableBlocks(3);
  EXPECT_EQ(FirstByte({five, kBlock}), 5);
  EXPECT_EQ(FirstByte({five + kBlock - 1, 1}), 5);
  io::AlignedBuffer out(kBlock);
  for (uint64_t b = 0; b < 3; ++b) {
    ASSERT_TRUE(cache.Lookup(b, out.span())) << b;
    EXPECT_EQ(FirstByte(out.span()), b);
    EXPECT_EQ(FirstByte(out.span().last(1)), b);
  }
  for (uint64_t b = 3; b < kSlots; ++b) {
    EXPECT_FALSE(cache.Lookup(b, out.span())) << b;
  }
  cache.Adopt(5, five);  // past the end: withheld, not cached
  EXPECT_FALSE(cache.Lookup(5, out.span()));
  for (uint64_t b = 0; b < 3; ++b) {
    ASSERT_TRUE(cache.Lookup(b, out.span())) << b;
    EXPECT_EQ(FirstByte(out.span()), b);
  }
}

TEST(BlockCacheTest, DisabledCacheKeepsNothing) {
  BlockCache cache(0, kBlock);
  EXPECT_FALSE(cache.enabled());
  cache.Insert(1, Filled(1).span());
  io::AlignedBuffer out(kBlock);
  EXPECT_FALSE(cache.Lookup(1, out.span()));
  EXPECT_EQ(cache.misses(), 1u);
}

}  // namespace
}  // namespace roundtable::internal
