// The space of the value file (docs/format.md, "Space map"): which units
// hold a value, and the free runs the next values go to. A bitmap, one bit
// per unit (set: in use), persists it: it lives in memory whole, and the
// blocks of it that changed since the last checkpoint are put in front of
// its file by Stage, through a deferred device, so that a checkpoint
// journals them with the other files' blocks. The map on disk therefore
// always matches the last checkpoint's references.
//
// An extent's life: Reserve hands out a free run for a value about to be
// written (outside the table's lock); Claim marks it used when the write
// that refers to it is applied (and, replaying the log, takes it from the
// free runs); Release marks a dropped value's extent unused. Released
// units are not handed out again until a checkpoint that no longer refers
// to them is durable (Reclaim): until then the last durable checkpoint, or
// the log replayed over it, may still read them.
//
// Thread-safety: none; the table calls it under its writer lock.
#ifndef ROUNDTABLE_ENGINE_INTERNAL_SPACE_MAP_H_
#define ROUNDTABLE_ENGINE_INTERNAL_SPACE_MAP_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/container/btree_map.h"
#include "absl/container/btree_set.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "engine/internal/deferred_device.h"
#include "engine/internal/value_ref.h"
#include "io/block_device.h"

namespace roundtable::internal {

inline constexpr uint32_t kSpaceMapMagic = 0x4d535452;  // "RTSM"

class SpaceMap {
 public:
  // Borrows `file` (blocks of the table's block size), which must outlive
  // this.
  explicit SpaceMap(io::BlockDevice* file);
  SpaceMap(const SpaceMap&) = delete;
  SpaceMap& operator=(const SpaceMap&) = delete;

  // Units a bitmap block of `block_size` bytes covers, and the blocks a
  // map of `units` units takes.
  static uint64_t UnitsPerBlock(uint32_t block_size) {
    return uint64_t{block_size - 32} * 8;
  }
  static uint64_t BlocksFor(uint64_t units, uint32_t block_size) {
    const uint64_t per = UnitsPerBlock(block_size);
    return (units + per - 1) / per;
  }

  // Reads the map of a value file of `units` units (the superblock's) and
  // builds the free runs. DataLoss naming the block when a bitmap block is
  // damaged.
  absl::Status Load(uint64_t units);

  // A free run of `units` units for a value about to be written: the
  // smallest reusable run that takes it, else at the end of the file
  // (taking in a free run that ends there). The file must then be grown to
  // units() (the caller's). Reserved units are neither free nor used.
  Extent Reserve(uint64_t units);
  // Returns a reserved extent that no applied write came to refer to.
  void Unreserve(const Extent& e);
  // The units of `e` become used: a reserved extent, or (a replayed write)
  // one inside a free run, past the end of the file (which then grows to
  // it). DataLoss when any of its units is used or waits to be reused: a
  // reference the table could not have made.
  absl::Status Claim(const Extent& e);
  // The units of `e` (all used) become unused, reusable once a checkpoint
  // of generation generation() or later is durable. DataLoss when one is
  // not in use.
  absl::Status Release(const Extent& e);

  // The generation released units carry from now on: the sequence number
  // of the checkpoint that will be the first not to refer to them.
  void set_generation(uint64_t generation) { generation_ = generation; }
  uint64_t generation() const { return generation_; }
  // Checkpoints up to `durable` are durable: what they stopped referring to
  // may be reused.
  void Reclaim(uint64_t durable);

  // Puts the bitmap blocks changed since the last Stage, and the map's
  // size, in front of the file (the deferred device) for the checkpoint
  // about to be staged.
  void Stage();
  DeferredDevice& device() { return device_; }

  uint64_t units() const { return units_; }
  uint64_t used_units() const { return used_units_; }
  // Units neither used nor reserved: reusable, or waiting to be.
  uint64_t free_units() const { return units_ - used_units_ - reserved_units_; }
  bool used(uint64_t unit) const {
    return unit < units_ && (words_[unit / 64] >> (unit % 64)) & 1;
  }

 private:
  // The first unit from `from` on that is used (`set`) or unused, or
  // units().
  uint64_t Next(uint64_t from, bool set) const;
  // Whether every unit of [first, end) is used (or, with !set, unused).
  bool All(uint64_t first, uint64_t end, bool set) const;
  void SetRange(uint64_t first, uint64_t end, bool set);
  // Grows the map to `units` units, the new ones unused and not free.
  void GrowTo(uint64_t units);
  // Adds [first, first + units) to the free runs, merged with its
  // neighbours.
  void AddFree(uint64_t first, uint64_t units);
  void EraseFree(absl::btree_map<uint64_t, uint64_t>::iterator it);

  DeferredDevice device_;
  uint64_t units_ = 0;
  uint64_t used_units_ = 0;
  uint64_t reserved_units_ = 0;
  std::vector<uint64_t> words_;  // the bitmap, 64 units a word
  // Free runs: first unit -> units; and (units, first unit) for best fit.
  absl::btree_map<uint64_t, uint64_t> free_;
  absl::btree_set<std::pair<uint64_t, uint64_t>> by_size_;
  absl::flat_hash_map<uint64_t, uint64_t> reserved_;  // first unit -> units
  // Released extents with their generation, oldest first.
  std::vector<std::pair<uint64_t, Extent>> waiting_;
  uint64_t generation_ = 1;
  absl::btree_set<uint64_t> dirty_;  // bitmap blocks changed since Stage
  uint64_t stored_blocks_ = 0;       // bitmap blocks as of the last Stage
};

}  // namespace roundtable::internal

#endif  // ROUNDTABLE_ENGINE_INTERNAL_SPACE_MAP_H_
