// Where a bucket's block lies: held in memory since the last checkpoint
// (written there, in the deferred device over the block file), cached
// clean (BlockCache), or only on the device. It owns the deferred device,
// the cache, and the tag filters of the held blocks, beside the blocks:
// every way of changing a held block (Edit, Rebuild) first sets its filter
// to pass every tag, and RefreshFilters, at the end of a write, makes the
// filters of the blocks changed since (a block held before the write
// keeps its filter and adds the tags appended; one held anew is
// summarized from its directory). Bucket b is block b + kHeaderBlocks
// of the deferred device, which reads the block file through the block
// map (where each bucket's block lies); nothing above this class sees
// block numbers.
//
// Each block is in memory at most once: a held block has no cached copy,
// and held blocks live in slots lent by the cache (all but an eighth of
// them; past that in the deferred device's own chunks), so that an edit of
// a cached block holds it where it lies and a checkpoint's blocks, once
// in place, become cached where they lie (docs/table.md, "The block
// cache"). Until then a frozen block, not held anew, is read where it
// lies and counts as in memory.
//
// Thread-safety: the table's writer lock for the methods that change blocks
// (Edit, Rebuild, Unhold, Resize, RefreshFilters); the reads
// (Find, Load, ReadBlocks, Preload, InMemory) may run concurrently with
// each other under its reader lock.
#ifndef ROUNDTABLE_ENGINE_INTERNAL_BUCKET_STORE_H_
#define ROUNDTABLE_ENGINE_INTERNAL_BUCKET_STORE_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "engine/internal/block_cache.h"
#include "engine/internal/block_format.h"
#include "engine/internal/block_map.h"
#include "engine/internal/bucket_array.h"
#include "engine/internal/deferred_device.h"
#include "engine/internal/superblock.h"
#include "engine/internal/tag_filter.h"
#include "io/base/status_macros.h"
#include "io/block_device.h"

namespace roundtable::internal {

class BucketStore {
 public:
  // Borrows `file` (the block file) and `map_file` (the block map's),
  // which must outlive this. Blocks of `block_size` bytes holding at most
  // `block_records` records (0: no limit); a cache of `cache_bytes`. Holds
  // no bucket until LoadPlaces.
  BucketStore(io::BlockDevice* file, io::BlockDevice* map_file,
              uint32_t block_size, uint32_t block_records,
              uint64_t cache_bytes);
  ~BucketStore();

  // The table holds `buckets` buckets, their places in the block file
  // stored in the map's file, or (not `stored`) bucket b at block b + 2
  // (BlockMap::Load).
  absl::Status LoadPlaces(uint64_t buckets, bool stored) {
    RT_RETURN_IF_ERROR(places_->Load(buckets, stored));
    return blocks_->ExtendFromInner(kHeaderBlocks + buckets);
  }
  // For checkpoint `sequence` of `buckets` buckets (BlockMap::Stage): each
  // held block given its new place, and stamped with the checkpoint's
  // sequence when its thread seals it.
  absl::Status StagePlaces(uint64_t buckets, uint64_t sequence,
                           uint64_t durable);
  // Where bucket b's block lies in the block file as of the last
  // checkpoint, or 0 for a bucket made since.
  uint64_t PlaceOf(uint64_t b) const {
    if (b + kHeaderBlocks >= places_->num_blocks()) return 0;
    const uint64_t place = places_->PlaceOf(b + kHeaderBlocks);
    return place == BlockMap::kNoPlace ? 0 : place;
  }
  BlockMap& places() { return *places_; }

  uint32_t block_size() const { return block_size_; }
  uint64_t cache_capacity_blocks() const { return cache_.capacity_blocks(); }
  // The cache's slots in use, in bytes, and a new number of them
  // (BlockCache::SetUsableBlocks): for a memory budget it shares.
  uint64_t cache_usable_bytes() const {
    return cache_.usable_blocks() * block_size_;
  }
  void SetCacheUsable(uint64_t bytes) {
    cache_.SetUsableBlocks(bytes / block_size_);
  }
  // The memory of what the store keeps by bucket (held blocks' summaries
  // and index, the cache's index, the block map, the write-ahead queue).
  uint64_t bucket_bytes() const {
    return held_.memory_bytes() + edited_at_.memory_bytes() +
           queued_.memory_bytes() + cache_.bucket_bytes() +
           blocks_->index_bytes() + places_->bucket_bytes();
  }

  // Reads. The value of `key` (whose tag is `tag`) in bucket b's block into
  // *value: true if found. A cached or held block is searched where it
  // lies, with no copy, unless its tag filter rules the key out; otherwise
  // the block is read from the device (one read) into a slot the cache
  // lends, verified, and cached where it lies.
  absl::StatusOr<bool> Find(uint64_t b, std::string_view key, uint16_t tag,
                            std::string* value) {
    bool found = false;
    auto find = [&](std::span<const std::byte> bytes) {
      found = FindIn(bytes, key, tag, value);
    };
    if (cache_.VisitTagged(b, tag, find)) return found;
    const std::byte* held = FindHeld(b);
    if (held == nullptr && (held = FindFrozen(b)) != nullptr) {
      held_hits_.fetch_add(1, std::memory_order_relaxed);
    }
    if (held != nullptr) {
      if (HeldMayContain(b, tag)) find({held, block_size_});
      return found;
    }
    return FindOnDevice(b, key, tag, value);
  }
  // Bucket b's block into `out`: from the cache, or held, or from the
  // device (then verified and cached).
  absl::Status Load(uint64_t b, std::span<std::byte> out);
  // The blocks of `buckets` (distinct) into `out`, as Load does each, but
  // with the ones only the device holds read in one batch (one submission
  // for all of them), and cached only if `cache` (not the blocks a grow or
  // a shrink reads, made anew right after: a copy each, and a clean block
  // evicted for it).
  absl::Status ReadBlocks(std::span<const uint64_t> buckets,
                          std::span<io::AlignedBuffer> out, bool cache = true);

  // Reads the blocks of `buckets` that are not in memory in one batch (one
  // submission), each into a slot the cache lends, verified, and caches
  // them where they lie, so that editing or finding in each next reads
  // nothing: for a sweep of edits over blocks mostly on the device (the
  // write buffer's drains), or the reads of a pipeline of Gets. A hint: nothing when the cache is off or
  // at most one block is missing, and a small cache may evict them first.
  absl::Status Preload(std::span<const uint64_t> buckets);

  // Whether bucket b's block is held (a put edits it with no read).
  bool Held(uint64_t b) const { return blocks_->Held(b + kHeaderBlocks); }
  // Whether it is held or cached, or frozen by a checkpoint and not held
  // anew (then the frozen image is the block).
  bool InMemory(uint64_t b) { return Held(b) || Cached(b); }
  bool Cached(uint64_t b) {
    return cache_.Contains(b) || FindFrozen(b) != nullptr;
  }
  // Starts loading what InMemory(b) and Edit(b) look at.
  void Prefetch(uint64_t b) {
    blocks_->PrefetchHeld(b + kHeaderBlocks);
    cache_.Prefetch(b);
    if (b < held_.size()) {
      // Written at the end of an edit, held or cached; 40 bytes, across
      // two lines for some buckets.
      __builtin_prefetch(&held_[b], 1);
      __builtin_prefetch(&held_[b].filter + 1, 1);
    }
  }

  // Starts loading the header and first slots of bucket b's block where
  // it is in memory (held or cached) and its tag filter, once
  // Prefetch(b)'s lines are in.
  // With `size`, also where an Append of a record of that EncodedSize
  // would store it, as the block was when a write last left it (the held
  // summary's append point): no wait for the header to say where.
  void PrefetchBlock(uint64_t b, size_t size = 0) {
    const BlockCache::Place place = EditPlace(b);
    if (place.bytes == nullptr) return;
    if (place.filter != nullptr) __builtin_prefetch(place.filter);
    PrefetchDirectory(place.bytes);
    if (size > 0) {
      EncodedBlock::PrefetchAppendAt(
          place.bytes, block_size_,
          b < held_.size() ? held_[b].append_point : 0, size);
    }
  }

  // Starts loading, to be written, what an edit of bucket b's block for a
  // key of tag `tag` touches next, where the block is in memory, once
  // PrefetchBlock(b)'s lines are in: the record with that tag, or where
  // an Append of a record of EncodedSize `size` (0: none) would go
  // (EncodedBlock::PrefetchEdit; its directory is searched only where the
  // block's filter passes the tag).
  void PrefetchEdit(uint64_t b, uint16_t tag, size_t size) {
    const BlockCache::Place place = EditPlace(b);
    if (place.bytes == nullptr) return;
    EncodedBlock(std::span<const std::byte>(place.bytes, block_size_))
        .PrefetchEdit(tag, size,
                      place.filter == nullptr || place.filter->MayContain(tag));
  }

  // False only when bucket b's block is in memory and its tag filter
  // rules `tag` out: no record of the block has that tag. Ask before Edit,
  // which lets the block's filter pass every tag until the write ends.
  bool MayContain(uint64_t b, uint16_t tag) {
    if (Held(b) || FindFrozen(b) != nullptr) return HeldMayContain(b, tag);
    return cache_.MayContain(b, tag);
  }

  // Edits. Bucket b's block, to edit in place: a held block where it lies;
  // a cached one is held where it lies (its slot leaves the cache); any
  // other is copied (a frozen image, or read from the device and
  // verified) into a newly held slot; and *fresh (if given) is set. The
  // edit is the write: the block stays held until the next checkpoint
  // (Unhold undoes a fresh hold that changed nothing). The view is valid
  // until the next change of the held blocks.
  absl::StatusOr<EncodedBlock> Edit(uint64_t b, bool* fresh = nullptr);
  // Returns a block freshly held by Edit, unchanged, to the cache.
  void Unhold(uint64_t b);
  // Bucket b's block made anew, empty, where it is held (a distribute's
  // rebuilt block); its cached copy dropped. Its free bytes are as the
  // slot left them: the caller appends its records and then zeroes them
  // (EncodedBlock::ZeroFree), before anything else reads the block.
  EncodedBlock Rebuild(uint64_t b);
  // Drops bucket b's cached copy (a released bucket).
  void DropCached(uint64_t b) { cache_.Drop(b); }
  // Gives the blocks changed since the last call their tag filters again.
  void RefreshFilters();
  // Writes held blocks, the longest held first, to new places in the
  // block file ahead of checkpoint `sequence` (the next to be staged;
  // BlockMap::PlaceAhead), on a thread of its own, while more than
  // `keep_bytes` are held: up to `most` blocks of buckets below `buckets`
  // at a time, the next batch once the last is done (with `wait`, once it
  // is done, rather than none while it runs). A block on its way
  // answers reads from memory, and a write holds it anew, as a
  // checkpoint's frozen blocks; once written it is cached where it lies,
  // clean, with its tag filter. A block that a checkpoint froze and a
  // write held anew is written ahead as any other (DeferredDevice::Detach).
  absl::Status WriteAhead(uint64_t keep_bytes, size_t most, uint64_t buckets,
                          uint64_t sequence, bool wait = false);
  // Waits for the blocks being written ahead and gives them back: before
  // a checkpoint is staged (its sync of the block file must cover them),
  // and before the files close. Their write's status.
  absl::Status FinishAhead();

  // The file as the table sees it holds `buckets` buckets.
  absl::Status Resize(uint64_t buckets) {
    return blocks_->Resize(kHeaderBlocks + buckets);
  }
  // The file holds `buckets` buckets, those from `from` on empty blocks
  // written straight to the file (Table::Reserve of an empty table, right
  // after a checkpoint: nothing held, nothing cut off). REQUIRES: no block
  // holds a record; every block is then cached, empty, as far as the
  // cache holds them.
  absl::Status AddEmpty(uint64_t from, uint64_t buckets);

  // The deferred device over the block file.
  DeferredDevice& device() { return *blocks_; }
  const DeferredDevice& device() const { return *blocks_; }

  // Ledgers.
  uint64_t cache_hits() const { return cache_.hits(); }
  uint64_t cache_misses() const { return cache_.misses(); }
  uint64_t held_hits() const {
    return held_hits_.load(std::memory_order_relaxed);
  }
  uint64_t written_ahead() const { return written_ahead_; }
  // Blocks written ahead since the last checkpoint was staged: their old
  // places, and theirs, are free only after the next checkpoint.
  uint64_t ahead_since_checkpoint() const { return ahead_since_checkpoint_; }

 private:
  EncodedBlock View(std::span<std::byte> bytes,
                    TagFilter* appended = nullptr) const {
    return EncodedBlock(bytes, block_records_, appended);
  }
  // Bucket b's frozen image, if a checkpoint froze its block and no write
  // held it since; its bytes are the block's but for the checksum, which
  // the checkpoint's thread may be setting (a read never looks at it).
  const std::byte* FindFrozen(uint64_t b) const {
    return blocks_->FrozenCurrent(b + kHeaderBlocks);
  }
  // Bucket b's held block (a read it answers counts in held_hits), or null.
  std::byte* FindHeld(uint64_t b) {
    std::byte* held = blocks_->Held(b + kHeaderBlocks);
    if (held != nullptr) held_hits_.fetch_add(1, std::memory_order_relaxed);
    return held;
  }
  // Whether the block `bytes` holds `key` (whose tag is `tag`): then its
  // value is assigned to *value.
  static bool FindIn(std::span<const std::byte> bytes, std::string_view key,
                     uint16_t tag, std::string* value);
  // Find's read of a block that is neither cached nor held.
  absl::StatusOr<bool> FindOnDevice(uint64_t b, std::string_view key,
                                    uint16_t tag, std::string* value);
  // Held, or read from the device, verified and cached.
  absl::Status LoadFromDevice(uint64_t b, std::span<std::byte> out);
  // Reads the blocks of `buckets` (in no memory) in one batch, each into
  // a slot the cache lends, as many as it lends slots for; verifies each,
  // calls visit(index, bytes) and caches it where it lies. The
  // number read, or the first failure (from which the slots go back
  // free).
  absl::StatusOr<size_t> FillCache(
      std::span<const uint64_t> buckets,
      absl::FunctionRef<void(size_t, std::span<const std::byte>)> visit);
  // How RefreshFilters makes the filter of an edited block: the filter
  // the block kept while held (kKept) or no tag (kEmpty, a block made
  // anew), with the tags the write appended; or from the block's
  // directory (kMake). Remove and ReplaceValue bring no tag in, so the
  // first two pass every tag of the block (and perhaps some of records
  // removed while it stays held).
  enum class Summary { kKept, kEmpty, kMake };
  // Lists bucket b among the blocks whose filters RefreshFilters makes,
  // its filter passing every tag until then; where the tags that the
  // edits of its block append are to be gathered.
  TagFilter* NoteEdited(uint64_t b, Summary summary);
  // Where bucket b's block lies in memory to be edited where it lies
  // (held, or cached), with the tag filter kept for it (null: none, every
  // tag passes); both null when it is in neither. For the writer: valid
  // until the held blocks or the cache next change.
  BlockCache::Place EditPlace(uint64_t b) {
    if (const std::byte* held = blocks_->Held(b + kHeaderBlocks)) {
      return {held, b < held_.size() ? &held_[b].filter : nullptr};
    }
    return cache_.Locate(b);
  }
  bool HeldMayContain(uint64_t b, uint16_t tag) const {
    return b >= held_.size() || held_[b].filter.MayContain(tag);
  }


  const uint32_t block_size_;
  const uint32_t block_records_;
  std::unique_ptr<BlockMap> places_;
  std::unique_ptr<DeferredDevice> blocks_;
  BlockCache cache_;
  // By bucket, what a write left of its block while held: its tag filter
  // (passing every tag while a write edits it, and for a block no write
  // has held since the table opened) and its append_point() (0, an empty
  // block's, for those), where its next append likely goes: a hint for
  // PrefetchBlock only, a stale one costs a wasted load. And the buckets
  // whose held blocks changed since the last refresh.
  struct HeldSummary {
    TagFilter filter = TagFilter::All();
    uint32_t append_point = 0;
  };
  BucketArray<HeldSummary> held_;
  // The blocks edited since the last refresh (a deque: edit views point
  // at their filters while more are listed), and by bucket 1 + its index
  // there (0: not listed).
  struct Edited {
    uint64_t b;
    TagFilter filter;
    Summary summary;
  };
  std::deque<Edited> edited_;
  BucketArray<uint64_t> edited_at_;
  // Held buckets in the order their blocks were first edited since they
  // were last written (WriteAhead takes the oldest), and by bucket whether
  // it is in that queue; a bucket whose block a checkpoint took since
  // stays in it until WriteAhead passes it.
  std::deque<uint64_t> held_order_;
  BucketArray<bool> queued_;
  // The blocks being written ahead, at their places, and the thread that
  // writes them (started with the first batch): `state` is kIdle, kBusy
  // while it writes a batch, or kStop.
  struct Ahead {
    enum State : int { kIdle, kBusy, kStop };
    std::vector<io::WriteRequest> blocks;
    // Their slots, unsealed until the thread seals them, and the sequence
    // it stamps them with (that of the next checkpoint).
    std::vector<std::span<std::byte>> slots;
    uint64_t sequence = 0;
    absl::Status status;
    std::atomic<int> state{kIdle};
    std::thread thread;
  };
  Ahead ahead_;
  bool ahead_placed_ = false;  // ahead_.blocks are placed and detached
  uint64_t written_ahead_ = 0;
  uint64_t ahead_since_checkpoint_ = 0;
  // The sequence of the checkpoint whose thread seals the frozen blocks:
  // set by StagePlaces, before the thread starts, and read by it.
  uint64_t sealing_ = 0;
  // A block read from the device before it is held.
  io::AlignedBuffer work_;
  // Lends the cache's slots to the deferred device and takes them back.
  class CacheLender final : public DeferredDevice::Lender {
   public:
    CacheLender(BlockCache* cache, const BucketArray<HeldSummary>* held)
        : cache_(cache), held_(held) {}
    std::byte* Lend() override { return cache_->Lend(); }
    bool Owns(const std::byte* slot) const override {
      return cache_->Owns(slot);
    }
    void TakeBack(std::span<const Leaving> leaving) override;

   private:
    BlockCache* const cache_;
    // The store's held_.
    const BucketArray<HeldSummary>* const held_;
    std::vector<BlockCache::Returning> returning_;
  };
  CacheLender lender_{&cache_, &held_};
  // Reads run under the table's reader lock, so their count is atomic.
  std::atomic<uint64_t> held_hits_{0};
};

}  // namespace roundtable::internal

#endif  // ROUNDTABLE_ENGINE_INTERNAL_BUCKET_STORE_H_
