#include "io/block_device.h"

#include <chrono>
#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "io/base/status_macros.h"

namespace roundtable::io {
namespace {

// Measures the time a public call spends in the backend, unless the
// device is a layer over another (whose own ledger has that time).
class WaitTimer {
 public:
  WaitTimer(IoLedger& ledger, bool timed) : ledger_(timed ? &ledger : nullptr) {
    if (ledger_ != nullptr) start_ = std::chrono::steady_clock::now();
  }
  ~WaitTimer() {
    if (ledger_ == nullptr) return;
    ledger_->CountWait(std::chrono::duration_cast<std::chrono::nanoseconds>(
                           std::chrono::steady_clock::now() - start_)
                           .count());
  }

 private:
  IoLedger* const ledger_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace

void IoLedger::CountRead(uint64_t blocks, uint64_t bytes) {
  blocks_read_ += blocks;
  bytes_read_ += bytes;
  ++read_ops_;
}

void IoLedger::CountWrite(uint64_t blocks, uint64_t bytes) {
  blocks_written_ += blocks;
  bytes_written_ += bytes;
  ++write_ops_;
}

IoStats IoLedger::Snapshot() const {
  IoStats s;
  s.blocks_read = blocks_read_;
  s.bytes_read = bytes_read_;
  s.blocks_written = blocks_written_;
  s.bytes_written = bytes_written_;
  s.read_ops = read_ops_;
  s.write_ops = write_ops_;
  s.submissions = submissions_;
  s.syncs = syncs_;
  s.wait_ns = wait_ns_;
  return s;
}

absl::Status BlockDevice::CheckWritable(const char* op) const {
  if (!capabilities().read_only) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat(op, " ", path_, ": the device is open read-only"));
}

absl::Status BlockDevice::CheckTransfer(const char* op, uint64_t block,
                                        const void* data, size_t size) const {
  const Capabilities& caps = capabilities();
  const uint64_t offset = block * caps.block_size;
  auto describe = [&] {
    return absl::StrCat(op, " ", path_, " offset ", offset, " length ", size);
  };
  if (size == 0 || size % caps.block_size != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        describe(), ": length is not a positive multiple of the block size ",
        caps.block_size));
  }
  if (caps.buffer_alignment > 1 &&
      (reinterpret_cast<uintptr_t>(data) % caps.buffer_alignment != 0 ||
       size % caps.buffer_alignment != 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat(describe(), ": direct I/O needs buffers aligned to ",
                     caps.buffer_alignment, " bytes"));
  }
  const uint64_t blocks = size / caps.block_size;
  const uint64_t end = num_blocks();
  if (block >= end || blocks > end - block) {
    return absl::OutOfRangeError(absl::StrCat(
        describe(), ": past the end of the device (", end, " blocks)"));
  }
  return absl::OkStatus();
}

absl::Status BlockDevice::Read(uint64_t block, std::span<std::byte> buffer) {
  RT_RETURN_IF_ERROR(
      CheckTransfer("read", block, buffer.data(), buffer.size()));
  WaitTimer timer(ledger_, timed_);
  RT_RETURN_IF_ERROR(DoRead(block, buffer));
  ledger_.CountRead(buffer.size() / block_size(), buffer.size());
  return absl::OkStatus();
}

absl::Status BlockDevice::Write(uint64_t block,
                                std::span<const std::byte> buffer) {
  RT_RETURN_IF_ERROR(CheckWritable("write"));
  RT_RETURN_IF_ERROR(
      CheckTransfer("write", block, buffer.data(), buffer.size()));
  WaitTimer timer(ledger_, timed_);
  RT_RETURN_IF_ERROR(DoWrite(block, buffer));
  ledger_.CountWrite(buffer.size() / block_size(), buffer.size());
  return absl::OkStatus();
}

absl::Status BlockDevice::WriteChanged(uint64_t block,
                                       std::span<const std::byte> buffer,
                                       size_t begin, size_t end) {
  RT_RETURN_IF_ERROR(CheckWritable("write"));
  RT_RETURN_IF_ERROR(
      CheckTransfer("write", block, buffer.data(), buffer.size()));
  if (begin > end || end > buffer.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("write ", path(), ": bytes [", begin, ", ", end,
                     ") changed in a ", buffer.size(), "-byte buffer"));
  }
  const bool partial = capabilities().partial_writes;
  if (partial) {
    // Stores into the map: nothing is waited for (the log's appends, a
    // few hundred bytes, cost less than the two clock reads of a timer).
    RT_RETURN_IF_ERROR(DoWriteChanged(block, buffer, begin, end));
  } else {
    WaitTimer timer(ledger_, timed_);
    RT_RETURN_IF_ERROR(DoWrite(block, buffer));
  }
  ledger_.CountWrite(buffer.size() / block_size(),
                     partial ? end - begin : buffer.size());
  return absl::OkStatus();
}

absl::Status BlockDevice::ReadBatch(std::span<const ReadRequest> requests) {
  for (const ReadRequest& r : requests) {
    RT_RETURN_IF_ERROR(
        CheckTransfer("read", r.block, r.buffer.data(), r.buffer.size()));
  }
  if (requests.empty()) return absl::OkStatus();
  WaitTimer timer(ledger_, timed_);
  RT_RETURN_IF_ERROR(DoReadBatch(requests));
  for (const ReadRequest& r : requests) {
    ledger_.CountRead(r.buffer.size() / block_size(), r.buffer.size());
  }
  return absl::OkStatus();
}

absl::Status BlockDevice::WriteBatch(std::span<const WriteRequest> requests) {
  RT_RETURN_IF_ERROR(CheckWritable("write"));
  for (const WriteRequest& r : requests) {
    RT_RETURN_IF_ERROR(
        CheckTransfer("write", r.block, r.buffer.data(), r.buffer.size()));
  }
  if (requests.empty()) return absl::OkStatus();
  WaitTimer timer(ledger_, timed_);
  RT_RETURN_IF_ERROR(DoWriteBatch(requests));
  for (const WriteRequest& r : requests) {
    ledger_.CountWrite(r.buffer.size() / block_size(), r.buffer.size());
  }
  return absl::OkStatus();
}

absl::Status BlockDevice::Sync() {
  WaitTimer timer(ledger_, timed_);
  RT_RETURN_IF_ERROR(DoSync());
  ledger_.CountSync();
  return absl::OkStatus();
}

absl::Status BlockDevice::WriteBack() {
  WaitTimer timer(ledger_, timed_);
  return DoWriteBack();
}

absl::Status BlockDevice::Resize(uint64_t num_blocks) {
  RT_RETURN_IF_ERROR(CheckWritable("resize"));
  WaitTimer timer(ledger_, timed_);
  return DoResize(num_blocks);
}

absl::Status BlockDevice::DoReadBatch(std::span<const ReadRequest> requests) {
  for (const ReadRequest& r : requests) {
    RT_RETURN_IF_ERROR(DoRead(r.block, r.buffer));
  }
  return absl::OkStatus();
}

absl::Status BlockDevice::DoWriteBatch(std::span<const WriteRequest> requests) {
  for (const WriteRequest& r : requests) {
    RT_RETURN_IF_ERROR(DoWrite(r.block, r.buffer));
  }
  return absl::OkStatus();
}

AlignedBuffer::AlignedBuffer(size_t size, size_t alignment, bool zeroed)
    : size_(size) {
  const size_t rounded = (size + alignment - 1) / alignment * alignment;
  void* p = std::aligned_alloc(alignment, rounded == 0 ? alignment : rounded);
  if (p == nullptr) std::abort();
  if (zeroed) std::memset(p, 0, rounded == 0 ? alignment : rounded);
  data_.reset(static_cast<std::byte*>(p));
}

void AlignedBuffer::Free::operator()(std::byte* p) const { std::free(p); }

}  // namespace roundtable::io
