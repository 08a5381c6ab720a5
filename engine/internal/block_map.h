// Where each bucket's block lies in the block file (docs/format.md, "Block
// map"). A checkpoint writes every bucket block changed since the last one
// to a place that no durable checkpoint refers to, once, and the map from
// bucket to place, in a file of its own, goes through the checkpoint's
// journal with the stash copy and the space map: the new places become the
// table's at the commit point, and a block torn on its way to the medium
// was never one a checkpoint referred to (docs/durability.md).
//
// The map is a block device over the block file whose blocks are the
// table's logical ones: blocks 0 and 1 the superblocks, block b + 2 bucket
// b's, wherever it lies. The deferred device of the bucket blocks reads
// through it.
//
// A place's life: a bucket's block is given a new place when a checkpoint
// is staged with it held (Stage), or when it is written ahead of the next
// checkpoint (PlaceAhead), the lowest free one, or past the end of the
// file; its old place, and the place of a bucket the table gave up,
// waits until that checkpoint is durable, then is free. A new table, and
// one of format version 9 or older, has bucket b at block b + 2.
//
// Thread-safety: reads (Read, ReadBatch, PlaceOf) may run concurrently
// with each other; everything else needs the table's writer lock.
#ifndef ROUNDTABLE_ENGINE_INTERNAL_BLOCK_MAP_H_
#define ROUNDTABLE_ENGINE_INTERNAL_BLOCK_MAP_H_

#include <cstdint>
#include <limits>
#include <span>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/internal/block_format.h"
#include "engine/internal/deferred_device.h"
#include "engine/internal/superblock.h"
#include "io/block_device.h"

namespace roundtable::internal {

inline constexpr uint32_t kBlockMapMagic = 0x4d425452;  // "RTBM"

// A set of free places as a bitmap, a bit a block of the file (a table of
// 10^7 records needs about 40 KiB): a checkpoint takes and frees one place
// for each block it writes, tens of thousands of them on the writer's
// path, each a word's bit here rather than a node of a tree.
class FreePlaces {
 public:
  bool empty() const { return count_ == 0; }
  uint64_t size() const { return count_; }
  bool contains(uint64_t place) const {
    return place / 64 < words_.size() && (words_[place / 64] >> (place % 64)) & 1;
  }
  void clear();
  // REQUIRES: `place` is not free.
  void Insert(uint64_t place);
  // REQUIRES: `place` is free.
  void Erase(uint64_t place);
  // Takes the lowest free place. REQUIRES: !empty().
  uint64_t TakeLowest();

 private:
  std::vector<uint64_t> words_;
  uint64_t count_ = 0;
  // No word below this one has a free place.
  size_t lowest_word_ = 0;
};

class BlockMap final : public io::BlockDevice {
 public:
  // Borrows `blocks` (the block file) and `file` (the map's), which must
  // outlive this. Holds no bucket until Load.
  BlockMap(io::BlockDevice* blocks, io::BlockDevice* file);

  // Places a map block of `block_size` bytes holds, and the map blocks of
  // a table of `buckets` buckets.
  static uint64_t PerBlock(uint32_t block_size) {
    return (block_size - kBlockHeaderBytes) / 8;
  }
  static uint64_t BlocksFor(uint64_t buckets, uint32_t block_size) {
    const uint64_t per = PerBlock(block_size);
    return (buckets + per - 1) / per;
  }

  // The places of a table of `buckets` buckets: read from the map's file
  // (as its deferred device reads it) when `stored`, else bucket b at
  // block b + 2 (a new table, or one of format version 9 or older), the
  // whole map then written by the next checkpoint. Every block of the
  // file that no bucket's place is (up to the last that one is) is free.
  // DataLoss for a damaged map block, or a place that is a superblock's,
  // past the end of the block file, or another bucket's too.
  absl::Status Load(uint64_t buckets, bool stored);

  // For checkpoint `sequence` of a table of `buckets` buckets, whose
  // changed bucket blocks are `held` (the bucket store's deferred device's
  // held blocks): the places freed by checkpoints up to `durable` become
  // free; each held bucket block below `buckets` gets a new place (its old
  // one, and those of the buckets past `buckets`, free once this
  // checkpoint is durable); and the map blocks that changed are put in
  // front of the map's file (device()) for the checkpoint to journal.
  absl::Status Stage(const DeferredDevice::HeldMap& held, uint64_t buckets,
                     uint64_t sequence, uint64_t durable);

  // Between two checkpoints: new places for `blocks` (each request's
  // block a bucket, its buffer that bucket's whole block, sealed), which
  // the caller then writes to file() at the places the requests now name:
  // blocks written ahead of checkpoint `sequence`, the next to be staged.
  // Nothing refers to the new places until that checkpoint's journal,
  // which takes the map blocks that changed, is durable, and the
  // checkpoint syncs the block file before it (so the writes must be done
  // before it is staged); a block's old place waits for that checkpoint
  // to be durable, as Stage's do, unless it was itself written ahead since
  // the last checkpoint (no checkpoint refers to it: free at once). So a
  // crash loses nothing: the last durable checkpoint's places are
  // untouched. The file is grown to hold the places here, by an eighth
  // more (kGrowthBlocks at least).
  absl::Status PlaceAhead(std::span<io::WriteRequest> blocks,
                          uint64_t sequence);
  // The block file.
  io::BlockDevice& file() { return *blocks_; }

  // Where logical block `block` lies in the block file: itself for a
  // superblock, else its bucket's place. REQUIRES: block < num_blocks().
  uint64_t PlaceOf(uint64_t block) const {
    return block < kHeaderBlocks ? block : place_[block - kHeaderBlocks];
  }
  // The blocks of the block file in use: past every place that a bucket
  // has or that waits to be free. A cut of the file after a checkpoint
  // keeps them (places written ahead of the next lie below it).
  uint64_t end() const { return end_; }
  // The memory of what is kept by bucket.
  uint64_t bucket_bytes() const {
    return place_.capacity() * sizeof(uint64_t) + ahead_.capacity() / 8;
  }
  uint64_t free_blocks() const { return free_.size(); }
  // The deferred device in front of the map's file.
  DeferredDevice& device() { return device_; }

  // The place of a bucket made since the last checkpoint.
  static constexpr uint64_t kNoPlace = std::numeric_limits<uint64_t>::max();

  const io::Capabilities& capabilities() const override { return caps_; }
  // The superblocks and every bucket's block.
  uint64_t num_blocks() const override { return kHeaderBlocks + place_.size(); }

 private:
  absl::Status DoRead(uint64_t block, std::span<std::byte> buffer) override;
  absl::Status DoReadBatch(std::span<const io::ReadRequest> requests) override;
  // Bucket blocks past every placed one (Table::Reserve's empty buckets,
  // written straight to the file): each gets a new place at the end of
  // the file. FailedPrecondition for a bucket that has a place: its block
  // changes only through a checkpoint.
  absl::Status DoWrite(uint64_t block,
                       std::span<const std::byte> buffer) override;
  absl::Status DoSync() override { return blocks_->Sync(); }
  // Grows the map with buckets that have no place yet (written next);
  // FailedPrecondition for a cut.
  absl::Status DoResize(uint64_t num_blocks) override;

  // Where logical block `block` lies; Internal for a bucket that has no
  // place yet (its block is held until the next checkpoint gives it one).
  absl::StatusOr<uint64_t> Placed(uint64_t block) const;
  // A free place, the lowest, else one past the end.
  uint64_t Allocate();
  // Bucket `bucket` is about to leave its place for a new one: the place
  // waits for checkpoint `sequence` to be durable, or is free at once if
  // it was written ahead since the last Stage (no checkpoint refers to
  // it); nothing for a bucket with no place yet.
  void LeavePlace(uint64_t bucket, uint64_t sequence);
  void SetPlace(uint64_t bucket, uint64_t place);
  // `place` is free: below the end, or at it (the end then moves down
  // past every free place).
  void Free(uint64_t place);

  io::BlockDevice* const blocks_;
  io::Capabilities caps_;
  DeferredDevice device_;        // over the map's file
  std::vector<uint64_t> place_;  // by bucket
  FreePlaces free_;
  // Places that checkpoints no longer refer to, with the sequence of the
  // first that does not: free once it is durable.
  std::vector<std::pair<uint64_t, uint64_t>> waiting_;
  uint64_t end_ = kHeaderBlocks;
  static constexpr uint64_t kGrowthBlocks = 16;
  // By map block: changed since the last Stage.
  std::vector<bool> dirty_;
  // By bucket: placed by PlaceAhead since the last Stage, so that no
  // checkpoint refers to its place; and those buckets.
  std::vector<bool> ahead_;
  std::vector<uint64_t> ahead_list_;
};

}  // namespace roundtable::internal

#endif  // ROUNDTABLE_ENGINE_INTERNAL_BLOCK_MAP_H_
