#include "engine/internal/wal.h"

#include <xxhash.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

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
      tail_(device->block_size()) {}

absl::Status WalWriter::Start(uint64_t next_seq) {
  RT_RETURN_IF_ERROR(device_->Resize(0));
  std::memset(tail_.data(), 0, block_size_);
  tail_block_ = 0;
  tail_fill_ = 0;
  next_seq_ = next_seq;
  // What went before is covered by the checkpoint that restarted the log.
  durable_seq_ = next_seq - 1;
  bytes_ = 0;
  unsynced_ = true;
  return absl::OkStatus();
}

absl::Status WalWriter::Append(std::string_view payload) {
  char header[kWalHeaderBytes];
  PutFixed32(header, static_cast<uint32_t>(payload.size()));
  PutFixed64(header + 4, next_seq_);
  PutFixed64(header + 12, durable_seq_);
  PutFixed64(header + kChecksumAt, RecordChecksum(header, payload));
  // The record's bytes go into the tail block; each block that fills is
  // kept for the batch, and a fresh tail follows it.
  std::vector<io::AlignedBuffer> full;
  const uint64_t first_block = tail_block_;
  auto put = [&](std::string_view bytes) {
    while (!bytes.empty()) {
      const size_t n = std::min(bytes.size(), block_size_ - tail_fill_);
      std::memcpy(tail_.data() + tail_fill_, bytes.data(), n);
      tail_fill_ += n;
      bytes.remove_prefix(n);
      if (tail_fill_ == block_size_) {
        full.push_back(std::move(tail_));
        tail_ = io::AlignedBuffer(block_size_);
        ++tail_block_;
        tail_fill_ = 0;
      }
    }
  };
  put(std::string_view(header, kWalHeaderBytes));
  put(payload);
  const uint64_t end = tail_block_ + (tail_fill_ > 0 ? 1 : 0);
  if (end > device_->num_blocks()) {
    RT_RETURN_IF_ERROR(device_->Resize(end + kGrowBlocks));
  }
  std::vector<io::WriteRequest> writes;
  for (size_t i = 0; i < full.size(); ++i) {
    writes.push_back({first_block + i, full[i].span()});
  }
  if (tail_fill_ > 0) writes.push_back({tail_block_, tail_.span()});
  // One block (most records) takes the device's plain write path, cheaper
  // than a batch submission.
  RT_RETURN_IF_ERROR(writes.size() == 1
                         ? device_->Write(writes[0].block, writes[0].buffer)
                         : device_->WriteBatch(writes));
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
  for (size_t o = 1; o + kWalHeaderBytes <= window.size(); ++o) {
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
