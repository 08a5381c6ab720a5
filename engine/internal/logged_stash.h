// Records kept in memory by bucket with a persistent copy in a file of their
// own: the stash (records whose block is full) and the write buffer (puts
// not yet applied to their blocks) are each one of these. It owns the
// in-RAM lists (Stash), the copy's log of changes (StashLog) and the
// deferred device in front of the copy's file, which holds the copy's
// writes until a checkpoint journals them (docs/format.md, "The stash
// copy").
//
// The copy is kept one of two ways (Copy). Logged (the stash): every change
// that a record enters or leaves the copy by is logged here: Put, Replace,
// Remove, MoveOut and LogRemoved; once the log has grown well past the
// live records, the next checkpoint's thread rewrites it from them (from
// the views Snapshot gives). A snapshot (the write buffer, whose records
// mostly leave it before the next checkpoint): the changes are not
// logged, and each checkpoint's thread rewrites the copy from the live
// records when they changed since the last (or Flush does, on the
// writer). Either way the copy reaches its
// file only at a checkpoint, through its journal (the writes wait in the
// deferred device, or the checkpoint's thread makes the blocks): both
// give the file the same records.
// Take and Restore move a record between buckets in memory only (a
// distribute): the copy stores no bucket, so the record stays in it
// unchanged.
//
// Thread-safety: none; the table calls it under its writer lock, and its
// const methods under its reader lock.
#ifndef ROUNDTABLE_ENGINE_INTERNAL_LOGGED_STASH_H_
#define ROUNDTABLE_ENGINE_INTERNAL_LOGGED_STASH_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "engine/internal/deferred_device.h"
#include "engine/internal/kill_points.h"
#include "engine/internal/layout.h"
#include "engine/internal/stash.h"
#include "engine/internal/stash_log.h"
#include "engine/mapping/round_mapping.h"
#include "io/base/status_macros.h"

namespace roundtable::internal {

class LoggedStash {
 public:
  // How the copy is kept: a log of changes, or a snapshot at each Flush.
  enum class Copy { kLogged, kSnapshot };

  // Borrows `file`, which must outlive this; the copy continues after
  // block `blocks` - 1 of generation `epoch` (the superblock's). `name`
  // ("stash", "buffer") names its kill points; `what` ("stash copy") its
  // errors; `copy` says how the copy is kept (above).
  LoggedStash(io::BlockDevice* file, uint64_t epoch, uint64_t blocks,
              std::string_view name, std::string_view what,
              Copy copy = Copy::kLogged);

  // Fills the lists from the copy, each record in its bucket under
  // `mapping`, and resumes the copy's tail. DataLoss when a record is larger
  // than the layout takes, or the copy is damaged.
  absl::Status Load(const Layout& layout, const mapping::RoundMapping& mapping);

  // Reads: the record of `key` (hash h) in bucket b's list, or null (valid
  // until the next change); bucket b's list, or null.
  Record* Find(uint64_t b, std::string_view key, uint64_t h) {
    return stash_.Find(b, key, h);
  }
  const Stash::List* ListOf(uint64_t b) const { return stash_.ListOf(b); }
  template <typename Fn>
  void ForEachList(Fn fn) const {
    stash_.ForEachList(fn);
  }
  uint64_t records() const { return stash_.records(); }
  uint64_t bytes() const { return stash_.bytes(); }
  // The records' memory and the copy's (Stash::memory_bytes, and the
  // chunks the copy's blocks are held in), and the filters' by bucket.
  uint64_t memory_bytes() const {
    return stash_.memory_bytes() + device_->chunk_bytes();
  }
  uint64_t bucket_bytes() const { return stash_.bucket_bytes(); }
  bool empty() const { return stash_.records() == 0; }
  const Stash& lists() const { return stash_; }

  // Starts loading what a lookup in bucket b reads: its filter, and with
  // `list` where its list is (or would be added).
  void Prefetch(uint64_t b, bool list) const {
    stash_.Prefetch(b);
    if (list) stash_.PrefetchList(b);
  }
  void PrefetchRecords(uint64_t b) const { stash_.PrefetchRecords(b); }

  // Adds a record to bucket b's list and to the copy.
  absl::Status Put(uint64_t b, uint64_t h, Record record);
  // Gives a record found by Find a new value, in the copy too.
  absl::Status Replace(Record* r, std::string_view value);
  // Removes `key` from bucket b's list and the copy: the removed record's
  // encoded size, or nullopt when it was not there.
  absl::StatusOr<std::optional<size_t>> Remove(uint64_t b,
                                               std::string_view key);
  // Removes from bucket b's list, and from the copy, every record for
  // which `leave(record)` is true (it is called once a record, and may
  // take the record's bytes elsewhere meanwhile). `kill_point` fires after
  // each removal is logged.
  template <typename Leave>
  absl::Status MoveOut(uint64_t b, Leave leave, std::string_view kill_point);

  // Takes bucket b's whole list out of memory; its records stay in the
  // copy until LogRemoved, or go back with Restore. The records not put
  // back are given to Retire.
  Stash::Taken Take(uint64_t b) { return stash_.Take(b); }
  // Taken records about to be freed by their owner: while a snapshot is
  // being made, moved here and kept until it is done (those moved out
  // already, by Restore, are empty and left alone).
  void Retire(std::span<Stash::Entry> taken);
  // Puts a record that is in the copy back in memory, in bucket b.
  void Restore(uint64_t b, uint64_t h, Record record) {
    stash_.Add(b, h, std::move(record));
  }
  // Notes in the copy that a taken record of `key` left it.
  absl::Status LogRemoved(std::string_view key) { return LogRemove(key); }

  // Logged: once the copy has grown well past the live records (more than
  // twice their blocks, plus a few), the next checkpoint makes it again
  // from them (snapshot_due()).
  void MaybeCompact();
  // Rewrites the copy from the live records.
  absl::Status Compact();
  // Before a checkpoint: logged, writes the copy's tail block if it holds
  // entries not yet written; a snapshot, rewrites the copy if the records
  // changed since the last.
  absl::Status Flush();

  // A snapshot made off the writer's path, in two halves: Snapshot takes
  // the copy to its next generation, sized for the live records, holds
  // its blocks in the deferred device (their bytes unspecified; a logged
  // copy's next entries go after them), and returns views of the records
  // with the held blocks' bytes, which StashLog::Encode fills, on any
  // thread, until SnapshotDone: a checkpoint's thread, once they are
  // frozen, before it stores them. Meanwhile the records' bytes stay where
  // they are, unchanged: a record removed or drained is kept aside, and a
  // new value takes new bytes. The views are this object's, valid until
  // SnapshotDone, and their memory serves every snapshot (a fresh list of
  // a few hundred thousand views cost the writer more in page faults than
  // in filling it). REQUIRES: snapshot_due().
  struct Views {
    StashLog::Live records;
    uint64_t epoch;
    std::vector<std::byte*> blocks;  // block b's bytes
  };
  absl::StatusOr<const Views*> Snapshot();
  // The views of the last Snapshot may go: the records kept aside are
  // freed. Without `made` (the checkpoint was dropped before its blocks
  // were made), the next checkpoint makes the copy again.
  void SnapshotDone(bool made);
  // Whether the next checkpoint makes the copy from the records: a
  // snapshot's changed since the copy was last written, a logged copy
  // grown well past them.
  bool snapshot_due() const { return due_; }
  // Whether a Snapshot's views are out (until SnapshotDone).
  bool snapshotting() const { return snapshotting_; }

  // The copy's generation and blocks in use, for the superblock.
  uint64_t epoch() const { return copy_.epoch(); }
  uint64_t blocks() const { return copy_.blocks(); }
  uint64_t block_writes() const { return copy_.block_writes(); }
  // The deferred device in front of the copy's file (its held blocks).
  DeferredDevice& device() { return *device_; }
  const DeferredDevice& device() const { return *device_; }

 private:
  // Views of every record's key and value, into `live` (emptied first).
  void LiveRecords(StashLog::Live& live) const;
  // A record leaving the lists: kept until SnapshotDone while a snapshot's
  // views are out (else freed by its owner).
  void KeepAside(Record& r) {
    if (snapshotting_) retired_.push_back(std::move(r));
  }
  // The copy's entries for a change (a snapshot notes the change only).
  absl::Status LogPut(const Record& r);
  absl::Status LogRemove(std::string_view key);

  std::unique_ptr<DeferredDevice> device_;
  StashLog copy_;
  Stash stash_;
  const Copy kind_;
  bool due_ = false;  // snapshot_due()
  bool snapshotting_ = false;
  Views views_;  // the last Snapshot's, while snapshotting_
  // Records removed while a snapshot's views are out (SnapshotDone frees
  // them).
  std::vector<Record> retired_;
  const std::string what_;
  const std::string rewritten_point_;  // "<name>: copy rewritten"
};

template <typename Leave>
absl::Status LoggedStash::MoveOut(uint64_t b, Leave leave,
                                  std::string_view kill_point) {
  absl::Status s;
  stash_.Filter(b, [&](Record& r) {
    if (!s.ok() || !leave(std::as_const(r))) return true;
    s = LogRemove(r.key());
    KillPoint(kill_point);
    KeepAside(r);
    return false;
  });
  return s;
}

}  // namespace roundtable::internal

#endif  // ROUNDTABLE_ENGINE_INTERNAL_LOGGED_STASH_H_
