// The paper's round-table: keys mapped to buckets by round-mapping, each
// bucket's records in its block or, where the block is full, in the stash
// (with its persistent copy); the record and byte counts that decide when
// the table grows (new_bucket and distribute) and shrinks (free_bucket and
// distribute backwards); and the logical ledger of the blocks each
// operation reads and writes. Blocks come from the BucketStore.
//
// A distribute moves the records of the blocks and stash lists it
// rebuilds. Whoever else keeps records by bucket (the write buffer) hears
// of each distribute through a DistributeObserver, before the records are
// placed; this class knows nothing of them.
//
// Errors: a failure after something changed is noted in the table's
// FirstError (a block or copy may no longer agree with the counts); a read
// that fails before any change is only returned.
//
// Thread-safety: none of its own; the table's writer lock for every
// change, its reader lock for the const reads and FindStashed.
#ifndef ROUNDTABLE_ENGINE_INTERNAL_BUCKET_TABLE_H_
#define ROUNDTABLE_ENGINE_INTERNAL_BUCKET_TABLE_H_

#include <atomic>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "engine/internal/block_format.h"
#include "engine/internal/bucket_store.h"
#include "engine/internal/layout.h"
#include "engine/internal/logged_stash.h"
#include "engine/internal/superblock.h"
#include "engine/internal/value_store.h"
#include "engine/mapping/round_mapping.h"
#include "io/base/first_error.h"
#include "roundtable/options.h"

namespace roundtable::internal {

class DistributeObserver {
 public:
  virtual ~DistributeObserver() = default;
  // A distribute is about to move the records of the `sources` buckets to
  // their buckets under the mapping as it now is (with `mapping`), and
  // rebuilds the blocks of `rebuilt`, which are held in memory from now on.
  virtual void OnDistribute(const mapping::RoundMapping& mapping,
                            std::span<const uint64_t> sources,
                            std::span<const uint64_t> rebuilt) = 0;
};

class BucketTable {
 public:
  // The table of `sb` (its layout, bucket count and counts) over `store`,
  // with its stash copy in `stash_file`; the out-of-line values of the
  // records it drops (overwritten, deleted) are released to `values`.
  // Borrows `store`, `stash_file`, `values` and `error`, which must outlive
  // it.
  BucketTable(const Superblock& sb, mapping::RoundMapping mapping,
              BucketStore* store, io::BlockDevice* stash_file,
              ValueStore* values, FirstError* error);

  void set_observer(DistributeObserver* observer) { observer_ = observer; }

  // A stored value dropped from the table (the write buffer's too): its
  // extent, if it is a reference, is released.
  absl::Status ReleaseValue(std::string_view stored) {
    if (!HasExtent(stored)) return absl::OkStatus();
    return error_->Note(values_->Release(stored));
  }

  const Layout& layout() const { return layout_; }
  uint64_t Hash(std::string_view key) const { return layout_.Hash(key); }
  uint64_t BucketOf(uint64_t h) const { return mapping_.FindBucket(h); }
  const mapping::RoundMapping& mapping() const { return mapping_; }
  uint64_t num_buckets() const { return mapping_.num_buckets(); }
  uint64_t record_count() const { return record_count_; }
  uint64_t data_bytes() const { return data_bytes_; }
  // Blocks needed for the records as they are (Layout::NeededBuckets).
  uint64_t needed_buckets() const {
    return layout_.NeededBuckets(data_bytes_, record_count_);
  }
  // The logical ledger, Gets included.
  LogicalLedger logical() const;
  // Counts `n` block reads of Gets (run under the reader lock).
  void CountGetReads(uint64_t n) {
    get_reads_.fetch_add(n, std::memory_order_relaxed);
  }

  // The stash and its copy.
  LoggedStash& stash() { return stash_; }
  const LoggedStash& stash() const { return stash_; }
  // The record of `key` (hash h) in bucket b's stash list, or null.
  Record* FindStashed(uint64_t b, std::string_view key, uint64_t h) {
    return stash_.Find(b, key, h);
  }

  // Puts `key` with `value` (whose hash is h) in its block, or in its
  // stash list when the block has no room, replacing the key's record.
  // First adds a bucket (one distribute) when the data would pass
  // (1 - epsilon) of the blocks' capacity. `owned`, if not null, is a
  // record whose key and value these are, given up to the stash if the
  // record lands there.
  absl::Status Put(std::string_view key, std::string_view value, uint64_t h,
                   Record* owned = nullptr);
  // Removes the record of `key` (hash h) from its block or stash list, if
  // there is one.
  absl::Status Delete(std::string_view key, uint64_t h);
  // Releases buckets while the data fits in m - 2 blocks: one bucket of
  // hysteresis, so that a grow is never undone by the next delete. Never
  // below min_buckets().
  absl::Status MaybeShrink();

  // Table::Reserve: at least `buckets` buckets from now on (0: back to
  // s0), taken at once. With `empty` (the caller's word that the table
  // holds no record anywhere, its write buffer included, and has just
  // checkpointed completely: every block on the device, nothing held) as
  // empty blocks written straight to the file; otherwise each is a grow,
  // which the observer sees.
  absl::Status Reserve(uint64_t buckets, bool empty);
  uint64_t min_buckets() const { return min_buckets_; }

 private:
  // new_bucket() and distribute: z block reads, z + 1 block writes.
  absl::Status Grow();
  // free_bucket() and distribute backwards: z + 1 reads, z writes.
  absl::Status Shrink();
  // distribute: every record of the `sources` blocks (read into `bytes`)
  // and of their stash lists goes to its bucket under the current mapping;
  // each bucket of `rebuilt` is made anew, overflowing into its stash list.
  absl::Status Distribute(std::span<const uint64_t> sources,
                          std::span<io::AlignedBuffer> bytes,
                          std::span<const uint64_t> rebuilt);
  // Reads the blocks of `buckets` into the first of source_blocks_.
  absl::StatusOr<std::span<io::AlignedBuffer>> LoadBlocks(
      std::span<const uint64_t> buckets);
  // Adds a record to bucket b's stash list (its block is full).
  absl::Status AddToStash(uint64_t b, uint64_t h, Record record);
  // Moves the stash records of bucket b that fit into its block.
  absl::Status RefillFromStash(EncodedBlock& block, uint64_t b);

  const Layout layout_;
  mapping::RoundMapping mapping_;
  BucketStore* const store_;
  ValueStore* const values_;
  FirstError* const error_;
  DistributeObserver* observer_ = nullptr;
  LoggedStash stash_;
  uint64_t record_count_;
  uint64_t data_bytes_;
  uint64_t min_buckets_;
  LogicalLedger logical_;
  std::atomic<uint64_t> get_reads_{0};
  // A distribute's scratch, kept from step to step (a step touches about
  // 2 s0 blocks; allocating and zeroing them anew cost as much as moving
  // the records): the source blocks read, the rebuilt blocks, each
  // bucket's index among them, and the records taken from the stash.
  std::vector<io::AlignedBuffer> source_blocks_;
  std::vector<EncodedBlock> rebuilt_blocks_;
  absl::flat_hash_map<uint64_t, size_t> rebuilt_index_;
  std::vector<Stash::Entry> taken_from_stash_;
};

}  // namespace roundtable::internal

#endif  // ROUNDTABLE_ENGINE_INTERNAL_BUCKET_TABLE_H_
