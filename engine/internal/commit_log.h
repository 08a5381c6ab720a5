// The write-ahead log as the table uses it: its two files (kWalFiles), the
// writer of each, which one the writers append to, the sequence numbers
// (applied, logged, durable), group commit, and replay at open. A
// checkpoint moves the writers to the other file (Start) so that they go on
// logging while its journal is written; until that journal is durable, a
// sync covers the file they left too (docs/durability.md).
//
// Thread-safety: Append, Start, Resume, Replay, ContinueAfterReplay and
// Close run under the table's writer lock, bytes() and the sequence
// numbers' reads under its reader lock. SyncThrough runs without the
// table's lock, from any number of threads; JournalDurable runs on the
// checkpoint's thread. Lock order: the table's lock, then sync_mu_, then
// log_mu_; nothing is taken under log_mu_.
#ifndef ROUNDTABLE_ENGINE_INTERNAL_COMMIT_LOG_H_
#define ROUNDTABLE_ENGINE_INTERNAL_COMMIT_LOG_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/internal/log_record.h"
#include "engine/internal/wal.h"
#include "io/base/mutex.h"
#include "io/block_device.h"

namespace roundtable::internal {

class CommitLog {
 public:
  // Borrows the log's two files, which must outlive it. A sync of the log
  // calls `sync_first` first: what its records refer to outside the log
  // (the out-of-line values) must be durable before they are.
  CommitLog(std::array<io::BlockDevice*, 2> files,
            std::function<absl::Status()> sync_first);

  // Appends `record` (a log record's payload) to the writers' file as the
  // next record: when it returns, the record survives a crash of the
  // process. Returns its sequence number, which is the last applied.
  // `encoded` runs once the record is encoded, before it is copied to the
  // file: the caller's chance to start loading what it reads next.
  absl::StatusOr<uint64_t> Append(
      std::string_view record, absl::FunctionRef<void()> encoded = [] {});
  // Appends the record of `ops`.
  absl::StatusOr<uint64_t> Append(
      std::span<const Op> ops, absl::FunctionRef<void()> encoded = [] {});

  // Makes the records up to `seq` durable. Group commit: one syncing
  // caller at a time syncs the log, covering every record logged before its
  // sync began; callers queued behind it whose records that sync covered
  // return without a sync of their own. *failed (if given) is set when
  // this call's sync failed: after that nothing unsynced is promised, no
  // retry helps, and every later call returns the same error.
  absl::Status SyncThrough(uint64_t seq, bool* failed = nullptr)
      ABSL_LOCKS_EXCLUDED(sync_mu_, log_mu_);

  // Empties file `index` for the records after the last applied and moves
  // the writers to it. `left_uncovered`: the file they leave holds records
  // that no durable checkpoint covers yet (the journal that will is being
  // written), so syncs cover it too until JournalDurable, and the durable
  // mark stays where the syncs left it. The file they move to then holds
  // nothing but zeros on disk (the spare file, emptied by the last
  // checkpoint's thread or by recovery), so that no power loss can bring
  // older records back at its start and make recovery take it for the
  // older file.
  absl::Status Start(int index, bool left_uncovered)
      ABSL_LOCKS_EXCLUDED(log_mu_);
  // The checkpoint's journal is durable: the file the writers left needs
  // no more syncs.
  void JournalDurable() ABSL_LOCKS_EXCLUDED(log_mu_);

  // Recovery. Replays both files, the one whose first record is older
  // first (a file with no whole first record last: the checkpoint that
  // moved the writers to the newer one may not have been durable), calling
  // fn(seq, payload) for each record after `after_seq`; a record for
  // which whole(payload) is false ends the log as a torn one does
  // (ReplayWal). Afterwards the writers' file is the one of the last
  // record replayed.
  struct Replayed {
    uint64_t records = 0;
    // Records came from both files: the older one's are covered by no
    // checkpoint yet.
    bool from_both = false;
  };
  absl::StatusOr<Replayed> Replay(
      uint64_t after_seq,
      const std::function<absl::Status(uint64_t, std::string_view)>& fn,
      const WalRecordCheck& whole);
  // Cuts each file after its last whole record, and syncs: what followed
  // (a torn tail, records after a gap) must not come back once the numbers
  // past the last replayed record are given anew. The writers' other file
  // is emptied unless `keep_both` (a checkpoint right after will).
  absl::Status Resume(bool keep_both);
  // The writers continue after the replayed records in their file, which
  // a sync covers.
  void ContinueAfterReplay() ABSL_LOCKS_EXCLUDED(log_mu_);

  // A closed log refuses syncs; with `checkpointed`, every applied record
  // is durable (in the checkpoint Close wrote).
  void Close(bool checkpointed) ABSL_LOCKS_EXCLUDED(sync_mu_);

  // The last record applied, and the last whose log write completed.
  uint64_t applied_seq() const { return applied_seq_; }
  uint64_t logged_seq() const {
    return logged_seq_.load(std::memory_order_acquire);
  }
  // The writers' file, its index, and the bytes of records in it.
  int current() const { return current_; }
  io::BlockDevice* file(int index) const { return files_[index]; }
  uint64_t bytes() const { return writers_[current_].bytes(); }

 private:
  // Appends the record whose `size` bytes of payload encode(out) writes
  // (WalWriter::Append).
  absl::StatusOr<uint64_t> Append(size_t size,
                                  absl::FunctionRef<void(char*)> encode);
  const std::array<io::BlockDevice*, 2> files_;
  const std::function<absl::Status()> sync_first_;
  std::array<WalWriter, 2> writers_;
  int current_ = 0;
  std::array<uint64_t, 2> ends_{};  // where each file's records end (replay)
  uint64_t applied_seq_ = 0;  // the last record applied to the table
  // The last record whose log write completed: what a sync starting now
  // makes durable.
  std::atomic<uint64_t> logged_seq_{0};
  // The last record a sync covered (or a recovery found, or Close
  // checkpointed): what group commit compares with, and the durable mark
  // of the records appended next (docs/format.md). Written under sync_mu_,
  // or before the table is shared.
  std::atomic<uint64_t> durable_seq_{0};
  Mutex sync_mu_;
  absl::Status sync_error_ ABSL_GUARDED_BY(sync_mu_);
  bool closed_ ABSL_GUARDED_BY(sync_mu_) = false;
  // What a sync covers: the writers' file, and the one they left while the
  // journal of the checkpoint that covers it is being written (else null).
  // Changed with the last logged record's number fixed, so that a sync
  // reads both together.
  Mutex log_mu_;
  std::array<io::BlockDevice*, 2> sync_files_ ABSL_GUARDED_BY(log_mu_){};
};

}  // namespace roundtable::internal

#endif  // ROUNDTABLE_ENGINE_INTERNAL_COMMIT_LOG_H_
