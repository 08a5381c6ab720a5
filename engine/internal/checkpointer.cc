#include "engine/internal/checkpointer.h"

#include <algorithm>
#include <atomic>
#include <limits>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "engine/internal/journal.h"
#include "engine/internal/kill_points.h"
#include "io/base/status_macros.h"
#include "io/base/wait.h"

namespace roundtable::internal {

namespace {

// What a cut of the layer's file keeps besides the checkpoints' sizes:
// the block file's places in use now, some written ahead of the next
// checkpoint (BlockMap::PlaceAhead).
uint64_t KeptBlocks(const CheckpointLayer& layer) {
  return layer.places != nullptr ? layer.places->end() : 0;
}

// Cuts `file` to `size` blocks if it is longer by more than `slack`.
absl::Status CutTo(io::BlockDevice& file, uint64_t size, uint64_t slack = 0) {
  if (file.num_blocks() <= size + slack) return absl::OkStatus();
  return file.Resize(size);
}

// What a cut between two checkpoints, on the writer's path, leaves past a
// file's end: an eighth of it, and 1 MiB at least. A cut frees its blocks
// at once, and where the file system discards the blocks it frees as it
// frees them (ext4 mounted with discard and no journal) the call waits
// for the device to discard them: 9 to 21 ms for the few hundred blocks
// by which a stash or write buffer copy shrinks between checkpoints. A
// file that shrinks more is cut; Complete cuts each file to its end.
uint64_t CutSlack(const io::BlockDevice& file, uint64_t size) {
  return std::max<uint64_t>(size / 8, (1 << 20) / file.block_size());
}

// The in-place half of completing checkpoint `done`, whose images are in
// place: the files it changed synced, then its superblock written in
// place and synced. Cutting the files to their new ends is the caller's.
absl::Status SyncInPlace(
    const Checkpointer::Pending& done,
    const std::array<io::BlockDevice*, kJournaledFiles>& files) {
  for (size_t id = 0; id < files.size(); ++id) {
    if (done.changed[id]) RT_RETURN_IF_ERROR(files[id]->Sync());
  }
  io::BlockDevice& blocks = *files[kBlocksFileId];
  io::AlignedBuffer superblock(blocks.block_size());
  EncodeSuperblock(done.superblock, superblock.span());
  RT_RETURN_IF_ERROR(blocks.Write(done.superblock.slot(), superblock.span()));
  RT_RETURN_IF_ERROR(blocks.Sync());
  KillPoint("checkpoint: superblock synced");
  return absl::OkStatus();
}

}  // namespace

// A checkpoint's writes, on a thread of their own: the bucket blocks
// sealed and written at their new places, the checkpoint before completed
// in place (or else the block file synced), the journal, synced, then each
// file's images in place and their write-back started. The images are the
// frozen blocks of the deferred devices, unchanged but for the seal until
// FinishWrites.
struct Checkpointer::Writes {
  Pending pending;
  // The checkpoint before this one, left pending (its images in place, not
  // synced there), which this thread completes in place before its
  // journal overwrites that checkpoint's: off the writers' path.
  std::optional<Pending> complete_first;
  // The device whose frozen blocks the thread seals first.
  DeferredDevice* unsealed = nullptr;
  io::BlockDevice* journal = nullptr;
  // The bucket blocks at their new places, written before the journal;
  // the images, then the superblock, in the journal; each file's images
  // in place, after it.
  Lists lists;
  io::AlignedBuffer superblock;
  std::function<absl::Status()> sync_first;  // before the journal
  std::function<void()> journal_durable;     // called once it is
  // The log file the writers do not append to after this checkpoint (the
  // one they left, or after a complete checkpoint the other): its records
  // are covered once the journal is durable, and it is then emptied and
  // synced. So whenever no checkpoint's writes are running, the writers'
  // other file holds nothing but zeros on disk, ready for the next one.
  io::BlockDevice* spare_log = nullptr;
  uint64_t spare_log_blocks = 0;  // its size (zeros) once emptied
  std::array<io::BlockDevice*, kJournaledFiles> files{};
  std::thread thread;
  absl::Status status;  // written by the thread before `done`
  std::atomic<int> done{0};
  // The held blocks the thread makes first (MadeBlocks), and whether it
  // has (then it reads nothing of `made` any more).
  std::vector<MadeBlocks> made;
  std::atomic<bool> made_ready{false};

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
    done.store(1, std::memory_order_release);
    WakeAll(done);
  }
  absl::Status WriteAll() {
    for (const MadeBlocks& m : made) m.make();
    made_ready.store(true, std::memory_order_release);
    unsealed->SealFrozen();
    // Places no durable checkpoint refers to: a block torn here is in no
    // checkpoint. Adjacent places go in one write.
    std::vector<io::WriteRequest>& placed = lists.placed;
    std::sort(placed.begin(), placed.end(),
              [](const io::WriteRequest& a, const io::WriteRequest& b) {
                return a.block < b.block;
              });
    io::BlockDevice& blocks = *files[kBlocksFileId];
    RT_RETURN_IF_ERROR(blocks.WriteBatch(placed));
    KillPoint("checkpoint: blocks placed");
    // Completing the last checkpoint in place ends with a sync of the
    // block file, which makes the placed blocks durable before the journal
    // that refers to them.
    if (complete_first) {
      RT_RETURN_IF_ERROR(SyncInPlace(*complete_first, files));
    } else {
      RT_RETURN_IF_ERROR(blocks.Sync());
    }
    RT_RETURN_IF_ERROR(sync_first());
    RT_RETURN_IF_ERROR(
        WriteJournal(*journal, pending.superblock.sequence, lists.entries));
    KillPoint("checkpoint: journal synced");
    journal_durable();
    RT_RETURN_IF_ERROR(spare_log->Resize(0));
    RT_RETURN_IF_ERROR(spare_log->Sync());
    // Zeros after the synced cut: whatever a power loss leaves of them,
    // nothing older comes back.
    if (spare_log_blocks > 0) {
      RT_RETURN_IF_ERROR(spare_log->Resize(spare_log_blocks));
    }
    for (size_t id = 0; id < files.size(); ++id) {
      RT_RETURN_IF_ERROR(files[id]->WriteBatch(lists.writes[id]));
      KillPoint("checkpoint: written in place");
      RT_RETURN_IF_ERROR(files[id]->WriteBack());
    }
    return absl::OkStatus();
  }
  bool Done() const { return done.load(std::memory_order_acquire) != 0; }
  void Wait() const { WaitWhileEqual(done, 0); }
  void Join() {
    if (thread.joinable()) thread.join();
  }
  // Once the thread has made the blocks, or never will: what `made` read
  // may go.
  void Finish(bool made_them) {
    for (MadeBlocks& m : std::exchange(made, {})) m.done(made_them);
  }
  // A checkpoint dropped before its thread ran, or after it failed.
  ~Writes() { Finish(false); }
};

Checkpointer::Checkpointer(std::array<CheckpointLayer, kJournaledFiles> layers,
                           io::BlockDevice* journal, const Superblock& sb,
                           uint64_t checkpoint_bytes, uint64_t held_limit,
                           std::function<absl::Status()> sync_first)
    : layers_(layers),
      journal_(journal),
      checkpoint_bytes_(checkpoint_bytes),
      held_limit_(held_limit),
      sync_first_(std::move(sync_first)),
      sb_(sb),
      durable_sequence_(sb.sequence) {}

Checkpointer::~Checkpointer() {
  if (writes_ != nullptr) writes_->Join();
}

uint64_t Checkpointer::held_bytes() const {
  uint64_t bytes = 0;
  for (const CheckpointLayer& layer : layers_) {
    bytes += layer.seen->held_bytes();
  }
  return bytes;
}

uint64_t Checkpointer::held_blocks() const {
  uint64_t blocks = 0;
  for (const CheckpointLayer& layer : layers_) {
    blocks += layer.seen->held().size();
  }
  return blocks;
}

absl::StatusOr<bool> Checkpointer::Due(uint64_t log_bytes) {
  if (writes_ != nullptr && writes_->Done()) {
    RT_RETURN_IF_ERROR(FinishWrites(/*spread=*/true));
  } else if (writes_ == nullptr) {
    GiveBack(kGiveBackPerWrite);
  }
  // What the made blocks were made from is let go as soon as they are,
  // long before the checkpoint's writes are done.
  if (writes_ != nullptr && !writes_->made.empty() &&
      writes_->made_ready.load(std::memory_order_acquire)) {
    writes_->Finish(true);
  }
  // How far the fuller of the two has come, 1 at its limit.
  const double fill = std::max(
      static_cast<double>(held_bytes()) /
          static_cast<double>(std::max<uint64_t>(held_limit_, 1)),
      static_cast<double>(log_bytes) /
          static_cast<double>(std::max<uint64_t>(checkpoint_bytes_, 1)));
  if (fill < 1) return false;
  constexpr double kStretch = 1.25;
  if (writes_ == nullptr || fill >= kStretch) return true;
  // (Calls whose caller takes no pace, a Flush's drains, leave at most
  // one write's.)
  pace_ = std::chrono::duration_cast<std::chrono::nanoseconds>(
      kMaxPace * ((fill - 1) / (kStretch - 1)));
  return false;
}

absl::Status Checkpointer::Stage(const Superblock& next,
                                 std::vector<MadeBlocks> made) {
  staged_.reset();
  auto job = std::make_unique<Writes>();
  job->pending.superblock = next;
  job->unsealed = layers_[kBlocksFileId].seen;
  job->journal = journal_;
  job->sync_first = sync_first_;
  job->lists = std::move(spare_);
  job->lists.Clear();
  std::vector<JournalEntry>& entries = job->lists.entries;
  for (const CheckpointLayer& layer : layers_) {
    for (const auto& [block, bytes] : layer.seen->held()) {
      // Superblock images held from a replayed journal are superseded.
      if (layer.id == kBlocksFileId && block < kHeaderBlocks) continue;
      if (layer.places != nullptr) {
        job->lists.placed.push_back(
            {layer.places->PlaceOf(block), bytes.span()});
      } else {
        entries.push_back({layer.id, block, bytes.span()});
      }
    }
  }
  job->made = std::move(made);
  job->superblock =
      io::AlignedBuffer(layers_[kBlocksFileId].file->block_size());
  EncodeSuperblock(next, job->superblock.span());
  entries.push_back({kBlocksFileId, next.slot(), job->superblock.span()});
  // Each file grown to its new size here; the journal, then the images in
  // place, by the thread. Until it is done the deferred devices keep the
  // images, frozen, for reads.
  for (const CheckpointLayer& layer : layers_) {
    const uint64_t size = layer.places != nullptr ? layer.places->end()
                                                  : layer.seen->num_blocks();
    job->pending.sizes[layer.id] = size;
    if (layer.file->num_blocks() < size) {
      RT_RETURN_IF_ERROR(layer.file->Resize(size));
      job->pending.changed[layer.id] = true;
    }
    job->files[layer.id] = layer.file;
  }
  for (size_t i = 0; i + 1 < entries.size(); ++i) {
    job->lists.writes[entries[i].file].push_back(
        {entries[i].block, entries[i].bytes});
    job->pending.changed[entries[i].file] = true;
  }
  staged_ = std::move(job);
  return absl::OkStatus();
}

void Checkpointer::Launch(io::BlockDevice* spare_log, uint64_t spare_log_blocks,
                          std::function<void()> journal_durable) {
  staged_->spare_log = spare_log;
  staged_->spare_log_blocks = spare_log_blocks;
  staged_->journal_durable = std::move(journal_durable);
  staged_->complete_first = std::move(pending_);
  pending_.reset();
  // What lies past the files' new ends stays until the checkpoint is
  // complete; the deferred devices read it as zeros meanwhile.
  for (const CheckpointLayer& layer : layers_) layer.seen->Freeze();
  writes_ = std::move(staged_);
  writes_->Start();
  pending_ = writes_->pending;
  sb_ = writes_->pending.superblock;
  ++count_;
}

void Checkpointer::GiveBack(size_t n) {
  DeferredDevice& blocks = *layers_[kBlocksFileId].seen;
  if (!blocks.frozen().empty()) blocks.ReleaseFrozen(n);
}

absl::Status Checkpointer::FinishWrites(bool spread) {
  if (writes_ == nullptr) {
    if (!spread) GiveBack(std::numeric_limits<size_t>::max());
    return absl::OkStatus();
  }
  writes_->Join();
  const absl::Status s = writes_->status;
  std::optional<Pending> completed;
  if (s.ok()) {
    durable_sequence_ = writes_->pending.superblock.sequence;
    completed = std::move(writes_->complete_first);
  }
  const std::array<uint64_t, kJournaledFiles> sizes = writes_->pending.sizes;
  writes_->Finish(s.ok());
  spare_ = std::move(writes_->lists);
  writes_.reset();
  // With spread, the bucket blocks stay frozen for the next calls of Due.
  for (const CheckpointLayer& layer : layers_) {
    if (!spread || layer.id != kBlocksFileId) layer.seen->ReleaseFrozen();
  }
  if (!completed) return s;
  // The thread completed the checkpoint before this one in place: what
  // lies past both checkpoints' ends is no longer needed.
  for (const CheckpointLayer& layer : layers_) {
    const uint64_t end = std::max(
        {completed->sizes[layer.id], sizes[layer.id], KeptBlocks(layer)});
    RT_RETURN_IF_ERROR(CutTo(*layer.file, end, CutSlack(*layer.file, end)));
  }
  return absl::OkStatus();
}

absl::Status Checkpointer::Complete(bool rewrite_journal) {
  RT_RETURN_IF_ERROR(FinishWrites());
  if (!pending_) return absl::OkStatus();
  const Superblock done = pending_->superblock;
  std::array<io::BlockDevice*, kJournaledFiles> files{};
  for (const CheckpointLayer& layer : layers_) files[layer.id] = layer.file;
  RT_RETURN_IF_ERROR(SyncInPlace(*pending_, files));
  // Only now: the older superblock needed what lay past the new ends.
  for (const CheckpointLayer& layer : layers_) {
    RT_RETURN_IF_ERROR(CutTo(
        *layer.file, std::max(pending_->sizes[layer.id], KeptBlocks(layer))));
  }
  pending_.reset();
  if (!rewrite_journal) return absl::OkStatus();
  io::AlignedBuffer superblock(files[kBlocksFileId]->block_size());
  EncodeSuperblock(done, superblock.span());
  const JournalEntry kept = {kBlocksFileId, done.slot(), superblock.span()};
  return WriteJournal(*journal_, done.sequence, {&kept, 1});
}

void Checkpointer::WaitWrites() const {
  if (writes_ != nullptr) writes_->Wait();
}

}  // namespace roundtable::internal
