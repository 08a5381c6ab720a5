// The write-ahead log (docs/format.md, docs/durability.md): a stream of
// checksummed, numbered records stored in the blocks of its own device.
//
// Record framing, little-endian:
//
//   fixed32  payload length L
//   fixed64  sequence number
//   fixed64  XXH3-64 of the payload, seeded with XXH3-64 of the 12 bytes
//            above
//   L bytes  payload
//
// Records follow each other with no padding and may span blocks. The writer
// keeps the last, partly filled block in memory and writes it again, whole,
// after every append: its first bytes are the same as before, so a write torn
// at sector granularity can damage only records not yet synced. Sequence
// numbers are consecutive. A reader stops at the first record that is short,
// fails its checksum, or does not carry the next number, which is how a torn
// or stale tail (records of an earlier log left after a restart) ends a log.
//
// Thread-safety: none; the table calls it under its writer lock.
#ifndef ROUNDTABLE_ENGINE_INTERNAL_WAL_H_
#define ROUNDTABLE_ENGINE_INTERNAL_WAL_H_

#include <cstdint>
#include <functional>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "io/block_device.h"

namespace roundtable::internal {

inline constexpr size_t kWalHeaderBytes = 20;

class WalWriter {
 public:
  // Borrows `device`, which must outlive the writer. The log starts empty:
  // Start cuts the device and begins at block 0.
  explicit WalWriter(io::BlockDevice* device);

  // Empties the log; the next record appended must carry `next_seq`.
  absl::Status Start(uint64_t next_seq);

  // Appends a record numbered next_seq() and writes every block it touched
  // (one batch): when it returns OK the operating system holds the record,
  // so it survives a crash of the process; Sync makes it survive power loss.
  absl::Status Append(std::string_view payload);

  // Makes every appended record durable.
  absl::Status Sync();

  uint64_t next_seq() const { return next_seq_; }
  // Bytes of records in the log.
  uint64_t bytes() const { return bytes_; }

 private:
  io::BlockDevice* device_;
  const uint32_t block_size_;
  io::AlignedBuffer tail_;  // the block being filled
  uint64_t tail_block_ = 0;
  size_t tail_fill_ = 0;  // bytes of records in tail_
  uint64_t next_seq_ = 0;
  uint64_t bytes_ = 0;
  bool unsynced_ = false;
};

struct WalReplay {
  uint64_t records = 0;   // records passed to the callback
  uint64_t last_seq = 0;  // the last one's number (after_seq when none)
  uint64_t bytes = 0;     // where the valid log ends
};

// Reads the log from its start and calls fn(seq, payload) for the records
// numbered after_seq + 1, after_seq + 2, ... in order. Records numbered
// after_seq or less at the start are skipped (a log restarted after a
// checkpoint that covered them). Stops at the end of the device or at the
// first record that is short, corrupt or out of sequence; that is never an
// error. An error from fn, or a read error, is returned.
absl::StatusOr<WalReplay> ReplayWal(
    io::BlockDevice& device, uint64_t after_seq,
    const std::function<absl::Status(uint64_t, std::string_view)>& fn);

}  // namespace roundtable::internal

#endif  // ROUNDTABLE_ENGINE_INTERNAL_WAL_H_
