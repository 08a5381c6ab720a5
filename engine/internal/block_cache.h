// A cache of clean encoded bucket blocks with CLOCK replacement: each entry
// is the bucket's current block (written blocks wait for a checkpoint in
// slots the cache lends out, beyond the clock's reach, so eviction never
// writes anything; Lend and its kin below). Capacity 0 disables it: every
// lookup misses and nothing is kept.
//
// The blocks live in one arena, a slot each, beside an array of slot records
// and an array from bucket number to slot (buckets are dense, 0 .. m-1, so
// it takes 4 bytes per bucket of the table, 0.1% of a table of 4 KiB blocks):
// no allocation per block, and a hit is one array load and sets the slot's
// reference bit. Eviction sweeps the clock hand past referenced
// slots, clearing their bits. (Against the LRU list it replaced, Get and Put
// speed was the same within the noise of alternating runs.)
//
// Given a summarizer, the cache keeps a TagFilter of each cached block,
// made when the block comes in (a cached block never changes: a newer copy
// replaces it), 32 bytes a slot: VisitTagged answers a lookup whose tag the
// filter rules out without touching the block, whose first cache line would
// be a miss in a large cache.
//
// Thread-safety: every method takes the cache's own mutex, so lookups from
// concurrent readers of the table are safe.
#ifndef ROUNDTABLE_ENGINE_INTERNAL_BLOCK_CACHE_H_
#define ROUNDTABLE_ENGINE_INTERNAL_BLOCK_CACHE_H_

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <span>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "engine/internal/tag_filter.h"
#include "io/base/mutex.h"
#include "io/block_device.h"

namespace roundtable::internal {

class BlockCache {
 public:
  // The filter of a block's tags (TagFilterOf for bucket blocks).
  using Summarize = TagFilter (*)(std::span<const std::byte> block);
  // Without `summarize`, VisitTagged visits every cached block.
  BlockCache(uint64_t capacity_bytes, uint32_t block_size,
             Summarize summarize = nullptr);

  bool enabled() const { return capacity_blocks_ > 0; }
  uint64_t capacity_blocks() const { return capacity_blocks_; }
  // The slots in use: the first usable_blocks() of the arena, all of them
  // unless a memory budget the cache shares asks for fewer.
  uint64_t usable_blocks() const {
    return usable_.load(std::memory_order_relaxed);
  }
  // Uses only the first `blocks` slots (clamped to 1 .. capacity_blocks()).
  // Fewer evicts the clean blocks cached past them and gives those slots'
  // memory back to the system; a slot lent out past them is given back
  // the same way when it comes back, uncached. More makes them free again.
  void SetUsableBlocks(uint64_t blocks);
  uint32_t block_size() const { return block_size_; }

  // Copies bucket b's bytes into `out` and returns true on a hit.
  bool Lookup(uint64_t b, std::span<std::byte> out);

  // On a hit calls fn(bytes) under the cache's mutex, with no copy, and
  // returns true. fn must not call back into the cache.
  template <typename Fn>
  bool Visit(uint64_t b, Fn fn) {
    return VisitUnlessRuledOut(b, nullptr, fn);
  }
  // Visit for a key whose tag is `tag`: on a hit returns true, and calls
  // fn(bytes) unless the block's filter rules the tag out (then no record
  // of the block has that tag).
  template <typename Fn>
  bool VisitTagged(uint64_t b, uint16_t tag, Fn fn) {
    return VisitUnlessRuledOut(b, &tag, fn);
  }

  // False only when bucket b is cached and its block's filter rules `tag`
  // out (then no record of the block has that tag); counts nothing.
  bool MayContain(uint64_t b, uint16_t tag) {
    if (!enabled() || summarize_ == nullptr) return true;
    MutexLock lock(&mu_);
    const uint32_t slot = SlotOf(b);
    return slot == kNoSlot || filter_[slot].MayContain(tag);
  }

  // Starts loading what the next lookup of bucket b reads first.
  void Prefetch(uint64_t b) {
    if (!enabled()) return;
    MutexLock lock(&mu_);
    if (b < slot_of_.size()) __builtin_prefetch(&slot_of_[b]);
  }

  // Where bucket b's cached block and its tag filter lie (filter null
  // when the cache keeps none; both null when b is not cached); counts no
  // hit or miss and marks nothing. They stay valid until the cache next
  // changes: for a caller that keeps every other user of the cache out
  // (the table's writer) to read or prefetch them after the lock is let
  // go, so that no load of theirs holds up its release.
  struct Place {
    const std::byte* bytes = nullptr;
    const TagFilter* filter = nullptr;
  };
  Place Locate(uint64_t b) {
    if (!enabled()) return {};
    MutexLock lock(&mu_);
    const uint32_t slot = SlotOf(b);
    if (slot == kNoSlot) return {};
    return {BytesOf(slot), summarize_ != nullptr ? &filter_[slot] : nullptr};
  }

  // Whether bucket b is cached; counts no hit or miss and marks nothing.
  bool Contains(uint64_t b) {
    if (!enabled()) return false;
    MutexLock lock(&mu_);
    return SlotOf(b) != kNoSlot;
  }

  // Keeps `bytes` as bucket b's block (replacing an older copy), evicting
  // the clock's victim when full.
  void Insert(uint64_t b, std::span<const std::byte> bytes);

  // Insert where a slot is free or b is cached already: evicts nothing.
  // Returns whether the bytes were kept.
  bool InsertIfRoom(uint64_t b, std::span<const std::byte> bytes);

  // Forgets bucket b (released by a shrink).
  void Drop(uint64_t b);

  // Slots lent out: the table holds the blocks it writes in the cache's
  // arena, so that a block is in memory once whether clean or written,
  // and a written block becomes a cached one without a copy. A lent slot
  // is neither free nor cached, and never evicted, until it comes back.
  //
  // A slot to lend: a free one, or the clock's victim; null when
  // lendable_slots() are lent already and none is free (the rest, an
  // eighth, stays for clean blocks), or the cache is disabled.
  std::byte* Lend();
  // A slot to read a clean block into, to be cached where it lies
  // (Adopt) or given back (Return): a free one, or the clock's victim,
  // past lendable_slots() too (it is for a clean block); null when every
  // slot is lent or the cache is disabled. A read fills it with no copy.
  std::byte* LendToFill();
  static constexpr uint64_t kCleanShare = 8;  // 1/8 of the slots in use
  uint64_t lendable_slots() const {
    const uint64_t usable = usable_blocks();
    return usable -
           std::min<uint64_t>(usable,
                              std::max<uint64_t>(1, usable / kCleanShare));
  }
  // Bucket b's cached slot, lent out as it is (no longer cached), or null
  // when b is not cached. Lends past lendable_slots(): the block was in
  // memory.
  std::byte* LendCached(uint64_t b);
  // Whether `bytes` is a slot of the arena (one Lend could return).
  bool Owns(const std::byte* bytes) const {
    return enabled() && bytes >= arena_base_ && bytes < arena_end_;
  }
  // Blocks coming back: a slot this cache lent (Owns), adopted as bucket
  // b's cached block, with the bytes it holds, when `keep` (replacing an
  // older copy, whose slot is freed), else free; or bytes of someone
  // else's, copied in as b's block when `keep` and a slot is free or b is
  // cached already (InsertIfRoom), else left alone. A checkpoint gives back
  // tens of thousands at once: their filters are made outside the lock,
  // which is taken once for a run of them.
  struct Returning {
    uint64_t b;
    std::byte* bytes;
    bool keep;
    // The block's filter, when its owner has it: the cache then reads
    // none of the block's bytes (else it summarizes them).
    const TagFilter* filter = nullptr;
  };
  void TakeBack(std::span<const Returning> blocks);
  // One lent slot back, free; or caching bucket b with the bytes it holds.
  void Return(std::byte* slot) { TakeBack({{{0, slot, false}}}); }
  void Adopt(uint64_t b, std::byte* slot) { TakeBack({{{b, slot, true}}}); }
  uint64_t lent_slots() const {
    MutexLock lock(&mu_);
    return lent_;
  }
  // The memory of the slot index kept by bucket.
  uint64_t bucket_bytes() const {
    MutexLock lock(&mu_);
    return slot_of_.capacity() * sizeof(uint32_t);
  }

  uint64_t hits() const { return hits_.load(); }
  uint64_t misses() const { return misses_.load(); }

 private:
  static constexpr uint64_t kFree = ~uint64_t{0};
  static constexpr uint64_t kLent = ~uint64_t{0} - 1;
  // Past usable_blocks(), its memory given back (SetUsableBlocks).
  static constexpr uint64_t kWithheld = ~uint64_t{0} - 2;
  static constexpr uint32_t kNoSlot = ~uint32_t{0};
  // CLOCK's reference bit lives in the bucket's entry of slot_of_, which a
  // lookup reads anyway, so a hit touches no other cache line than the
  // block's.
  static constexpr uint32_t kReferenced = uint32_t{1} << 31;

  uint32_t SlotOf(uint64_t b) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (b >= slot_of_.size() || slot_of_[b] == kNoSlot) return kNoSlot;
    return slot_of_[b] & ~kReferenced;
  }
  // Sets the reference bit of a cached bucket (writing only when unset).
  void Reference(uint64_t b) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (!(slot_of_[b] & kReferenced)) slot_of_[b] |= kReferenced;
  }
  std::byte* BytesOf(uint32_t slot) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return arena_.data() + static_cast<size_t>(slot) * block_size_;
  }
  // Visit, skipping fn where `tag` is given and the filter rules it out.
  template <typename Fn>
  bool VisitUnlessRuledOut(uint64_t b, const uint16_t* tag, Fn fn) {
    if (!enabled()) {
      misses_.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    MutexLock lock(&mu_);
    const uint32_t slot = SlotOf(b);
    if (slot == kNoSlot) {
      misses_.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    Reference(b);
    hits_.fetch_add(1, std::memory_order_relaxed);
    if (tag == nullptr || summarize_ == nullptr ||
        filter_[slot].MayContain(*tag)) {
      fn(std::span<const std::byte>(BytesOf(slot), block_size_));
    }
    return true;
  }
  // The filter of `bytes`, made before the lock is taken: concurrent
  // readers then wait only for the block's copy.
  TagFilter SummaryOf(std::span<const std::byte> bytes) const {
    return summarize_ != nullptr ? summarize_(bytes) : TagFilter();
  }
  // `filter`: SummaryOf(bytes).
  void InsertLocked(uint64_t b, std::span<const std::byte> bytes,
                    const TagFilter& filter)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Bucket b's slot (referenced), or a new one for it (TakeSlot, then
  // Assign); kNoSlot when every slot is lent.
  uint32_t PlaceLocked(uint64_t b) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Caches bucket b in `slot`, referenced.
  void Assign(uint64_t b, uint32_t slot) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Lend's slot, once it may lend one; null when every slot is lent.
  std::byte* LendLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A slot for a new block: a free one, or the clock's victim; kNoSlot
  // when every slot is lent.
  uint32_t TakeSlot() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  uint32_t SlotAt(const std::byte* bytes) const {
    return static_cast<uint32_t>((bytes - arena_base_) / block_size_);
  }
  // Frees a slot that caches nothing.
  void FreeSlot(uint32_t slot) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    bucket_of_[slot] = kFree;
    free_.push_back(slot);
  }
  // Lent slots in use: those lent past usable_blocks() are not.
  uint64_t LentInUse() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return lent_ - lent_past_;
  }
  // Marks slots [first, last), none of them lent, withheld, and gives
  // their memory back to the system.
  void Withhold(uint32_t first, uint32_t last)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const uint64_t capacity_blocks_;
  const uint32_t block_size_;
  const Summarize summarize_;
  mutable Mutex mu_;
  io::AlignedBuffer arena_ ABSL_GUARDED_BY(mu_);  // grows to capacity
  // The arena's bounds, for Owns (fixed at construction).
  const std::byte* arena_base_ = nullptr;
  const std::byte* arena_end_ = nullptr;
  // By slot, the filter of its block's tags (empty without summarize_).
  std::vector<TagFilter> filter_ ABSL_GUARDED_BY(mu_);
  std::vector<uint64_t> bucket_of_ ABSL_GUARDED_BY(mu_);  // by slot
  std::vector<uint32_t> free_ ABSL_GUARDED_BY(mu_);
  // Slot of each bucket with its reference bit, or kNoSlot; grows to the
  // largest bucket cached.
  std::vector<uint32_t> slot_of_ ABSL_GUARDED_BY(mu_);
  uint32_t hand_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t lent_ ABSL_GUARDED_BY(mu_) = 0;  // slots lent out
  // Of those, the ones past usable_ (withheld when they come back).
  uint64_t lent_past_ ABSL_GUARDED_BY(mu_) = 0;
  // Written under mu_; read without it for usable_blocks().
  std::atomic<uint64_t> usable_{0};
  std::atomic<uint64_t> hits_{0}, misses_{0};
};

}  // namespace roundtable::internal

#endif  // ROUNDTABLE_ENGINE_INTERNAL_BLOCK_CACHE_H_
