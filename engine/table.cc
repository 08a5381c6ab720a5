#include "engine/table.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
// Key hashes are XXH3 compiled inline: for short keys the call into the
// shared library costs as much as the hash.
#define XXH_INLINE_ALL
#include <xxhash.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <system_error>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "engine/internal/block_cache.h"
#include "engine/internal/block_format.h"
#include "engine/internal/deferred_device.h"
#include "engine/internal/journal.h"
#include "engine/internal/kill_points.h"
#include "engine/internal/stash.h"
#include "engine/internal/stash_log.h"
#include "engine/internal/superblock.h"
#include "engine/internal/table_files.h"
#include "engine/internal/wal.h"
#include "io/io_error.h"
#include "io/memory_device.h"
#include "engine/mapping/round_mapping.h"
#include "io/mutex.h"
#include "io/status_macros.h"

namespace roundtable {

using internal::kHeaderBlocks;
using internal::Record;
using internal::Superblock;

namespace {

using internal::kBlocksFile;
using internal::kBufferFile;
using internal::kJournalFile;
using internal::kNewBlocksFile;
using internal::kStashFile;
using internal::kWalFiles;
// The files a journal entry names.
constexpr uint32_t kBlocksFileId = 0;
constexpr uint32_t kStashFileId = 1;
constexpr uint32_t kBufferFileId = 2;

// A table's six files.
struct Files {
  std::unique_ptr<io::BlockDevice> blocks, stash, journal, buffer;
  std::array<std::unique_ptr<io::BlockDevice>, 2> wal;

  // The file a journal entry names (Open refuses a journal naming another
  // id).
  io::BlockDevice& ById(uint32_t id) const {
    return id == kStashFileId    ? *stash
           : id == kBufferFileId ? *buffer
                                 : *blocks;
  }
};

// One put or delete of a write, as logged.
struct Op {
  bool put;
  std::string_view key;
  std::string_view value;
};

constexpr char kLogPut = 1, kLogDelete = 2;

// The log record of a write: varint op count, then per op a kind byte,
// varint key length, key, and for a put varint value length, value.
void EncodeOps(std::span<const Op> ops, std::string* out) {
  out->clear();
  char varint[10];
  auto put_varint = [&](uint64_t v) {
    out->append(varint, internal::PutVarint(varint, v) - varint);
  };
  put_varint(ops.size());
  for (const Op& op : ops) {
    out->push_back(op.put ? kLogPut : kLogDelete);
    put_varint(op.key.size());
    out->append(op.key);
    if (op.put) {
      put_varint(op.value.size());
      out->append(op.value);
    }
  }
}

absl::StatusOr<std::vector<Op>> DecodeOps(std::string_view record,
                                          uint64_t seq) {
  const char* p = record.data();
  const char* end = p + record.size();
  auto bad = [&] {
    return absl::DataLossError(
        absl::StrCat("write-ahead log record ", seq, " is malformed"));
  };
  auto bytes = [&](std::string_view* out) {
    const auto n = internal::GetVarint(&p, end);
    if (!n || *n > static_cast<uint64_t>(end - p)) return false;
    *out = std::string_view(p, *n);
    p += *n;
    return true;
  };
  const auto count = internal::GetVarint(&p, end);
  if (!count || *count > record.size()) return bad();
  std::vector<Op> ops(*count);
  for (Op& op : ops) {
    if (p == end || (*p != kLogPut && *p != kLogDelete)) return bad();
    op.put = *p++ == kLogPut;
    if (!bytes(&op.key) || (op.put && !bytes(&op.value))) return bad();
  }
  if (p != end) return bad();
  return ops;
}

absl::Status CheckOptions(const Options& o) {
  const uint32_t bs = o.block_size;
  if (bs < 512 || bs > 65536 || (bs & (bs - 1)) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "block size ", bs, " is not a power of two from 512 to 65536"));
  }
  if (o.s0 < 1 || o.s0 > internal::kMaxS0) {
    return absl::InvalidArgumentError(
        absl::StrCat("s0 = ", o.s0, " is outside [1, 2^20]"));
  }
  if (!(o.epsilon > 0 && o.epsilon <= 0.5)) {
    return absl::InvalidArgumentError(
        absl::StrCat("epsilon = ", o.epsilon, " is outside (0, 0.5]"));
  }
  return absl::OkStatus();
}

// Record space of one block.
size_t Payload(uint32_t block_size) {
  return block_size - internal::kBlockHeaderBytes;
}

size_t MaxRecord(uint32_t block_size) { return Payload(block_size) / 4; }

// The smallest block size whose inline limit takes a record of `bytes`, or 0.
uint32_t BlockSizeFor(size_t bytes) {
  for (uint32_t bs = 512; bs <= 65536; bs *= 2) {
    if (MaxRecord(bs) >= bytes) return bs;
  }
  return 0;
}

std::string Join(const std::string& dir, const char* file) {
  return internal::TablePath(dir, file);
}

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

// The deferred device over the block file: bucket blocks are sealed (their
// checksums set) only when a checkpoint's thread stores them, and a read
// of one frozen meanwhile seals its copy. The header blocks (superblock
// images) are whole as they are.
std::unique_ptr<internal::DeferredDevice> MakeBlocksDevice(
    io::BlockDevice* file) {
  auto device = std::make_unique<internal::DeferredDevice>(file);
  device->set_seal([](uint64_t block, std::span<std::byte> bytes) {
    if (block >= kHeaderBlocks) internal::EncodedBlock(bytes).Seal();
  });
  return device;
}

}  // namespace

class Table::Impl {
 public:
  Impl(const Options& options, std::string path, Superblock sb,
       mapping::RoundMapping mapping, Files files, internal::TableLock lock)
      : table_lock_(std::move(lock)),
        options_(options),
        path_(std::move(path)),
        sb_(sb),
        block_size_(sb.block_size),
        block_records_(sb.block_records),
        in_memory_(options.backend == io::Backend::kMemory),
        hash_seed_(sb.hash_seed),
        mapping_(std::move(mapping)),
        files_(std::move(files)),
        blocks_(MakeBlocksDevice(files_.blocks.get())),
        stash_device_(
            std::make_unique<internal::DeferredDevice>(files_.stash.get())),
        buffer_device_(
            std::make_unique<internal::DeferredDevice>(files_.buffer.get())),
        wal_{internal::WalWriter(files_.wal[0].get()),
             internal::WalWriter(files_.wal[1].get())},
        stash_log_(stash_device_.get(), sb.stash_epoch, sb.stash_blocks),
        buffer_log_(buffer_device_.get(), sb.buffer_epoch, sb.buffer_blocks),
        // A table in memory has no block to save a read of.
        buffer_limit_(in_memory_ ? 0 : options.write_buffer_bytes),
        cache_(options.block_cache_bytes, sb.block_size, &internal::TagFilterOf),
        work_(sb.block_size),
        payload_(Payload(sb.block_size)),
        record_count_(sb.record_count),
        data_bytes_(sb.data_bytes) {}

  // Close ends the checkpoint's writes; a table never closed (a failed Open)
  // ends them here.
  ~Impl() ABSL_NO_THREAD_SAFETY_ANALYSIS {
    if (checkpoint_writes_ != nullptr &&
        checkpoint_writes_->thread.joinable()) {
      checkpoint_writes_->thread.join();
    }
  }

  uint32_t block_size() const { return block_size_; }

  // A view of a block's bytes with the table's record limit.
  internal::EncodedBlock BlockView(std::span<std::byte> bytes) const {
    return internal::EncodedBlock(bytes, block_records_);
  }

  uint64_t Hash(std::string_view key) const {
    return XXH3_64bits_withSeed(key.data(), key.size(), hash_seed_);
  }

  // Fills the in-RAM stash and write buffer from their persistent copies.
  absl::Status LoadStashAndBuffer() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    RT_RETURN_IF_ERROR(
        LoadCopy(*stash_device_, stash_log_, "stash copy", stash_));
    return LoadCopy(*buffer_device_, buffer_log_, "write buffer copy", buffer_);
  }

  // Fills `records` from `copy` (on `device`, named `what` in errors),
  // each record in its bucket under the current mapping, and resumes the
  // copy's tail.
  absl::Status LoadCopy(io::BlockDevice& device, internal::StashLog& copy,
                        std::string_view what, internal::Stash& records)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    RT_ASSIGN_OR_RETURN(
        auto live,
        internal::StashLog::Load(device, copy.epoch(), copy.blocks(), what));
    for (auto& [key, value] : live) {
      if (internal::EncodedSize(key, value) > MaxRecord(block_size())) {
        return absl::DataLossError(absl::StrCat(
            std::string(what), ": a record of ",
            internal::EncodedSize(key, value),
            " bytes, past the limit of ", MaxRecord(block_size())));
      }
      const uint64_t h = Hash(key);
      records.Add(mapping_.FindBucket(h), h, Record(key, value));
    }
    return copy.ResumeTail();
  }

  absl::Status Get(std::string_view key, std::string* value) {
    ReaderMutexLock lock(&mu_);
    RT_RETURN_IF_ERROR(CheckOpen());
    const uint64_t h = Hash(key);
    const uint64_t b = mapping_.FindBucket(h);
    if (const Record* r = FindInMemory(b, key, h)) {
      value->assign(r->value());
      return absl::OkStatus();
    }
    logical_get_reads_.fetch_add(1, std::memory_order_relaxed);
    // A cached or held block is searched where it lies, with no copy,
    // unless its tag filter rules the key out.
    const uint16_t tag = internal::TagOf(h);
    bool found = false;
    auto find = [&](std::span<const std::byte> bytes) {
      const internal::EncodedBlock block(bytes);
      if (auto f = block.Find(key, tag)) {
        value->assign(f->value);
        found = true;
      }
    };
    if (!cache_.VisitTagged(b, tag, find)) {
      if (const std::byte* held = FindHeld(b)) {
        if (HeldMayContain(b, tag)) find({held, block_size()});
      } else {
        io::AlignedBuffer buffer(block_size());
        RT_RETURN_IF_ERROR(LoadFromDevice(b, buffer.span()));
        find(buffer.span());
      }
    }
    if (!found) return absl::NotFoundError("key not found");
    return absl::OkStatus();
  }

  absl::Status CheckRecord(std::string_view key, std::string_view value) const {
    const size_t size = internal::EncodedSize(key, value);
    if (size > MaxRecord(block_size())) {
      const uint32_t fits = BlockSizeFor(size);
      return absl::InvalidArgumentError(absl::StrCat(
          "record of ", size, " bytes (key ", key.size(), ", value ",
          value.size(), ") exceeds the inline limit of ",
          MaxRecord(block_size()), " bytes for ", block_size(), "-byte blocks",
          fits ? absl::StrCat("; a block size of ", fits, " would take it")
               : std::string("; no block size takes it")));
    }
    return absl::OkStatus();
  }

  // Put, Delete and Write: every record checked, the write logged and
  // applied; then, when asked, the log synced through it (group commit).
  absl::Status Write(std::span<const Op> ops, const WriteOptions& w) {
    for (const Op& op : ops) {
      if (op.put) RT_RETURN_IF_ERROR(CheckRecord(op.key, op.value));
    }
    uint64_t seq = 0;
    {
      MutexLock lock(&mu_);
      RT_RETURN_IF_ERROR(CheckWritable());
      // What the first ops will look up about their buckets (the write
      // buffer's and the stash's filters, the write buffer's list, whether
      // the block is held or cached: each a cache miss in a large table)
      // loads while the write is logged.
      for (size_t i = 0; i < std::min<size_t>(ops.size(), 4); ++i) {
        PrefetchBucket(mapping_.FindBucket(Hash(ops[i].key)));
      }
      // An in-memory table keeps no log: nothing of it outlives the
      // process.
      if (!in_memory_) {
        EncodeOps(ops, &log_record_);
        internal::WalWriter& wal = wal_[log_];
        wal.NoteDurable(durable_seq_.load(std::memory_order_acquire));
        RT_RETURN_IF_ERROR(Fail(wal.Append(log_record_)));
        applied_seq_ = seq = wal.next_seq() - 1;
        logged_seq_.store(seq, std::memory_order_release);
        internal::KillPoint("write: logged");
      }
      RT_RETURN_IF_ERROR(Apply(ops));
      RT_RETURN_IF_ERROR(MaybeCheckpoint());
      RT_RETURN_IF_ERROR(Paranoid());
    }
    return w.sync && !in_memory_ ? SyncThrough(seq) : absl::OkStatus();
  }

  // Makes log records up to `seq` durable. Group commit: one syncing writer
  // at a time syncs the log, covering every record logged before its sync
  // began; writers queued behind it whose records that sync covered return
  // without a sync of their own. Runs outside the writer lock, so that
  // writers append while a sync is in flight. While a checkpoint's journal
  // is being written, the log file the writers left is synced too: until
  // the journal is durable, its records are their only copy.
  absl::Status SyncThrough(uint64_t seq) ABSL_LOCKS_EXCLUDED(mu_, sync_mu_) {
    absl::Status s;
    {
      MutexLock lock(&sync_mu_);
      if (!sync_error_.ok()) return sync_error_;
      if (durable_seq_.load(std::memory_order_relaxed) >= seq) {
        return absl::OkStatus();
      }
      if (closed_for_sync_) {
        return absl::FailedPreconditionError("table is closed");
      }
      uint64_t target;
      std::array<io::BlockDevice*, 2> logs;
      {
        MutexLock log_lock(&log_mu_);
        target = logged_seq_.load(std::memory_order_acquire);
        logs = sync_logs_;
      }
      for (io::BlockDevice* log : logs) {
        if (s.ok() && log != nullptr) s = log->Sync();
      }
      if (s.ok()) {
        durable_seq_.store(target, std::memory_order_release);
        return s;
      }
      // After a failed sync nothing unsynced is promised; no retry helps.
      sync_error_ = s;
    }
    MutexLock lock(&mu_);
    return Fail(s);
  }

  // Applies logged ops to the table (a write, or a log record replayed).
  absl::Status Apply(std::span<const Op> ops)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    rebuilt_drains_left_ = kRebuiltDrainsPerWrite;
    for (const Op& op : ops) {
      RT_RETURN_IF_ERROR(op.put ? PutLocked(op.key, op.value)
                                : DeleteLocked(op.key));
    }
    // Deletes, and smaller values (also those of drained puts), may leave
    // the data small enough to release buckets; a release rebuilds blocks
    // whose buffered puts then go in, which may release more. Each round
    // drains buffered puts or uses up the write's drains, so this ends.
    do {
      RT_RETURN_IF_ERROR(Fail(DrainRebuilt()));
      RT_RETURN_IF_ERROR(Fail(MaybeShrink()));
    } while (!rebuilt_.empty() && rebuilt_drains_left_ > 0);
    RefreshHeldFilters();
    return absl::OkStatus();
  }

  // The debug mode's check after a write (Options::paranoid_checks).
  absl::Status Paranoid() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (!options_.paranoid_checks) return absl::OkStatus();
    return CheckLocked();
  }

  std::vector<absl::StatusOr<std::string>> MultiGet(
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
      hash_of[i] = Hash(keys[i]);
      const uint64_t b = mapping_.FindBucket(hash_of[i]);
      if (const Record* r = FindInMemory(b, keys[i], hash_of[i])) {
        out[i] = r->value();
        continue;
      }
      auto [it, added] = slot.emplace(b, buffers.size());
      if (added) buffers.emplace_back(block_size());
      buffer_of[i] = static_cast<int64_t>(it->second);
    }
    std::vector<uint64_t> buckets(slot.size());
    for (const auto& [b, index] : slot) buckets[index] = b;
    const absl::Status s = ReadBlocks(buckets, buffers);
    if (!s.ok()) {
      for (size_t i = 0; i < keys.size(); ++i) {
        if (buffer_of[i] >= 0) out[i] = s;
      }
      return out;
    }
    logical_get_reads_.fetch_add(slot.size(), std::memory_order_relaxed);
    for (size_t i = 0; i < keys.size(); ++i) {
      if (buffer_of[i] < 0) continue;
      const internal::EncodedBlock block(buffers[buffer_of[i]].span());
      auto found = block.Find(keys[i], internal::TagOf(hash_of[i]));
      if (found) out[i] = std::string(found->value);
    }
    return out;
  }

  // The records of bucket `b` (block, then stash list) into *out; false in
  // *past_end when b >= m.
  absl::Status BucketRecords(uint64_t b, std::vector<Record>* out,
                             bool* past_end) {
    ReaderMutexLock lock(&mu_);
    RT_RETURN_IF_ERROR(CheckOpen());
    *past_end = b >= mapping_.num_buckets();
    out->clear();
    if (*past_end) return absl::OkStatus();
    io::AlignedBuffer buffer(block_size());
    RT_RETURN_IF_ERROR(LoadBlock(b, buffer.span()));
    internal::EncodedBlock(buffer.span())
        .ForEach([&](std::string_view k, std::string_view v) {
          out->push_back(Record(k, v));
        });
    if (const internal::Stash::List* list = stash_.ListOf(b)) {
      for (const internal::Stash::Entry& e : *list) out->push_back(e.record);
    }
    // A buffered put replaces the stored record of its key.
    if (const internal::Stash::List* list = buffer_.ListOf(b)) {
      absl::flat_hash_set<std::string_view> buffered;
      for (const internal::Stash::Entry& e : *list) {
        buffered.insert(e.record.key());
      }
      std::erase_if(*out,
                    [&](const Record& r) { return buffered.contains(r.key()); });
      for (const internal::Stash::Entry& e : *list) out->push_back(e.record);
    }
    return absl::OkStatus();
  }

  // A put waits in the write buffer, reading nothing, unless it edits its
  // block in place (EditsInPlace) or its key is in the stash; a key already
  // buffered takes the new value there. A bucket whose buffered puts would
  // fill its block is drained at once: one read and write for a block's
  // worth.
  absl::Status PutLocked(std::string_view key, std::string_view value)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const uint64_t h = Hash(key);
    const uint64_t b = mapping_.FindBucket(h);
    if (Record* buffered = buffer_.Find(b, key, h)) {
      buffer_.SetValue(buffered, value);
    } else if (buffer_limit_ > 0 && !EditsInPlace(b) &&
               stash_.Find(b, key, h) == nullptr) {
      buffer_.Add(b, h, Record(key, value));
    } else {
      return PutInBlock(key, value, h);
    }
    RT_RETURN_IF_ERROR(Fail(buffer_log_.AppendPut(key, value)));
    if (buffer_.ListOf(b)->size() * internal::EncodedSize(key, value) >=
        payload_) {
      RT_RETURN_IF_ERROR(DrainBucket(b));
    }
    return MaybeDrainBuffer();
  }

  // Applies a put to the key's block (or its stash list). `owned`, if not
  // null, is a record whose key and value these are, given up to the
  // stash if the record lands there.
  absl::Status PutInBlock(std::string_view key, std::string_view value,
                          uint64_t h, Record* owned = nullptr)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const size_t size = internal::EncodedSize(key, value);
    bool grown = false;
    while (true) {
      const uint64_t b = mapping_.FindBucket(h);
      // A key in the stash is replaced there (its block stays full, nothing
      // to read); otherwise the key's block is read.
      Record* stashed = stash_.Find(b, key, h);
      std::optional<internal::EncodedBlock> block;
      std::optional<internal::EncodedBlock::Found> found;
      size_t old = 0;
      if (stashed != nullptr) {
        old = internal::EncodedSize(stashed->key(), stashed->value());
      } else {
        RT_ASSIGN_OR_RETURN(block, EditBlock(b));
        ++logical_.put_reads;
        found = block->Find(key, internal::TagOf(h));
        if (found) old = found->size;
      }
      // As the paper does, make room first if the data would pass
      // (1 - epsilon) of the blocks' capacity: at most one new bucket per
      // Put, after which the key's bucket is found again.
      if (!grown && NeededBuckets(data_bytes_ - old + size,
                                  record_count_ + (old == 0 ? 1 : 0)) >
                        mapping_.num_buckets()) {
        RT_RETURN_IF_ERROR(Fail(Grow()));
        grown = true;
        continue;
      }
      if (stashed != nullptr) {
        data_bytes_ = data_bytes_ - old + size;
        stash_.SetValue(stashed, value);
        RT_RETURN_IF_ERROR(Fail(stash_log_.AppendPut(key, value)));
        if (size >= old) return absl::OkStatus();
        // A smaller record may now fit its block: keep the rule that a
        // stash list exists only where its block has no room for it.
        RT_ASSIGN_OR_RETURN(block, EditBlock(b));
        ++logical_.put_reads;
        if (!block->Fits(size)) return absl::OkStatus();
        ++logical_.put_writes;
        return Fail(RefillFromStash(*block, b));
      }
      if (found && found->size == size) {
        // The same key with a value of the same length: written over the
        // old one where it lies. The block's room is unchanged, so its
        // stash list (if any) stays as it is.
        block->ReplaceValue(*found, value);
        ++logical_.put_writes;
        return absl::OkStatus();
      }
      if (found) {
        block->Remove(*found);
      } else {
        ++record_count_;
      }
      data_bytes_ = data_bytes_ - old + size;
      if (!block->Append(key, value, internal::TagOf(h))) {
        RT_RETURN_IF_ERROR(Fail(AddToStash(
            b, h,
            owned != nullptr ? std::move(*owned)
                             : Record(key, value))));
      }
      ++logical_.put_writes;
      return Fail(RefillFromStash(*block, b));
    }
  }

  // A buffered put of the key is dropped, and so is the record stored in
  // its block or stash list.
  absl::Status DeleteLocked(std::string_view key)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const uint64_t h = Hash(key);
    const uint64_t b = mapping_.FindBucket(h);
    if (buffer_.Find(b, key, h) != nullptr) {
      buffer_.Filter(b, [&](const Record& r) { return r.key() != key; });
      RT_RETURN_IF_ERROR(Fail(buffer_log_.AppendRemove(key)));
      RT_RETURN_IF_ERROR(Fail(MaybeRewriteBufferCopy()));
    }
    if (stash_.Find(b, key, h) != nullptr) {
      return Fail(RemoveFromStash(b, key));
    }
    bool fresh = false;
    RT_ASSIGN_OR_RETURN(internal::EncodedBlock block, EditBlock(b, &fresh));
    ++logical_.delete_reads;
    const auto found = block.Find(key, internal::TagOf(h));
    if (!found) {
      // Nothing to write: an absent key leaves no held block behind.
      if (fresh) Unhold(b);
      return absl::OkStatus();
    }
    data_bytes_ -= found->size;
    block.Remove(*found);
    --record_count_;
    ++logical_.delete_writes;
    return Fail(RefillFromStash(block, b));
  }

  // Releases buckets while the data fits in m - 2 blocks: one bucket of
  // hysteresis, so that a grow is never undone by the next delete.
  absl::Status MaybeShrink() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    while (mapping_.num_buckets() > sb_.s0 &&
           NeededBuckets(data_bytes_, record_count_) + 1 <
               mapping_.num_buckets()) {
      RT_RETURN_IF_ERROR(Shrink());
    }
    return absl::OkStatus();
  }

  absl::Status Sync() {
    {
      MutexLock lock(&mu_);
      RT_RETURN_IF_ERROR(CheckWritable());
      // A checkpoint still pending is completed too, which also frees the
      // journal's block images.
      RT_RETURN_IF_ERROR(Fail(CompleteCheckpoint(/*rewrite_journal=*/true)));
    }
    return SyncThrough(logged_seq_.load(std::memory_order_acquire));
  }

  // Table::Flush.
  absl::Status Flush() {
    MutexLock lock(&mu_);
    RT_RETURN_IF_ERROR(CheckWritable());
    while (buffer_.records() > 0) {
      RT_RETURN_IF_ERROR(DrainNextBucket());
      RT_RETURN_IF_ERROR(MaybeCheckpoint());
    }
    // Puts that replaced larger records may leave buckets to release.
    RT_RETURN_IF_ERROR(Fail(MaybeShrink()));
    RefreshHeldFilters();
    return Fail(MaybeRewriteBufferCopy());
  }

  absl::Status Checkpoint() {
    MutexLock lock(&mu_);
    RT_RETURN_IF_ERROR(CheckWritable());
    return Fail(CheckpointLocked(/*complete=*/true));
  }

  absl::Status Close() {
    MutexLock lock(&mu_);
    if (closed_) return absl::FailedPreconditionError("table is closed");
    absl::Status s;
    if (!options_.read_only && error_.ok()) {
      // Compact the stash copy so that the next open reads only the live
      // stash, then checkpoint: the next open replays nothing. The write
      // buffer's copy, up to the buffer's size, is rewritten only on its
      // usual rule (at most twice the live entries for the next open).
      s = RewriteStashCopy();
      if (s.ok()) s = MaybeRewriteBufferCopy();
      if (s.ok()) s = CheckpointLocked(/*complete=*/true);
    }
    closed_ = true;
    {
      // A syncing writer behind Close finds its record checkpointed, or the
      // table closed.
      MutexLock sync_lock(&sync_mu_);
      if (s.ok() && !options_.read_only && error_.ok()) {
        durable_seq_.store(applied_seq_, std::memory_order_release);
      }
      closed_for_sync_ = true;
    }
    // A checkpoint's writes still running (after a failure) end before
    // their files close.
    const absl::Status writes = FinishCheckpointWrites();
    if (s.ok() && error_.ok()) s = writes;
    blocks_.reset();
    stash_device_.reset();
    buffer_device_.reset();
    files_ = Files{};
    table_lock_.Release();
    return s;
  }

  TableStats GetStats() const {
    ReaderMutexLock lock(&mu_);
    // The physical ledgers count the last checkpoint's writes.
    if (checkpoint_writes_ != nullptr) checkpoint_writes_->Wait();
    TableStats st;
    st.buckets = mapping_.num_buckets();
    st.records = record_count_;
    st.stash_records = stash_.records();
    st.stash_bytes = stash_.bytes();
    st.buffered_records = buffer_.records();
    st.buffered_bytes = buffer_.bytes();
    st.data_bytes = data_bytes_;
    st.block_size = sb_.block_size;
    st.block_records = sb_.block_records;
    st.s0 = sb_.s0;
    st.epsilon = sb_.epsilon;
    st.utilization = static_cast<double>(data_bytes_) /
                     (static_cast<double>(payload_) * mapping_.num_buckets());
    if (block_records_ != 0) {
      st.utilization = std::max(
          st.utilization,
          static_cast<double>(record_count_) /
              (static_cast<double>(block_records_) * mapping_.num_buckets()));
    }
    st.logical = logical_;
    st.logical.get_reads = logical_get_reads_.load();
    st.logical.stash_copy_writes = stash_log_.block_writes();
    st.cache_hits = cache_.hits();
    st.held_hits = held_hits_.load(std::memory_order_relaxed);
    st.cache_misses = cache_.misses();
    if (blocks_) {
      st.held_blocks = blocks_->held().size() + stash_device_->held().size() +
                       buffer_device_->held().size();
    }
    st.wal_bytes = wal_[log_].bytes();
    st.checkpoints = checkpoints_;
    st.recovered_records = recovered_records_;
    st.recovered_journal = recovered_journal_;
    st.recovery_ns = recovery_ns_;
    if (files_.blocks) {
      st.physical_blocks = files_.blocks->stats();
      st.physical_stash = files_.stash->stats();
      st.physical_wal = Sum(files_.wal[0]->stats(), files_.wal[1]->stats());
      st.physical_journal = files_.journal->stats();
      st.physical_buffer = files_.buffer->stats();
    }
    return st;
  }

  absl::Status Check() {
    ReaderMutexLock lock(&mu_);
    return CheckLocked();
  }

  absl::Status CheckLocked() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    RT_RETURN_IF_ERROR(CheckOpen());
    const uint64_t m = mapping_.num_buckets();
    absl::flat_hash_map<std::string, uint64_t> seen;
    uint64_t records = 0, bytes = 0, stash_records = 0, stash_bytes = 0;
    auto fault = [](auto... parts) {
      return absl::DataLossError(absl::StrCat("check: ", parts...));
    };
    auto note = [&](std::string_view key, std::string_view value, uint64_t b,
                    const char* where) -> absl::Status {
      const uint64_t home = mapping_.FindBucket(Hash(key));
      if (home != b) {
        return fault("a record in the ", where, " of bucket ", b,
                     " belongs to bucket ", home);
      }
      if (!seen.emplace(key, b).second) {
        return fault("a key appears twice (bucket ", b, ")");
      }
      ++records;
      bytes += internal::EncodedSize(key, value);
      return absl::OkStatus();
    };
    io::AlignedBuffer buffer(block_size());
    for (uint64_t b = 0; b < m; ++b) {
      RT_RETURN_IF_ERROR(LoadBlock(b, buffer.span()));
      const internal::EncodedBlock block = BlockView(buffer.span());
      absl::Status s;
      block.ForEachTagged(
          [&](std::string_view k, std::string_view v, uint16_t tag) {
            if (!s.ok()) return;
            if (tag != internal::TagOf(Hash(k))) {
              s = fault("a record of bucket ", b,
                        " has a directory tag that does not match its key");
              return;
            }
            s = note(k, v, b, "block");
          });
      RT_RETURN_IF_ERROR(s);
      const internal::Stash::List* list = stash_.ListOf(b);
      if (list == nullptr) continue;
      for (const internal::Stash::Entry& e : *list) {
        const Record& r = e.record;
        RT_RETURN_IF_ERROR(note(r.key(), r.value(), b, "stash"));
        ++stash_records;
        stash_bytes += internal::EncodedSize(r.key(), r.value());
        if (block.Fits(internal::EncodedSize(r.key(), r.value()))) {
          return fault("bucket ", b,
                       " keeps a record in the stash that its block has "
                       "room for");
        }
      }
    }
    absl::Status stray;
    stash_.ForEachList([&](uint64_t b, const internal::Stash::List&) {
      if (b >= m && stray.ok()) {
        stray = fault("stash list for missing bucket ", b);
      }
    });
    RT_RETURN_IF_ERROR(stray);
    if (!stash_.Consistent([&](std::string_view k) { return Hash(k); })) {
      return fault("the stash's filters or key hashes disagree with its lists");
    }
    // Buffered puts: each in the list of its own bucket, no key twice.
    absl::flat_hash_set<std::string_view> buffered;
    buffer_.ForEachList([&](uint64_t b, const internal::Stash::List& list) {
      for (const internal::Stash::Entry& e : list) {
        const Record& r = e.record;
        if (!stray.ok()) return;
        if (mapping_.FindBucket(Hash(r.key())) != b) {
          stray = fault("a buffered put in the list of bucket ", b,
                        " belongs to another bucket");
        } else if (!buffered.insert(r.key()).second) {
          stray = fault("a key is buffered twice (bucket ", b, ")");
        }
      }
    });
    RT_RETURN_IF_ERROR(stray);
    if (!buffer_.Consistent([&](std::string_view k) { return Hash(k); })) {
      return fault(
          "the write buffer's filters or key hashes disagree with its lists");
    }
    if (stash_records != stash_.records() || stash_bytes != stash_.bytes()) {
      return fault("counted ", stash_records, " stash records of ", stash_bytes,
                   " bytes; the stash says ", stash_.records(), " and ",
                   stash_.bytes());
    }
    if (records != record_count_ || bytes != data_bytes_) {
      return fault("counted ", records, " records of ", bytes,
                   " bytes; the table says ", record_count_, " and ",
                   data_bytes_);
    }
    const uint64_t least = NeededBuckets(bytes, records);
    const uint64_t needed = std::max<uint64_t>(least, sb_.s0);
    if (m < std::max<uint64_t>(least, 1) || m > needed + 1) {
      return fault(m, " buckets for ", records, " records of ", bytes,
                   " bytes (", needed, " needed at 1 - epsilon)");
    }
    return absl::OkStatus();
  }

  // Writes the rest of a new table's initial state, its s0 empty blocks
  // being in the file already (FormatBuckets): an empty stash copy, the
  // first superblock, an empty log.
  absl::Status Format() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    RT_RETURN_IF_ERROR(StartLog(log_, /*left_uncovered=*/false));
    return CheckpointLocked(/*complete=*/true);
  }

  // Brings an existing table to the state of its last acknowledged write:
  // the images of a complete journal newer than the superblock (a
  // checkpoint cut short or not yet complete) over the files, the stash
  // copy, then the log records after the checkpoint. Unless read-only, the
  // replayed writes of a table that had a journal are then checkpointed;
  // otherwise they stay in memory (held blocks) until the next checkpoint,
  // and the log is cut after its last whole record and continues from
  // there.
  absl::Status Recover(const std::optional<internal::Journal>& journal)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const auto start = std::chrono::steady_clock::now();
    // A writable table's Open wrote a journal's images in place
    // (ApplyJournal); a read-only one holds them here.
    if (journal && options_.read_only) {
      for (const internal::JournalImage& image : journal->images) {
        internal::DeferredDevice& file = *Layers()[image.file].seen;
        if (image.block >= file.num_blocks()) {
          RT_RETURN_IF_ERROR(file.Resize(image.block + 1));
        }
        RT_RETURN_IF_ERROR(file.Write(image.block, image.bytes.span()));
      }
    }
    recovered_journal_ = journal.has_value();
    // The files may be longer than the superblock says (a shrink not yet
    // checkpointed), never shorter (Open checked).
    RT_RETURN_IF_ERROR(blocks_->Resize(kHeaderBlocks + sb_.num_buckets));
    RT_RETURN_IF_ERROR(LoadStashAndBuffer());
    // The log's two files, the one whose first record is older first (a
    // file with no whole first record last): the checkpoint that moved the
    // writers to the newer one may not have been durable.
    std::array<std::optional<uint64_t>, 2> first;
    for (int i = 0; i < 2; ++i) {
      RT_ASSIGN_OR_RETURN(first[i], internal::FirstWalSeq(*files_.wal[i]));
    }
    const int older =
        first[0].has_value() && (!first[1].has_value() || *first[0] < *first[1])
            ? 0
            : 1;
    uint64_t replayed = 0;
    std::array<uint64_t, 2> ends{};  // where each file's records end
    internal::WalReplay last{};
    int last_file = -1;  // the file of the last record replayed
    bool from_older = false;
    for (const int i : {older, older ^ 1}) {
      RT_ASSIGN_OR_RETURN(
          const internal::WalReplay replay,
          internal::ReplayWal(
              *files_.wal[i], last_file < 0 ? sb_.wal_seq : last.last_seq,
              [&](uint64_t seq, std::string_view record)
                  ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
                    RT_ASSIGN_OR_RETURN(auto ops, DecodeOps(record, seq));
                    // A record the table could not have logged.
                    for (const Op& op : ops) {
                      if (!op.put) continue;
                      if (absl::Status s = CheckRecord(op.key, op.value);
                          !s.ok()) {
                        return absl::DataLossError(absl::StrCat(
                            "write-ahead log record ", seq, ": ",
                            s.message()));
                      }
                    }
                    return Apply(ops);
                  }));
      if (last_file < 0 || replay.records > 0) {
        if (replay.records > 0 && i == older && first[older ^ 1]) {
          from_older = true;
        }
        last = replay;
        last_file = i;
      }
      replayed += replay.records;
      ends[i] = replay.bytes;
    }
    recovered_records_ = replayed;
    applied_seq_ = last.last_seq;
    logged_seq_.store(applied_seq_, std::memory_order_release);
    durable_seq_.store(applied_seq_, std::memory_order_release);
    log_ = last_file;
    if (!options_.read_only) {
      // Each file is cut after its last whole record and synced: what
      // followed (a torn tail, records after a gap) must not come back
      // after the numbers past the last replayed record are given anew,
      // as it could where a cut was not synced. The other file than the
      // writers' holds nothing still needed unless the replay took records
      // from both: then the checkpoint below empties it, else it is
      // emptied here (the spare log file: CheckpointWrites).
      const bool checkpoint = journal.has_value() || from_older;
      for (int i = 0; i < 2; ++i) {
        const uint64_t keep = i == log_ || checkpoint ? ends[i] : 0;
        RT_RETURN_IF_ERROR(wal_[i].Resume(keep, applied_seq_ + 1));
      }
      if (checkpoint) {
        // The replayed writes are checkpointed at once, so that the next
        // open reads no journal and replays nothing (and no later
        // checkpoint empties a log file whose records the superblock does
        // not cover yet).
        RT_RETURN_IF_ERROR(CheckpointLocked(/*complete=*/true));
      } else if (replayed > 0) {
        // The replayed writes stay held, covered by the log's records: the
        // log continues after its last whole record, in its file.
        MutexLock log_lock(&log_mu_);
        sync_logs_ = {files_.wal[log_].get(), nullptr};
      } else {
        RT_RETURN_IF_ERROR(StartLog(log_, /*left_uncovered=*/false));
      }
    }
    recovery_ns_ = std::chrono::duration_cast<std::chrono::nanoseconds>(
                       std::chrono::steady_clock::now() - start)
                       .count();
    return absl::OkStatus();
  }

  mutable SharedMutex mu_;

 private:
  absl::Status CheckOpen() const ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    if (closed_) return absl::FailedPreconditionError("table is closed");
    return absl::OkStatus();
  }

  absl::Status CheckWritable() const ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    RT_RETURN_IF_ERROR(CheckOpen());
    if (options_.read_only) {
      return absl::FailedPreconditionError("table is open read-only");
    }
    return error_;
  }

  // Keeps the first failure of a write path: after it the table refuses
  // writes with that error, since the blocks and the stash copy may no
  // longer agree.
  absl::Status Fail(absl::Status s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (!s.ok() && error_.ok()) error_ = s;
    return s;
  }

  // Blocks needed to hold `records` records of `bytes` bytes at
  // (1 - epsilon) of their record space and of their record limit.
  uint64_t NeededBuckets(uint64_t bytes, uint64_t records) const {
    auto needed = [&](uint64_t amount, double per_block) {
      return static_cast<uint64_t>(std::ceil(
          static_cast<double>(amount) / ((1.0 - sb_.epsilon) * per_block)));
    };
    const uint64_t by_bytes = needed(bytes, static_cast<double>(payload_));
    if (block_records_ == 0) return by_bytes;
    return std::max(by_bytes, needed(records, block_records_));
  }

  // The record of `key` in the write buffer or the stash, or null: the
  // records a read finds in memory, the buffer's first (a buffered put is
  // newer than what its block or stash list holds).
  Record* FindInMemory(uint64_t b, std::string_view key, uint64_t h)
      ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    if (Record* r = buffer_.Find(b, key, h)) return r;
    return stash_.Find(b, key, h);
  }

  void PrefetchBucket(uint64_t b) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    buffer_.Prefetch(b);
    // Past the held blocks' budget most puts join the write buffer.
    if (buffer_limit_ > 0) buffer_.PrefetchList(b);
    stash_.Prefetch(b);
    blocks_->PrefetchHeld(b + kHeaderBlocks);
    cache_.Prefetch(b);
  }

  // Whether bucket b's block is held or cached: a put edits it with no read.
  bool BlockInMemory(uint64_t b) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return blocks_->Held(b + kHeaderBlocks) != nullptr || cache_.Contains(b);
  }

  // Whether a put edits bucket b's block rather than wait in the write
  // buffer: when the block is held (it is written anyway), or cached while
  // the whole table fits in the held blocks' budget (then the checkpoints
  // come seldom enough for many puts to land on each block first). In a
  // larger table a clean block made dirty for one put would cost two block
  // writes for it.
  bool EditsInPlace(uint64_t b) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (blocks_->Held(b + kHeaderBlocks) != nullptr) return true;
    return mapping_.num_buckets() * block_size() <= HeldLimit() &&
           cache_.Contains(b);
  }

  // The held blocks' budget: past it, a checkpoint starts.
  uint64_t HeldLimit() const {
    return std::max(options_.checkpoint_bytes, options_.block_cache_bytes);
  }

  // The memory the write buffer takes: its records' encoded bytes (about
  // each record's heap block) and, for each, its entry and bucket in the
  // buffer's hash map.
  uint64_t BufferBytes() const ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    constexpr size_t kPerRecord =
        sizeof(internal::Stash::Entry) + sizeof(uint64_t);
    static_assert(kPerRecord == 32,
                  "Options::write_buffer_bytes and docs/table.md say 32");
    return buffer_.bytes() + buffer_.records() * kPerRecord;
  }

  // While the write buffer takes more than Options::write_buffer_bytes,
  // drains the buffered puts of one bucket after another into their
  // blocks. The buckets are taken in a sweep from where the last drain
  // stopped, so that each gathers puts for as long as a sweep takes and
  // one block read and write applies them all.
  absl::Status MaybeDrainBuffer() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    RT_RETURN_IF_ERROR(DrainRebuilt());
    while (BufferBytes() > buffer_limit_) {
      RT_RETURN_IF_ERROR(DrainNextBucket());
    }
    return Fail(MaybeRewriteBufferCopy());
  }

  // Applies the buffered puts of buckets a grow or shrink rebuilt, the
  // latest first: their blocks are in memory, so the puts cost no read, and
  // no write besides the one the distribute made. A drain may grow the
  // table, which rebuilds more buckets; past kRebuiltDrainsPerWrite in one
  // write, the rest wait for the next writes (in a growing table with a
  // full buffer the chain would otherwise drain most of the buffer inside
  // one write).
  absl::Status DrainRebuilt() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    while (!rebuilt_.empty() && rebuilt_drains_left_ > 0) {
      const uint64_t b = rebuilt_.back();
      rebuilt_.pop_back();
      if (b < mapping_.num_buckets() && buffer_.ListOf(b) != nullptr &&
          BlockInMemory(b)) {
        --rebuilt_drains_left_;
        ++logical_.distribute_drains;
        RT_RETURN_IF_ERROR(DrainBucket(b));
      }
    }
    return absl::OkStatus();
  }

  // Applies the buffered puts of the next bucket from the drain cursor on
  // that has any. REQUIRES: the buffer is not empty.
  absl::Status DrainNextBucket() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const uint64_t b = NextBufferedBucket(drain_cursor_);
    drain_cursor_ = b + 1;
    RT_RETURN_IF_ERROR(DrainBucket(b));
    // The next drain's records, far apart in the heap, load meanwhile.
    if (buffer_.records() > 0) {
      buffer_.PrefetchRecords(NextBufferedBucket(drain_cursor_));
    }
    return absl::OkStatus();
  }

  // The first bucket from `from` on (in a cycle over the m buckets) with
  // buffered puts. REQUIRES: the buffer is not empty.
  uint64_t NextBufferedBucket(uint64_t from) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    const uint64_t m = mapping_.num_buckets();
    uint64_t b = from % m;
    while (buffer_.ListOf(b) == nullptr) b = (b + 1) % m;
    return b;
  }

  // Applies every buffered put of bucket b to its block.
  absl::Status DrainBucket(uint64_t b) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    ++logical_.buffer_drains;
    internal::Stash::Taken taken = buffer_.Take(b);
    for (internal::Stash::Entry& e : taken) {
      Record& r = e.record;
      RT_RETURN_IF_ERROR(Fail(buffer_log_.AppendRemove(r.key())));
      RT_RETURN_IF_ERROR(Fail(PutInBlock(r.key(), r.value(), e.hash, &r)));
      internal::KillPoint("buffer: put drained");
    }
    return absl::OkStatus();
  }

  absl::Status AddToStash(uint64_t b, uint64_t h, Record record)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    RT_RETURN_IF_ERROR(stash_log_.AppendPut(record.key(), record.value()));
    stash_.Add(b, h, std::move(record));
    internal::KillPoint("stash: entry logged");
    return MaybeRewriteStashCopy();
  }

  absl::Status RemoveFromStash(uint64_t b, std::string_view key)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    absl::Status s;
    stash_.Filter(b, [&](const Record& r) {
      if (r.key() != key) return true;
      s = stash_log_.AppendRemove(key);
      if (!s.ok()) return true;
      data_bytes_ -= internal::EncodedSize(r.key(), r.value());
      --record_count_;
      return false;
    });
    RT_RETURN_IF_ERROR(s);
    return MaybeRewriteStashCopy();
  }

  // Moves the stash records of bucket b that fit into its block.
  absl::Status RefillFromStash(internal::EncodedBlock& block, uint64_t b)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    absl::Status s;
    stash_.Filter(b, [&](const Record& r) {
      if (!s.ok()) return true;
      if (!block.Append(r.key(), r.value(), internal::TagOf(Hash(r.key())))) {
        return true;
      }
      s = stash_log_.AppendRemove(r.key());
      internal::KillPoint("stash: entry logged");
      return false;
    });
    RT_RETURN_IF_ERROR(s);
    return MaybeRewriteStashCopy();
  }

  absl::Status MaybeRewriteStashCopy() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (!WantsRewrite(stash_, stash_log_)) return absl::OkStatus();
    return RewriteStashCopy();
  }

  absl::Status RewriteStashCopy() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    RT_RETURN_IF_ERROR(RewriteCopy(stash_, stash_log_));
    internal::KillPoint("stash: copy rewritten");
    return absl::OkStatus();
  }

  absl::Status MaybeRewriteBufferCopy() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (!WantsRewrite(buffer_, buffer_log_)) return absl::OkStatus();
    RT_RETURN_IF_ERROR(RewriteCopy(buffer_, buffer_log_));
    internal::KillPoint("buffer: copy rewritten");
    return absl::OkStatus();
  }

  // Whether `copy` has grown well past the entries of `records`.
  static bool WantsRewrite(const internal::Stash& records,
                           const internal::StashLog& copy) {
    // An entry is its record's bytes and a kind byte; the encoded sizes
    // (with their 4-byte slots) and one byte a record overcount that a
    // little.
    return copy.WantsRewrite(records.bytes() + records.records());
  }

  // Writes the live records of `records` as the whole of `copy`.
  static absl::Status RewriteCopy(const internal::Stash& records,
                                  internal::StashLog& copy) {
    std::vector<std::pair<std::string_view, std::string_view>> live;
    live.reserve(records.records());
    records.ForEachList([&](uint64_t, const internal::Stash::List& list) {
      for (const internal::Stash::Entry& e : list) {
        live.emplace_back(e.record.key(), e.record.value());
      }
    });
    return copy.Rewrite(live);
  }

  // Bucket b's block if it is held since the last checkpoint (a read it
  // answers counts in held_hits), else null.
  std::byte* FindHeld(uint64_t b) {
    std::byte* held = blocks_->Held(b + kHeaderBlocks);
    if (held != nullptr) held_hits_.fetch_add(1, std::memory_order_relaxed);
    return held;
  }

  // Bucket b's block, to edit in place: a held block where it lies; any
  // other is read (from the cache, or from the file and verified) into a
  // newly held slot and dropped from the cache, and *fresh (if given) is
  // set. The edit is the write: the block stays held until the next
  // checkpoint, as a stored one would (Unhold undoes a fresh hold that
  // changed nothing).
  absl::StatusOr<internal::EncodedBlock> EditBlock(uint64_t b,
                                                   bool* fresh = nullptr)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    NoteEdited(b);
    if (std::byte* held = FindHeld(b)) return BlockView({held, block_size()});
    if (fresh != nullptr) *fresh = true;
    const uint64_t block = b + kHeaderBlocks;
    std::span<std::byte> slot;
    cache_.Visit(b, [&](std::span<const std::byte> cached) {
      slot = blocks_->Hold(block);
      std::memcpy(slot.data(), cached.data(), block_size());
    });
    if (!slot.empty()) {
      cache_.Drop(b);
      return BlockView(slot);
    }
    // Read before holding: a held block would answer its own read.
    RT_RETURN_IF_ERROR(blocks_->Read(block, work_.span()));
    RT_RETURN_IF_ERROR(internal::VerifyBlock(work_.span(), b));
    slot = blocks_->Hold(block);
    std::memcpy(slot.data(), work_.data(), block_size());
    return BlockView(slot);
  }

  // Held blocks have tag filters as cached ones do (BlockCache), kept by
  // bucket: every way of changing a held block's bytes (EditBlock,
  // StoreBlock, a distribute's rebuilt blocks) first sets its filter to
  // pass every tag, and the end of Apply (a write, or a record replayed)
  // and of Flush gives the blocks they changed their filters again, so a
  // read, which runs while no write does, finds a filter that passes every
  // tag of the block. (One that fails midway leaves its blocks' filters
  // passing every tag: slower reads, never a wrong one.) A block is listed
  // once for all the edits of a write.
  void NoteEdited(uint64_t b) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (b >= held_filter_.size()) {
      const uint64_t size = std::max<uint64_t>(b + 1, 2 * held_filter_.size());
      held_filter_.resize(size, internal::TagFilter::All());
      listed_.resize(size, false);
    }
    held_filter_[b] = internal::TagFilter::All();
    if (!listed_[b]) {
      listed_[b] = true;
      edited_.push_back(b);
    }
  }
  void RefreshHeldFilters() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    for (const uint64_t b : edited_) {
      listed_[b] = false;
      if (const std::byte* held = blocks_->Held(b + kHeaderBlocks)) {
        held_filter_[b] = internal::TagFilterOf({held, block_size()});
      }
    }
    edited_.clear();
  }
  bool HeldMayContain(uint64_t b, uint16_t tag) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return b >= held_filter_.size() || held_filter_[b].MayContain(tag);
  }

  // Returns a block freshly held by EditBlock, unchanged, to the cache.
  void Unhold(uint64_t b) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const uint64_t block = b + kHeaderBlocks;
    cache_.Insert(b, {blocks_->Held(block), block_size()});
    blocks_->Release(block);
  }

  // The blocks of `buckets` (distinct) into `out`, as LoadBlock does each,
  // but with the ones only the file holds read in one batch (one
  // submission for all of them).
  absl::Status ReadBlocks(std::span<const uint64_t> buckets,
                          std::span<io::AlignedBuffer> out)
      ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    std::vector<uint64_t> missed;
    std::vector<io::ReadRequest> reads;
    for (size_t i = 0; i < buckets.size(); ++i) {
      if (cache_.Lookup(buckets[i], out[i].span())) continue;
      if (const std::byte* held = FindHeld(buckets[i])) {
        std::memcpy(out[i].data(), held, block_size());
        continue;
      }
      missed.push_back(buckets[i]);
      reads.push_back({buckets[i] + kHeaderBlocks, out[i].span()});
    }
    RT_RETURN_IF_ERROR(blocks_->ReadBatch(reads));
    for (size_t r = 0; r < missed.size(); ++r) {
      RT_RETURN_IF_ERROR(internal::VerifyBlock(reads[r].buffer, missed[r]));
      cache_.Insert(missed[r], reads[r].buffer);
    }
    return absl::OkStatus();
  }

  // Bucket b's block into `out`: from the cache, or held, or from the
  // device (then verified and cached). Cached blocks were verified when
  // read, so they are not checked again.
  absl::Status LoadBlock(uint64_t b, std::span<std::byte> out) {
    if (cache_.Lookup(b, out)) return absl::OkStatus();
    return LoadFromDevice(b, out);
  }

  // A block held since the last checkpoint was made here and is sealed
  // only at the checkpoint, so it is copied without a check (and not
  // cached: the held copy serves its reads); one from the file is verified
  // and cached.
  absl::Status LoadFromDevice(uint64_t b, std::span<std::byte> out) {
    if (const std::byte* held = FindHeld(b)) {
      std::memcpy(out.data(), held, out.size());
      return absl::OkStatus();
    }
    RT_RETURN_IF_ERROR(blocks_->Read(b + kHeaderBlocks, out));
    RT_RETURN_IF_ERROR(internal::VerifyBlock(out, b));
    cache_.Insert(b, out);
    return absl::OkStatus();
  }

  // An edited block of bucket b: held until the next checkpoint, which
  // moves it to the cache. Until then the cache holds no copy of it, so
  // every block is in memory once.
  absl::Status StoreBlock(uint64_t b, std::span<std::byte> bytes) {
    NoteEdited(b);
    cache_.Drop(b);
    return blocks_->Write(b + kHeaderBlocks, bytes);
  }

  // distribute: every record of the `sources` blocks (read into `bytes`) and
  // of their stash lists goes to its bucket under the current mapping; each
  // bucket of `rebuilt` is written anew, overflowing into its stash list.
  absl::Status Redistribute(const std::vector<uint64_t>& sources,
                            std::span<io::AlignedBuffer> bytes,
                            const std::vector<uint64_t>& rebuilt)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    // Each rebuilt block is made where it is held (the sources were read
    // into `bytes` before): the edit is the write, as in EditBlock.
    auto& slot = step_slot_;  // bucket -> index in blocks
    auto& blocks = step_blocks_;
    slot.clear();
    blocks.clear();
    for (size_t i = 0; i < rebuilt.size(); ++i) {
      NoteEdited(rebuilt[i]);
      cache_.Drop(rebuilt[i]);
      blocks.push_back(BlockView(blocks_->Hold(rebuilt[i] + kHeaderBlocks)));
      blocks.back().Init(rebuilt[i]);
      slot[rebuilt[i]] = i;
    }
    // Buffered puts of the sources follow their keys to their new buckets
    // (the buffer's copy stores no bucket, so nothing is logged).
    // Their records load meanwhile: the rebuilt blocks take them next
    // (DrainRebuilt).
    for (const uint64_t b : sources) {
      for (internal::Stash::Entry& e : buffer_.Take(b)) {
        e.record.Prefetch();
        buffer_.Add(mapping_.FindBucket(e.hash), e.hash, std::move(e.record));
      }
    }
    // Records leaving the stash are logged as removals, records entering it
    // as puts; a record that stays in the stash needs no entry.
    auto& from_stash = step_stash_;
    from_stash.clear();
    for (const uint64_t b : sources) {
      for (internal::Stash::Entry& e : stash_.Take(b)) {
        from_stash.push_back(std::move(e));
      }
    }
    // `owned` is the stashed record itself, or null for a record of a block;
    // h is the key's hash.
    auto place = [&](std::string_view key, std::string_view value, uint64_t h,
                     Record* owned) -> absl::Status {
      const uint64_t b = mapping_.FindBucket(h);
      auto it = slot.find(b);
      if (it == slot.end()) {
        return absl::InternalError(
            absl::StrCat("distribute: a record moved to bucket ", b,
                         ", outside the touched buckets"));
      }
      if (blocks[it->second].Append(key, value, internal::TagOf(h))) {
        if (owned != nullptr) RT_RETURN_IF_ERROR(stash_log_.AppendRemove(key));
        return absl::OkStatus();
      }
      if (owned == nullptr)
        RT_RETURN_IF_ERROR(stash_log_.AppendPut(key, value));
      stash_.Add(b, h,
                 owned != nullptr
                     ? std::move(*owned)
                     : Record(key, value));
      return absl::OkStatus();
    };
    // Block records first, so that stashed records fill what room is left.
    absl::Status s;
    for (io::AlignedBuffer& source : bytes) {
      internal::EncodedBlock(source.span())
          .ForEach([&](std::string_view k, std::string_view v) {
            if (s.ok()) s = place(k, v, Hash(k), nullptr);
          });
      RT_RETURN_IF_ERROR(s);
    }
    for (internal::Stash::Entry& e : from_stash) {
      Record& r = e.record;
      // place() reads the views before it may move r into the stash.
      RT_RETURN_IF_ERROR(place(r.key(), r.value(), e.hash, &r));
    }
    for (size_t i = 0; i < rebuilt.size(); ++i) {
      internal::KillPoint("distribute: block written");
      if (buffer_.ListOf(rebuilt[i]) != nullptr) {
        rebuilt_.push_back(rebuilt[i]);
      }
    }
    return MaybeRewriteStashCopy();
  }

  // The first n of `buffers`, which gains unzeroed blocks as needed. A grow
  // or shrink step touches about 2 s0 blocks; allocating (and zeroing) them
  // anew at every step cost as much as moving the records.
  std::span<io::AlignedBuffer> StepBuffers(
      std::vector<io::AlignedBuffer>& buffers, size_t n) {
    while (buffers.size() < n) {
      buffers.emplace_back(block_size(), 4096, /*zeroed=*/false);
    }
    return std::span<io::AlignedBuffer>(buffers).first(n);
  }

  // Reads the blocks of `buckets` into the first of step_in_.
  absl::StatusOr<std::span<io::AlignedBuffer>> LoadBlocks(
      const std::vector<uint64_t>& buckets) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    std::span<io::AlignedBuffer> bytes = StepBuffers(step_in_, buckets.size());
    RT_RETURN_IF_ERROR(ReadBlocks(buckets, bytes));
    return bytes;
  }

  // new_bucket() and distribute: z block reads, z + 1 block writes.
  absl::Status Grow() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const uint64_t m = mapping_.num_buckets();
    RT_RETURN_IF_ERROR(blocks_->Resize(kHeaderBlocks + m + 1));
    RT_ASSIGN_OR_RETURN(const mapping::BucketChange change,
                        mapping_.NewBucket());
    internal::KillPoint("grow: bucket added");
    RT_ASSIGN_OR_RETURN(auto bytes, LoadBlocks(change.sources));
    const std::vector<uint64_t> touched = change.Touched();
    RT_RETURN_IF_ERROR(Redistribute(change.sources, bytes, touched));
    logical_.grow_reads += change.sources.size();
    logical_.grow_writes += touched.size();
    ++logical_.grows;
    return absl::OkStatus();
  }

  // free_bucket() and distribute backwards: z + 1 reads, z writes.
  absl::Status Shrink() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    RT_ASSIGN_OR_RETURN(const mapping::BucketChange change,
                        mapping_.FreeBucket());
    const std::vector<uint64_t> touched = change.Touched();
    RT_ASSIGN_OR_RETURN(auto bytes, LoadBlocks(touched));
    RT_RETURN_IF_ERROR(Redistribute(touched, bytes, change.sources));
    internal::KillPoint("shrink: blocks rebuilt");
    cache_.Drop(change.target);
    RT_RETURN_IF_ERROR(blocks_->Resize(kHeaderBlocks + mapping_.num_buckets()));
    logical_.shrink_reads += touched.size();
    logical_.shrink_writes += change.sources.size();
    ++logical_.shrinks;
    return absl::OkStatus();
  }

  // The block file and the stash copy: each file, the deferred device in
  // front of it, and its number in journal entries.
  struct Layer {
    uint32_t id;
    io::BlockDevice* file;
    internal::DeferredDevice* seen;
  };
  std::array<Layer, 3> Layers() {
    return {{{kBlocksFileId, files_.blocks.get(), blocks_.get()},
             {kStashFileId, files_.stash.get(), stash_device_.get()},
             {kBufferFileId, files_.buffer.get(), buffer_device_.get()}}};
  }

  // Waits for the last checkpoint's writes (journal and in place), if any,
  // and frees their images: returns the writes' status.
  absl::Status FinishCheckpointWrites() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (checkpoint_writes_ == nullptr) return absl::OkStatus();
    if (checkpoint_writes_->thread.joinable()) {
      checkpoint_writes_->thread.join();
    }
    const absl::Status s = checkpoint_writes_->status;
    checkpoint_writes_.reset();
    for (const Layer& layer : Layers()) layer.seen->ReleaseFrozen();
    return s;
  }

  // Starts a checkpoint when the log passes Options::checkpoint_bytes, or
  // the held blocks pass that or the block cache's size, whichever is
  // larger (Options::checkpoint_bytes says why); a quarter later if the
  // last checkpoint's writes are still running then.
  absl::Status MaybeCheckpoint() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    // The last checkpoint's writes, once done, free their images.
    if (checkpoint_writes_ != nullptr && checkpoint_writes_->Done()) {
      RT_RETURN_IF_ERROR(Fail(FinishCheckpointWrites()));
    }
    const uint64_t held = blocks_->held_bytes() + stash_device_->held_bytes() +
                          buffer_device_->held_bytes();
    const uint64_t logged = wal_[log_].bytes();
    if (held < HeldLimit() && logged < options_.checkpoint_bytes) {
      return absl::OkStatus();
    }
    // While the last checkpoint's writes still run, the writers go on
    // rather than wait for them, up to a quarter past either limit.
    if (checkpoint_writes_ != nullptr && held < HeldLimit() / 4 * 5 &&
        logged < options_.checkpoint_bytes / 4 * 5) {
      return absl::OkStatus();
    }
    return Fail(CheckpointLocked(/*complete=*/false));
  }

  // The held blocks of the block file (sealed by the thread first), of the
  // stash copy and of the write buffer's, and the next superblock, first
  // into the journal, synced: the checkpoint's commit point, after which
  // Open lays the journal over the files (its superblock is the table's).
  // Then the images in place, their write-back started but not waited
  // for. Both run on a thread of their own (CheckpointWrites) while the
  // writers go on, logging to the other log file: the thread empties the
  // one they leave once the journal is durable, and the next checkpoint
  // waits for the thread first. The checkpoint is complete
  // (CompleteCheckpoint: the files synced, the superblock in place) at
  // once when `complete` (the writers then stay in their log file,
  // emptied), else at the next checkpoint, Sync or Close; until then the
  // journal is its only durable copy. A crash before the journal is
  // complete leaves the last checkpoint and both log files.
  absl::Status CheckpointLocked(bool complete)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    // The journal is about to be overwritten: the checkpoint it holds must
    // be in place first.
    RT_RETURN_IF_ERROR(CompleteCheckpoint(/*rewrite_journal=*/false));
    RT_RETURN_IF_ERROR(stash_log_.Flush());
    RT_RETURN_IF_ERROR(buffer_log_.Flush());
    Superblock next = sb_;
    next.num_buckets = mapping_.num_buckets();
    next.record_count = record_count_;
    next.data_bytes = data_bytes_;
    next.stash_epoch = stash_log_.epoch();
    next.stash_blocks = stash_log_.blocks();
    next.buffer_epoch = buffer_log_.epoch();
    next.buffer_blocks = buffer_log_.blocks();
    next.wal_seq = applied_seq_;
    ++next.sequence;

    auto job = std::make_unique<CheckpointWrites>();
    job->unsealed = blocks_.get();
    job->journal = files_.journal.get();
    job->sequence = next.sequence;
    std::vector<internal::JournalEntry>& entries = job->entries;
    // The held bucket blocks, clean once in place, go to the cache as they
    // are; the thread seals them before it writes them (the cache keeps
    // no checksum: its blocks are never verified again).
    std::vector<internal::BlockCache::Block> clean;
    clean.reserve(blocks_->held().size());
    for (auto& [block, bytes] : blocks_->held()) {
      // Superblock images held from a replayed journal are superseded.
      if (block < kHeaderBlocks) continue;
      entries.push_back({kBlocksFileId, block, bytes.span()});
      if (block - kHeaderBlocks < mapping_.num_buckets()) {
        clean.push_back({block - kHeaderBlocks, bytes.span()});
      }
    }
    cache_.InsertAll(clean);
    for (const auto& [block, bytes] : stash_device_->held()) {
      entries.push_back({kStashFileId, block, bytes.span()});
    }
    for (const auto& [block, bytes] : buffer_device_->held()) {
      entries.push_back({kBufferFileId, block, bytes.span()});
    }
    job->superblock = io::AlignedBuffer(block_size());
    internal::EncodeSuperblock(next, job->superblock.span());
    entries.push_back({kBlocksFileId, next.slot(), job->superblock.span()});

    // Each file grown to its new size here; the journal, then the images in
    // place, by the thread. Until it is done the deferred devices keep the
    // images, frozen, for reads.
    Pending pending;
    pending.superblock = next;
    for (const Layer& layer : Layers()) {
      const uint64_t size = layer.seen->num_blocks();
      pending.sizes[layer.id] = size;
      if (layer.file->num_blocks() < size) {
        RT_RETURN_IF_ERROR(layer.file->Resize(size));
      }
      job->files[layer.id] = layer.file;
    }
    for (size_t i = 0; i + 1 < entries.size(); ++i) {
      job->writes[entries[i].file].push_back(
          {entries[i].block, entries[i].bytes});
    }
    // The file the writers append to after this checkpoint; the other one
    // is emptied by the thread once the journal is durable.
    const int writers = complete ? log_ : log_ ^ 1;
    job->spare_log = files_.wal[writers ^ 1].get();
    if (!complete) {
      // The writers will come back to the file they leave at the next
      // checkpoint: the thread grows it again, after emptying it, to what
      // it took this time (at most Options::checkpoint_bytes), so that
      // they find its pages in memory rather than fault them in one by one.
      job->spare_log_blocks = std::min<uint64_t>(
          job->spare_log->num_blocks(),
          options_.checkpoint_bytes / block_size() + 1);
      RT_RETURN_IF_ERROR(StartLog(writers, /*left_uncovered=*/true));
    }
    // Once the journal is durable, the log file the writers left needs no
    // sync.
    job->journal_durable = [this] {
      MutexLock log_lock(&log_mu_);
      sync_logs_[1] = nullptr;
    };
    // What lies past the files' new ends stays until the checkpoint is
    // complete; the deferred devices read it as zeros meanwhile.
    for (const Layer& layer : Layers()) layer.seen->Freeze();
    checkpoint_writes_ = std::move(job);
    checkpoint_writes_->Start();
    pending_ = pending;
    sb_ = next;
    ++checkpoints_;
    if (!complete) return absl::OkStatus();
    RT_RETURN_IF_ERROR(CompleteCheckpoint(/*rewrite_journal=*/true));
    return StartLog(log_, /*left_uncovered=*/false);
  }

  // Empties log file `index` for the records after applied_seq_ and moves
  // the writers to it. `left_uncovered`: the file they leave holds records
  // that no durable checkpoint covers yet (the journal that will is being
  // written), so syncs cover it too until the journal is durable, and the
  // durable mark stays where the syncs left it. The file they move to
  // then holds nothing but zeros on disk (the spare log file:
  // CheckpointWrites), so that no power loss can bring older records back
  // at its start, before new ones with higher durable marks, and make
  // recovery take it for the older file.
  absl::Status StartLog(int index, bool left_uncovered)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const uint64_t durable = left_uncovered
                                 ? durable_seq_.load(std::memory_order_acquire)
                                 : applied_seq_;
    // The file the writers move to when they leave one uncovered is the
    // spare one, emptied and synced (then grown with zeros) by the last
    // checkpoint's thread or by recovery: nothing to cut.
    RT_RETURN_IF_ERROR(wal_[index].Start(applied_seq_ + 1, durable,
                                         /*zeroed=*/left_uncovered));
    MutexLock log_lock(&log_mu_);
    sync_logs_ = {files_.wal[index].get(),
                  left_uncovered ? files_.wal[log_].get() : nullptr};
    log_ = index;
    return absl::OkStatus();
  }

  // Completes the checkpoint written in place, if one is pending: the
  // files synced (their write-back began with the checkpoint, so little is
  // left to wait for), its superblock written in place and synced, then
  // the files cut to their new ends (only now: the older superblock needed
  // what lay past them). With `rewrite_journal` the journal is then
  // rewritten with the superblock alone, which frees its block images'
  // disk space and keeps a third copy of the newest superblock: if that
  // copy in the block file is damaged, Open falls back to the older one,
  // finds this journal newer, and lays the newest superblock over it again.
  absl::Status CompleteCheckpoint(bool rewrite_journal)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    RT_RETURN_IF_ERROR(FinishCheckpointWrites());
    if (!pending_) return absl::OkStatus();
    const Superblock done = pending_->superblock;
    for (const Layer& layer : Layers()) {
      RT_RETURN_IF_ERROR(layer.file->Sync());
    }
    io::AlignedBuffer superblock(block_size());
    internal::EncodeSuperblock(done, superblock.span());
    RT_RETURN_IF_ERROR(files_.blocks->Write(done.slot(), superblock.span()));
    RT_RETURN_IF_ERROR(files_.blocks->Sync());
    internal::KillPoint("checkpoint: superblock synced");
    for (const Layer& layer : Layers()) {
      const uint64_t size = pending_->sizes[layer.id];
      if (layer.file->num_blocks() > size) {
        RT_RETURN_IF_ERROR(layer.file->Resize(size));
      }
    }
    pending_.reset();
    if (!rewrite_journal) return absl::OkStatus();
    const internal::JournalEntry kept = {kBlocksFileId, done.slot(),
                                         superblock.span()};
    return internal::WriteJournal(*files_.journal, done.sequence, {&kept, 1});
  }

  // Held from before Open reads anything until Close has released the
  // files (and destroyed last): one writer or readers (TableLock).
  internal::TableLock table_lock_;
  const Options options_;
  const std::string path_;
  Superblock sb_ ABSL_GUARDED_BY(mu_);
  // The layout's fields that never change, read without the lock.
  const uint32_t block_size_;
  const uint32_t block_records_;
  const bool in_memory_;  // Options::backend is kMemory: no log
  const uint64_t hash_seed_;
  mapping::RoundMapping mapping_ ABSL_GUARDED_BY(mu_);
  Files files_;
  // The block file and the stash copy as the table sees them: written
  // blocks are held here until a checkpoint.
  std::unique_ptr<internal::DeferredDevice> blocks_;
  std::unique_ptr<internal::DeferredDevice> stash_device_;
  std::unique_ptr<internal::DeferredDevice> buffer_device_;
  // The log's two files (kWalFiles); the writers append to wal_[log_].
  std::array<internal::WalWriter, 2> wal_ ABSL_GUARDED_BY(mu_);
  int log_ ABSL_GUARDED_BY(mu_) = 0;
  internal::StashLog stash_log_ ABSL_GUARDED_BY(mu_);
  internal::StashLog buffer_log_ ABSL_GUARDED_BY(mu_);
  // Options::write_buffer_bytes; 0 in memory. Puts of keys whose block is
  // not in memory wait in buffer_ (by bucket, as the stash keeps its
  // records) until MaybeDrainBuffer applies them; buffer_log_ is its copy.
  const uint64_t buffer_limit_;
  internal::Stash buffer_ ABSL_GUARDED_BY(mu_);
  uint64_t drain_cursor_ ABSL_GUARDED_BY(mu_) = 0;
  // Buckets with buffered puts that a distribute rebuilt (DrainRebuilt).
  std::vector<uint64_t> rebuilt_ ABSL_GUARDED_BY(mu_);
  // By bucket, the tag filter of its block while held (NoteEdited), and
  // the buckets whose held blocks changed since the last refresh.
  std::vector<internal::TagFilter> held_filter_ ABSL_GUARDED_BY(mu_);
  std::vector<uint64_t> edited_ ABSL_GUARDED_BY(mu_);
  std::vector<bool> listed_ ABSL_GUARDED_BY(mu_);  // by bucket: in edited_
  // What DrainRebuilt may still drain in the current write: the buckets of
  // about four grows at s0 = 8.
  static constexpr int kRebuiltDrainsPerWrite = 64;
  int rebuilt_drains_left_ ABSL_GUARDED_BY(mu_) = 0;
  internal::BlockCache cache_;
  // A block read from the file before a Put or Delete edits it, and the
  // empty blocks of a new table.
  io::AlignedBuffer work_ ABSL_GUARDED_BY(mu_);
  // The blocks a grow or shrink step reads.
  std::vector<io::AlignedBuffer> step_in_ ABSL_GUARDED_BY(mu_);
  // Redistribute's scratch, kept from step to step: the rebuilt blocks,
  // each bucket's index among them, and the records taken from the stash.
  std::vector<internal::EncodedBlock> step_blocks_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<uint64_t, size_t> step_slot_ ABSL_GUARDED_BY(mu_);
  std::vector<internal::Stash::Entry> step_stash_ ABSL_GUARDED_BY(mu_);
  const size_t payload_;

  internal::Stash stash_ ABSL_GUARDED_BY(mu_);
  uint64_t record_count_ ABSL_GUARDED_BY(mu_);
  uint64_t data_bytes_ ABSL_GUARDED_BY(mu_);
  LogicalLedger logical_ ABSL_GUARDED_BY(mu_);
  // Gets run under the reader lock, so their count is atomic.
  std::atomic<uint64_t> logical_get_reads_{0};
  std::atomic<uint64_t> held_hits_{0};
  absl::Status error_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  std::string log_record_ ABSL_GUARDED_BY(mu_);    // reused by every write
  uint64_t applied_seq_ ABSL_GUARDED_BY(mu_) = 0;  // last log record applied
  // The last record whose log write completed: what a sync starting now
  // makes durable.
  std::atomic<uint64_t> logged_seq_{0};
  // The last record a sync of the log covered (or a recovery found, or
  // Close checkpointed): what group commit compares with, and the durable
  // mark of the records appended next (docs/format.md). Written under
  // sync_mu_, or before the table is shared.
  std::atomic<uint64_t> durable_seq_{0};
  // Group commit (SyncThrough). Lock order: mu_ before sync_mu_; mu_ is
  // never taken while holding sync_mu_.
  Mutex sync_mu_;
  absl::Status sync_error_ ABSL_GUARDED_BY(sync_mu_);
  // Set by Close, which releases the log.
  bool closed_for_sync_ ABSL_GUARDED_BY(sync_mu_) = false;
  // What a sync covers: the log file the writers append to, and the one
  // they left while the journal of the checkpoint that covers it is being
  // written (else null). Changed with the last logged record's number
  // fixed, so that a sync reads both together: by the writer (under mu_)
  // and the checkpoint's thread. Taken after mu_ and sync_mu_, and nothing
  // is taken under it.
  Mutex log_mu_;
  std::array<io::BlockDevice*, 2> sync_logs_ ABSL_GUARDED_BY(log_mu_){};
  // A checkpoint whose journal is synced and whose images were written in
  // place, not yet synced there (CheckpointLocked): its superblock, and
  // each file's size in blocks, by file id.
  struct Pending {
    Superblock superblock;
    std::array<uint64_t, 3> sizes{};
  };
  std::optional<Pending> pending_ ABSL_GUARDED_BY(mu_);
  // A checkpoint's writes, on a thread of their own: the bucket blocks
  // sealed, the journal, synced, then each file's images in place and their
  // write-back started. The images are the frozen blocks of the deferred
  // devices, unchanged but for the seal until FinishCheckpointWrites.
  struct CheckpointWrites {
    // The device whose frozen blocks the thread seals first.
    internal::DeferredDevice* unsealed = nullptr;
    io::BlockDevice* journal = nullptr;
    uint64_t sequence = 0;
    // The images, then the superblock.
    std::vector<internal::JournalEntry> entries;
    io::AlignedBuffer superblock;
    std::function<void()> journal_durable;  // called once it is
    // The log file the writers do not append to after this checkpoint (the
    // one they left, or after a complete checkpoint the other): its
    // records are covered once the journal is durable, and it is then
    // emptied and synced. So whenever no checkpoint's writes are running,
    // the writers' other file holds nothing but zeros on disk, ready for
    // the next one.
    io::BlockDevice* spare_log = nullptr;
    uint64_t spare_log_blocks = 0;  // its size (zeros) once emptied
    std::array<io::BlockDevice*, 3> files{};
    std::array<std::vector<io::WriteRequest>, 3> writes;
    std::thread thread;
    absl::Status status;  // written by the thread before `done`
    std::atomic<bool> done{false};
    // On a thread of their own, or here when no thread can be had.
    void Start() {
      try {
        thread = std::thread([this] { Run(); });
      } catch (const std::system_error&) {
        Run();
      }
    }
    void Run() {
      status = WriteAll();
      done.store(true, std::memory_order_release);
      done.notify_all();
    }
    absl::Status WriteAll() {
      unsealed->SealFrozen();
      RT_RETURN_IF_ERROR(internal::WriteJournal(*journal, sequence, entries));
      internal::KillPoint("checkpoint: journal synced");
      journal_durable();
      RT_RETURN_IF_ERROR(spare_log->Resize(0));
      RT_RETURN_IF_ERROR(spare_log->Sync());
      // Zeros after the synced cut: whatever a power loss leaves of them,
      // nothing older comes back.
      if (spare_log_blocks > 0) {
        RT_RETURN_IF_ERROR(spare_log->Resize(spare_log_blocks));
      }
      for (size_t id = 0; id < files.size(); ++id) {
        RT_RETURN_IF_ERROR(files[id]->WriteBatch(writes[id]));
        internal::KillPoint("checkpoint: written in place");
        RT_RETURN_IF_ERROR(files[id]->WriteBack());
      }
      return absl::OkStatus();
    }
    bool Done() const { return done.load(std::memory_order_acquire); }
    void Wait() const { done.wait(false, std::memory_order_acquire); }
  };
  std::unique_ptr<CheckpointWrites> checkpoint_writes_ ABSL_GUARDED_BY(mu_);
  uint64_t checkpoints_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t recovered_records_ ABSL_GUARDED_BY(mu_) = 0;
  bool recovered_journal_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t recovery_ns_ ABSL_GUARDED_BY(mu_) = 0;
};

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
  return impl_->Write({&op, 1}, options);
}
absl::Status Table::Delete(std::string_view key, const WriteOptions& options) {
  const Op op{false, key, {}};
  return impl_->Write({&op, 1}, options);
}
absl::Status Table::Sync() { return impl_->Sync(); }
absl::Status Table::Flush() { return impl_->Flush(); }
absl::Status Table::Checkpoint() { return impl_->Checkpoint(); }

absl::Status Table::Write(const WriteBatch& batch,
                          const WriteOptions& options) {
  std::vector<Op> ops;
  ops.reserve(batch.ops_.size());
  for (const WriteBatch::Op& op : batch.ops_) {
    ops.push_back({op.put, op.key, op.value});
  }
  return impl_->Write(ops, options);
}

std::vector<absl::StatusOr<std::string>> Table::MultiGet(
    std::span<const std::string_view> keys) {
  return impl_->MultiGet(keys);
}

namespace {

class TableIterator final : public Iterator {
 public:
  explicit TableIterator(Table::Impl* impl) : impl_(impl) { Load(); }

  bool Valid() const override { return pos_ < records_.size(); }
  void Next() override {
    if (++pos_ >= records_.size()) {
      ++bucket_;
      Load();
    }
  }
  std::string_view key() const override { return records_[pos_].key(); }
  std::string_view value() const override { return records_[pos_].value(); }
  absl::Status status() const override { return status_; }

 private:
  // Moves to the first non-empty bucket from bucket_ on.
  void Load() {
    pos_ = 0;
    while (true) {
      bool past_end = false;
      status_ = impl_->BucketRecords(bucket_, &records_, &past_end);
      if (!status_.ok() || past_end) {
        records_.clear();
        return;
      }
      if (!records_.empty()) return;
      ++bucket_;
    }
  }

  Table::Impl* impl_;
  uint64_t bucket_ = 0;
  std::vector<Record> records_;
  size_t pos_ = 0;
  absl::Status status_;
};

}  // namespace

std::unique_ptr<Iterator> Table::NewIterator() {
  return std::make_unique<TableIterator>(impl_.get());
}
absl::Status Table::Close() { return impl_->Close(); }
TableStats Table::GetStats() const { return impl_->GetStats(); }
absl::Status Table::Check() { return impl_->Check(); }
size_t Table::max_record_bytes() const {
  return MaxRecord(impl_->block_size());
}

namespace {

// The newest valid superblock of the table at `path`. The stored block size
// decides where copy 1 starts, so the file is opened with 512-byte blocks and
// each possible offset tried (superblocks fit in 512 bytes).
absl::StatusOr<Superblock> ReadSuperblock(const std::string& path,
                                          io::Backend backend) {
  io::DeviceOptions probe;
  probe.backend = backend;
  probe.block_size = 512;
  probe.create_if_missing = false;
  probe.read_only = true;
  RT_ASSIGN_OR_RETURN(auto device,
                      io::OpenBlockDevice(Join(path, kBlocksFile), probe));
  absl::StatusOr<Superblock> best =
      absl::DataLossError(absl::StrCat(path, ": no valid superblock"));
  io::AlignedBuffer buffer(512);
  for (uint32_t bs = 512; bs <= 65536; bs *= 2) {
    for (uint64_t slot = 0; slot < kHeaderBlocks; ++slot) {
      const uint64_t block = slot * (bs / 512);
      if (block >= device->num_blocks() || (slot == 0 && bs > 512)) continue;
      RT_RETURN_IF_ERROR(device->Read(block, buffer.span()));
      auto decoded = internal::DecodeSuperblock(buffer.span());
      // Copy 0 is at offset 0 whatever the block size; copy 1 only counts
      // where its recorded block size puts it.
      if (!decoded.ok() || (slot == 1 && decoded->block_size != bs)) continue;
      if (!best.ok() || decoded->sequence > best->sequence) best = decoded;
    }
  }
  return best;
}

// Writes a complete journal's images in place and syncs them, the
// superblock's last: its checkpoint was cut short, or not yet completed in
// place (Table::Impl::CheckpointLocked), and the log no longer holds the
// writes it covers, so it must be in place before anything may overwrite
// the journal. A crash meanwhile leaves the journal to be applied again.
absl::Status ApplyJournal(const internal::Journal& journal, Files& files) {
  for (const bool superblocks : {false, true}) {
    for (const internal::JournalImage& image : journal.images) {
      const bool is_superblock =
          image.file == kBlocksFileId && image.block < kHeaderBlocks;
      if (is_superblock != superblocks) continue;
      io::BlockDevice& file = files.ById(image.file);
      if (image.block >= file.num_blocks()) {
        RT_RETURN_IF_ERROR(file.Resize(image.block + 1));
      }
      RT_RETURN_IF_ERROR(file.Write(image.block, image.bytes.span()));
    }
    if (!superblocks) {
      RT_RETURN_IF_ERROR(files.stash->Sync());
      RT_RETURN_IF_ERROR(files.buffer->Sync());
    }
    RT_RETURN_IF_ERROR(files.blocks->Sync());
  }
  return absl::OkStatus();
}

// A new table's s0 empty bucket blocks, sealed, written straight to its
// block file (not yet published, so nothing needs the journal) a run at a
// time: creating a table takes memory for one run whatever s0 and the
// block size.
absl::Status FormatBuckets(io::BlockDevice& file, uint64_t buckets) {
  const uint32_t bs = file.block_size();
  RT_RETURN_IF_ERROR(file.Resize(kHeaderBlocks + buckets));
  constexpr uint64_t kRun = 256;
  io::AlignedBuffer run(kRun * bs);
  for (uint64_t b = 0; b < buckets; b += kRun) {
    const uint64_t n = std::min(kRun, buckets - b);
    for (uint64_t i = 0; i < n; ++i) {
      internal::EncodedBlock block(run.span().subspan(i * bs, bs));
      block.Init(b + i);
      block.Seal();
    }
    RT_RETURN_IF_ERROR(
        file.Write(kHeaderBlocks + b, run.span().subspan(0, n * bs)));
  }
  return absl::OkStatus();
}

// This build reads exactly one format version.
absl::Status CheckFormatVersion(const std::string& path, const Superblock& sb) {
  if (sb.format_version == internal::kFormatVersion) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat(path, " has format version ", sb.format_version,
                   "; this build reads version ", internal::kFormatVersion));
}

}  // namespace

absl::StatusOr<Options> Table::ReadLayout(const std::string& path) {
  if (access(Join(path, kBlocksFile).c_str(), F_OK) != 0) {
    return absl::NotFoundError(absl::StrCat("no table at ", path));
  }
  RT_ASSIGN_OR_RETURN(const Superblock sb,
                      ReadSuperblock(path, io::Backend::kPosix));
  RT_RETURN_IF_ERROR(CheckFormatVersion(path, sb));
  Options o;
  o.block_size = sb.block_size;
  o.block_records = sb.block_records;
  o.s0 = sb.s0;
  o.epsilon = sb.epsilon;
  o.hash_seed = sb.hash_seed;
  return o;
}

absl::StatusOr<std::unique_ptr<Table>> Table::Open(const Options& options,
                                                   const std::string& path) {
  RT_RETURN_IF_ERROR(CheckOptions(options));
  // An in-memory table has no directory: it is always new.
  const bool in_memory = options.backend == io::Backend::kMemory;
  internal::TableLock table_lock;
  bool exists = false;
  if (!in_memory) {
    struct stat st;
    if (stat(path.c_str(), &st) == 0) {
      if (!S_ISDIR(st.st_mode)) {
        return absl::InvalidArgumentError(
            absl::StrCat(path, " exists and is not a directory"));
      }
    } else if (errno != ENOENT) {
      return io::FileError(errno, "stat", path);
    } else if (!options.create_if_missing || options.read_only) {
      return absl::NotFoundError(absl::StrCat("no table at ", path));
    } else if (mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) {
      return io::FileError(errno, "mkdir", path);
    }
    // Before anything is read or changed: one writer, or readers.
    RT_ASSIGN_OR_RETURN(table_lock, internal::TableLock::Acquire(
                                  path, /*exclusive=*/!options.read_only));
    exists = internal::FileExists(path, kBlocksFile);
  }
  if (exists && options.error_if_exists) {
    return absl::AlreadyExistsError(absl::StrCat("table ", path, " exists"));
  }
  if (!exists && (!options.create_if_missing || options.read_only)) {
    return absl::NotFoundError(absl::StrCat("no table at ", path));
  }
  if (!in_memory && !exists) {
    RT_RETURN_IF_ERROR(internal::PrepareNewTable(
        path, kHeaderBlocks + options.s0, options.block_size));
  }

  io::DeviceOptions dev;
  dev.backend = options.backend;
  dev.block_size = options.block_size;
  dev.direct_io = options.direct_io;
  dev.create_if_missing = !exists;
  dev.read_only = options.read_only;

  Superblock sb;
  if (exists) {
    RT_ASSIGN_OR_RETURN(sb, ReadSuperblock(path, options.backend));
    RT_RETURN_IF_ERROR(CheckFormatVersion(path, sb));
    auto mismatch = [&](const char* what, auto stored, auto given) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, " was created with ", what, " = ", stored, ", not ", given));
    };
    if (sb.block_size != options.block_size) {
      return mismatch("block_size", sb.block_size, options.block_size);
    }
    if (sb.block_records != options.block_records) {
      return mismatch("block_records", sb.block_records, options.block_records);
    }
    if (sb.s0 != options.s0) return mismatch("s0", sb.s0, options.s0);
    if (sb.epsilon != options.epsilon) {
      return mismatch("epsilon", sb.epsilon, options.epsilon);
    }
    if (sb.hash_seed != options.hash_seed) {
      return mismatch("hash_seed", sb.hash_seed, options.hash_seed);
    }
  } else {
    sb.block_size = options.block_size;
    sb.block_records = options.block_records;
    sb.s0 = options.s0;
    sb.epsilon = options.epsilon;
    sb.hash_seed = options.hash_seed;
    sb.num_buckets = options.s0;
  }

  auto open = [&](const char* file, const io::DeviceOptions& o) {
    return options.open_file ? options.open_file(Join(path, file), o)
                             : io::OpenBlockDevice(Join(path, file), o);
  };
  // The log and the journal may be missing (a table never written since a
  // clean close may have had them removed): a writer makes them anew, and
  // to a reader they are empty.
  auto open_or_empty = [&](const char* file, const io::DeviceOptions& o)
      -> absl::StatusOr<std::unique_ptr<io::BlockDevice>> {
    if (o.read_only && !internal::FileExists(path, file)) {
      return io::NewMemoryDevice(o.block_size);
    }
    io::DeviceOptions created = o;
    created.create_if_missing = true;
    return open(file, created);
  };
  Files files;
  RT_ASSIGN_OR_RETURN(files.blocks,
                      open(exists ? kBlocksFile : kNewBlocksFile, dev));
  RT_ASSIGN_OR_RETURN(files.stash, open(kStashFile, dev));
  RT_ASSIGN_OR_RETURN(files.buffer, open(kBufferFile, dev));
  // The log takes a small append per write: through a mapping, that is a
  // copy into the page cache rather than a system call, and it survives a
  // crash of the process all the same. A backend named in the options (or
  // direct I/O) is used for every file.
  io::DeviceOptions wal = dev;
  if (wal.backend == io::Backend::kAuto && !wal.direct_io) {
    wal.backend = io::Backend::kMmap;
  }
  for (int i = 0; i < 2; ++i) {
    RT_ASSIGN_OR_RETURN(files.wal[i], open_or_empty(kWalFiles[i], wal));
  }
  RT_ASSIGN_OR_RETURN(files.journal, open_or_empty(kJournalFile, dev));
  // A complete journal newer than the superblock is a checkpoint cut short
  // during its in-place writes: its superblock is the table's.
  std::optional<internal::Journal> journal;
  if (exists) {
    RT_ASSIGN_OR_RETURN(journal, internal::ReadJournal(*files.journal));
    if (journal && journal->sequence <= sb.sequence) journal.reset();
    if (journal) {
      bool found = false;
      for (const internal::JournalImage& image : journal->images) {
        if (image.file > kBufferFileId) {
          return absl::DataLossError(absl::StrCat(
              path, ": the checkpoint journal names an unknown file ",
              image.file));
        }
        if (image.file != kBlocksFileId || image.block >= kHeaderBlocks) {
          continue;
        }
        RT_ASSIGN_OR_RETURN(sb, internal::DecodeSuperblock(image.bytes.span()));
        found = true;
      }
      if (!found || sb.sequence != journal->sequence) {
        return absl::DataLossError(absl::StrCat(
            path, ": the checkpoint journal holds no matching superblock"));
      }
      // Every image lies within its file as the journal's superblock has
      // it, so that laying it in place can neither grow a file without
      // bound nor wrap its size around.
      RT_RETURN_IF_ERROR(CheckFormatVersion(path, sb));
      const std::array<uint64_t, 3> ends = {
          kHeaderBlocks + sb.num_buckets, sb.stash_blocks, sb.buffer_blocks};
      for (const internal::JournalImage& image : journal->images) {
        if (image.block >= ends[image.file]) {
          return absl::DataLossError(absl::StrCat(
              path, ": the checkpoint journal holds an image for block ",
              image.block, " of a file of ", ends[image.file], " blocks"));
        }
      }
      if (!options.read_only) RT_RETURN_IF_ERROR(ApplyJournal(*journal, files));
    }
  }
  // Nothing is sized by the bucket count before the block file is known
  // to hold its blocks (the file may be longer: a shrink not yet
  // checkpointed). A read-only open lays the journal's images in memory.
  uint64_t stored = files.blocks->num_blocks();
  if (journal && options.read_only) {
    for (const internal::JournalImage& image : journal->images) {
      if (image.file == kBlocksFileId) {
        stored = std::max(stored, image.block + 1);
      }
    }
  }
  if (exists && stored < kHeaderBlocks + sb.num_buckets) {
    return absl::DataLossError(absl::StrCat(
        path, ": block file holds ", stored, " blocks, ",
        kHeaderBlocks + sb.num_buckets, " expected"));
  }
  if (!exists) {
    RT_RETURN_IF_ERROR(FormatBuckets(*files.blocks, sb.num_buckets));
  }
  RT_ASSIGN_OR_RETURN(auto mapping,
                      mapping::RoundMapping::Create(sb.s0, sb.num_buckets));
  auto impl = std::make_unique<Impl>(options, path, sb, std::move(mapping),
                                     std::move(files), std::move(table_lock));
  {
    MutexLock lock(&impl->mu_);
    if (exists) {
      RT_RETURN_IF_ERROR(impl->Recover(journal));
    } else {
      RT_RETURN_IF_ERROR(impl->Format());
      internal::KillPoint("create: formatted");
      if (!in_memory) RT_RETURN_IF_ERROR(internal::PublishNewTable(path));
    }
  }
  return std::unique_ptr<Table>(new Table(std::move(impl)));
}

uint64_t SuggestedS0(uint32_t block_size, size_t key_bytes,
                     size_t value_bytes) {
  const double per_block =
      static_cast<double>(Payload(std::max<uint32_t>(block_size, 512))) /
      static_cast<double>(internal::EncodedSize(key_bytes, value_bytes));
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
