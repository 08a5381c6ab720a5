#include "engine/internal/commit_log.h"

#include <cstring>
#include <optional>

#include "engine/internal/kill_points.h"
#include "io/base/status_macros.h"

namespace roundtable::internal {

CommitLog::CommitLog(std::array<io::BlockDevice*, 2> files,
                     std::function<absl::Status()> sync_first)
    : files_(files),
      sync_first_(std::move(sync_first)),
      writers_{WalWriter(files[0]), WalWriter(files[1])} {}

absl::StatusOr<uint64_t> CommitLog::Append(std::string_view record,
                                           absl::FunctionRef<void()> encoded) {
  return Append(record.size(), [&](char* out) {
    if (!record.empty()) std::memcpy(out, record.data(), record.size());
    encoded();
  });
}

absl::StatusOr<uint64_t> CommitLog::Append(std::span<const Op> ops,
                                           absl::FunctionRef<void()> encoded) {
  return Append(EncodedOpsSize(ops), [&](char* out) {
    EncodeOpsTo(ops, out);
    encoded();
  });
}

absl::StatusOr<uint64_t> CommitLog::Append(
    size_t size, absl::FunctionRef<void(char*)> encode) {
  WalWriter& wal = writers_[current_];
  wal.NoteDurable(durable_seq_.load(std::memory_order_acquire));
  RT_RETURN_IF_ERROR(wal.Append(size, encode));
  applied_seq_ = wal.next_seq() - 1;
  logged_seq_.store(applied_seq_, std::memory_order_release);
  KillPoint("write: logged");
  return applied_seq_;
}

absl::Status CommitLog::SyncThrough(uint64_t seq, bool* failed) {
  MutexLock lock(&sync_mu_);
  if (!sync_error_.ok()) return sync_error_;
  if (durable_seq_.load(std::memory_order_relaxed) >= seq) {
    return absl::OkStatus();
  }
  if (closed_) return absl::FailedPreconditionError("table is closed");
  uint64_t target;
  std::array<io::BlockDevice*, 2> files;
  {
    MutexLock files_lock(&log_mu_);
    target = logged_seq_.load(std::memory_order_acquire);
    files = sync_files_;
  }
  // Every record up to `target` was appended after its values were
  // written.
  absl::Status s = sync_first_();
  for (io::BlockDevice* file : files) {
    if (s.ok() && file != nullptr) s = file->Sync();
  }
  if (s.ok()) {
    durable_seq_.store(target, std::memory_order_release);
    return s;
  }
  sync_error_ = s;
  if (failed != nullptr) *failed = true;
  return s;
}

absl::Status CommitLog::Start(int index, bool left_uncovered) {
  const uint64_t durable = left_uncovered
                               ? durable_seq_.load(std::memory_order_acquire)
                               : applied_seq_;
  // The file the writers move to when they leave one uncovered is the
  // spare one, emptied and synced (then grown with zeros): nothing to cut.
  RT_RETURN_IF_ERROR(writers_[index].Start(applied_seq_ + 1, durable,
                                           /*zeroed=*/left_uncovered));
  MutexLock lock(&log_mu_);
  sync_files_ = {files_[index], left_uncovered ? files_[current_] : nullptr};
  current_ = index;
  return absl::OkStatus();
}

void CommitLog::JournalDurable() {
  MutexLock lock(&log_mu_);
  sync_files_[1] = nullptr;
}

absl::StatusOr<CommitLog::Replayed> CommitLog::Replay(
    uint64_t after_seq,
    const std::function<absl::Status(uint64_t, std::string_view)>& fn,
    const WalRecordCheck& whole) {
  std::array<std::optional<uint64_t>, 2> first;
  for (int i = 0; i < 2; ++i) {
    RT_ASSIGN_OR_RETURN(first[i], FirstWalSeq(*files_[i]));
  }
  const int older =
      first[0].has_value() && (!first[1].has_value() || *first[0] < *first[1])
          ? 0
          : 1;
  Replayed result;
  WalReplay last{};
  int last_file = -1;  // the file of the last record replayed
  for (const int i : {older, older ^ 1}) {
    RT_ASSIGN_OR_RETURN(
        const WalReplay replay,
        ReplayWal(*files_[i], last_file < 0 ? after_seq : last.last_seq, fn,
                  whole));
    if (last_file < 0 || replay.records > 0) {
      if (replay.records > 0 && i == older && first[older ^ 1]) {
        result.from_both = true;
      }
      last = replay;
      last_file = i;
    }
    result.records += replay.records;
    ends_[i] = replay.bytes;
  }
  applied_seq_ = last.last_seq;
  logged_seq_.store(applied_seq_, std::memory_order_release);
  durable_seq_.store(applied_seq_, std::memory_order_release);
  current_ = last_file;
  return result;
}

absl::Status CommitLog::Resume(bool keep_both) {
  for (int i = 0; i < 2; ++i) {
    const uint64_t keep = i == current_ || keep_both ? ends_[i] : 0;
    RT_RETURN_IF_ERROR(writers_[i].Resume(keep, applied_seq_ + 1));
  }
  return absl::OkStatus();
}

void CommitLog::ContinueAfterReplay() {
  MutexLock lock(&log_mu_);
  sync_files_ = {files_[current_], nullptr};
}

void CommitLog::Close(bool checkpointed) {
  // A syncing writer behind Close finds its record checkpointed, or the
  // log closed.
  MutexLock lock(&sync_mu_);
  if (checkpointed) {
    durable_seq_.store(applied_seq_, std::memory_order_release);
  }
  closed_ = true;
}

}  // namespace roundtable::internal
