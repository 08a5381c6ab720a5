// Table's operator calls (roundtable/table.h): Backup, Locate and Count,
// which copy a table whole or look inside it, beside the reads and writes
// of table.cc (SalvageTable is in table_salvage.cc).
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/internal/kill_points.h"
#include "engine/internal/table_impl.h"
#include "io/base/status_macros.h"
#include "io/io_error.h"

namespace roundtable {

using internal::Record;

absl::Status Table::Impl::Backup(const std::string& dir) {
  namespace in = internal;
  if (in_memory_) {
    return absl::FailedPreconditionError("a table in memory has no files");
  }
  if (in::FileExists(dir, in::kBlocksFile)) {
    return absl::AlreadyExistsError(absl::StrCat("table ", dir, " exists"));
  }
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return io::FileError(errno, "mkdir", dir);
  }
  // The files that hold the checkpoint, and their lengths at it. The log
  // and the journal are empty after a complete checkpoint: the copy makes
  // them anew.
  struct Copied {
    const char* name;
    uint64_t bytes = 0;
  };
  std::array<Copied, 6> files = {{{in::kStashFile},
                                  {in::kBufferFile},
                                  {in::kValuesFile},
                                  {in::kSpaceMapFile},
                                  {in::kBlockMapFile},
                                  {in::kBlocksFile}}};
  {
    MutexLock lock(&mu_);
    RT_RETURN_IF_ERROR(CheckWritable());
    RT_RETURN_IF_ERROR(error_.Note(CheckpointLocked(/*complete=*/true)));
    const std::array<io::BlockDevice*, 6> devices = {
        files_.stash.get(),    files_.buffer.get(),   files_.values.get(),
        files_.spacemap.get(), files_.blockmap.get(), files_.blocks.get()};
    for (size_t i = 0; i < files.size(); ++i) {
      files[i].bytes = devices[i]->num_blocks() * layout_.block_size;
    }
    ++backups_;
  }
  absl::Status status;
  for (const Copied& f : files) {
    if (!status.ok()) break;
    status = in::CopyFilePrefix(in::TablePath(path_, f.name),
                                in::TablePath(dir, f.name), f.bytes);
    in::KillPoint("backup: file copied");
  }
  {
    MutexLock lock(&mu_);
    --backups_;
  }
  if (status.ok()) status = in::SyncDirectory(dir);
  if (!status.ok()) {
    for (const Copied& f : files) unlink(in::TablePath(dir, f.name).c_str());
  }
  return status;
}

absl::Status Table::Impl::Reserve(uint64_t records, size_t key_bytes,
                                  size_t value_bytes) {
  return AfterBackups([&]() ABSL_NO_THREAD_SAFETY_ANALYSIS -> absl::Status {
    RT_RETURN_IF_ERROR(CheckWritable());
    uint64_t buckets = 0;
    if (records > 0) {
      // A record in its block: its key and value (or the reference that
      // stands for a value out of line), their lengths and its slot.
      const uint64_t per = internal::EncodedSize(
          key_bytes, layout_.FitsInline(key_bytes, value_bytes)
                         ? value_bytes
                         : internal::kReferenceBytes);
      buckets =
          std::max(layout_.s0, layout_.NeededBuckets(records * per, records));
    }
    if (buckets <= table_.num_buckets()) {
      // Only the floor changes: the next checkpoint stores it.
      return error_.Note(table_.Reserve(buckets, /*empty=*/false));
    }
    // An empty table takes its buckets as empty blocks on the device,
    // which needs every block it holds there first.
    const bool empty =
        table_.record_count() == 0 && table_.stash().empty() && buffer_.empty();
    if (empty) {
      RT_RETURN_IF_ERROR(error_.Note(CheckpointLocked(/*complete=*/true)));
    }
    RT_RETURN_IF_ERROR(error_.Note(table_.Reserve(buckets, empty)));
    internal::KillPoint("reserve: buckets added");
    return error_.Note(CheckpointLocked(/*complete=*/true));
  });
}

absl::StatusOr<KeyLocation> Table::Impl::Locate(std::string_view key) {
  ReaderMutexLock lock(&mu_);
  RT_RETURN_IF_ERROR(CheckOpen());
  KeyLocation at;
  at.hash = layout_.Hash(key);
  at.bucket = table_.BucketOf(at.hash);
  at.block = store_.PlaceOf(at.bucket);
  std::string value;
  if (const Record* r = buffer_.Find(at.bucket, key, at.hash)) {
    at.where = KeyLocation::Where::kWriteBuffer;
    value = r->value();
  } else if (const Record* r = table_.FindStashed(at.bucket, key, at.hash)) {
    at.where = KeyLocation::Where::kStash;
    value = r->value();
  } else {
    RT_ASSIGN_OR_RETURN(
        const bool found,
        store_.Find(at.bucket, key, internal::TagOf(at.hash), &value));
    if (!found) return at;
    at.where = KeyLocation::Where::kBlock;
  }
  at.value_bytes = value.size();
  if (internal::IsReference(value)) {
    const internal::ValueRef ref = internal::DecodeReference(value);
    at.out_of_line = true;
    at.value_offset = ref.first * layout_.block_size;
    at.value_bytes = ref.length;
  }
  return at;
}

absl::StatusOr<uint64_t> Table::Impl::Count() {
  ReaderMutexLock lock(&mu_);
  RT_RETURN_IF_ERROR(CheckOpen());
  // A buffered put adds a record unless its key is stored already, in its
  // bucket's stash list or block.
  uint64_t count = table_.record_count();
  absl::Status status;
  std::string scratch;
  buffer_.records().ForEachList(
      [&](uint64_t b, const internal::Stash::List& list) {
        for (const internal::Stash::Entry& e : list) {
          if (!status.ok()) return;
          const std::string_view key = e.record.key();
          if (table_.stash().Find(b, key, e.hash) != nullptr) continue;
          absl::StatusOr<bool> stored =
              store_.Find(b, key, internal::TagOf(e.hash), &scratch);
          if (!stored.ok()) {
            status = stored.status();
          } else if (!*stored) {
            ++count;
          }
        }
      });
  RT_RETURN_IF_ERROR(status);
  return count;
}

absl::StatusOr<uint64_t> Table::Count() { return impl_->Count(); }
absl::Status Table::Reserve(uint64_t records, size_t key_bytes,
                            size_t value_bytes) {
  return impl_->Reserve(records, key_bytes, value_bytes);
}
absl::Status Table::Backup(const std::string& dir) {
  return impl_->Backup(dir);
}
absl::StatusOr<KeyLocation> Table::Locate(std::string_view key) {
  return impl_->Locate(key);
}
}  // namespace roundtable
