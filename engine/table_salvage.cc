// SalvageTable (roundtable/table.h): every record of a damaged table that
// can be read, copied into a new table. The table is opened read-only
// when it can be (its log replayed in memory), and read block by block
// through Table::Impl::Salvage; when it cannot (both superblocks, the
// stash copy, the write buffer's copy or the log damaged), its files are
// read one by one instead (SalvageFiles), each part taking what of it
// holds up. Nothing of the damaged table is written either way.
#include <algorithm>
#include <array>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "engine/batch_writer.h"
#include "engine/internal/block_format.h"
#include "engine/internal/block_map.h"
#include "engine/internal/deferred_device.h"
#include "engine/internal/journal.h"
#include "engine/internal/layout.h"
#include "engine/internal/log_record.h"
#include "engine/internal/stash_log.h"
#include "engine/internal/table_files.h"
#include "engine/internal/table_impl.h"
#include "engine/internal/value_ref.h"
#include "engine/internal/value_store.h"
#include "engine/internal/wal.h"
#include "io/base/status_macros.h"

namespace roundtable {
namespace {

using internal::Superblock;

// Whether `block` is a whole bucket block, of the bucket it names.
bool WholeBucketBlock(std::span<const std::byte> block) {
  return internal::VerifyBlock(block, internal::EncodedBlock(block).bucket())
      .ok();
}

// Without a valid superblock: the block size at which one of the first
// blocks after the superblocks is a whole bucket block; the other layout
// fields their defaults (the blocks are then read by scanning the file).
absl::StatusOr<Superblock> ProbeLayout(const std::string& path) {
  constexpr uint64_t kProbed = 8;
  for (uint32_t bs = io::kMinBlockSize; bs <= io::kMaxBlockSize; bs *= 2) {
    io::DeviceOptions d;
    d.backend = io::Backend::kPosix;
    d.block_size = bs;
    d.read_only = true;
    d.create_if_missing = false;
    RT_ASSIGN_OR_RETURN(
        auto device, io::OpenBlockDevice(
                         internal::TablePath(path, internal::kBlocksFile), d));
    io::AlignedBuffer block(bs);
    bool whole = false;
    for (uint64_t at = internal::kHeaderBlocks;
         at < std::min(device->num_blocks(),
                       internal::kHeaderBlocks + kProbed) &&
         !whole;
         ++at) {
      whole =
          device->Read(at, block.span()).ok() && WholeBucketBlock(block.span());
    }
    if (!whole) continue;
    Options defaults;
    defaults.block_size = bs;
    Superblock sb;
    internal::Layout::ForCreation(defaults).SetIn(sb);
    sb.num_buckets = device->num_blocks() - internal::kHeaderBlocks;
    return sb;
  }
  return absl::DataLossError(absl::StrCat(
      path,
      ": no valid superblock, and no block size at which the first blocks "
      "after the superblocks hold a whole bucket block"));
}

// A table's files read one by one, for SalvageFiles: every file read-only,
// the journaled ones behind a DeferredDevice that holds the images of a
// complete journal newer than the superblock (a checkpoint cut short while
// writing them in place).
struct RawTable {
  Superblock sb;
  bool layout_known = true;
  internal::TableFiles files;
  std::unique_ptr<internal::DeferredDevice> blocks, stash, buffer, spacemap,
      blockmap;
};

absl::StatusOr<RawTable> OpenRaw(const std::string& path) {
  RawTable raw;
  absl::StatusOr<Superblock> sb =
      Table::Impl::ReadSuperblock(path, io::Backend::kPosix);
  if (sb.ok()) {
    RT_RETURN_IF_ERROR(Table::Impl::CheckFormatVersion(path, *sb));
    raw.sb = *sb;
  } else if (absl::IsDataLoss(sb.status())) {
    RT_ASSIGN_OR_RETURN(raw.sb, ProbeLayout(path));
    raw.layout_known = false;
  } else {
    return sb.status();
  }
  Options o;
  o.read_only = true;
  o.create_if_missing = false;
  o.backend = io::Backend::kPosix;
  RT_ASSIGN_OR_RETURN(raw.files, internal::OpenTableFiles(
                                     path, o, raw.sb.block_size,
                                     /*exists=*/true, internal::FileOpener()));
  raw.blocks =
      std::make_unique<internal::DeferredDevice>(raw.files.blocks.get());
  raw.stash = std::make_unique<internal::DeferredDevice>(raw.files.stash.get());
  raw.buffer =
      std::make_unique<internal::DeferredDevice>(raw.files.buffer.get());
  raw.spacemap =
      std::make_unique<internal::DeferredDevice>(raw.files.spacemap.get());
  raw.blockmap =
      std::make_unique<internal::DeferredDevice>(raw.files.blockmap.get());
  RT_ASSIGN_OR_RETURN(std::optional<internal::Journal> journal,
                      internal::ReadJournal(*raw.files.journal));
  if (!journal || journal->sequence <= raw.sb.sequence) return raw;
  const std::array<internal::DeferredDevice*, internal::kJournaledFiles> seen =
      {raw.blocks.get(), raw.stash.get(), raw.buffer.get(), raw.spacemap.get(),
       raw.blockmap.get()};
  for (const internal::JournalImage& image : journal->images) {
    if (image.file >= internal::kJournaledFiles) continue;
    if (image.file == internal::kBlocksFileId &&
        image.block < internal::kHeaderBlocks) {
      absl::StatusOr<Superblock> newer =
          internal::DecodeSuperblock(image.bytes.span());
      if (newer.ok()) {
        raw.sb = *newer;
        raw.layout_known = true;
      }
      continue;
    }
    internal::DeferredDevice& file = *seen[image.file];
    if (image.block >= file.num_blocks()) {
      RT_RETURN_IF_ERROR(file.Resize(image.block + 1));
    }
    RT_RETURN_IF_ERROR(file.Write(image.block, image.bytes.span()));
  }
  return raw;
}

// The log records of both files that can be read, by number: each file
// read from its first whole record to the first that is not. Replayed over
// the checkpoint's blocks from the first, they leave the newest write of
// every key they name, whichever checkpoint the blocks are of.
absl::StatusOr<std::vector<std::pair<uint64_t, std::string>>> ReadLogs(
    internal::TableFiles& files) {
  std::vector<std::pair<uint64_t, std::string>> records;
  for (auto& wal : files.wal) {
    RT_ASSIGN_OR_RETURN(const std::optional<uint64_t> first,
                        internal::FirstWalSeq(*wal));
    if (!first) continue;
    // A record further on that a stop would have lost is DataLoss to
    // recovery; here what was read before it is kept all the same.
    internal::ReplayWal(*wal, *first - 1,
                        [&](uint64_t seq, std::string_view payload) {
                          records.emplace_back(seq, std::string(payload));
                          return absl::OkStatus();
                        })
        .IgnoreError();
  }
  std::sort(records.begin(), records.end());
  records.erase(std::unique(records.begin(), records.end(),
                            [](const auto& a, const auto& b) {
                              return a.first == b.first;
                            }),
                records.end());
  return records;
}

// Copies what the files of the table at `path` hold into `into`, in the
// order of their age so that the newest copy of a key wins: the stash
// copy, the blocks (a block's record over a stash entry that a damaged
// stash-copy block failed to remove), the write buffer's copy, the log.
absl::Status SalvageFiles(RawTable& raw, Table& into,
                          const RebuildProgress& progress,
                          SalvageReport* report) {
  report->opened = false;
  report->layout_known = raw.layout_known;
  const Superblock& sb = raw.sb;
  internal::ValueStore values(raw.files.values.get(), raw.spacemap.get(), sb);
  BatchWriter copy(&into, progress);
  std::string value;
  // A record as stored: a reference is read from the value file.
  auto put = [&](std::string_view key, std::string_view stored,
                 uint64_t bucket) -> absl::Status {
    if (internal::IsReference(stored)) {
      const absl::Status s =
          values.Read(internal::DecodeReference(stored), bucket, &value);
      if (!s.ok()) {
        ++report->lost_values;
        return absl::OkStatus();
      }
      stored = value;
    }
    return copy.Put(key, stored);
  };
  auto load_copy = [&](internal::DeferredDevice& device, uint64_t epoch,
                       uint64_t blocks, const char* what) -> absl::Status {
    if (!raw.layout_known) {
      RT_ASSIGN_OR_RETURN(std::tie(epoch, blocks),
                          internal::StashLog::Generation(device));
    }
    RT_ASSIGN_OR_RETURN(auto live,
                        internal::StashLog::Load(device, epoch, blocks, what,
                                                 &report->damaged_copy_blocks));
    for (const auto& [key, stored] : live) {
      // The write buffer's copy keeps a waiting delete as the tombstone.
      RT_RETURN_IF_ERROR(internal::IsTombstone(stored) ? copy.Delete(key)
                                                       : put(key, stored, 0));
    }
    return absl::OkStatus();
  };
  RT_RETURN_IF_ERROR(
      load_copy(*raw.stash, sb.stash_epoch, sb.stash_blocks, "stash copy"));
  uint64_t stored_read = copy.records();  // the stash's, then the blocks'

  auto take = [&](std::span<const std::byte> block, uint64_t b) {
    absl::Status status;
    internal::EncodedBlock(block).ForEach(
        [&](std::string_view key, std::string_view stored) {
          ++stored_read;
          if (status.ok()) status = put(key, stored, b);
        });
    return status;
  };
  io::AlignedBuffer block(sb.block_size);
  // The bucket blocks where the block map places them (before format
  // version 10, bucket b at block b + 2)...
  internal::BlockMap places(raw.blocks.get(), raw.blockmap.get());
  const bool stored_map = sb.format_version >= internal::kBlockMapVersion;
  const uint64_t file_buckets =
      raw.blocks->num_blocks() -
      std::min<uint64_t>(raw.blocks->num_blocks(), internal::kHeaderBlocks);
  const uint64_t m =
      stored_map ? sb.num_buckets : std::min(sb.num_buckets, file_buckets);
  if (raw.layout_known && places.Load(m, stored_map).ok()) {
    for (uint64_t b = 0; b < m; ++b) {
      if (!places.Read(internal::kHeaderBlocks + b, block.span()).ok() ||
          !internal::VerifyBlock(block.span(), b).ok()) {
        ++report->damaged_blocks;
        continue;
      }
      RT_RETURN_IF_ERROR(take(block.span(), b));
    }
  } else {
    // ... or, with no map to read, the newest whole image of each bucket
    // the file holds (a block rewritten by a checkpoint leaves its older
    // image where it was), oldest first, so that a record's newest copy
    // is put last.
    absl::flat_hash_map<uint64_t, std::pair<uint32_t, uint64_t>> newest;
    for (uint64_t at = internal::kHeaderBlocks; at < raw.blocks->num_blocks();
         ++at) {
      if (!raw.blocks->Read(at, block.span()).ok() ||
          !WholeBucketBlock(block.span())) {
        continue;
      }
      const internal::EncodedBlock image(block.span());
      const uint64_t b = image.bucket();
      if (raw.layout_known && b >= m) continue;
      auto [it, added] = newest.try_emplace(b, image.checkpoint(), at);
      if (!added && it->second.first < image.checkpoint()) {
        it->second = {image.checkpoint(), at};
      }
    }
    if (raw.layout_known) report->damaged_blocks = m - newest.size();
    std::vector<std::pair<uint32_t, uint64_t>> order;  // (stamp, place)
    for (const auto& [b, image] : newest) order.push_back(image);
    std::sort(order.begin(), order.end());
    for (const auto& [stamp, at] : order) {
      RT_RETURN_IF_ERROR(raw.blocks->Read(at, block.span()));
      RT_RETURN_IF_ERROR(
          take(block.span(), internal::EncodedBlock(block.span()).bucket()));
    }
  }
  RT_RETURN_IF_ERROR(load_copy(*raw.buffer, sb.buffer_epoch, sb.buffer_blocks,
                               "write buffer's copy"));
  RT_ASSIGN_OR_RETURN(const auto records, ReadLogs(raw.files));
  for (const auto& [seq, payload] : records) {
    // Those the checkpoint covers are in the blocks already (and their
    // values' extents may have been reused since).
    if (raw.layout_known && seq <= sb.wal_seq) continue;
    absl::StatusOr<std::vector<internal::Op>> ops =
        internal::DecodeOps(payload, seq);
    if (!ops.ok()) continue;  // whole to its checksum, not to its codec
    for (const internal::Op& op : *ops) {
      RT_RETURN_IF_ERROR(op.put ? put(op.key, op.value, 0)
                                : copy.Delete(op.key));
    }
    ++report->log_records;
  }
  RT_RETURN_IF_ERROR(copy.Finish());
  if (raw.layout_known) {
    report->lost = sb.record_count - std::min(sb.record_count, stored_read);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<SalvageReport> Table::Impl::Salvage(
    Table& into, const RebuildProgress& progress) {
  SalvageReport report;
  uint64_t stored_before = 0;
  {
    ReaderMutexLock lock(&mu_);
    RT_RETURN_IF_ERROR(CheckOpen());
    stored_before = table_.record_count();
  }
  std::vector<internal::Record> records;
  uint64_t stored_read = 0;  // records read from blocks and the stash
  BatchWriter copy(&into, progress);
  std::string value;
  for (uint64_t b = 0;; ++b) {
    bool past_end = false, damaged = false;
    size_t stored = 0;
    RT_RETURN_IF_ERROR(
        BucketRecords(b, &records, &past_end, &damaged, &stored));
    if (past_end) break;
    if (damaged) ++report.damaged_blocks;
    for (size_t i = 0; i < records.size(); ++i) {
      if (i < stored) ++stored_read;
      std::string_view v = records[i].value();
      if (internal::IsReference(v)) {
        const absl::Status s =
            values_.Read(internal::DecodeReference(v), b, &value);
        if (!s.ok()) {
          if (!absl::IsDataLoss(s)) return s;
          ++report.lost_values;
          continue;
        }
        v = value;
      }
      RT_RETURN_IF_ERROR(copy.Put(records[i].key(), v));
    }
  }
  RT_RETURN_IF_ERROR(copy.Finish());
  report.saved = copy.records();
  report.lost = stored_before - std::min(stored_before, stored_read);
  return report;
}

absl::StatusOr<SalvageReport> SalvageTable(const std::string& damaged,
                                           const std::string& path,
                                           const RebuildProgress& progress) {
  Options o;  // the stored layout, read-only: nothing of it is written
  o.read_only = true;
  o.create_if_missing = false;
  o.block_cache_bytes = 0;
  absl::StatusOr<std::unique_ptr<Table>> from = Table::Open(o, damaged);
  if (!from.ok() && !absl::IsDataLoss(from.status())) return from.status();
  SalvageReport report;
  std::optional<internal::TableLock> lock;
  std::optional<RawTable> raw;
  Options layout;
  if (from.ok()) {
    RT_ASSIGN_OR_RETURN(layout, Table::ReadLayout(damaged));
  } else {
    // Readers only meanwhile, as for the open that failed.
    RT_ASSIGN_OR_RETURN(
        lock, internal::TableLock::Acquire(damaged, /*exclusive=*/false));
    RT_ASSIGN_OR_RETURN(raw, OpenRaw(damaged));
    internal::Layout::Of(raw->sb).SetIn(layout);
  }
  layout.error_if_exists = true;
  RT_ASSIGN_OR_RETURN(std::unique_ptr<Table> into, Table::Open(layout, path));
  if (from.ok()) {
    RT_ASSIGN_OR_RETURN(report, (*from)->impl_->Salvage(*into, progress));
    RT_RETURN_IF_ERROR((*from)->Close());
  } else {
    RT_RETURN_IF_ERROR(SalvageFiles(*raw, *into, progress, &report));
    RT_ASSIGN_OR_RETURN(report.saved, into->Count());
  }
  RT_RETURN_IF_ERROR(into->Close());
  return report;
}

}  // namespace roundtable
