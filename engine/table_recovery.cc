// Opening a table (Table::Open, Table::ReadLayout): a new one formatted
// and published; an existing one's superblock, the journal of a checkpoint
// cut short, and Table::Impl::Recover, which replays the stash and buffer
// copies and the log (docs/durability.md, "Recovery").
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "engine/internal/kill_points.h"
#include "engine/internal/table_impl.h"
#include "io/base/status_macros.h"
#include "io/io_error.h"

namespace roundtable {

using internal::kHeaderBlocks;
using internal::Superblock;

namespace {

// Writes a complete journal's images in place and syncs them, the
// superblock's last: its checkpoint was cut short, or not yet completed in
// place (Checkpointer), and the log no longer holds the writes it covers,
// so it must be in place before anything may overwrite the journal. A
// crash meanwhile leaves the journal to be applied again.
absl::Status ApplyJournal(const internal::Journal& journal,
                          const internal::TableFiles& files) {
  for (const bool superblocks : {false, true}) {
    for (const internal::JournalImage& image : journal.images) {
      const bool is_superblock = image.file == internal::kBlocksFileId &&
                                 image.block < kHeaderBlocks;
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
      RT_RETURN_IF_ERROR(files.spacemap->Sync());
      RT_RETURN_IF_ERROR(files.blockmap->Sync());
    }
    RT_RETURN_IF_ERROR(files.blocks->Sync());
  }
  return absl::OkStatus();
}

}  // namespace

// The stored block size decides where copy 1 starts, so the file is opened
// with 512-byte blocks and each possible offset tried (superblocks fit in
// 512 bytes).
absl::StatusOr<Superblock> Table::Impl::ReadSuperblock(const std::string& path,
                                                       io::Backend backend) {
  io::DeviceOptions probe;
  probe.backend = backend;
  probe.block_size = io::kMinBlockSize;
  probe.create_if_missing = false;
  probe.read_only = true;
  RT_ASSIGN_OR_RETURN(
      auto device,
      io::OpenBlockDevice(internal::TablePath(path, internal::kBlocksFile),
                          probe));
  absl::StatusOr<Superblock> best =
      absl::DataLossError(absl::StrCat(path, ": no valid superblock"));
  io::AlignedBuffer buffer(io::kMinBlockSize);
  for (uint32_t bs = io::kMinBlockSize; bs <= io::kMaxBlockSize; bs *= 2) {
    for (uint64_t slot = 0; slot < kHeaderBlocks; ++slot) {
      const uint64_t block = slot * (bs / io::kMinBlockSize);
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

// This build reads its own format version and the older ones down to
// kOldestFormatVersion: such a table opens as it is, and its next
// checkpoint writes the current version.
absl::Status Table::Impl::CheckFormatVersion(const std::string& path,
                                             const Superblock& sb) {
  if (sb.format_version >= internal::kOldestFormatVersion &&
      sb.format_version <= internal::kFormatVersion) {
    return absl::OkStatus();
  }
  return absl::FailedPreconditionError(absl::StrCat(
      path, " has format version ", sb.format_version,
      "; this build reads versions ", internal::kOldestFormatVersion, " to ",
      internal::kFormatVersion));
}

absl::StatusOr<std::optional<internal::Journal>> Table::Impl::PrepareRecovery(
    const std::string& path, const internal::TableFiles& files,
    bool read_only, Superblock* sb) {
  // A complete journal newer than the superblock is a checkpoint cut short
  // during its in-place writes: its superblock is the table's.
  RT_ASSIGN_OR_RETURN(std::optional<internal::Journal> journal,
                      internal::ReadJournal(*files.journal));
  if (journal && journal->sequence <= sb->sequence) journal.reset();
  if (journal) {
    bool found = false;
    for (const internal::JournalImage& image : journal->images) {
      if (image.file >= internal::kJournaledFiles) {
        return absl::DataLossError(absl::StrCat(
            path, ": the checkpoint journal names an unknown file ",
            image.file));
      }
      if (image.file != internal::kBlocksFileId ||
          image.block >= kHeaderBlocks) {
        continue;
      }
      RT_ASSIGN_OR_RETURN(*sb, internal::DecodeSuperblock(image.bytes.span()));
      found = true;
    }
    if (!found || sb->sequence != journal->sequence) {
      return absl::DataLossError(absl::StrCat(
          path, ": the checkpoint journal holds no matching superblock"));
    }
    // Every image lies within its file as the journal's superblock has
    // it, so that laying it in place can neither grow a file without
    // bound nor wrap its size around.
    RT_RETURN_IF_ERROR(CheckFormatVersion(path, *sb));
    // With a block map, the bucket blocks are written at their places
    // before the journal, never through it.
    const bool placed = sb->format_version >= internal::kBlockMapVersion;
    const std::array<uint64_t, internal::kJournaledFiles> ends = {
        placed ? kHeaderBlocks : kHeaderBlocks + sb->num_buckets,
        sb->stash_blocks, sb->buffer_blocks,
        internal::SpaceMap::BlocksFor(sb->value_units, sb->block_size),
        placed ? internal::BlockMap::BlocksFor(sb->num_buckets, sb->block_size)
               : 0};
    for (const internal::JournalImage& image : journal->images) {
      if (image.block >= ends[image.file]) {
        return absl::DataLossError(absl::StrCat(
            path, ": the checkpoint journal holds an image for block ",
            image.block, " of a file of ", ends[image.file], " blocks"));
      }
    }
    if (!read_only) RT_RETURN_IF_ERROR(ApplyJournal(*journal, files));
  }
  // The block map checks its places against the block file (Recover).
  if (sb->format_version >= internal::kBlockMapVersion) return journal;
  // The block file may be longer (a shrink not yet checkpointed). A
  // read-only open lays the journal's images in memory.
  uint64_t stored = files.blocks->num_blocks();
  if (journal && read_only) {
    for (const internal::JournalImage& image : journal->images) {
      if (image.file == internal::kBlocksFileId) {
        stored = std::max(stored, image.block + 1);
      }
    }
  }
  if (stored < kHeaderBlocks + sb->num_buckets) {
    return absl::DataLossError(
        absl::StrCat(path, ": block file holds ", stored, " blocks, ",
                     kHeaderBlocks + sb->num_buckets, " expected"));
  }
  return journal;
}

// Unless read-only, the replayed writes of a table that had a journal are
// then checkpointed; otherwise they stay in memory (held blocks) until the
// next checkpoint, and the log is cut after its last whole record and
// continues from there.
absl::Status Table::Impl::Recover(
    const std::optional<internal::Journal>& journal) {
  MutexLock lock(&mu_);
  const auto start = std::chrono::steady_clock::now();
  const Superblock& sb = checkpointer_.superblock();
  // A read-only open lays the journal's images in memory: the block map's
  // first, then the places are loaded, then the block file's (superblocks,
  // or for a table without a block map its bucket blocks).
  const std::array<internal::DeferredDevice*, internal::kJournaledFiles> seen =
      {&store_.device(), &table_.stash().device(), &buffer_.records().device(),
       &values_.map().device(), &store_.places().device()};
  auto lay = [&](bool block_file) -> absl::Status {
    if (!journal || !options_.read_only) return absl::OkStatus();
    for (const internal::JournalImage& image : journal->images) {
      if ((image.file == internal::kBlocksFileId) != block_file) continue;
      internal::DeferredDevice& file = *seen[image.file];
      if (image.block >= file.num_blocks()) {
        RT_RETURN_IF_ERROR(file.Resize(image.block + 1));
      }
      RT_RETURN_IF_ERROR(file.Write(image.block, image.bytes.span()));
    }
    return absl::OkStatus();
  };
  RT_RETURN_IF_ERROR(lay(/*block_file=*/false));
  RT_RETURN_IF_ERROR(store_.LoadPlaces(
      sb.num_buckets, sb.format_version >= internal::kBlockMapVersion));
  RT_RETURN_IF_ERROR(lay(/*block_file=*/true));
  recovered_journal_ = journal.has_value();
  RT_RETURN_IF_ERROR(table_.stash().Load(layout_, table_.mapping()));
  RT_RETURN_IF_ERROR(buffer_.Load(layout_, table_.mapping()));
  RT_RETURN_IF_ERROR(values_.Load(sb.value_units));
  // A record whose out-of-line values did not all reach the value file (a
  // power loss that kept its log record but not every value written
  // before it) ends the log as a torn record does: it was not synced,
  // since a sync of the log syncs the values first.
  const internal::WalRecordCheck values_whole =
      [&](std::string_view record) -> absl::StatusOr<bool> {
    absl::StatusOr<std::vector<internal::Op>> ops =
        internal::DecodeOps(record, 0);
    if (!ops.ok()) return true;  // the replay reports it
    for (const internal::Op& op : *ops) {
      if (!op.put || !internal::IsReference(op.value)) continue;
      RT_ASSIGN_OR_RETURN(const bool holds,
                          values_.Holds(internal::DecodeReference(op.value)));
      if (!holds) return false;
    }
    return true;
  };
  RT_ASSIGN_OR_RETURN(
      const internal::CommitLog::Replayed replayed,
      log_.Replay(sb.wal_seq,
                  [&](uint64_t seq, std::string_view record)
                      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) -> absl::Status {
                    RT_ASSIGN_OR_RETURN(auto ops,
                                        internal::DecodeOps(record, seq));
                    // A record the table could not have logged.
                    for (const internal::Op& op : ops) {
                      if (!op.put) continue;
                      if (absl::Status s = layout_.CheckRecord(op.key, op.value);
                          !s.ok()) {
                        return absl::DataLossError(absl::StrCat(
                            "write-ahead log record ", seq, ": ",
                            s.message()));
                      }
                    }
                    return Apply(ops);
                  },
                  values_whole));
  recovered_records_ = replayed.records;
  ShareMemory();  // the buffer as its copy and the log left it
  if (!options_.read_only) {
    // The other file than the writers' holds nothing still needed unless
    // the replay took records from both: then the checkpoint below empties
    // it, else Resume does (the spare log file: Checkpointer).
    const bool checkpoint = journal.has_value() || replayed.from_both;
    RT_RETURN_IF_ERROR(log_.Resume(/*keep_both=*/checkpoint));
    if (checkpoint) {
      // The replayed writes are checkpointed at once, so that the next
      // open reads no journal and replays nothing (and no later
      // checkpoint empties a log file whose records the superblock does
      // not cover yet).
      RT_RETURN_IF_ERROR(CheckpointLocked(/*complete=*/true));
    } else if (replayed.records > 0) {
      // The replayed writes stay held, covered by the log's records.
      log_.ContinueAfterReplay();
    } else {
      RT_RETURN_IF_ERROR(log_.Start(log_.current(), /*left_uncovered=*/false));
    }
  }
  recovery_ns_ = std::chrono::duration_cast<std::chrono::nanoseconds>(
                     std::chrono::steady_clock::now() - start)
                     .count();
  return absl::OkStatus();
}

absl::StatusOr<Options> Table::ReadLayout(const std::string& path) {
  if (access(internal::TablePath(path, internal::kBlocksFile).c_str(), F_OK) !=
      0) {
    return absl::NotFoundError(absl::StrCat("no table at ", path));
  }
  RT_ASSIGN_OR_RETURN(const Superblock sb,
                      Impl::ReadSuperblock(path, io::Backend::kPosix));
  RT_RETURN_IF_ERROR(Impl::CheckFormatVersion(path, sb));
  Options o;
  internal::Layout::Of(sb).SetIn(o);
  return o;
}

absl::StatusOr<std::unique_ptr<Table>> Table::Open(const Options& options,
                                                   const std::string& path) {
  return Impl::Open(options, path, internal::FileOpener());
}

absl::StatusOr<std::unique_ptr<Table>> Table::Impl::Open(
    const Options& options, const std::string& path,
    const internal::FileOpener& open_file) {
  RT_RETURN_IF_ERROR(internal::CheckOptions(options));
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
    exists = internal::FileExists(path, internal::kBlocksFile);
  }
  if (exists && options.error_if_exists) {
    return absl::AlreadyExistsError(absl::StrCat("table ", path, " exists"));
  }
  if (!exists && (!options.create_if_missing || options.read_only)) {
    return absl::NotFoundError(absl::StrCat("no table at ", path));
  }
  const internal::Layout created = internal::Layout::ForCreation(options);
  if (!in_memory && !exists) {
    RT_RETURN_IF_ERROR(internal::PrepareNewTable(
        path, internal::kHeaderBlocks + created.s0, created.block_size));
  }

  Superblock sb;
  if (exists) {
    RT_ASSIGN_OR_RETURN(sb, Impl::ReadSuperblock(path, options.backend));
    RT_RETURN_IF_ERROR(Impl::CheckFormatVersion(path, sb));
    RT_RETURN_IF_ERROR(internal::Layout::Of(sb).CheckGiven(options, path));
  } else {
    created.SetIn(sb);
    sb.num_buckets = created.s0;
  }
  RT_ASSIGN_OR_RETURN(internal::TableFiles files,
                      internal::OpenTableFiles(path, options, sb.block_size,
                                               exists, open_file));
  std::optional<internal::Journal> journal;
  if (exists) {
    RT_ASSIGN_OR_RETURN(journal, Impl::PrepareRecovery(
                                     path, files, options.read_only, &sb));
  } else {
    RT_RETURN_IF_ERROR(internal::FormatNewBlocks(*files.blocks, sb.num_buckets));
  }
  RT_ASSIGN_OR_RETURN(auto mapping,
                      mapping::RoundMapping::Create(sb.s0, sb.num_buckets));
  auto impl = std::make_unique<Impl>(options, path, sb, std::move(mapping),
                                     std::move(files), std::move(table_lock));
  if (exists) {
    RT_RETURN_IF_ERROR(impl->Recover(journal));
  } else {
    RT_RETURN_IF_ERROR(impl->Format());
    internal::KillPoint("create: formatted");
    if (!in_memory) RT_RETURN_IF_ERROR(internal::PublishNewTable(path));
  }
  return std::unique_ptr<Table>(new Table(std::move(impl)));
}

}  // namespace roundtable
