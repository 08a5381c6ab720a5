// The table's superblock (docs/format.md): the layout and the state a table
// needs to open without reading its block file. Two copies alternate in
// blocks 0 and 1 of the block file; the valid one with the higher sequence
// number wins.
//
// Thread-safety: a value type.
#ifndef ROUNDTABLE_ENGINE_INTERNAL_SUPERBLOCK_H_
#define ROUNDTABLE_ENGINE_INTERNAL_SUPERBLOCK_H_

#include <cstdint>
#include <span>

#include "absl/status/statusor.h"

namespace roundtable::internal {

inline constexpr uint32_t kSuperblockMagic = 0x42535452;  // "RTSB"
inline constexpr uint32_t kFormatVersion = 11;
// The oldest format this build opens: version 10 differs only in that its
// write buffer's copy holds no deletes (no tombstones), version 9 also in
// having no block map (bucket b's block is block b + kHeaderBlocks of the
// block file), version 8 also in having no reserved bucket count (none
// reserved), version 7 also in having no value file (no out-of-line
// values); their first checkpoint writes the current version.
inline constexpr uint32_t kOldestFormatVersion = 7;
// The first version with a block map.
inline constexpr uint32_t kBlockMapVersion = 10;
// Superblocks occupy blocks 0 and 1 of the block file; the block map
// places the buckets' blocks after them.
inline constexpr uint64_t kHeaderBlocks = 2;
// The bounds of a valid superblock's fields: the largest s0 a table takes
// (Options::s0), the most buckets (and copy blocks), and the smallest
// encoded record (two one-byte lengths and its 4-byte slot).
inline constexpr uint64_t kMaxS0 = uint64_t{1} << 20;
inline constexpr uint64_t kMaxBuckets = uint64_t{1} << 40;
inline constexpr uint64_t kMinRecordBytes = 6;
// The most units of the value file (2^44 bytes of 512-byte units).
inline constexpr uint64_t kMaxValueUnits = uint64_t{1} << 35;

struct Superblock {
  uint32_t format_version = kFormatVersion;
  uint32_t block_size = 0;
  uint32_t block_records = 0;  // most records per block; 0: no limit
  uint64_t s0 = 0;
  double epsilon = 0;
  uint64_t hash_seed = 0;
  uint64_t num_buckets = 0;
  uint64_t record_count = 0;
  uint64_t data_bytes = 0;
  uint64_t stash_epoch = 0;   // generation of the stash copy
  uint64_t stash_blocks = 0;  // blocks of the stash copy in use
  uint64_t buffer_epoch = 0;   // generation of the write buffer's copy
  uint64_t buffer_blocks = 0;  // blocks of the write buffer's copy in use
  uint64_t sequence = 0;      // grows by one with every checkpoint
  uint64_t wal_seq = 0;       // the last log record the checkpoint covers
  uint64_t value_units = 0;   // units (blocks) of the value file
  uint64_t value_count = 0;   // out-of-line values
  uint64_t value_bytes = 0;   // their bytes
  uint64_t min_buckets = 0;   // the table keeps at least these (Reserve)

  // The block (0 or 1) this copy is written to.
  uint64_t slot() const { return sequence % 2; }
};

// Encodes into exactly out.size() bytes (one block).
void EncodeSuperblock(const Superblock& sb, std::span<std::byte> out);

// DataLoss when the magic or checksum is wrong, or a field is out of the
// range any table has (so the other copy is used).
// A valid copy of a format version this build does not read is returned
// as is; the caller refuses it.
absl::StatusOr<Superblock> DecodeSuperblock(std::span<const std::byte> in);

}  // namespace roundtable::internal

#endif  // ROUNDTABLE_ENGINE_INTERNAL_SUPERBLOCK_H_
