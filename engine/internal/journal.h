// A checkpoint's journal (docs/format.md): the blocks a checkpoint is about
// to write in place, saved first in a file of their own and synced, so that a
// crash during the in-place writes is repaired by writing them again.
//
// Layout: a descriptor (a byte stream over the first blocks, zero-padded to a
// whole block), then one block image per entry, in entry order.
//
//   fixed32  magic 0x4e4a5452 ("RTJN")
//   fixed32  entry count n
//   fixed64  checkpoint sequence number
//   n times: fixed32 file, fixed64 block, fixed64 XXH3-64 of the image
//   fixed64  XXH3-64 of the descriptor bytes before it
//
// A journal is complete when its descriptor checksum and every image
// checksum match; anything else (a crash while it was written) is no
// journal at all.
//
// Thread-safety: none.
#ifndef ROUNDTABLE_ENGINE_INTERNAL_JOURNAL_H_
#define ROUNDTABLE_ENGINE_INTERNAL_JOURNAL_H_

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "io/block_device.h"

namespace roundtable::internal {

inline constexpr uint32_t kJournalMagic = 0x4e4a5452;  // "RTJN"

struct JournalEntry {
  uint32_t file;                     // which of the owner's files
  uint64_t block;                    // where the image goes in it
  std::span<const std::byte> bytes;  // one block
};

// Writes the journal of checkpoint `sequence` to `device` (cutting it to its
// size) and syncs it.
absl::Status WriteJournal(io::BlockDevice& device, uint64_t sequence,
                          std::span<const JournalEntry> entries);

struct JournalImage {
  uint32_t file;
  uint64_t block;
  io::AlignedBuffer bytes;
};
struct Journal {
  uint64_t sequence = 0;
  std::vector<JournalImage> images;
};

// The complete journal in `device`, or nullopt when there is none (empty,
// torn, or corrupt). Errors are the device's read errors only.
absl::StatusOr<std::optional<Journal>> ReadJournal(io::BlockDevice& device);

}  // namespace roundtable::internal

#endif  // ROUNDTABLE_ENGINE_INTERNAL_JOURNAL_H_
