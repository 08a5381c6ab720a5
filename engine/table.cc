// The public facade, and Table::Impl's reads, writes, checkpoints and
// Close: the methods that take the table's lock and hand each step to the
// part that owns it (engine/internal/table_impl.h lists them).
#include "roundtable/table.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <memory>
#include <optional>
#include <thread>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "engine/internal/table_impl.h"
#include "io/base/status_macros.h"

namespace roundtable {

using internal::Op;
using internal::Record;
using internal::Superblock;

namespace {

// The held blocks' budget: past it, a checkpoint starts.
uint64_t HeldLimit(const Options& o) {
  return std::max(o.checkpoint_bytes, o.block_cache_bytes);
}

// Of one memory budget (Options::memory_bytes), the write buffer's share
// at most: its records, and room for their copy as much again, leave the
// cache at least half.
constexpr uint64_t kBufferShare = 4;

// `o` with its defaults that depend on other options made explicit.
Options Resolved(Options o) {
  if (o.memory_bytes != 0) {
    o.block_cache_bytes = o.memory_bytes;
    o.write_buffer_bytes = o.memory_bytes / kBufferShare;
  }
  if (o.checkpoint_bytes == 0) {
    o.checkpoint_bytes =
        std::max(Options::kMinCheckpointBytes, o.block_cache_bytes);
  }
  return o;
}

}  // namespace

Table::Impl::Impl(const Options& options, std::string path,
                  const Superblock& sb, mapping::RoundMapping mapping,
                  internal::TableFiles files, internal::TableLock lock)
    : table_lock_(std::move(lock)),
      options_(Resolved(options)),
      path_(std::move(path)),
      layout_(internal::Layout::Of(sb)),
      in_memory_(options_.backend == io::Backend::kMemory),
      files_(std::move(files)),
      store_(files_.blocks.get(), files_.blockmap.get(), sb.block_size,
             sb.block_records, options_.block_cache_bytes),
      values_(files_.values.get(), files_.spacemap.get(), sb),
      table_(sb, std::move(mapping), &store_, files_.stash.get(), &values_,
             &error_),
      // A table in memory has no block to save a read of.
      buffer_(in_memory_ ? 0 : options_.write_buffer_bytes, HeldLimit(options_),
              sb, files_.buffer.get(), &table_, &store_, &error_),
      log_({files_.wal[0].get(), files_.wal[1].get()},
           [this] { return values_.SyncWritten(); }),
      checkpointer_({{{internal::kBlocksFileId, files_.blocks.get(),
                       &store_.device(), &store_.places()},
                      {internal::kStashFileId, files_.stash.get(),
                       &table_.stash().device()},
                      {internal::kBufferFileId, files_.buffer.get(),
                       &buffer_.records().device()},
                      {internal::kSpaceMapFileId, files_.spacemap.get(),
                       &values_.map().device()},
                      {internal::kBlockMapFileId, files_.blockmap.get(),
                       &store_.places().device()}}},
                    files_.journal.get(), sb, options_.checkpoint_bytes,
                    HeldLimit(options_),
                    [this] { return values_.SyncWritten(); }) {}

absl::Status Table::Impl::CheckOpen() const {
  if (closed_) return absl::FailedPreconditionError("table is closed");
  return absl::OkStatus();
}

absl::Status Table::Impl::CheckWritable() const {
  RT_RETURN_IF_ERROR(CheckOpen());
  if (options_.read_only) {
    return absl::FailedPreconditionError("table is open read-only");
  }
  return error_.status();
}

Record* Table::Impl::FindInMemory(uint64_t b, std::string_view key,
                                  uint64_t h) {
  if (Record* r = buffer_.Find(b, key, h)) return r;
  return table_.FindStashed(b, key, h);
}

void Table::Impl::PrefetchBucket(uint64_t b) {
  buffer_.Prefetch(b);
  table_.stash().Prefetch(b, /*list=*/false);
  store_.Prefetch(b);
}

absl::Status Table::Impl::Get(std::string_view key, std::string* value) {
  ReaderMutexLock lock(&mu_);
  RT_RETURN_IF_ERROR(CheckOpen());
  const uint64_t h = layout_.Hash(key);
  const uint64_t b = table_.BucketOf(h);
  if (const Record* r = FindInMemory(b, key, h)) {
    if (internal::IsTombstone(r->value())) {
      return absl::NotFoundError("key not found");
    }
    return Resolve(r->value(), b, value);
  }
  table_.CountGetReads(1);
  RT_ASSIGN_OR_RETURN(const bool found,
                      store_.Find(b, key, internal::TagOf(h), value));
  if (!found) return absl::NotFoundError("key not found");
  if (internal::IsReference(*value)) return Resolve(*value, b, value);
  return absl::OkStatus();
}

absl::Status Table::Impl::Resolve(std::string_view stored, uint64_t b,
                                  std::string* out) {
  if (!internal::IsReference(stored)) {
    out->assign(stored);
    return absl::OkStatus();
  }
  return values_.Read(internal::DecodeReference(stored), b, out);
}

std::vector<absl::StatusOr<std::string>> Table::Impl::MultiGet(
    std::span<const std::string_view> keys) {
  std::vector<absl::StatusOr<std::string>> out(
      keys.size(), absl::NotFoundError("key not found"));
  ReaderMutexLock lock(&mu_);
  if (absl::Status s = CheckOpen(); !s.ok()) {
    for (auto& o : out) o = s;
    return out;
  }
  // Each distinct block not answered by the stash is read once, all in one
  // batch.
  absl::flat_hash_map<uint64_t, size_t> slot;  // bucket -> buffer index
  std::vector<uint64_t> hash_of(keys.size());
  std::vector<int64_t> buffer_of(keys.size(), -1);
  std::vector<io::AlignedBuffer> buffers;
  for (size_t i = 0; i < keys.size(); ++i) {
    hash_of[i] = layout_.Hash(keys[i]);
    const uint64_t b = table_.BucketOf(hash_of[i]);
    if (const Record* r = FindInMemory(b, keys[i], hash_of[i])) {
      if (!internal::IsTombstone(r->value())) out[i] = std::string(r->value());
      continue;
    }
    auto [it, added] = slot.emplace(b, buffers.size());
    if (added) buffers.emplace_back(layout_.block_size);
    buffer_of[i] = static_cast<int64_t>(it->second);
  }
  std::vector<uint64_t> buckets(slot.size());
  for (const auto& [b, index] : slot) buckets[index] = b;
  const absl::Status s = store_.ReadBlocks(buckets, buffers);
  if (!s.ok()) {
    for (size_t i = 0; i < keys.size(); ++i) {
      if (buffer_of[i] >= 0) out[i] = s;
    }
    return out;
  }
  table_.CountGetReads(slot.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    if (buffer_of[i] < 0) continue;
    const internal::EncodedBlock block(buffers[buffer_of[i]].span());
    auto found = block.Find(keys[i], internal::TagOf(hash_of[i]));
    if (found) out[i] = std::string(found->value);
  }
  // The out-of-line values, all read in one batch.
  std::vector<internal::ValueStore::ReadTarget> targets;
  std::vector<size_t> target_of;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (!out[i].ok() || !internal::IsReference(*out[i])) continue;
    targets.push_back({internal::DecodeReference(*out[i]),
                       table_.BucketOf(hash_of[i]),
                       &*out[i],
                       {}});
    target_of.push_back(i);
  }
  if (targets.empty()) return out;
  values_.Read(targets).IgnoreError();  // each target has its status
  for (size_t t = 0; t < targets.size(); ++t) {
    if (!targets[t].status.ok()) out[target_of[t]] = targets[t].status;
  }
  return out;
}

absl::Status Table::Impl::Write(std::span<const Op> ops,
                                std::optional<std::string_view> record,
                                const WriteOptions& w) {
  bool out_of_line = false;
  for (const Op& op : ops) {
    if (!op.put || layout_.FitsInline(op.key, op.value)) continue;
    RT_RETURN_IF_ERROR(layout_.CheckOutOfLine(op.key, op.value));
    out_of_line = true;
  }
  uint64_t seq = 0;
  std::chrono::nanoseconds pace{0};
  if (!out_of_line) {
    MutexLock lock(&mu_);
    RT_RETURN_IF_ERROR(WriteLocked(ops, record, &seq));
    pace = checkpointer_.TakePace();
  } else {
    std::vector<Op> stored;
    std::vector<std::string> refs;
    std::vector<internal::Extent> reserved;
    absl::Status s = WriteValues(ops, &stored, &refs, &reserved);
    MutexLock lock(&mu_);
    if (s.ok()) s = WriteLocked(stored, std::nullopt, &seq);
    // The applied write's Claim took its extents; the rest are free again.
    for (const internal::Extent& e : reserved) values_.Unreserve(e);
    RT_RETURN_IF_ERROR(s);
    pace = checkpointer_.TakePace();
  }
  // The wait the write owes a checkpoint's disk, outside the lock.
  if (pace.count() > 0) {
    const auto until = std::chrono::steady_clock::now() + pace;
    while (std::chrono::steady_clock::now() < until) std::this_thread::yield();
  }
  return w.sync && !in_memory_ ? SyncThrough(seq) : absl::OkStatus();
}

absl::Status Table::Impl::WriteValues(std::span<const Op> ops,
                                      std::vector<Op>* stored,
                                      std::vector<std::string>* refs,
                                      std::vector<internal::Extent>* reserved) {
  {
    MutexLock lock(&mu_);
    RT_RETURN_IF_ERROR(CheckWritable());
    // What the last durable checkpoint no longer refers to may be reused.
    values_.map().Reclaim(checkpointer_.durable_sequence());
    for (const Op& op : ops) {
      if (!op.put || layout_.FitsInline(op.key, op.value)) continue;
      RT_ASSIGN_OR_RETURN(const internal::Extent e,
                          values_.Reserve(op.value.size()));
      reserved->push_back(e);
    }
  }
  // The bytes, outside the lock: reads and other writes go on meanwhile.
  refs->reserve(reserved->size());
  stored->assign(ops.begin(), ops.end());
  size_t next = 0;
  for (Op& op : *stored) {
    if (!op.put || layout_.FitsInline(op.key, op.value)) continue;
    RT_ASSIGN_OR_RETURN(std::string ref,
                        values_.Write((*reserved)[next++], op.value));
    refs->push_back(std::move(ref));
    op.value = refs->back();
  }
  return absl::OkStatus();
}

absl::Status Table::Impl::WriteLocked(std::span<const Op> ops,
                                      std::optional<std::string_view> record,
                                      uint64_t* seq) {
  RT_RETURN_IF_ERROR(CheckWritable());
  // What the first ops will look up about their buckets (the write
  // buffer's and the stash's filters, the write buffer's list, whether
  // the block is held or cached: each a cache miss in a large table)
  // loads while the write is logged.
  std::array<uint64_t, 4> first;
  std::array<uint16_t, 4> tags;
  const size_t prefetched = std::min(ops.size(), first.size());
  for (size_t i = 0; i < prefetched; ++i) {
    const uint64_t h = layout_.Hash(ops[i].key);
    first[i] = table_.BucketOf(h);
    tags[i] = internal::TagOf(h);
    PrefetchBucket(first[i]);
  }
  // Their blocks' headers and first slots, and where a put's record will
  // likely be appended, load while the record is copied into the log,
  // once the record is encoded (by then the lines above are in).
  auto prefetch_blocks = [&] {
    for (size_t i = 0; i < prefetched; ++i) {
      store_.PrefetchBlock(
          first[i],
          ops[i].put ? internal::EncodedSize(ops[i].key, ops[i].value) : 0);
    }
  };
  // An in-memory table keeps no log: nothing of it outlives the process.
  if (!in_memory_) {
    auto logged = record ? log_.Append(*record, prefetch_blocks)
                         : log_.Append(ops, prefetch_blocks);
    RT_RETURN_IF_ERROR(error_.Note(logged.status()));
    *seq = *logged;
  }
  // What the edits of their blocks touch next (the directories, in by
  // now, say where: the record of the key, or where a put's record will
  // go) loads, to be written, while the write buffer and the stash are
  // looked up: a store that misses the cache holds up the next lock.
  for (size_t i = 0; i < prefetched; ++i) {
    store_.PrefetchEdit(
        first[i], tags[i],
        ops[i].put ? internal::EncodedSize(ops[i].key, ops[i].value) : 0);
  }
  RT_RETURN_IF_ERROR(Apply(ops));
  RT_RETURN_IF_ERROR(MaybeCheckpoint());
  return Paranoid();
}

absl::Status Table::Impl::Apply(std::span<const Op> ops) {
  buffer_.Begin(ops.size());
  for (const Op& op : ops) {
    if (op.put && internal::IsReference(op.value)) {
      RT_RETURN_IF_ERROR(error_.Note(values_.Claim(op.value)));
    }
    RT_RETURN_IF_ERROR(op.put ? buffer_.Put(op.key, op.value)
                              : buffer_.Delete(op.key));
  }
  RT_RETURN_IF_ERROR(buffer_.Settle());
  store_.RefreshFilters();
  return absl::OkStatus();
}

absl::Status Table::Impl::Paranoid() {
  if (!options_.paranoid_checks) return absl::OkStatus();
  return CheckLocked();
}

// While a checkpoint's journal is being written, the log file the writers
// left is synced too: until the journal is durable, its records are their
// only copy (CommitLog).
absl::Status Table::Impl::SyncThrough(uint64_t seq) {
  bool failed = false;
  const absl::Status s = log_.SyncThrough(seq, &failed);
  if (failed) {
    MutexLock lock(&mu_);
    error_.Note(s).IgnoreError();
  }
  return s;
}

absl::Status Table::Impl::Sync() {
  {
    MutexLock lock(&mu_);
    RT_RETURN_IF_ERROR(CheckWritable());
    // A checkpoint still pending is completed too, which also frees the
    // journal's block images.
    RT_RETURN_IF_ERROR(
        error_.Note(checkpointer_.Complete(/*rewrite_journal=*/true)));
  }
  return SyncThrough(log_.logged_seq());
}

absl::Status Table::Impl::Flush() {
  MutexLock lock(&mu_);
  RT_RETURN_IF_ERROR(CheckWritable());
  while (!buffer_.empty()) {
    RT_RETURN_IF_ERROR(buffer_.DrainNext());
    RT_RETURN_IF_ERROR(MaybeCheckpoint());
  }
  // Puts that replaced larger records may leave buckets to release.
  RT_RETURN_IF_ERROR(error_.Note(table_.MaybeShrink()));
  store_.RefreshFilters();
  ShareMemory();  // the buffer empty: the cache takes the whole budget
  return absl::OkStatus();
}

absl::Status Table::Impl::AfterBackups(
    absl::FunctionRef<absl::Status()> locked) {
  while (true) {
    {
      MutexLock lock(&mu_);
      if (backups_ == 0) return locked();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

absl::Status Table::Impl::Checkpoint() {
  return AfterBackups([this]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
    RT_RETURN_IF_ERROR(CheckWritable());
    return error_.Note(CheckpointLocked(/*complete=*/true));
  });
}

absl::Status Table::Impl::Close() {
  return AfterBackups(
      [this]() ABSL_NO_THREAD_SAFETY_ANALYSIS { return CloseLocked(); });
}

absl::Status Table::Impl::CloseLocked() {
  if (closed_) return absl::FailedPreconditionError("table is closed");
  absl::Status s;
  if (!options_.read_only && error_.ok()) {
    // Compact the stash copy so that the next open reads only the live
    // stash, then checkpoint (which writes the write buffer's copy as it
    // is): the next open replays nothing.
    s = table_.stash().Compact();
    if (s.ok()) s = CheckpointLocked(/*complete=*/true);
  }
  closed_ = true;
  log_.Close(/*checkpointed=*/s.ok() && !options_.read_only && error_.ok());
  // A checkpoint's writes, or blocks written ahead, still running (after
  // a failure) end before their files close.
  const absl::Status ahead = store_.FinishAhead();
  if (s.ok() && error_.ok()) s = ahead;
  const absl::Status writes = checkpointer_.FinishWrites();
  if (s.ok() && error_.ok()) s = writes;
  files_ = internal::TableFiles{};
  table_lock_.Release();
  return s;
}

uint64_t Table::Impl::HeldBudget() const {
  const uint64_t limit = HeldLimit(options_);
  if (options_.memory_bytes == 0) return limit;
  return std::min(limit, store_.cache_usable_bytes());
}

void Table::Impl::ShareMemory() {
  const uint64_t budget = options_.memory_bytes;
  if (budget == 0 || in_memory_) return;
  // In steps of a 32nd of the budget (2 MiB at most: a huge page of the
  // cache's arena), the cache taking a step back only once the buffer has
  // left it two, so that a buffer at its limit does not move it to and fro.
  const uint64_t step = std::max<uint64_t>(
      layout_.block_size, std::min<uint64_t>(budget / 32, 2 << 20));
  const uint64_t whole = store_.cache_capacity_blocks() * layout_.block_size;
  const uint64_t buffer = std::min(whole / 2, 2 * buffer_.memory_bytes());
  const uint64_t want =
      std::min(whole, (whole - buffer + step - 1) / step * step);
  const uint64_t now = store_.cache_usable_bytes();
  if (want < now || (want > now && want >= std::min(whole, now + 2 * step))) {
    store_.SetCacheUsable(want);
  }
}

absl::Status Table::Impl::MaybeWriteAhead() {
  const uint64_t limit = HeldBudget();
  // A table within the budget is held whole between checkpoints, which
  // write each block once for all its edits; a larger one keeps half the
  // budget held.
  uint64_t keep = limit;
  if (table_.num_buckets() * layout_.block_size > limit) keep = limit / 2;
  // The last checkpoint's blocks, still in memory until its thread has
  // written them, and the blocks on their way count within the budget
  // too: a table of about the budget's size held whole, frozen by a
  // checkpoint and then written again would take it twice over.
  // An eighth of the budget stays for clean blocks, as in the cache,
  // which lends the rest.
  const internal::DeferredDevice& blocks = store_.device();
  const uint64_t cap = limit - limit / internal::BlockCache::kCleanShare;
  const uint64_t unwritten = blocks.unwritten_bytes();
  const uint64_t held = blocks.held_bytes();
  keep = std::min(keep, cap - std::min(cap, unwritten - held));
  // Past that the writer waits for the batch on its way rather than take
  // the clean blocks' eighth too, and then memory beyond the budget.
  const bool wait = unwritten > cap;
  // Batches of 32 blocks at least, larger while the held blocks are far
  // past what they keep (a checkpoint's frozen blocks taking most of the
  // budget): the writes of a batch go out sorted, and each costs the
  // thread a wakeup and a round trip, so none starts for fewer (unless
  // the writer must wait anyway).
  constexpr size_t kWriteAheadBatch = 32, kLargestBatch = 256;
  const uint64_t least = kWriteAheadBatch * layout_.block_size;
  if (held <= keep || (!wait && held < keep + least)) {
    return absl::OkStatus();
  }
  keep = std::min(keep, held - std::min(held, least));
  const size_t most = std::clamp<uint64_t>(
      (held - keep) / layout_.block_size / 4, kWriteAheadBatch, kLargestBatch);
  const uint64_t next = checkpointer_.superblock().sequence + 1;
  return error_.Note(
      store_.WriteAhead(keep, most, table_.num_buckets(), next, wait));
}

absl::Status Table::Impl::MaybeCheckpoint() {
  // A backup is copying the files as of its checkpoint: the next one waits
  // (the log and the held blocks grow meanwhile), and nothing is written
  // ahead of it.
  if (backups_ > 0) return absl::OkStatus();
  ShareMemory();
  if (!in_memory_) RT_RETURN_IF_ERROR(MaybeWriteAhead());
  // The values count as a share of the log's limit, and so do the blocks
  // written ahead since the last checkpoint: their places and their old
  // ones are all in the block file until the next: one checkpoint at
  // least for each table's worth of them (or the held blocks' budget)
  // keeps the file within about three times the table.
  const double values = values_.CheckpointPressure(
      options_.value_checkpoint_bytes, options_.checkpoint_bytes / 8);
  const double ahead =
      static_cast<double>(store_.ahead_since_checkpoint() *
                          layout_.block_size) /
      static_cast<double>(std::max(HeldLimit(options_),
                                   table_.num_buckets() * layout_.block_size));
  absl::StatusOr<bool> due = checkpointer_.Due(
      log_.bytes() +
      static_cast<uint64_t>((values + ahead) *
                            static_cast<double>(options_.checkpoint_bytes)));
  RT_RETURN_IF_ERROR(error_.Note(due.status()));
  if (!*due) return absl::OkStatus();
  return error_.Note(CheckpointLocked(/*complete=*/false));
}

absl::Status Table::Impl::CheckpointLocked(bool complete) {
  // The last checkpoint's thread is done first; this one's completes that
  // checkpoint in place before its journal overwrites the last.
  RT_RETURN_IF_ERROR(checkpointer_.FinishWrites());
  RT_RETURN_IF_ERROR(table_.stash().Flush());
  RT_ASSIGN_OR_RETURN(std::vector<internal::MadeBlocks> snapshots,
                      Snapshots());
  Superblock next = checkpointer_.superblock();
  next.num_buckets = table_.num_buckets();
  next.record_count = table_.record_count();
  next.data_bytes = table_.data_bytes();
  next.stash_epoch = table_.stash().epoch();
  next.stash_blocks = table_.stash().blocks();
  next.buffer_epoch = buffer_.records().epoch();
  next.buffer_blocks = buffer_.records().blocks();
  next.wal_seq = log_.applied_seq();
  values_.Stage();
  next.value_units = values_.map().units();
  next.value_count = values_.count();
  next.value_bytes = values_.bytes();
  next.min_buckets = table_.min_buckets();
  next.format_version = internal::kFormatVersion;
  ++next.sequence;
  // Each changed bucket block gets its new place, and the map its changed
  // blocks; blocks written ahead are in the file first, so that the
  // thread's sync covers them.
  RT_RETURN_IF_ERROR(store_.FinishAhead());
  RT_RETURN_IF_ERROR(store_.StagePlaces(next.num_buckets, next.sequence,
                                        checkpointer_.durable_sequence()));
  // The held bucket blocks answer reads frozen while the thread seals and
  // writes them, then, clean once in place, stay as cached blocks where
  // they lie.
  RT_RETURN_IF_ERROR(checkpointer_.Stage(next, std::move(snapshots)));
  // The file the writers append to after this checkpoint; the other one
  // is emptied by the thread once the journal is durable.
  const int writers = complete ? log_.current() : log_.current() ^ 1;
  io::BlockDevice* spare_log = log_.file(writers ^ 1);
  uint64_t spare_log_blocks = 0;
  if (!complete) {
    // The writers will come back to the file they leave at the next
    // checkpoint: the thread grows it again, after emptying it, to what
    // it took this time (at most Options::checkpoint_bytes), so that
    // they find its pages in memory rather than fault them in one by one.
    spare_log_blocks =
        std::min<uint64_t>(spare_log->num_blocks(),
                           options_.checkpoint_bytes / layout_.block_size + 1);
    RT_RETURN_IF_ERROR(log_.Start(writers, /*left_uncovered=*/true));
  }
  // Once the journal is durable, the log file the writers left needs no
  // sync.
  checkpointer_.Launch(spare_log, spare_log_blocks,
                       [this] { log_.JournalDurable(); });
  // Values dropped from now on are still referred to by this checkpoint.
  values_.map().set_generation(next.sequence + 1);
  if (!complete) return absl::OkStatus();
  RT_RETURN_IF_ERROR(checkpointer_.Complete(/*rewrite_journal=*/true));
  return log_.Start(log_.current(), /*left_uncovered=*/false);
}

absl::StatusOr<std::vector<internal::MadeBlocks>> Table::Impl::Snapshots() {
  std::vector<internal::MadeBlocks> made;
  const uint32_t bs = layout_.block_size;
  for (internal::LoggedStash* records : {&table_.stash(), &buffer_.records()}) {
    if (!records->snapshot_due()) continue;
    // Views of the records, which stay as they are until the checkpoint's
    // thread has encoded them: a copy made again costs the writer a pass
    // over the records' lists, not a copy of every record.
    RT_ASSIGN_OR_RETURN(const internal::LoggedStash::Views* views,
                        records->Snapshot());
    made.push_back(
        {[views, bs] {
           internal::StashLog::Encode(views->records, views->epoch,
                                      views->blocks, bs);
         },
         [records](bool done) { records->SnapshotDone(done); }});
  }
  return made;
}

absl::Status Table::Impl::Format() {
  MutexLock lock(&mu_);
  RT_RETURN_IF_ERROR(store_.LoadPlaces(table_.num_buckets(), /*stored=*/false));
  RT_RETURN_IF_ERROR(log_.Start(log_.current(), /*left_uncovered=*/false));
  return CheckpointLocked(/*complete=*/true);
}

Table::Table(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Table::~Table() {
  if (impl_) impl_->Close().IgnoreError();
}

absl::StatusOr<std::string> Table::Get(std::string_view key) {
  std::string value;
  RT_RETURN_IF_ERROR(impl_->Get(key, &value));
  return value;
}

absl::Status Table::Get(std::string_view key, std::string* value) {
  return impl_->Get(key, value);
}
absl::Status Table::Put(std::string_view key, std::string_view value,
                        const WriteOptions& options) {
  const Op op{true, key, value};
  return impl_->Write({&op, 1}, std::nullopt, options);
}
absl::Status Table::Delete(std::string_view key, const WriteOptions& options) {
  const Op op{false, key, {}};
  return impl_->Write({&op, 1}, std::nullopt, options);
}
absl::Status Table::Sync() { return impl_->Sync(); }
absl::Status Table::Flush() { return impl_->Flush(); }
absl::Status Table::Checkpoint() { return impl_->Checkpoint(); }

absl::Status Table::Write(const WriteBatch& batch,
                          const WriteOptions& options) {
  // The batch is its log record: decoded into views of itself, and logged
  // as it is.
  RT_ASSIGN_OR_RETURN(const std::vector<Op> ops,
                      internal::DecodeOps(batch.rep_, 0));
  return impl_->Write(ops, batch.rep_, options);
}

std::vector<absl::StatusOr<std::string>> Table::MultiGet(
    std::span<const std::string_view> keys) {
  return impl_->MultiGet(keys);
}

void Table::Preload(std::span<const std::string_view> keys) {
  impl_->Preload(keys);
}

absl::Status Table::Close() { return impl_->Close(); }

absl::Status Table::Check(const CheckProgress& progress) {
  return impl_->Check(progress);
}
size_t Table::max_record_bytes() const { return impl_->max_record_bytes(); }
size_t Table::max_key_bytes() const { return impl_->max_key_bytes(); }

uint64_t SuggestedS0(uint32_t block_size, size_t key_bytes,
                     size_t value_bytes) {
  const uint32_t bs = std::max<uint32_t>(block_size, io::kMinBlockSize);
  // A value too large for the block is a reference there.
  size_t record = internal::EncodedSize(key_bytes, value_bytes);
  if (record > internal::MaxRecord(bs)) {
    record = internal::EncodedSize(key_bytes, internal::kReferenceBytes);
  }
  const double per_block =
      static_cast<double>(internal::Payload(bs)) / static_cast<double>(record);
  uint64_t s0 = 4;
  while (s0 < 32 && static_cast<double>(2 * s0) <= std::sqrt(per_block)) {
    s0 *= 2;
  }
  return s0;
}

absl::Status DestroyTable(const std::string& path) {
  return internal::DestroyTableFiles(path);
}

}  // namespace roundtable
