// Table::Impl: the table's coordinator, which owns the engine's parts and
// takes the locks; the parts decide (docs/table.md, "The engine's files").
// A write goes down through them one way:
//
//   Impl::Write -> ValueStore::Reserve, Write   (a large value, out of line)
//               -> CommitLog::Append            (the log record)
//               -> WriteBuffer::Put / Delete    (buffered, or on down)
//               -> BucketTable::Put / Delete    (block or stash; distribute)
//               -> BucketStore::Edit, LoggedStash (bytes held in memory)
//               -> Impl::MaybeCheckpoint -> Checkpointer (journal, in place)
//
// Lock order: mu_, then CommitLog's sync mutex, then its log-file mutex;
// the block cache's and the deferred devices' own mutexes are leaves. mu_
// is held shared by reads (Get, MultiGet, the iterator's steps, GetStats,
// Check) and exclusively by everything that changes the table; a synced
// write waits for its sync after releasing mu_ (group commit), and the
// checkpoint's thread takes only the log-file mutex.
//
// Thread-safety: any number of threads, under the locks above; Table's
// contract (roundtable/table.h).
//
// Its methods live in table.cc (reads, writes, checkpoints, Close),
// table_recovery.cc (opening a table), table_check.cc,
// table_operations.cc (Backup, Reserve, Locate, Count, GetStats) and
// table_salvage.cc.
#ifndef ROUNDTABLE_ENGINE_INTERNAL_TABLE_IMPL_H_
#define ROUNDTABLE_ENGINE_INTERNAL_TABLE_IMPL_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/internal/bucket_store.h"
#include "engine/internal/bucket_table.h"
#include "engine/internal/checkpointer.h"
#include "engine/internal/commit_log.h"
#include "engine/internal/journal.h"
#include "engine/internal/layout.h"
#include "engine/internal/log_record.h"
#include "engine/internal/superblock.h"
#include "engine/internal/table_files.h"
#include "engine/internal/value_store.h"
#include "engine/internal/write_buffer.h"
#include "engine/mapping/round_mapping.h"
#include "io/base/first_error.h"
#include "io/base/mutex.h"
#include "roundtable/table.h"

namespace roundtable {

class ROUNDTABLE_HIDDEN Table::Impl {
 public:
  // The table at `path` as of superblock `sb` (the last checkpoint's),
  // over its open `files`, holding its `lock`.
  Impl(const Options& options, std::string path, const internal::Superblock& sb,
       mapping::RoundMapping mapping, internal::TableFiles files,
       internal::TableLock lock);

  // Opening (table_recovery.cc). Table::Open, each of the table's files
  // opened with `open_file` (empty: io::OpenBlockDevice): tests put a
  // fault-injection layer there to cut the power under a table (the
  // superblock probe reads the block file directly).
  static absl::StatusOr<std::unique_ptr<Table>> Open(
      const Options& options, const std::string& path,
      const internal::FileOpener& open_file);
  // The newest valid superblock of the table
  // at `path`; the file is probed with 512-byte blocks at each place a
  // copy may lie.
  static absl::StatusOr<internal::Superblock> ReadSuperblock(
      const std::string& path, io::Backend backend);
  // FailedPrecondition unless `sb` is of the format this build reads.
  static absl::Status CheckFormatVersion(const std::string& path,
                                         const internal::Superblock& sb);
  // The journal of a checkpoint newer than *sb (cut short, or not yet
  // completed in place), validated, or nullopt; its superblock then
  // replaces *sb. A writer lays its images in place first (synced, the
  // superblock last); a reader keeps them for Recover. Then DataLoss
  // unless the block file holds the table's blocks: nothing is sized by
  // the bucket count before that is known.
  static absl::StatusOr<std::optional<internal::Journal>> PrepareRecovery(
      const std::string& path, const internal::TableFiles& files,
      bool read_only, internal::Superblock* sb);
  // Writes the rest of a new table's initial state, its empty blocks being
  // in the file already (FormatNewBlocks): an empty stash copy, the first
  // superblock, an empty log.
  absl::Status Format() ABSL_LOCKS_EXCLUDED(mu_);
  // Brings an existing table to the state of its last acknowledged write:
  // `journal`'s images (if read-only; a writer laid them in place), the
  // stash and buffer copies, then the log records after the checkpoint.
  absl::Status Recover(const std::optional<internal::Journal>& journal)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Table's methods.
  absl::Status Get(std::string_view key, std::string* value)
      ABSL_LOCKS_EXCLUDED(mu_);
  std::vector<absl::StatusOr<std::string>> MultiGet(
      std::span<const std::string_view> keys) ABSL_LOCKS_EXCLUDED(mu_);
  void Preload(std::span<const std::string_view> keys)
      ABSL_LOCKS_EXCLUDED(mu_);
  // The records of bucket b (block, then stash list, with buffered puts
  // replacing the stored records of their keys) into *out; *past_end when
  // b >= m. With `damaged` (salvage), a block that fails its checksum is
  // passed over, *damaged set, and its stash list and buffered puts still
  // given; *stored counts the records given from the block and the stash.
  absl::Status BucketRecords(uint64_t b, std::vector<internal::Record>* out,
                             bool* past_end, bool* damaged = nullptr,
                             size_t* stored = nullptr) ABSL_LOCKS_EXCLUDED(mu_);
  // One step of Table::Scan (table_walk.cc): the keys of the bucket whose
  // arc holds hash `from` that hash to `from` or past it, appended to
  // *keys; returns the arc's end (0 at the circle's end).
  absl::StatusOr<uint64_t> ScanArc(uint64_t from,
                                   std::vector<std::string>* keys)
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<SalvageReport> Salvage(Table& into,
                                        const RebuildProgress& progress)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Put, Delete and Write: every record checked, the write logged (as
  // `record` when given, else encoded from `ops`) and applied; then, when
  // asked, the log synced through it (group commit).
  absl::Status Write(std::span<const internal::Op> ops,
                     std::optional<std::string_view> record,
                     const WriteOptions& options) ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status Sync() ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status Flush() ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status Checkpoint() ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status Close() ABSL_LOCKS_EXCLUDED(mu_);
  TableStats GetStats() const ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<uint64_t> Count() ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status Backup(const std::string& dir) ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status Reserve(uint64_t records, size_t key_bytes, size_t value_bytes)
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<KeyLocation> Locate(std::string_view key)
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status Check(const CheckProgress& progress)  // table_check.cc
      ABSL_LOCKS_EXCLUDED(mu_);
  size_t max_record_bytes() const { return layout_.max_record(); }
  size_t max_key_bytes() const { return layout_.max_key(); }

 private:
  absl::Status CheckOpen() const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  absl::Status CheckWritable() const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // The record of `key` in the write buffer or the stash, or null: the
  // records a read finds in memory, the buffer's first (a buffered put or
  // delete is newer than what its block or stash list holds; a delete's
  // value is the tombstone).
  internal::Record* FindInMemory(uint64_t b, std::string_view key, uint64_t h)
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // BucketRecords' part under the lock.
  absl::Status CollectBucket(uint64_t b, std::vector<internal::Record>* out,
                             bool* damaged, size_t* stored)
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // Starts loading what a put or delete in bucket b looks up first.
  void PrefetchBucket(uint64_t b) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Write's part under the writer lock: logged and applied, *seq its
  // log record's number.
  absl::Status WriteLocked(std::span<const internal::Op> ops,
                           std::optional<std::string_view> record,
                           uint64_t* seq) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The values of `ops` that go out of line written to extents of the
  // value file (reserved under the writer lock, written outside it):
  // *stored then holds the ops with references in their place (viewing
  // *refs), and *reserved the extents, which the caller unreserves once
  // the write is applied or failed (Claim took the applied ones).
  absl::Status WriteValues(std::span<const internal::Op> ops,
                           std::vector<internal::Op>* stored,
                           std::vector<std::string>* refs,
                           std::vector<internal::Extent>* reserved)
      ABSL_LOCKS_EXCLUDED(mu_);
  // The value a stored value of bucket b stands for, into *out: itself, or
  // the out-of-line value it refers to.
  absl::Status Resolve(std::string_view stored, uint64_t b, std::string* out)
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // Applies logged ops to the table (a write, or a log record replayed).
  absl::Status Apply(std::span<const internal::Op> ops)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The debug mode's check after a write (Options::paranoid_checks).
  absl::Status Paranoid() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Group commit through `seq`; a failed sync is the table's first error.
  absl::Status SyncThrough(uint64_t seq) ABSL_LOCKS_EXCLUDED(mu_);
  // Starts a checkpoint when the Checkpointer says one is due; first
  // writes held blocks ahead of it where they pass their budget
  // (MaybeWriteAhead).
  absl::Status MaybeCheckpoint() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Keeps the held bucket blocks of a table larger than their budget to
  // half of it, and those of any table, with the last checkpoint's frozen
  // ones and those on their way, within it less an eighth, by writing
  // the longest held to new places ahead of the next checkpoint
  // (BucketStore::WriteAhead), a batch at a time: the checkpoints then
  // follow the log rather than the memory.
  absl::Status MaybeWriteAhead() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // With one memory budget (Options::memory_bytes), gives the write buffer
  // the cache's slots it needs, or takes them back.
  void ShareMemory() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The held blocks' budget: HeldLimit, or with one memory budget at most
  // the cache's slots in use (where the held blocks are).
  uint64_t HeldBudget() const;
  // Runs `locked` under the writer lock once no backup is copying the
  // files (a backup keeps the checkpoint its copy is of: rare, and seconds
  // at most). For Checkpoint and Close, which write in place.
  absl::Status AfterBackups(absl::FunctionRef<absl::Status()> locked)
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status CloseLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The copies the next checkpoint makes again, on its thread, from the
  // records (LoggedStash::snapshot_due): the write buffer's when its
  // records changed since the last, the stash's once its log has grown
  // well past them.
  absl::StatusOr<std::vector<internal::MadeBlocks>> Snapshots()
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A checkpoint of everything held: the Checkpointer's phases, with the
  // writers moved to the other log file while its writes run. Complete at
  // once when `complete` (the writers then stay in their log file,
  // emptied), else at the next checkpoint, Sync or Close; until then the
  // journal is its only durable copy.
  absl::Status CheckpointLocked(bool complete)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status CheckLocked(const CheckProgress& progress = nullptr)
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // Check's part for the out-of-line values: `refs` are every reference
  // with its bucket (sorted here).
  absl::Status CheckValues(
      std::vector<std::pair<internal::ValueRef, uint64_t>>& refs)
      ABSL_SHARED_LOCKS_REQUIRED(mu_);

  // Fixed at open. The lock is held from before Open reads anything until
  // Close has released the files (and destroyed last).
  internal::TableLock table_lock_;
  const Options options_;
  const std::string path_;
  // The table's layout (BucketTable keeps its own copy), read without mu_:
  // a write checks its records before it takes the lock.
  const internal::Layout layout_;
  const bool in_memory_;  // Options::backend is kMemory: no log
  internal::TableFiles files_;

  mutable SharedMutex mu_;
  FirstError error_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  // Backups copying the files (Backup): while one runs, no checkpoint
  // writes in place (MaybeCheckpoint starts none; Checkpoint and Close
  // wait), so the files stay those of the backup's checkpoint.
  int backups_ ABSL_GUARDED_BY(mu_) = 0;

  // The parts, each borrowing only those declared before it (and the
  // files), so that they are destroyed first: the checkpoint's thread is
  // joined before anything it writes goes away.
  internal::BucketStore store_ ABSL_GUARDED_BY(mu_);
  // Its reads and SyncWritten run beside the lock (value_store.h).
  internal::ValueStore values_;
  internal::BucketTable table_ ABSL_GUARDED_BY(mu_);
  internal::WriteBuffer buffer_ ABSL_GUARDED_BY(mu_);
  internal::CommitLog log_;
  internal::Checkpointer checkpointer_ ABSL_GUARDED_BY(mu_);

  // What Open found (TableStats::recovered_*).
  uint64_t recovered_records_ ABSL_GUARDED_BY(mu_) = 0;
  bool recovered_journal_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t recovery_ns_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace roundtable

#endif  // ROUNDTABLE_ENGINE_INTERNAL_TABLE_IMPL_H_
