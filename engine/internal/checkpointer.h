// Checkpoints (docs/durability.md): the held bucket blocks are written at
// their new places and synced; the held blocks of the table's other
// journaled files (the block map among them) and the next superblock go
// into the journal, synced (the commit point), then in place; later the
// files are synced and the superblock written in place. It owns the superblock
// of the last checkpoint, the thread that writes a checkpoint while the writers
// go on, the checkpoint left pending in place, and the policy of when the next
// one is due. The phases, in order:
//
//   Stage     (writer lock) the images listed, each file grown to its new
//             size, the superblock encoded;
//   Launch    (writer lock) the held blocks frozen and the writes started
//             on a thread of their own: seal the bucket blocks and write
//             them at their places, complete the checkpoint left pending
//             (below) in place, which syncs them (or sync them), write
//             and sync the journal, empty the log file the writers left, then
//             write the images in place and start their write-back; the
//             checkpoint is left pending;
//   FinishWrites (writer lock) waits for that thread, frees the images,
//             and cuts the files the completed checkpoint shrank;
//   Complete  (writer lock) completes the pending checkpoint now, rather
//             than on the next one's thread: the files synced, the
//             superblock in place and synced, the files cut to their new
//             ends, and (when asked) the journal rewritten with the
//             superblock alone.
//
// Thread-safety: every method runs under the table's writer lock, but
// WaitWrites and the const reads, which run under its reader lock.
#ifndef ROUNDTABLE_ENGINE_INTERNAL_CHECKPOINTER_H_
#define ROUNDTABLE_ENGINE_INTERNAL_CHECKPOINTER_H_

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/internal/block_map.h"
#include "engine/internal/deferred_device.h"
#include "engine/internal/journal.h"
#include "engine/internal/superblock.h"
#include "engine/internal/table_files.h"
#include "io/block_device.h"

namespace roundtable::internal {

// A file a checkpoint writes: its id in journal entries, the file, and the
// deferred device in front of it whose held blocks are its images. With
// `places` (the block file) the held bucket blocks are not journaled: each
// is written once, at the new place the block map gave it, and synced
// before the journal, which holds the map.
struct CheckpointLayer {
  uint32_t id;
  io::BlockDevice* file;
  DeferredDevice* seen;
  const BlockMap* places = nullptr;
};

// Held blocks whose bytes the checkpoint's thread makes itself, once they
// are frozen and before it stores them (the write buffer's snapshot, the
// stash copy made again): `make` fills them. `done` runs on the writers'
// side once the thread no longer reads what `make` reads: with true once
// the blocks are made (at the first Due or FinishWrites after that), with
// false when the checkpoint was dropped before its thread made them (then
// the owner makes them again for the next one). (A checkpoint whose
// writes fail leaves the table failed: no later one is written.)
struct MadeBlocks {
  std::function<void()> make;
  std::function<void(bool made)> done;
};

class Checkpointer {
 public:
  // Borrows the layers (by id: blocks, stash, buffer, space map, block
  // map) and the
  // journal file, which must outlive it. `sb` is the superblock of the
  // last checkpoint. A checkpoint is due when the log passes
  // `checkpoint_bytes` or the held blocks pass `held_limit`. The thread
  // calls `sync_first` before it writes the journal: what the checkpoint's
  // blocks refer to outside them (the out-of-line values) is durable
  // before they are.
  Checkpointer(std::array<CheckpointLayer, kJournaledFiles> layers,
               io::BlockDevice* journal, const Superblock& sb,
               uint64_t checkpoint_bytes, uint64_t held_limit,
               std::function<absl::Status()> sync_first);
  // Waits for a checkpoint's writes still running.
  ~Checkpointer();
  Checkpointer(const Checkpointer&) = delete;
  Checkpointer& operator=(const Checkpointer&) = delete;

  // The superblock of the last checkpoint (pending or not).
  const Superblock& superblock() const { return sb_; }
  // The sequence number of the newest checkpoint known durable (its
  // journal synced): what the files hold after any crash from now on.
  uint64_t durable_sequence() const { return durable_sequence_; }

  // Whether a checkpoint is due after a write that left `log_bytes` in the
  // log (and out-of-line values applied since the last checkpoint, which
  // recovery may read back): when they pass checkpoint_bytes or the held blocks
  // held_limit; a quarter past either while the last checkpoint's writes
  // still run, rather than have the writers wait for them. Frees the last
  // checkpoint's images first if its writes are done (their error, if any).
  // Between the limit and a quarter past it, with the writes still
  // running, the write owes a wait (TakePace): up to kMaxPace, more the
  // closer it comes to a quarter past.
  absl::StatusOr<bool> Due(uint64_t log_bytes);
  // The wait the write owes, which it forgets: the caller waits that long
  // outside the table's locks, giving its CPU to any other thread that
  // wants it. So when the disk writes a checkpoint more slowly than the
  // writers fill the next one, every write slows down a little, rather
  // than one write stopping for the rest of the last checkpoint's writes.
  // (A sleep would not do: the kernel wakes a sleeper 50 to 100 us late.)
  std::chrono::nanoseconds TakePace() {
    return std::exchange(pace_, std::chrono::nanoseconds{0});
  }

  // The phases (see above). Stage lists the images of checkpoint `next`
  // (its sequence one past the last's), some of which the thread makes
  // first (`made`). REQUIRES: no writes running.
  absl::Status Stage(const Superblock& next,
                     std::vector<MadeBlocks> made = {});
  // `spare_log` is the log file the writers do not append to after this
  // checkpoint: the thread empties and syncs it once the journal is
  // durable (then calls `journal_durable`), and grows it again with
  // `spare_log_blocks` blocks of zeros.
  void Launch(io::BlockDevice* spare_log, uint64_t spare_log_blocks,
              std::function<void()> journal_durable);
  // Waits for the running checkpoint's thread, if any, and returns its
  // error; the frozen blocks are then freed, the bucket blocks given back
  // to the cache. With `spread` (Due, once the thread is done) the bucket
  // blocks go back kGiveBackPerWrite at a time in the next calls of Due
  // instead, and any left at the next FinishWrites without it (which the
  // next checkpoint's Stage needs first), all then:
  // late in a growth past memory, tens of thousands at once took the
  // writer 10 to 50 ms. REQUIRES before Stage: its journal overwrites the
  // last one.
  absl::Status FinishWrites(bool spread = false);
  static constexpr size_t kGiveBackPerWrite = 16;
  // Completes the checkpoint left pending, if any. With `rewrite_journal`
  // the journal is then rewritten with the superblock alone, which frees
  // its block images' disk space and keeps a third copy of the newest
  // superblock: if that copy in the block file is damaged, Open falls back
  // to the older one, finds this journal newer, and lays the newest
  // superblock over it again.
  absl::Status Complete(bool rewrite_journal);

  // Waits until the last checkpoint's writes are done (their ledgers then
  // count them).
  void WaitWrites() const;
  // Bytes and blocks held by the journaled files' deferred devices.
  uint64_t held_bytes() const;
  uint64_t held_blocks() const;
  uint64_t count() const { return count_; }

  // A checkpoint's superblock, and each file's size in blocks, by file id.
  struct Pending {
    Superblock superblock;
    std::array<uint64_t, kJournaledFiles> sizes{};
    // Whether the checkpoint writes the file in place or grows it: a file
    // it leaves alone needs no sync.
    std::array<bool, kJournaledFiles> changed{};
  };

 private:
  struct Writes;
  // What a checkpoint's thread writes from: the bucket blocks at their new
  // places, the journal's entries, and each file's images in place. They
  // are emptied and kept for the next checkpoint rather than freed:
  // late in a growth past memory, freeing them (hundreds of KiB) took the
  // writer 3 to 47 ms at times, and as long on the thread, where it held
  // up the writer's allocations.
  struct Lists {
    std::vector<io::WriteRequest> placed;
    std::vector<JournalEntry> entries;
    std::array<std::vector<io::WriteRequest>, kJournaledFiles> writes;
    // Emptied, their memory kept.
    void Clear() {
      placed.clear();
      entries.clear();
      for (std::vector<io::WriteRequest>& w : writes) w.clear();
    }
  };

  const std::array<CheckpointLayer, kJournaledFiles> layers_;
  io::BlockDevice* const journal_;
  const uint64_t checkpoint_bytes_;
  const uint64_t held_limit_;
  const std::function<absl::Status()> sync_first_;
  // The longest wait one write owes (just short of a quarter past a
  // limit).
  static constexpr std::chrono::nanoseconds kMaxPace{16'000};
  std::chrono::nanoseconds pace_{0};
  Superblock sb_;
  uint64_t durable_sequence_;
  // The checkpoint staged and not yet launched (dropped by the next Stage
  // if never launched), then the one running on its thread until
  // FinishWrites.
  std::unique_ptr<Writes> staged_;
  std::unique_ptr<Writes> writes_;
  // The last finished checkpoint's lists, for the next one.
  Lists spare_;
  // Gives back up to n of the bucket blocks a finished checkpoint left
  // frozen (FinishWrites' spread): whatever is frozen while no
  // checkpoint's thread runs.
  void GiveBack(size_t n);
  // A checkpoint whose journal is synced and whose images were written in
  // place, not yet synced there.
  std::optional<Pending> pending_;
  uint64_t count_ = 0;
};

}  // namespace roundtable::internal

#endif  // ROUNDTABLE_ENGINE_INTERNAL_CHECKPOINTER_H_
