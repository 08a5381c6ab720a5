#include "engine/internal/wal.h"

#include <xxhash.h>

#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "engine/internal/coding.h"
#include "io/status_macros.h"

namespace roundtable::internal {
namespace {

// The device grows by this many blocks at a time, so that appends do not
// resize it every block.
constexpr uint64_t kGrowBlocks = 64;

constexpr size_t kChecksumAt = 20;

// XXH3-64 of the payload, seeded with XXH3-64 of the header's first 20
// bytes (length, number, durable mark), as bucket blocks do.
uint64_t RecordChecksum(const char* header, std::string_view payload) {
  return XXH3_64bits_withSeed(payload.data(), payload.size(),
                              XXH3_64bits(header, kChecksumAt));
}

}  // namespace

WalWriter::WalWriter(io::BlockDevice* device)
    : device_(device),
      block_size_(device->block_size()),
      stage_(device->block_size()) {}

absl::Status WalWriter::Start(uint64_t next_seq, uint64_t durable_seq,
                              bool zeroed) {
  if (!zeroed) RT_RETURN_IF_ERROR(device_->Resize(0));
  std::memset(stage_.data(), 0, stage_.size());
  tail_block_ = 0;
  tail_fill_ = 0;
  next_seq_ = next_seq;
  durable_seq_ = durable_seq;
  bytes_ = 0;
  unsynced_ = true;
  return absl::OkStatus();
}

absl::Status WalWriter::Resume(uint64_t end, uint64_t next_seq) {
  tail_block_ = end / block_size_;
  tail_fill_ = end % block_size_;
  std::memset(stage_.data(), 0, stage_.size());
  const uint64_t blocks = tail_block_ + (tail_fill_ > 0 ? 1 : 0);
  if (tail_fill_ > 0) {
    RT_RETURN_IF_ERROR(
        device_->Read(tail_block_, stage_.span().subspan(0, block_size_)));
    std::memset(stage_.data() + tail_fill_, 0, block_size_ - tail_fill_);
  }
  RT_RETURN_IF_ERROR(device_->Resize(blocks));
  if (tail_fill_ > 0) {
    RT_RETURN_IF_ERROR(
        device_->Write(tail_block_, stage_.span().subspan(0, block_size_)));
  }
  RT_RETURN_IF_ERROR(device_->Sync());
  next_seq_ = next_seq;
  durable_seq_ = next_seq - 1;
  bytes_ = end;
  unsynced_ = false;
  return absl::OkStatus();
}

absl::Status WalWriter::Append(std::string_view payload) {
  char header[kWalHeaderBytes];
  PutFixed32(header, static_cast<uint32_t>(payload.size()));
  PutFixed64(header + 4, next_seq_);
  PutFixed64(header + 12, durable_seq_);
  PutFixed64(header + kChecksumAt, RecordChecksum(header, payload));
  // The record goes after the tail's bytes in the stage; the blocks it
  // touches are consecutive, so one write (one system call) takes them all.
  const size_t end = tail_fill_ + kWalHeaderBytes + payload.size();
  const size_t blocks = (end + block_size_ - 1) / block_size_;
  if (blocks * block_size_ > stage_.size()) {
    io::AlignedBuffer larger(blocks * block_size_);
    std::memcpy(larger.data(), stage_.data(), tail_fill_);
    stage_ = std::move(larger);
  }
  std::memcpy(stage_.data() + tail_fill_, header, kWalHeaderBytes);
  std::memcpy(stage_.data() + tail_fill_ + kWalHeaderBytes, payload.data(),
              payload.size());
  if (tail_block_ + blocks > device_->num_blocks()) {
    RT_RETURN_IF_ERROR(device_->Resize(tail_block_ + blocks + kGrowBlocks));
  }
  // The device holds the tail's bytes before the record already, and zeros
  // after it (a log grows with zero blocks; Start and Resume cut what
  // followed its records, or find zeros there).
  RT_RETURN_IF_ERROR(device_->WriteChanged(
      tail_block_, stage_.span().subspan(0, blocks * block_size_), tail_fill_,
      end));
  // The last block, unless full, is the new tail: moved to the front, with
  // zeros after its bytes.
  const size_t full = end / block_size_;
  if (full > 0) {
    tail_block_ += full;
    tail_fill_ = end % block_size_;
    std::memmove(stage_.data(), stage_.data() + full * block_size_, tail_fill_);
    std::memset(stage_.data() + tail_fill_, 0, end - tail_fill_);
  } else {
    tail_fill_ = end;
  }
  ++next_seq_;
  bytes_ += kWalHeaderBytes + payload.size();
  unsynced_ = true;
  return absl::OkStatus();
}

absl::Status WalWriter::Sync() {
  if (!unsynced_) return absl::OkStatus();
  RT_RETURN_IF_ERROR(device_->Sync());
  unsynced_ = false;
  NoteDurable(next_seq_ - 1);
  return absl::OkStatus();
}

absl::StatusOr<std::optional<uint64_t>> FirstWalSeq(io::BlockDevice& device) {
  const uint32_t bs = device.block_size();
  const uint64_t blocks = device.num_blocks();
  if (blocks == 0) return std::nullopt;
  io::AlignedBuffer first(bs);
  RT_RETURN_IF_ERROR(device.Read(0, first.span()));
  const char* header = reinterpret_cast<const char*>(first.data());
  const uint64_t length = GetFixed32(header);
  const uint64_t size = kWalHeaderBytes + length;
  if (size > blocks * bs) return std::nullopt;
  io::AlignedBuffer record(bs * ((size + bs - 1) / bs));
  RT_RETURN_IF_ERROR(device.Read(0, record.span()));
  const char* r = reinterpret_cast<const char*>(record.data());
  const std::string_view payload(r + kWalHeaderBytes, length);
  if (RecordChecksum(r, payload) != GetFixed64(r + kChecksumAt)) {
    return std::nullopt;
  }
  return GetFixed64(r + 4);
}

absl::StatusOr<WalReplay> ReplayWal(
    io::BlockDevice& device, uint64_t after_seq,
    const std::function<absl::Status(uint64_t, std::string_view)>& fn) {
  const uint32_t bs = device.block_size();
  const uint64_t blocks = device.num_blocks();
  WalReplay replay;
  replay.last_seq = after_seq;
  // A window of the stream: whole blocks read so far, minus what was parsed.
  std::string window;
  uint64_t next_block = 0;
  uint64_t consumed = 0;  // stream offset of window[0]
  io::AlignedBuffer buffer(bs);
  // Makes the window hold at least n bytes; false at the end of the device.
  auto fill = [&](size_t n) -> absl::StatusOr<bool> {
    while (window.size() < n) {
      if (next_block >= blocks) return false;
      RT_RETURN_IF_ERROR(device.Read(next_block++, buffer.span()));
      window.append(reinterpret_cast<const char*>(buffer.data()), bs);
    }
    return true;
  };
  while (true) {
    RT_ASSIGN_OR_RETURN(const bool have, fill(kWalHeaderBytes));
    if (!have) break;
    const uint32_t length = GetFixed32(window.data());
    const uint64_t seq = GetFixed64(window.data() + 4);
    const uint64_t checksum = GetFixed64(window.data() + kChecksumAt);
    // A length past the end of the device is a torn or stale record.
    if (consumed + kWalHeaderBytes + length > blocks * bs) break;
    // Within the device, so the window fills.
    RT_RETURN_IF_ERROR(fill(kWalHeaderBytes + length).status());
    const std::string_view payload(window.data() + kWalHeaderBytes, length);
    if (RecordChecksum(window.data(), payload) != checksum) break;
    const bool stale = seq <= after_seq && replay.records == 0;
    if (!stale && seq != replay.last_seq + 1) break;
    if (!stale) {
      RT_RETURN_IF_ERROR(fn(seq, payload));
      ++replay.records;
      replay.last_seq = seq;
    }
    consumed += kWalHeaderBytes + length;
    replay.bytes = consumed;
    window.erase(0, kWalHeaderBytes + length);
  }
  // The log ends here unless a whole record further on says that the next
  // record was synced: then a synced record was damaged.
  RT_RETURN_IF_ERROR(fill(SIZE_MAX).status());
  const uint64_t expected = replay.last_seq + 1;
  // From the record where reading stopped: one whole but out of sequence
  // (a log that follows a damaged one) counts too.
  for (size_t o = 0; o + kWalHeaderBytes <= window.size(); ++o) {
    const char* header = window.data() + o;
    const uint64_t seq = GetFixed64(header + 4);
    if (seq <= expected || GetFixed64(header + 12) < expected) continue;
    const uint32_t length = GetFixed32(header);
    if (length > window.size() - o - kWalHeaderBytes) continue;
    const std::string_view payload(header + kWalHeaderBytes, length);
    if (RecordChecksum(header, payload) == GetFixed64(header + kChecksumAt)) {
      return absl::DataLossError(absl::StrCat(
          "write-ahead log record ", expected, " at byte ", consumed,
          " is damaged, but record ", seq, " after it says it was synced"));
    }
  }
  return replay;
}

}  // namespace roundtable::internal
