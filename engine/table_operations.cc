// Table's operator calls (roundtable/table.h): Backup, Locate, Count and
// GetStats, which copy a table whole or look inside it, beside the reads and
// writes of table.cc (SalvageTable is in table_salvage.cc).
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "engine/internal/kill_points.h"
#include "engine/internal/table_impl.h"
#include "io/base/status_macros.h"
#include "io/io_error.h"

namespace roundtable {

namespace {

// The ledgers of two files as one.
io::IoStats Sum(const io::IoStats& a, const io::IoStats& b) {
  return {a.blocks_read + b.blocks_read,
          a.bytes_read + b.bytes_read,
          a.blocks_written + b.blocks_written,
          a.bytes_written + b.bytes_written,
          a.read_ops + b.read_ops,
          a.write_ops + b.write_ops,
          a.submissions + b.submissions,
          a.syncs + b.syncs,
          a.wait_ns + b.wait_ns};
}

}  // namespace

using internal::Record;

absl::Status Table::Impl::Backup(const std::string& dir) {
  namespace in = internal;
  if (in_memory_) {
    return absl::FailedPreconditionError("a table in memory has no files");
  }
  if (in::FileExists(dir, in::kBlocksFile)) {
    return absl::AlreadyExistsError(absl::StrCat("table ", dir, " exists"));
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
    // Only once the backup can be made: a refused one leaves nothing.
    if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
      return io::FileError(errno, "mkdir", dir);
    }
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
    if (internal::IsTombstone(r->value())) return at;  // deleted
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

void Table::Impl::Preload(std::span<const std::string_view> keys) {
  ReaderMutexLock lock(&mu_);
  if (!CheckOpen().ok()) return;
  absl::InlinedVector<uint64_t, 32> buckets;
  for (const std::string_view key : keys) {
    const uint64_t h = layout_.Hash(key);
    const uint64_t b = table_.BucketOf(h);
    if (FindInMemory(b, key, h) == nullptr) buckets.push_back(b);
  }
  std::sort(buckets.begin(), buckets.end());
  buckets.erase(std::unique(buckets.begin(), buckets.end()), buckets.end());
  // A hint: a block that fails here is read again by its Get, which
  // reports the error.
  store_.Preload(buckets).IgnoreError();
}

absl::StatusOr<uint64_t> Table::Impl::Count() {
  ReaderMutexLock lock(&mu_);
  RT_RETURN_IF_ERROR(CheckOpen());
  // A buffered put adds a record unless its key is stored already, in its
  // bucket's stash list or block; a buffered delete takes one away if it
  // is.
  uint64_t count = table_.record_count();
  absl::Status status;
  std::string scratch;
  buffer_.records().ForEachList(
      [&](uint64_t b, const internal::Stash::List& list) {
        for (const internal::Stash::Entry& e : list) {
          if (!status.ok()) return;
          const std::string_view key = e.record.key();
          absl::StatusOr<bool> stored = true;
          if (table_.stash().Find(b, key, e.hash) == nullptr) {
            stored = store_.Find(b, key, internal::TagOf(e.hash), &scratch);
          }
          if (!stored.ok()) {
            status = stored.status();
          } else if (internal::IsTombstone(e.record.value())) {
            count -= *stored;
          } else {
            count += !*stored;
          }
        }
      });
  RT_RETURN_IF_ERROR(status);
  return count;
}

TableStats Table::Impl::GetStats() const {
  ReaderMutexLock lock(&mu_);
  // The physical ledgers count the last checkpoint's writes.
  checkpointer_.WaitWrites();
  const uint64_t m = table_.num_buckets();
  TableStats st;
  st.buckets = m;
  st.min_buckets = table_.min_buckets();
  st.records = table_.record_count();
  st.stash_records = table_.stash().records();
  st.stash_bytes = table_.stash().bytes();
  st.buffered_records = buffer_.records().records();
  st.buffered_bytes = buffer_.records().bytes();
  st.buffered_deletes = buffer_.deletes();
  st.data_bytes = table_.data_bytes();
  st.block_size = layout_.block_size;
  st.block_records = layout_.block_records;
  st.s0 = layout_.s0;
  st.epsilon = layout_.epsilon;
  st.utilization = static_cast<double>(st.data_bytes) /
                   (static_cast<double>(layout_.payload()) * m);
  if (layout_.block_records != 0) {
    st.utilization = std::max(
        st.utilization, static_cast<double>(st.records) /
                            (static_cast<double>(layout_.block_records) * m));
  }
  st.logical = table_.logical();
  st.logical.buffer_drains = buffer_.drains();
  st.logical.distribute_drains = buffer_.distribute_drains();
  st.cache_hits = store_.cache_hits();
  st.held_hits = store_.held_hits();
  st.cache_misses = store_.cache_misses();
  st.cache_bytes = store_.cache_usable_bytes();
  st.stash_memory_bytes = table_.stash().memory_bytes();
  st.bucket_memory_bytes = store_.bucket_bytes() +
                           table_.stash().bucket_bytes() +
                           buffer_.records().bucket_bytes();
  if (files_.blocks) st.held_blocks = checkpointer_.held_blocks();
  st.written_ahead = store_.written_ahead();
  st.unwritten_blocks = store_.device().unwritten_bytes() / layout_.block_size;
  st.value_count = values_.count();
  st.value_bytes = values_.bytes();
  st.value_file_bytes = values_.map().units() * layout_.block_size;
  st.value_free_bytes = values_.map().free_units() * layout_.block_size;
  st.wal_bytes = log_.bytes();
  st.checkpoints = checkpointer_.count();
  st.recovered_records = recovered_records_;
  st.recovered_journal = recovered_journal_;
  st.recovery_ns = recovery_ns_;
  if (files_.blocks) {
    st.physical_blocks = files_.blocks->stats();
    st.physical_stash = files_.stash->stats();
    st.physical_wal = Sum(files_.wal[0]->stats(), files_.wal[1]->stats());
    st.physical_journal = files_.journal->stats();
    st.physical_buffer = files_.buffer->stats();
    st.physical_values = files_.values->stats();
    st.physical_spacemap = files_.spacemap->stats();
    st.physical_blockmap = files_.blockmap->stats();
  }
  return st;
}

absl::StatusOr<uint64_t> Table::Count() { return impl_->Count(); }
TableStats Table::GetStats() const { return impl_->GetStats(); }
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
