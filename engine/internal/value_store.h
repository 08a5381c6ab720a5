// The value file and its space map: where out-of-line values live
// (docs/format.md, "Out-of-line values"). A value is written once, into an
// extent of its own, before the write that refers to it is logged; the log
// record, the blocks, the stash and the write buffer carry its reference
// (value_ref.h). It owns the file's space (SpaceMap), the count and bytes
// of the values stored, and what a sync of the log must sync first.
//
// Writing a value takes three steps, so that its bytes are written outside
// the table's lock: Reserve (writer lock) an extent, Write (no lock) the
// bytes into it, then log and apply the write, whose Claim marks the
// extent used, or Unreserve it if the write fails first. Release, called
// when a stored value is dropped (overwritten, deleted), frees a
// reference's extent for reuse after the next durable checkpoint.
//
// Thread-safety: Write, Read, Verify and SyncWritten may run from any
// number of threads (Read and Verify under the table's reader lock, so
// that no extent they read is freed meanwhile); the rest runs under the
// table's writer lock.
#ifndef ROUNDTABLE_ENGINE_INTERNAL_VALUE_STORE_H_
#define ROUNDTABLE_ENGINE_INTERNAL_VALUE_STORE_H_

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/internal/space_map.h"
#include "engine/internal/superblock.h"
#include "engine/internal/value_ref.h"
#include "io/base/mutex.h"
#include "io/base/status_macros.h"
#include "io/block_device.h"

namespace roundtable::internal {

class ValueStore {
 public:
  // Borrows the value file and the space map's file (blocks of the
  // table's block size, which is the unit), which must outlive this; `sb`
  // is the last checkpoint's superblock.
  ValueStore(io::BlockDevice* values, io::BlockDevice* map,
             const Superblock& sb);

  // Reads the space map (Open).
  absl::Status Load(uint64_t units) { return map_.Load(units); }

  // A free extent for a value of `length` bytes, the file grown to take
  // it.
  absl::StatusOr<Extent> Reserve(uint64_t length);
  // Writes `value` into reserved extent `e`: its reference (the stored
  // value of the write that refers to it).
  absl::StatusOr<std::string> Write(const Extent& e, std::string_view value);
  void Unreserve(const Extent& e) { map_.Unreserve(e); }

  // The stored value `stored` of an applied put, or one dropped: when it is
  // a reference, its extent becomes used, or unused (reusable after the
  // next durable checkpoint). DataLoss for an extent that cannot be.
  absl::Status Claim(std::string_view stored);
  absl::Status Release(std::string_view stored);

  // The value a reference stands for, read into *out and checked: DataLoss
  // naming bucket b (the key's) when the extent is outside the file or its
  // bytes do not match the reference.
  struct ReadTarget {
    ValueRef ref;
    uint64_t bucket = 0;
    std::string* out = nullptr;
    absl::Status status;
  };
  // Reads every target's extent in one batch of requests (a few per value
  // past the batch limit, never one per block); each target's status is
  // set. The call's status is the batch's.
  absl::Status Read(std::span<ReadTarget> targets);
  absl::Status Read(const ValueRef& ref, uint64_t bucket, std::string* out) {
    ReadTarget t{ref, bucket, out, {}};
    RT_RETURN_IF_ERROR(Read({&t, 1}));
    return t.status;
  }
  // Whether the file holds the referenced value, byte-exact: a write whose
  // log record survived a power loss that its value did not (recovery).
  absl::StatusOr<bool> Holds(const ValueRef& ref);

  // Syncs the value file if a value was written since its last sync: a
  // sync of the log, and a checkpoint's journal, make references durable,
  // so their values must be first.
  absl::Status SyncWritten() ABSL_LOCKS_EXCLUDED(sync_mu_);

  // Checkpoints. How near the values bring the next one, as a fraction
  // of the way (1: due): the values applied since the last one over
  // `applied_limit` (Options::value_checkpoint_bytes: a checkpoint makes
  // them durable, and recovery reads back at most that many), or the
  // bytes of the values dropped since, waiting to be reused, over the
  // larger of `freed_floor` and an eighth of the values stored (so that
  // the file stays within about 1.25 times the values).
  double CheckpointPressure(uint64_t applied_limit,
                            uint64_t freed_floor) const {
    if (applied_bytes_ == 0 && freed_bytes_ == 0) return 0;  // most writes
    const double applied = static_cast<double>(applied_bytes_) /
                           static_cast<double>(std::max<uint64_t>(applied_limit, 1));
    const double freed =
        static_cast<double>(freed_bytes_) /
        static_cast<double>(std::max<uint64_t>({freed_floor, bytes_ / 8, 1}));
    return std::max(applied, freed);
  }
  // Puts the space map's changes in front of its file and starts the
  // counts again.
  void Stage() {
    map_.Stage();
    applied_bytes_ = 0;
    freed_bytes_ = 0;
  }

  SpaceMap& map() { return map_; }
  const SpaceMap& map() const { return map_; }
  io::BlockDevice& file() const { return *values_; }
  uint32_t unit() const { return unit_; }
  uint64_t count() const { return count_; }
  uint64_t bytes() const { return bytes_; }

 private:
  io::BlockDevice* const values_;
  const uint32_t unit_;
  SpaceMap map_;
  uint64_t count_;
  uint64_t bytes_;
  uint64_t applied_bytes_ = 0;  // units' bytes claimed since Stage
  uint64_t freed_bytes_ = 0;    // units' bytes released since Stage
  // Values written so far, and as of the file's last sync.
  std::atomic<uint64_t> written_{0};
  Mutex sync_mu_;
  uint64_t synced_ ABSL_GUARDED_BY(sync_mu_) = 0;
};

}  // namespace roundtable::internal

#endif  // ROUNDTABLE_ENGINE_INTERNAL_VALUE_STORE_H_
