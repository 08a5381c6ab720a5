// The persistent copy of the stash, and the one of the write buffer, each in
// its own file (docs/format.md): a log of changes packed into blocks. Each
// change appends one entry to the tail block, which is written when it fills
// and on Flush (at most one block write per change, usually far less);
// opening replays the log. When the log grows well past the live records it
// is rewritten from block 0 under a new epoch. The superblock records the
// epoch and the number of blocks in use as of the last checkpoint.
//
// Thread-safety: none; the table calls it under its writer lock.
#ifndef ROUNDTABLE_ENGINE_INTERNAL_STASH_LOG_H_
#define ROUNDTABLE_ENGINE_INTERNAL_STASH_LOG_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "engine/internal/huge_page_allocator.h"
#include "io/block_device.h"

namespace roundtable::internal {

inline constexpr uint32_t kStashLogMagic = 0x4c535452;  // "RTSL"

class StashLog {
 public:
  // Borrows `device`, which must outlive the log; appends continue after
  // block `blocks` - 1 of generation `epoch`.
  StashLog(io::BlockDevice* device, uint64_t epoch, uint64_t blocks);

  // The live records (key -> value) in blocks [0, blocks) of generation
  // `epoch`. DataLoss naming `what` (the stash copy, the write buffer's
  // copy) and the block when one fails its checksum or belongs to another
  // generation.
  // With `damaged` (a salvage), such a block, or one that cannot be read,
  // is counted there and passed over instead: its changes are lost.
  static absl::StatusOr<absl::flat_hash_map<std::string, std::string>> Load(
      io::BlockDevice& device, uint64_t epoch, uint64_t blocks,
      std::string_view what = "stash copy", uint64_t* damaged = nullptr);

  // For a salvage without a superblock: the generation of the first block
  // that passes its checksum, and the blocks up to the last one of that
  // generation ({0, 0} when none passes).
  static absl::StatusOr<std::pair<uint64_t, uint64_t>> Generation(
      io::BlockDevice& device);

  // Reads the tail block (blocks - 1) back into memory, so that appends
  // after an open add to its entries instead of replacing them. Call once,
  // after Load verified the log.
  absl::Status ResumeTail();

  absl::Status AppendPut(std::string_view key, std::string_view value);
  absl::Status AppendRemove(std::string_view key);

  // Writes the tail block if it holds entries not yet written.
  absl::Status Flush();

  // A live record as a rewrite reads it: its key's bytes, then its
  // value's, from `data` (a Record's one allocation, Record::bytes()). 16
  // bytes where two views take 32: a snapshot lists a few hundred
  // thousand of them on the writer's path.
  struct LiveRecord {
    const char* data;
    uint32_t key_size;
    uint32_t value_size;
    std::string_view key() const { return {data, key_size}; }
    std::string_view value() const { return {data + key_size, value_size}; }
  };
  // Its memory in huge pages once it is large: a list outgrown is made
  // again, on the writer's path.
  using Live = std::vector<LiveRecord, HugePageAllocator<LiveRecord>>;

  // Writes `live` as the whole log from block 0 under epoch + 1 and cuts the
  // file to it.
  absl::Status Rewrite(const Live& live);

  // A rewrite in two halves, for an owner that has the blocks written
  // elsewhere: Restart takes the log to epoch + 1 with the blocks `live`
  // needs (BlocksFor), the file resized to them, and their bytes left to
  // Encode, which may run on another thread (it reads `live` and nothing
  // of this log). The tail is then full: the next append starts a block.
  absl::Status Restart(const Live& live);
  // The blocks a log of `live` takes, in blocks of `block_size` bytes.
  static uint64_t BlocksFor(const Live& live, uint32_t block_size);
  // Encodes `live` as the blocks of a log of generation `epoch`, block b
  // into blocks[b] (BlocksFor(live) blocks of `block_size` bytes each):
  // the bytes Rewrite writes.
  static void Encode(const Live& live, uint64_t epoch,
                     std::span<std::byte* const> blocks, uint32_t block_size);

  // True when the log holds more than twice the blocks `live_bytes` of
  // entries need, plus a few: time to Rewrite.
  bool WantsRewrite(uint64_t live_bytes) const;

  uint64_t epoch() const { return epoch_; }
  uint64_t blocks() const { return blocks_; }
  uint64_t block_writes() const { return block_writes_; }

 private:
  // Applies block `b`'s entries to *live, after checking its header:
  // DataLoss naming `what` and the block when it does not hold up.
  static absl::Status ApplyBlock(
      const io::AlignedBuffer& buffer, uint64_t b, uint64_t epoch,
      std::string_view what,
      absl::flat_hash_map<std::string, std::string>* live);
  absl::Status Append(char op, std::string_view key, std::string_view value);
  // Adds an entry to the tail, starting a new tail block when it does not
  // fit (writing the full one first when `write_full_tail`).
  absl::Status AddToTail(char op, std::string_view key, std::string_view value,
                         bool write_full_tail);
  // Empties the tail block (its entry bytes back to zeros).
  void ClearTail();
  // Completes the tail block's header and checksum and writes it as block
  // `blocks_ - 1`.
  absl::Status WriteTail();

  io::BlockDevice* device_;
  uint64_t epoch_;
  uint64_t blocks_;  // blocks in use; the last is the tail
  // The tail block as it is written: its entries are encoded in place,
  // after the header, and the bytes past them are zeros.
  io::AlignedBuffer tail_;
  uint32_t tail_used_ = 0;   // bytes of entries in the tail block
  uint32_t tail_count_ = 0;  // entries in the tail block
  bool tail_dirty_ = false;  // the tail holds entries not yet written
  uint64_t block_writes_ = 0;
};

}  // namespace roundtable::internal

#endif  // ROUNDTABLE_ENGINE_INTERNAL_STASH_LOG_H_
