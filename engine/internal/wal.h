// The write-ahead log (docs/format.md, docs/durability.md): a stream of
// checksummed, numbered records stored in the blocks of its own device.
//
// Record framing, little-endian:
//
//   fixed32  payload length L
//   fixed64  sequence number
//   fixed64  durable mark: every record up to this number had been synced
//            when this one was written
//   fixed64  XXH3-64 of the payload, seeded with XXH3-64 of the 20 bytes
//            above
//   L bytes  payload
//
// Records follow each other with no padding and may span blocks. The writer
// keeps the last, partly filled block in memory and writes it again after
// every append (WriteChanged: a memory-mapped log stores only the new
// record): its first bytes are the same as before, so a write torn at sector
// granularity can damage only records not yet synced. Sequence
// numbers are consecutive. A reader stops at the first record that is short,
// fails its checksum, or does not carry the next number, which is how a torn
// or stale tail (records of an earlier log left after a restart) ends a log.
// A power loss can leave a later record whole after a damaged one (both
// unsynced), but never one whose durable mark covers the damaged record: a
// reader that finds such a record past where it stopped reports DataLoss,
// since a synced record was damaged on the medium.
//
// Thread-safety: none; the table calls it under its writer lock.
#ifndef ROUNDTABLE_ENGINE_INTERNAL_WAL_H_
#define ROUNDTABLE_ENGINE_INTERNAL_WAL_H_

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "io/block_device.h"

namespace roundtable::internal {

inline constexpr size_t kWalHeaderBytes = 28;

class WalWriter {
 public:
  // Borrows `device`, which must outlive the writer. The log starts empty:
  // Start cuts the device and begins at block 0.
  explicit WalWriter(io::BlockDevice* device);

  // Empties the log; the next record appended must carry `next_seq`, and
  // the durable mark starts at `durable_seq` (records up to it are synced,
  // in this log or another, or covered by a durable checkpoint). With
  // `zeroed` the device holds nothing but zeros already (it was cut to
  // nothing and synced, and perhaps grown since, with zeros): it keeps its
  // size, and the records go over the zeros.
  absl::Status Start(uint64_t next_seq, uint64_t durable_seq,
                     bool zeroed = false);

  // Continues the log after its first `end` bytes, the records a replay
  // found whole, the last of them numbered next_seq - 1: cuts what follows
  // (a torn tail, stale records), so that nothing but new records can ever
  // follow them, and syncs.
  absl::Status Resume(uint64_t end, uint64_t next_seq);

  // Appends a record numbered next_seq() and writes every block it touched
  // (one write): when it returns OK the operating system holds the record,
  // so it survives a crash of the process; Sync makes it survive power loss.
  absl::Status Append(std::string_view payload);
  // Appends a record whose `size` bytes of payload encode(out) writes at
  // `out`, where the record lies in the writer's buffer: no copy before.
  absl::Status Append(size_t size, absl::FunctionRef<void(char*)> encode);

  // Makes every appended record durable.
  absl::Status Sync();

  // Records up to `seq` are durable (synced by someone else): the durable
  // mark of later records says so.
  void NoteDurable(uint64_t seq) { durable_seq_ = std::max(durable_seq_, seq); }

  uint64_t next_seq() const { return next_seq_; }
  // Bytes of records in the log.
  uint64_t bytes() const { return bytes_; }

 private:
  // Announces the blocks up to a window past `end` (the records' end) to
  // the device, and gives up those more than a window behind the tail.
  void PrepareWindow(uint64_t end);
  // The window's length in blocks.
  uint64_t Window() const;

  io::BlockDevice* device_;
  const uint32_t block_size_;
  // The block being filled (block tail_block_ of the device), then room for
  // a record that runs into later blocks; zero after the tail's bytes.
  io::AlignedBuffer stage_;
  uint64_t tail_block_ = 0;
  size_t tail_fill_ = 0;  // bytes of records in the tail block
  // The log's memory is a window around the tail (BlockDevice::WillWrite,
  // DoneWith): the blocks from prepared_from_ to prepared_to_ were
  // announced, those before prepared_from_ given up.
  uint64_t prepared_from_ = 0;
  uint64_t prepared_to_ = 0;
  uint64_t next_seq_ = 0;
  uint64_t bytes_ = 0;
  uint64_t durable_seq_ = 0;  // the durable mark of the next record
  bool unsynced_ = false;
};

struct WalReplay {
  uint64_t records = 0;   // records passed to the callback
  uint64_t last_seq = 0;  // the last one's number (after_seq when none)
  uint64_t bytes = 0;     // where the valid log ends
};

// The number of the log's first record, if it is whole (nullopt for an
// empty log or a damaged first record).
absl::StatusOr<std::optional<uint64_t>> FirstWalSeq(io::BlockDevice& device);

// Whether a whole record's payload holds up beyond its checksum (the
// out-of-line values it refers to are in their file); false makes it end
// the log as a torn record does.
using WalRecordCheck = std::function<absl::StatusOr<bool>(std::string_view)>;

// Reads the log from its start and calls fn(seq, payload) for the records
// numbered after_seq + 1, after_seq + 2, ... in order. Records numbered
// after_seq or less at the start are skipped (a log restarted after a
// checkpoint that covered them). Stops at the end of the device or at the
// first record that is short, corrupt or out of sequence, or that `whole`
// (if given) finds wanting; that is not an error, unless a whole record further on (from the one where it stopped)
// carries a durable mark that covers the record where it stopped: then
// DataLoss. An error from fn, or a read error, is returned.
absl::StatusOr<WalReplay> ReplayWal(
    io::BlockDevice& device, uint64_t after_seq,
    const std::function<absl::Status(uint64_t, std::string_view)>& fn,
    const WalRecordCheck& whole = nullptr);

}  // namespace roundtable::internal

#endif  // ROUNDTABLE_ENGINE_INTERNAL_WAL_H_
