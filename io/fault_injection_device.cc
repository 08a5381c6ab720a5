#include "io/fault_injection_device.h"

#include <algorithm>
#include <cstring>
#include <random>

#include "absl/strings/str_cat.h"
#include "io/base/status_macros.h"

namespace roundtable::io {
namespace {

constexpr size_t kSectorBytes = 512;

}  // namespace

FaultInjectionDevice::FaultInjectionDevice(std::unique_ptr<BlockDevice> inner)
    : BlockDevice(inner->path()), inner_(std::move(inner)) {
  caps_ = inner_->capabilities();
  caps_.backend = absl::StrCat("fault(", caps_.backend, ")");
  caps_.parallel_batches = false;
  caps_.partial_writes = false;  // whole blocks, torn only at a power loss
  durable_blocks_ = inner_->num_blocks();
}

void FaultInjectionDevice::FailNth(Op op, uint64_t n, absl::Status error) {
  MutexLock lock(&mu_);
  armed_[static_cast<int>(op)] = Armed{n, std::move(error)};
}

absl::Status FaultInjectionDevice::Tick(Op op) {
  Armed& armed = armed_[static_cast<int>(op)];
  if (armed.remaining == 0) return absl::OkStatus();
  if (--armed.remaining > 0) return absl::OkStatus();
  return armed.error;
}

absl::Status FaultInjectionDevice::RememberDurable(uint64_t block) {
  if (durable_.count(block)) return absl::OkStatus();
  if (block >= durable_blocks_) {
    durable_.emplace(block, std::nullopt);
    return absl::OkStatus();
  }
  // Not changed since the last Sync, so what is stored now is durable.
  AlignedBuffer bytes(caps_.block_size);
  RT_RETURN_IF_ERROR(inner_->Read(block, bytes.span()));
  durable_.emplace(block, std::move(bytes));
  return absl::OkStatus();
}

absl::Status FaultInjectionDevice::DoRead(uint64_t block,
                                          std::span<std::byte> buffer) {
  MutexLock lock(&mu_);
  RT_RETURN_IF_ERROR(Tick(Op::kRead));
  return inner_->Read(block, buffer);
}

absl::Status FaultInjectionDevice::DoWrite(uint64_t block,
                                           std::span<const std::byte> buffer) {
  MutexLock lock(&mu_);
  RT_RETURN_IF_ERROR(Tick(Op::kWrite));
  const uint64_t blocks = buffer.size() / caps_.block_size;
  for (uint64_t b = block; b < block + blocks; ++b) {
    RT_RETURN_IF_ERROR(RememberDurable(b));
  }
  return inner_->Write(block, buffer);
}

absl::Status FaultInjectionDevice::DoSync() {
  MutexLock lock(&mu_);
  RT_RETURN_IF_ERROR(Tick(Op::kSync));
  RT_RETURN_IF_ERROR(inner_->Sync());
  durable_.clear();
  durable_blocks_ = inner_->num_blocks();
  return absl::OkStatus();
}

absl::Status FaultInjectionDevice::DoResize(uint64_t num_blocks) {
  MutexLock lock(&mu_);
  // Truncated blocks lose their bytes now but not on the medium until a
  // Sync: remember what a power loss would bring back.
  const uint64_t end = std::min(inner_->num_blocks(), durable_blocks_);
  for (uint64_t b = num_blocks; b < end; ++b) {
    RT_RETURN_IF_ERROR(RememberDurable(b));
  }
  return inner_->Resize(num_blocks);
}

absl::StatusOr<FaultInjectionDevice::PowerLossReport>
FaultInjectionDevice::LosePower(const PowerLoss& how) {
  MutexLock lock(&mu_);
  std::mt19937_64 rng(how.seed);
  PowerLossReport report;

  // A block past the current end was truncated after its write: its new
  // state is "absent", so keeping it is the same as dropping it back to its
  // durable bytes. Only blocks that exist now can be kept or torn.
  const uint64_t current = inner_->num_blocks();
  std::vector<uint64_t> unsynced, present;
  for (const auto& [block, bytes] : durable_) {
    unsynced.push_back(block);
    if (block < current) present.push_back(block);
  }
  std::optional<uint64_t> torn;
  const size_t sectors = caps_.block_size / kSectorBytes;
  if (how.tear_one && !present.empty() && sectors >= 2) {
    torn = present[rng() % present.size()];
  }
  uint64_t end = durable_blocks_;
  for (const uint64_t block : unsynced) {
    if (block == torn) continue;
    const bool keep = how.keep_random_subset && block < current && (rng() & 1);
    (keep ? report.kept : report.dropped).push_back(block);
    if (keep) end = std::max(end, block + 1);
  }
  if (torn) end = std::max(end, *torn + 1);

  // Put the bytes back with the device large enough for every block touched,
  // then cut it to the size that survived.
  uint64_t widest = std::max(current, end);
  for (const uint64_t block : report.dropped) {
    widest = std::max(widest, block + 1);
  }
  if (widest > current) RT_RETURN_IF_ERROR(inner_->Resize(widest));
  AlignedBuffer zeros(caps_.block_size);
  for (const uint64_t block : report.dropped) {
    if (block >= end) continue;  // cut below
    const std::optional<AlignedBuffer>& old = durable_.at(block);
    RT_RETURN_IF_ERROR(inner_->Write(block, old ? old->span() : zeros.span()));
  }
  if (torn) {
    AlignedBuffer now(caps_.block_size);
    RT_RETURN_IF_ERROR(inner_->Read(*torn, now.span()));
    const std::optional<AlignedBuffer>& old = durable_.at(*torn);
    // At least one sector of each: pick one of each, then toss the rest.
    report.torn_sectors_new.assign(sectors, false);
    const size_t new_one = rng() % sectors;
    const size_t old_one = (new_one + 1 + rng() % (sectors - 1)) % sectors;
    for (size_t i = 0; i < sectors; ++i) {
      report.torn_sectors_new[i] =
          i == new_one || (i != old_one && (rng() & 1));
    }
    AlignedBuffer mixed(caps_.block_size);
    for (size_t i = 0; i < sectors; ++i) {
      const std::byte* from = report.torn_sectors_new[i]
                                  ? now.data()
                                  : (old ? old->data() : zeros.data());
      std::memcpy(mixed.data() + i * kSectorBytes, from + i * kSectorBytes,
                  kSectorBytes);
    }
    RT_RETURN_IF_ERROR(inner_->Write(*torn, mixed.span()));
    report.torn = torn;
  }
  if (inner_->num_blocks() != end) RT_RETURN_IF_ERROR(inner_->Resize(end));

  durable_.clear();
  durable_blocks_ = end;
  report.num_blocks = end;
  return report;
}

absl::Status FaultInjectionDevice::FlipBit(uint64_t block, uint64_t bit) {
  MutexLock lock(&mu_);
  if (block >= inner_->num_blocks() || bit >= caps_.block_size * 8ull) {
    return absl::OutOfRangeError(absl::StrCat("flip bit ", bit, " of block ",
                                              block, ": outside the device"));
  }
  AlignedBuffer bytes(caps_.block_size);
  RT_RETURN_IF_ERROR(inner_->Read(block, bytes.span()));
  bytes.data()[bit / 8] ^=
      std::byte{static_cast<unsigned char>(1u << (bit % 8))};
  return inner_->Write(block, bytes.span());
}

std::vector<uint64_t> FaultInjectionDevice::UnsyncedBlocks() const {
  MutexLock lock(&mu_);
  std::vector<uint64_t> blocks;
  for (const auto& [block, bytes] : durable_) blocks.push_back(block);
  return blocks;
}

}  // namespace roundtable::io
