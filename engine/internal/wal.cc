#include "engine/internal/wal.h"

#include <xxhash.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "engine/internal/coding.h"
#include "io/base/status_macros.h"

namespace roundtable::internal {
namespace {

// The device grows by this many blocks at a time, so that appends do not
// resize it every block.
constexpr uint64_t kGrowBlocks = 64;
// The log's resident window: this much ahead of its tail faulted in at a
// time, and what lies more than this behind it given up.
constexpr uint64_t kWindowBytes = 1 << 20;

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
  prepared_from_ = prepared_to_ = 0;
  next_seq_ = next_seq;
  durable_seq_ = durable_seq;
  bytes_ = 0;
  unsynced_ = true;
  return absl::OkStatus();
}

absl::Status WalWriter::Resume(uint64_t end, uint64_t next_seq) {
  tail_block_ = end / block_size_;
  tail_fill_ = end % block_size_;
  prepared_from_ = prepared_to_ = tail_block_;
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
  return Append(payload.size(), [&](char* out) {
    if (!payload.empty()) std::memcpy(out, payload.data(), payload.size());
  });
}

absl::Status WalWriter::Append(size_t size,
                               absl::FunctionRef<void(char*)> encode) {
  // The record goes after the tail's bytes in the stage; the blocks it
  // touches are consecutive, so one write (one system call) takes them all.
  const size_t end = tail_fill_ + kWalHeaderBytes + size;
  const size_t blocks = (end + block_size_ - 1) / block_size_;
  if (blocks * block_size_ > stage_.size()) {
    io::AlignedBuffer larger(blocks * block_size_);
    std::memcpy(larger.data(), stage_.data(), tail_fill_);
    stage_ = std::move(larger);
  }
  char* header = reinterpret_cast<char*>(stage_.data()) + tail_fill_;
  encode(header + kWalHeaderBytes);
  PutFixed32(header, static_cast<uint32_t>(size));
  PutFixed64(header + 4, next_seq_);
  PutFixed64(header + 12, durable_seq_);
  PutFixed64(header + kChecksumAt,
             RecordChecksum(header, {header + kWalHeaderBytes, size}));
  if (tail_block_ + blocks > device_->num_blocks()) {
    // By an eighth at a time: a log of any length grows in a few steps.
    RT_RETURN_IF_ERROR(
        device_->Resize(tail_block_ + blocks +
                        std::max(kGrowBlocks, device_->num_blocks() / 8)));
  }
  // The next window is announced while half of this one is still ahead,
  // so that it is faulted in before the records reach it.
  if (tail_block_ + blocks + Window() / 2 > prepared_to_ &&
      prepared_to_ < device_->num_blocks()) {
    PrepareWindow(tail_block_ + blocks);
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
  bytes_ += kWalHeaderBytes + size;
  unsynced_ = true;
  return absl::OkStatus();
}

uint64_t WalWriter::Window() const {
  return std::max<uint64_t>(1, kWindowBytes / block_size_);
}

void WalWriter::PrepareWindow(uint64_t end) {
  const uint64_t window = Window();
  // The next window faulted in ahead of the records...
  const uint64_t from = std::max(prepared_to_, tail_block_);
  prepared_to_ = std::min(end + window, device_->num_blocks());
  if (prepared_to_ > from) device_->WillWrite(from, prepared_to_ - from);
  // ...and what lies more than a window behind them given up.
  if (tail_block_ > prepared_from_ + 2 * window) {
    device_->DoneWith(prepared_from_, tail_block_ - window - prepared_from_);
    prepared_from_ = tail_block_ - window;
  }
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

namespace {

// Records longer than this are checked on the device, block by block,
// before the replay reads them whole: a crafted length in a large (or
// sparse) file costs a pass over it, never an allocation of its size.
constexpr uint64_t kLargeRecord = uint64_t{1} << 20;

// Whether the record whose 28-byte header is `header`, at stream offset
// `at` of `device`, is whole: its payload's checksum computed from the
// device a run of blocks at a time. REQUIRES: it ends within the device.
absl::StatusOr<bool> WholeOnDevice(io::BlockDevice& device, uint64_t at,
                                   const char* header) {
  const uint32_t bs = device.block_size();
  const uint64_t length = GetFixed32(header);
  XXH3_state_t* state = XXH3_createState();
  if (state == nullptr) return absl::ResourceExhaustedError("XXH3 state");
  XXH3_64bits_reset_withSeed(state, XXH3_64bits(header, kChecksumAt));
  constexpr uint64_t kRun = 64;  // blocks a read
  io::AlignedBuffer run(kRun * bs);
  uint64_t from = at + kWalHeaderBytes;
  const uint64_t end = from + length;
  absl::Status status;
  while (from < end && status.ok()) {
    const uint64_t block = from / bs;
    const uint64_t blocks =
        std::min<uint64_t>(kRun, (end + bs - 1) / bs - block);
    status = device.Read(block, run.span().subspan(0, blocks * bs));
    const uint64_t skip = from - block * bs;
    const uint64_t take = std::min<uint64_t>(blocks * bs - skip, end - from);
    XXH3_64bits_update(state, run.data() + skip, take);
    from += take;
  }
  const uint64_t digest = XXH3_64bits_digest(state);
  XXH3_freeState(state);
  if (!status.ok()) return status;
  return digest == GetFixed64(header + kChecksumAt);
}

}  // namespace

absl::StatusOr<WalReplay> ReplayWal(
    io::BlockDevice& device, uint64_t after_seq,
    const std::function<absl::Status(uint64_t, std::string_view)>& fn,
    const WalRecordCheck& whole) {
  const uint32_t bs = device.block_size();
  const uint64_t blocks = device.num_blocks();
  const uint64_t device_bytes = blocks * bs;
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
    if (consumed + kWalHeaderBytes + length > device_bytes) break;
    if (length > kLargeRecord && window.size() < kWalHeaderBytes + length) {
      RT_ASSIGN_OR_RETURN(const bool whole,
                          WholeOnDevice(device, consumed, window.data()));
      if (!whole) break;
    }
    // Within the device, so the window fills.
    RT_RETURN_IF_ERROR(fill(kWalHeaderBytes + length).status());
    const std::string_view payload(window.data() + kWalHeaderBytes, length);
    if (RecordChecksum(window.data(), payload) != checksum) break;
    const bool stale = seq <= after_seq && replay.records == 0;
    if (!stale && seq != replay.last_seq + 1) break;
    if (!stale && whole) {
      RT_ASSIGN_OR_RETURN(const bool holds, whole(payload));
      if (!holds) break;
    }
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
  // record was synced: then a synced record was damaged. From the record
  // where reading stopped (one whole but out of sequence, as a log that
  // follows a damaged one, counts too), every byte offset is a candidate
  // whose header could belong to such a record: numbered after the stop,
  // within as many records as the rest of the device holds, with a
  // durable mark from the stop up to below its own number. Only those are
  // checksummed, at most twice the rest of the device in all (random
  // bytes give almost none): a log crafted to pass more is reported as
  // damaged rather than searched without end. Time and memory stay
  // linear in the device's size.
  const uint64_t expected = replay.last_seq + 1;
  const uint64_t rest = device_bytes - consumed;
  const uint64_t most_records = rest / kWalHeaderBytes + 1;
  uint64_t budget = 2 * rest + kLargeRecord;
  // The window from `consumed` on, refilled a run of blocks at a time with
  // the last header's worth kept in front.
  constexpr size_t kRun = 256;  // blocks a read
  io::AlignedBuffer run(kRun * bs);
  uint64_t base = consumed;  // stream offset of window[0]
  for (uint64_t o = consumed; o + kWalHeaderBytes <= device_bytes; ++o) {
    if (o + kWalHeaderBytes > base + window.size()) {
      window.erase(0, o - base);
      base = o;
      const uint64_t n = std::min<uint64_t>(kRun, blocks - next_block);
      RT_RETURN_IF_ERROR(device.Read(next_block, run.span().subspan(0, n * bs)));
      next_block += n;
      window.append(reinterpret_cast<const char*>(run.data()), n * bs);
    }
    const char* header = window.data() + (o - base);
    const uint64_t seq = GetFixed64(header + 4);
    const uint64_t mark = GetFixed64(header + 12);
    if (seq <= expected || seq - expected > most_records || mark < expected ||
        mark >= seq) {
      continue;
    }
    const uint64_t length = GetFixed32(header);
    if (o + kWalHeaderBytes + length > device_bytes) continue;
    if (length > budget) {
      return absl::DataLossError(absl::StrCat(
          "write-ahead log record ", expected, " at byte ", consumed,
          " is damaged, and what follows it holds too many records that "
          "claim to vouch for it to search"));
    }
    budget -= length;
    bool whole;
    if (o - base + kWalHeaderBytes + length <= window.size()) {
      whole = RecordChecksum(header, std::string_view(
                                         header + kWalHeaderBytes, length)) ==
              GetFixed64(header + kChecksumAt);
    } else {
      RT_ASSIGN_OR_RETURN(whole, WholeOnDevice(device, o, header));
    }
    if (whole) {
      return absl::DataLossError(absl::StrCat(
          "write-ahead log record ", expected, " at byte ", consumed,
          " is damaged, but record ", seq, " after it says it was synced"));
    }
  }
  return replay;
}

}  // namespace roundtable::internal
