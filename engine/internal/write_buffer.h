// The write buffer (Options::write_buffer_bytes): puts and deletes whose
// block is not in memory wait here, by bucket, reading nothing, with a
// persistent copy in the table's `buffer` file; its drain policy applies
// them to their blocks through the BucketTable a bucket at a time, so that
// one block read and write serves every put and delete a bucket gathered.
// It is the way down for every put and delete of a write: what it does not
// keep goes on to the BucketTable.
//
// It observes the BucketTable's distributes: buffered puts of the buckets a
// distribute moves follow their keys to their new buckets, and buckets it
// rebuilt (their blocks now in memory) are drained first, at no block read.
//
// Thread-safety: none of its own; the table's writer lock for every change,
// its reader lock for Find and the const reads.
#ifndef ROUNDTABLE_ENGINE_INTERNAL_WRITE_BUFFER_H_
#define ROUNDTABLE_ENGINE_INTERNAL_WRITE_BUFFER_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "engine/internal/bucket_store.h"
#include "engine/internal/bucket_table.h"
#include "engine/internal/logged_stash.h"
#include "engine/internal/superblock.h"
#include "engine/internal/value_ref.h"
#include "io/base/first_error.h"

namespace roundtable::internal {

class WriteBuffer final : public DistributeObserver {
 public:
  // What a buffered record costs in memory besides its encoded bytes: its
  // entry (with its key hash) and its bucket in the buffer's hash map.
  static constexpr size_t kRecordOverhead = 32;
  static_assert(sizeof(Stash::Entry) + sizeof(uint64_t) == kRecordOverhead,
                "Options::write_buffer_bytes and docs/table.md say 32");

  // A buffer of at most `limit_bytes` (0: none, every put goes to its
  // block) over `table` and `store`, with its copy in `file` as of `sb`.
  // `held_limit` is the held blocks' budget (past it, a checkpoint
  // starts). Borrows everything, which must outlive it; observes `table`.
  WriteBuffer(uint64_t limit_bytes, uint64_t held_limit, const Superblock& sb,
              io::BlockDevice* file, BucketTable* table, BucketStore* store,
              FirstError* error);

  // A write: Begin, then each Put and Delete, then Settle.
  // Begin starts the budget of distribute drains of a write of `ops`
  // operations.
  void Begin(size_t ops) {
    rebuilt_drains_left_ = kRebuiltDrainsPerOp * std::max<size_t>(ops, 1);
  }
  // A put waits in the buffer, reading nothing, unless it edits its block
  // in place (EditsInPlace) or its key is in the stash; a key already
  // buffered takes the new value here. A bucket whose buffered records
  // would fill its block is drained at once: one read and write for a
  // block's worth.
  absl::Status Put(std::string_view key, std::string_view value);
  // A delete waits the same way, as a record whose value is the tombstone
  // (value_ref.h), reading nothing: its drain removes the key's stored
  // record. One that goes on to its block (or the stash) drops the key's
  // buffered record there and then.
  absl::Status Delete(std::string_view key);
  // Deletes, and smaller values (also those of drained puts), may leave
  // the data small enough to release buckets; a release rebuilds blocks
  // whose buffered puts then go in, which may release more. Each round
  // drains buffered puts or uses up the write's drains, so this ends.
  absl::Status Settle();

  // Fills the buffer from its copy (LoggedStash::Load).
  absl::Status Load(const Layout& layout,
                    const mapping::RoundMapping& mapping);

  // Applies the buffered puts of the next bucket, in a sweep over the
  // buckets, that has any. REQUIRES: !empty().
  absl::Status DrainNext();

  // Reads.
  Record* Find(uint64_t b, std::string_view key, uint64_t h) {
    return buffer_.Find(b, key, h);
  }
  const Stash::List* ListOf(uint64_t b) const { return buffer_.ListOf(b); }
  // Starts loading bucket b's filter and, with a buffer (past the held
  // blocks' budget most puts join it), where its list is.
  void Prefetch(uint64_t b) const { buffer_.Prefetch(b, limit_ > 0); }
  bool empty() const { return buffer_.empty(); }
  // The buffered puts and deletes, and their copy.
  const LoggedStash& records() const { return buffer_; }
  LoggedStash& records() { return buffer_; }
  // Of the buffered records, the deletes (tombstones).
  uint64_t deletes() const { return deletes_; }
  // The memory the buffer takes: its records' encoded bytes and their
  // overhead (kRecordOverhead each).
  uint64_t memory_bytes() const {
    return buffer_.bytes() + buffer_.records() * kRecordOverhead;
  }
  // Buckets drained (LogicalLedger::buffer_drains), and of those the ones
  // a distribute had just rebuilt (distribute_drains).
  uint64_t drains() const { return drains_; }
  uint64_t distribute_drains() const { return distribute_drains_; }

  void OnDistribute(const mapping::RoundMapping& mapping,
                    std::span<const uint64_t> sources,
                    std::span<const uint64_t> rebuilt) override;

  // A grow rebuilds a few buckets, and a growing table grows about once
  // every 30 puts, so each write drains on average well under one rebuilt
  // bucket: four an operation keep up with the grows, and spread a chain
  // of drains and grows over the writes after it rather than have one
  // write wait for tens of them.
  static constexpr size_t kRebuiltDrainsPerOp = 4;

 private:
  // Put and Delete: `stored` is the value, or the tombstone.
  absl::Status Buffer(std::string_view key, std::string_view stored);
  // Whether a put edits bucket b's block rather than wait here: when the
  // block is held (it is written anyway), or cached while the whole table
  // fits in the held blocks' budget (then the checkpoints come seldom
  // enough for many puts to land on each block first). In a larger table
  // a clean block made dirty for one put would cost a block write at the
  // next checkpoint for that one record.
  bool EditsInPlace(uint64_t b);
  // While the buffer takes more than its limit, drains bucket after bucket
  // from the drain cursor on.
  absl::Status MaybeDrain();
  // Drains the buckets a distribute rebuilt, the latest first: their blocks
  // are in memory, so the puts cost no read, and no write besides the one
  // the distribute made. A drain may grow the table, which rebuilds more;
  // past kRebuiltDrainsPerOp for each operation of the write, the rest
  // wait for the next writes (in a growing table with a full buffer the
  // chain would otherwise drain most of the buffer inside one write).
  absl::Status DrainRebuilt();
  // Applies every buffered put and delete of bucket b to its block.
  absl::Status DrainBucket(uint64_t b);
  // The first bucket from `from` on (in a cycle over the m buckets) with
  // buffered puts. REQUIRES: !empty().
  uint64_t NextBufferedBucket(uint64_t from) const;
  // Reads the blocks of the next drains, from bucket `first` on in the
  // sweep, in one batch (BucketStore::Preload).
  absl::Status PreloadDrains(uint64_t first);

  // The drains whose blocks one batch reads: the write that starts a
  // batch waits for all of its reads (32 took that write to about 100 us,
  // docs/benchmarks.md).
  static constexpr uint64_t kPreloadedDrains = 8;

  const uint64_t limit_;
  const uint64_t held_limit_;
  BucketTable* const table_;
  BucketStore* const store_;
  FirstError* const error_;
  LoggedStash buffer_;
  uint64_t drain_cursor_ = 0;
  // Drains left before the next batch of their blocks is read.
  uint64_t preloaded_drains_ = 0;
  // Buckets with buffered puts that a distribute rebuilt (DrainRebuilt).
  std::vector<uint64_t> rebuilt_;
  // What DrainRebuilt may still drain in the current write.
  size_t rebuilt_drains_left_ = 0;
  uint64_t drains_ = 0;
  uint64_t distribute_drains_ = 0;
  uint64_t deletes_ = 0;  // deletes()
};

}  // namespace roundtable::internal

#endif  // ROUNDTABLE_ENGINE_INTERNAL_WRITE_BUFFER_H_
