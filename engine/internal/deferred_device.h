// A block device that holds every write in memory until its owner takes
// them. Reads see the held blocks over the inner device; Resize changes the
// size seen here, not the inner device's. The table puts one over each of its
// files so that between checkpoints nothing reaches them (the no-steal rule
// of docs/durability.md); a checkpoint journals the held blocks and calls
// Freeze, which keeps them (no longer held) for reads while they are
// written in place, then ReleaseFrozen once they are there.
//
// Its ledger counts what its callers asked for; the inner device's ledger is
// the physical one.
//
// Thread-safety: reads may run concurrently with each other; writes, Resize,
// Freeze and ReleaseFrozen need exclusive access (the table's writer
// lock). Between Freeze and ReleaseFrozen another thread may seal the
// frozen blocks (SealFrozen) and write them to the inner device; their
// bytes change only by the seal, or by their owner's thread where the owner
// holds blocks for that thread to fill and reads none of them meanwhile
// (the stash and write buffer copies made by a checkpoint's thread).
#ifndef ROUNDTABLE_ENGINE_INTERNAL_DEFERRED_DEVICE_H_
#define ROUNDTABLE_ENGINE_INTERNAL_DEFERRED_DEVICE_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "engine/internal/huge_page_allocator.h"
#include "io/base/mutex.h"
#include "io/block_device.h"

namespace roundtable::internal {

class DeferredDevice final : public io::BlockDevice {
 public:
  // Borrows `inner`, which must outlive this device.
  explicit DeferredDevice(io::BlockDevice* inner);

  // The inner device's, but writable: writes are held here, so a table
  // opened read-only replays its log over read-only files.
  const io::Capabilities& capabilities() const override { return caps_; }
  uint64_t num_blocks() const override { return size_; }

  // The held blocks, by block number (all below num_blocks()), in no
  // particular order. The owner may change their bytes in place (the table
  // builds and edits bucket blocks where they are held).
  struct HeldBlock {
    std::byte* data;
    size_t size;
    std::span<std::byte> span() const { return {data, size}; }
  };
  using HeldMap = absl::flat_hash_map<uint64_t, HeldBlock>;
  HeldMap& held() { return held_; }
  const HeldMap& held() const { return held_; }
  // The held bytes of `block`, or null: one array load.
  std::byte* Held(uint64_t block) const {
    return block < index_.size() ? index_[block] : nullptr;
  }
  // Starts loading what Held(block) reads.
  void PrefetchHeld(uint64_t block) const {
    if (block < index_.size()) __builtin_prefetch(&index_[block]);
  }
  // The blocks from num_blocks() to `num_blocks` are the inner device's,
  // written there directly (Table::Reserve's empty buckets): reads see
  // them. FailedPrecondition unless every block below num_blocks() reads
  // as it was written since the last Freeze (no Resize cut any off) and
  // the inner device holds them all.
  absl::Status ExtendFromInner(uint64_t num_blocks);
  io::BlockDevice& inner() { return *inner_; }
  uint64_t held_bytes() const { return held_.size() * block_size(); }
  // The memory of the device's own chunks, and of its index by block.
  uint64_t chunk_bytes() const { return chunks_.size() * kChunkBytes; }
  uint64_t index_bytes() const {
    return index_.capacity() * sizeof(std::byte*);
  }
  static constexpr size_t kChunkBytes = kHugePageBytes;
  // The held bytes of `block` for its owner to fill or edit in place: held
  // already, or a new slot (with unspecified bytes) held from now on.
  // REQUIRES: block < num_blocks().
  std::span<std::byte> Hold(uint64_t block);
  // Forgets the held bytes of `block` (its owner returns it unchanged).
  void Release(uint64_t block);
  // Held `block` leaves for the inner device: its owner writes it there
  // on another thread (a bucket block written ahead of the next
  // checkpoint), reading its bytes, which nothing but the leaving seal
  // changes until FinishLeaving. With a leaving seal (set_leaving_seal)
  // it leaves unsealed, and that thread seals it first (SealLeaving).
  // Meanwhile it is not held, and its bytes answer reads (FrozenCurrent; a
  // write holds it anew, as a frozen block). A frozen block held anew may
  // leave too: its frozen image stays as it is for the checkpoint's
  // thread, but no read sees it again.
  // REQUIRES: the block is held.
  void Detach(uint64_t block);
  // The blocks detached since the last call: `written` to the inner
  // device, which reads them from now on, each slot going back as its
  // block's bytes unless the block was held anew or cut off meanwhile;
  // else (a failed write) held again, unless held anew.
  void FinishLeaving(bool written);

  // Forgets the held blocks but keeps their bytes, unchanged, to answer
  // reads until ReleaseFrozen: call once the size reached the inner device
  // and their writes there are under way. A block written after this is
  // held anew (the frozen bytes stay as they were).
  // REQUIRES: nothing is frozen.
  void Freeze();
  // The frozen blocks (empty unless between Freeze and ReleaseFrozen).
  const HeldMap& frozen() const { return frozen_; }
  // The frozen bytes of `block` if it is frozen (or leaving: Detach) and
  // not held anew (then they are what reads of it see), else null. A seal
  // may be changing frozen ones meanwhile (SealFrozen): the owner reads
  // only what its seal leaves alone.
  const std::byte* FrozenCurrent(uint64_t block) const {
    if (Held(block) != nullptr) return nullptr;
    if (const std::byte* detached = Detached(block)) return detached;
    const auto it = FrozenImage(block);
    return it == frozen_.end() ? nullptr : it->second.data;
  }
  // The memory that blocks held, frozen or on their way to the inner
  // device take.
  uint64_t unwritten_bytes() const {
    return (held_.size() + frozen_.size() + detached_.size()) * block_size();
  }

  // Where held blocks' slots may come from besides the device's own
  // chunks (the table's bucket blocks: the cache's arena).
  class Lender {
   public:
    virtual ~Lender() = default;
    // A slot (one block), or null: the device uses its own.
    virtual std::byte* Lend() = 0;
    // Whether `slot` is one the lender lent.
    virtual bool Owns(const std::byte* slot) const = 0;
    // Blocks leaving the device, one (released) or a checkpoint's frozen
    // blocks at once: the lender takes back the slots that are its own.
    // `current` when a slot's bytes are the block's as the device reads it
    // then (a held block returned unchanged, or a frozen one now in place
    // and not held anew), so that the lender may keep them, or a copy of
    // them (from the device's own slots too, which stay with the device),
    // as the block's.
    struct Leaving {
      uint64_t block;
      std::byte* slot;
      bool current = false;
    };
    virtual void TakeBack(std::span<const Leaving> leaving) = 0;
  };
  // Borrows `lender`, which must outlive the device. Set it before any
  // write.
  void set_lender(Lender* lender) { lender_ = lender; }
  // Holds `block` in `slot` (the lender's, with the block's bytes), as
  // Hold would a new slot. REQUIRES: the block is not held.
  void Adopt(uint64_t block, std::byte* slot);

  // How a block's image is made whole for storage (the table's bucket
  // blocks: their checksum), or none. With one, the held blocks are
  // frozen as they are, unsealed: the owner seals them off its writers'
  // path (SealFrozen, before it stores them), and a read of a frozen block
  // before SealFrozen is done seals its own copy.
  using Seal = std::function<void(uint64_t block, std::span<std::byte>)>;
  void set_seal(Seal seal) { seal_ = std::move(seal); }
  // Applies the seal to every frozen block; may run on any thread while
  // others read (each read of a frozen block waits for at most a batch).
  void SealFrozen();
  // How a leaving block's image is made whole for storage, as the seal
  // above is a frozen one's (the seal of a write ahead of the next
  // checkpoint, whose sequence differs): the blocks detached since the
  // last FinishLeaving are sealed by SealLeaving, given their slots, on
  // any thread while others read; a read of one before that seals its
  // own copy.
  using LeavingSeal = std::function<void(std::span<std::byte>)>;
  void set_leaving_seal(LeavingSeal seal) { leaving_seal_ = std::move(seal); }
  // Applies the leaving seal to `slots`: the bytes of every block detached
  // since the last FinishLeaving (each read of one waits for at most a
  // batch).
  void SealLeaving(std::span<const std::span<std::byte>> slots);
  // Frees the frozen blocks: call once their writes reached the inner
  // device.
  void ReleaseFrozen() { ReleaseFrozen(frozen_.size()); }
  // Frees up to `n` of them, so that giving a checkpoint's blocks back
  // (to the lender, which may index each) can be spread over many calls;
  // the rest answer reads as before. True once none is left.
  bool ReleaseFrozen(size_t n);

 private:
  absl::Status DoRead(uint64_t block, std::span<std::byte> buffer) override;
  // Requests that only the inner device can answer go to it in one batch.
  absl::Status DoReadBatch(std::span<const io::ReadRequest> requests) override;
  // True when no block of [block, block + n) is held or cut off.
  bool AllInner(uint64_t block, uint64_t n) const;
  // The bytes of `block` if it is detached (on its way), else null.
  const std::byte* Detached(uint64_t block) const {
    if (detached_.empty()) return nullptr;
    const auto it = detached_.find(block);
    return it == detached_.end() ? nullptr : it->second.data;
  }
  // Where `block`'s frozen image is, if it is frozen and no block written
  // to the inner device since has superseded it; else frozen_.end().
  HeldMap::const_iterator FrozenImage(uint64_t block) const {
    if (frozen_.empty()) return frozen_.end();
    const auto it = frozen_.find(block);
    return it != frozen_.end() && Superseded(block) ? frozen_.end() : it;
  }
  // Whether `block`'s frozen image is stale (superseded_), looked up only
  // when there are any.
  bool Superseded(uint64_t block) const {
    return !superseded_.empty() && superseded_.contains(block);
  }
  // Whether reads of `block` (not held) see zeros rather than the inner
  // device's stale bytes.
  bool CutOff(uint64_t block) const {
    return block >= zero_from_ &&
           !(block < written_.size() && written_[block]);
  }
  absl::Status DoWrite(uint64_t block,
                       std::span<const std::byte> buffer) override;
  // Nothing to do: durability comes from the owner's checkpoint.
  absl::Status DoSync() override { return absl::OkStatus(); }
  absl::Status DoResize(uint64_t num_blocks) override;
  // A slot for a block newly held: the lender's, or a free one of the
  // chunks (a new chunk when none is free).
  std::byte* Allocate();
  // Slots that no longer hold their blocks: back to the lender if they
  // are its, else free among the chunks'.
  void Free(std::span<const Lender::Leaving> leaving);
  void Free(uint64_t block, std::byte* slot, bool current) {
    const Lender::Leaving one{block, slot, current};
    Free({&one, 1});
  }

  io::BlockDevice* const inner_;
  io::Capabilities caps_;
  uint64_t size_;
  // Blocks at or past this read as zeros unless held: they were cut off by
  // a Resize since the last Freeze, so the inner device's bytes are stale.
  uint64_t zero_from_;
  // Of those, the blocks written to the inner device since
  // (FinishLeaving): reads find them there.
  std::vector<bool> written_;
  // Detached blocks on their way to the inner device (FinishLeaving), and
  // the slots of those a Resize cut off meanwhile, which no read finds
  // but the writing thread may still read.
  HeldMap detached_;
  std::vector<std::byte*> detached_cut_;
  HeldMap held_;
  HeldMap frozen_;
  // Frozen blocks held anew and written to the inner device since
  // (FinishLeaving): their frozen images are stale, read by nobody but
  // the checkpoint's thread.
  absl::flat_hash_set<uint64_t> superseded_;
  // The next frozen block to free, once ReleaseFrozen(n) began and until
  // none is left (the map is not added to meanwhile, so it stays valid).
  std::optional<HeldMap::iterator> releasing_;
  // ReleaseFrozen's list of leaving blocks, kept for the next.
  std::vector<Lender::Leaving> leaving_;
  // Block -> its held bytes (null when not held): Held() without a hash
  // lookup. 8 bytes per block up to the highest ever held.
  std::vector<std::byte*> index_;
  // Held blocks live in 2 MiB chunks on transparent huge pages, as the
  // block cache's arena does: reads of held blocks spread over a large
  // table would otherwise miss the TLB far more often than cached ones.
  // Slots of blocks no longer held are reused by the next writes, so a
  // table that checkpoints every N bytes keeps N bytes of chunks instead of
  // allocating (and faulting in) them again after every checkpoint.
  std::vector<io::AlignedBuffer> chunks_;
  std::vector<std::byte*> free_;
  Seal seal_;
  LeavingSeal leaving_seal_;
  Lender* lender_ = nullptr;
  // Guards the bytes of the frozen and the leaving blocks while
  // SealFrozen or SealLeaving changes them.
  Mutex frozen_mu_;
  // Every frozen block is sealed (or there is no seal): a read of one
  // needs no seal of its own.
  bool frozen_sealed_ ABSL_GUARDED_BY(frozen_mu_) = true;
  // The same of the leaving (detached) blocks.
  bool leaving_sealed_ ABSL_GUARDED_BY(frozen_mu_) = true;
};

}  // namespace roundtable::internal

#endif  // ROUNDTABLE_ENGINE_INTERNAL_DEFERRED_DEVICE_H_
