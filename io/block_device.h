// BlockDevice: the one interface through which roundtable reads and writes
// bytes. A device is an array of fixed-size blocks numbered from 0; every
// transfer is whole blocks. Backends: io_uring, POSIX, a memory-mapped file,
// memory, and a fault-injection wrapper over any of them (docs/io.md).
//
// Thread-safety: every method of every backend may be called from any number
// of threads at once; each call is atomic with respect to the ledger, and
// concurrent transfers to the same block leave one of the writers' bytes.
#ifndef ROUNDTABLE_IO_BLOCK_DEVICE_H_
#define ROUNDTABLE_IO_BLOCK_DEVICE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "roundtable/io.h"

namespace roundtable::io {

// The block sizes every device and the table take: powers of two from
// kMinBlockSize to kMaxBlockSize bytes.
inline constexpr uint32_t kMinBlockSize = 512;
inline constexpr uint32_t kMaxBlockSize = 65536;
inline constexpr bool IsValidBlockSize(uint32_t bs) {
  return bs >= kMinBlockSize && bs <= kMaxBlockSize && (bs & (bs - 1)) == 0;
}

// What a device is and can do.
struct Capabilities {
  std::string backend;  // "uring", "posix", "memory", "mmap", "fault(<inner>)"
  uint32_t block_size = 0;  // bytes; a power of two from 512 to 65536
  bool direct_io = false;   // O_DIRECT: buffers must be aligned (below)
  bool parallel_batches = false;  // a batch's transfers run concurrently
  // WriteChanged stores only the bytes that changed (the memory map); the
  // others write whole blocks.
  bool partial_writes = false;
  // Buffers and their lengths must be multiples of this (1 when any buffer
  // works). For direct I/O it is min(block_size, 4096).
  size_t buffer_alignment = 1;
  // Opened for reading only (DeviceOptions::read_only): every write,
  // WriteBatch and Resize is FailedPrecondition, with nothing changed.
  bool read_only = false;
};

// The physical ledger (roundtable/io.h): what a device did, counted as it
// happened. Counters only grow; IoLedger::Snapshot() reads them all.
using IoStats = ::roundtable::IoStats;

// Thread-safe counters behind IoStats.
class IoLedger {
 public:
  // One read or write operation of `bytes` bytes (`blocks` blocks).
  void CountRead(uint64_t blocks, uint64_t bytes);
  void CountWrite(uint64_t blocks, uint64_t bytes);
  void CountSubmission(uint64_t n = 1) { submissions_ += n; }
  void CountSync() { ++syncs_; }
  void CountWait(uint64_t ns) { wait_ns_ += ns; }
  IoStats Snapshot() const;

 private:
  std::atomic<uint64_t> blocks_read_{0}, bytes_read_{0}, blocks_written_{0},
      bytes_written_{0}, read_ops_{0}, write_ops_{0}, submissions_{0},
      syncs_{0}, wait_ns_{0};
};

// One transfer of a batch: `buffer.size()` bytes (a whole number of blocks)
// starting at block `block`.
struct ReadRequest {
  uint64_t block = 0;
  std::span<std::byte> buffer;
};
struct WriteRequest {
  uint64_t block = 0;
  std::span<const std::byte> buffer;
};

// The contract every backend keeps:
//
// - All or error: a transfer moves every byte asked for or returns an error.
//   Short reads and writes are resubmitted for the rest; EINTR and EAGAIN are
//   retried. An error names the operation, path, offset and length.
// - Shape: a buffer's length is a positive whole number of blocks, and with
//   direct I/O its address and length are multiples of
//   capabilities().buffer_alignment; anything else is InvalidArgument and
//   nothing is transferred. A transfer reaching past num_blocks() is
//   OutOfRange (reads and writes alike: a device grows only by Resize).
// - Buffers are borrowed for the duration of the call and never kept.
// - Batches: every request of a batch is carried out (in any order, possibly
//   at once) before the call returns; on error the first error is returned
//   and the other requests may or may not have happened. Requests of one
//   WriteBatch must not overlap.
// - Sync: when it returns OK, every write that completed before the call is
//   durable (survives power loss), and so is the current size. Writes not
//   covered by a successful Sync may be lost, torn at sector (512-byte)
//   granularity, or kept, in any combination. After a failed Sync the device
//   promises nothing about unsynced data (retrying does not help).
// - Resize: grows with zero blocks or truncates at the end. A Resize that
//   fails leaves the size as it was.
// - Read-only: a device opened read-only refuses every write and Resize
//   with FailedPrecondition.
class BlockDevice {
 public:
  virtual ~BlockDevice() = default;

  virtual const Capabilities& capabilities() const = 0;
  uint32_t block_size() const { return capabilities().block_size; }
  const std::string& path() const { return path_; }
  virtual uint64_t num_blocks() const = 0;

  // One contiguous transfer starting at `block`.
  absl::Status Read(uint64_t block, std::span<std::byte> buffer);
  absl::Status Write(uint64_t block, std::span<const std::byte> buffer);
  // Write, for a caller that knows the device already holds every byte of
  // `buffer` outside [begin, end) (a log appending to its partly filled
  // last block): with capabilities().partial_writes only those bytes are
  // stored, and counted in bytes_written. InvalidArgument unless
  // begin <= end <= buffer.size().
  absl::Status WriteChanged(uint64_t block, std::span<const std::byte> buffer,
                            size_t begin, size_t end);

  // Many transfers in one submission where the backend can (io_uring's
  // reads and direct writes); a file's buffered write batch is one pwritev
  // per run of adjacent blocks; the others carry them out one after the
  // other.
  absl::Status ReadBatch(std::span<const ReadRequest> requests);
  absl::Status WriteBatch(std::span<const WriteRequest> requests);

  absl::Status Sync();
  // Starts writing the completed writes to the medium and returns without
  // waiting for them: a hint that makes the next Sync shorter. It promises
  // no durability (only Sync does); a write-back that fails is reported by
  // the next Sync. The file backends call sync_file_range; the others do
  // nothing.
  absl::Status WriteBack();
  // Hints for a caller that writes a device front to back (the table's
  // log). WillWrite: blocks [block, block + n) are about to be written.
  // DoneWith: blocks [block, block + n) were written and will not be
  // written or read again soon. Neither changes a byte, counts in the
  // ledger or promises anything; the memory-mapped backend faults the
  // first in now, in one call, and drops the second from the process's
  // memory (their bytes stay in the page cache and reach the file as any
  // other write), so that the log's resident memory is a window around
  // its end rather than all it holds. The other backends ignore them.
  void WillWrite(uint64_t block, uint64_t n) { DoWillWrite(block, n); }
  void DoneWith(uint64_t block, uint64_t n) { DoDoneWith(block, n); }
  absl::Status Resize(uint64_t num_blocks);

  // The physical ledger. Blocks, bytes and operations count successful
  // transfers; wait_ns is the time spent inside the calls above (0 on a
  // layer over another device: the time is that device's).
  IoStats stats() const { return ledger_.Snapshot(); }

 protected:
  // Whether the device stores its blocks itself or is a layer over another
  // device: a layer's calls are not timed (two clock reads a transfer, at
  // each layer, on the path of every block read).
  enum class Storage { kOwn, kLayer };
  explicit BlockDevice(std::string path, Storage storage = Storage::kOwn)
      : path_(std::move(path)), timed_(storage == Storage::kOwn) {}

  // The backends' part. The public calls have already checked the shape of
  // every request and will count what succeeds; DoReadBatch and DoWriteBatch
  // default to one DoRead or DoWrite after the other.
  virtual absl::Status DoRead(uint64_t block, std::span<std::byte> buffer) = 0;
  virtual absl::Status DoWrite(uint64_t block,
                               std::span<const std::byte> buffer) = 0;
  // WriteChanged's part where capabilities().partial_writes: store
  // buffer[begin, end) at its place (by default, the whole buffer).
  virtual absl::Status DoWriteChanged(uint64_t block,
                                      std::span<const std::byte> buffer,
                                      size_t /*begin*/, size_t /*end*/) {
    return DoWrite(block, buffer);
  }
  virtual absl::Status DoReadBatch(std::span<const ReadRequest> requests);
  virtual absl::Status DoWriteBatch(std::span<const WriteRequest> requests);
  virtual absl::Status DoSync() = 0;
  virtual absl::Status DoWriteBack() { return absl::OkStatus(); }
  virtual void DoWillWrite(uint64_t /*block*/, uint64_t /*n*/) {}
  virtual void DoDoneWith(uint64_t /*block*/, uint64_t /*n*/) {}
  virtual absl::Status DoResize(uint64_t num_blocks) = 0;

  // InvalidArgument or OutOfRange per the contract above, naming `op`, the
  // path, the offset and the length.
  absl::Status CheckTransfer(const char* op, uint64_t block, const void* data,
                             size_t size) const;
  // FailedPrecondition naming `op` and the path on a read-only device.
  absl::Status CheckWritable(const char* op) const;

  IoLedger& ledger() { return ledger_; }

 private:
  std::string path_;
  const bool timed_;
  IoLedger ledger_;
};

using Backend = ::roundtable::Backend;  // roundtable/io.h

// "auto", "uring", "posix", "memory", "mmap"; InvalidArgument otherwise.
absl::StatusOr<Backend> ParseBackend(std::string_view name);

struct DeviceOptions {
  Backend backend = Backend::kAuto;
  uint32_t block_size = 4096;
  bool direct_io = false;
  uint32_t queue_depth = 32;  // io_uring entries; also the largest batch
                              // in flight at once
  bool create_if_missing = true;
  // Open the file for reading only: nothing is created (create_if_missing
  // is ignored), and writes and Resize are refused.
  bool read_only = false;
};

// Opens (creating if asked) the block device at `path` (defined in
// open_block_device.cc, above the backends); the memory backend ignores the
// path. kAuto picks io_uring where a ring can be created and POSIX
// otherwise, printing a one-line notice on standard error the first time it
// falls back. Setting the environment variable ROUNDTABLE_IO_URING=off makes
// the probe fail, so that kAuto takes POSIX and kUring is refused.
// The file backends never follow a symbolic link at `path` and refuse
// anything but a regular file there (InvalidArgument naming it).
// InvalidArgument for a bad block size or queue depth; the backend's error
// (with the path) when the file cannot be opened.
absl::StatusOr<std::unique_ptr<BlockDevice>> OpenBlockDevice(
    const std::string& path, const DeviceOptions& options);

// Whether an io_uring ring can be created here (and ROUNDTABLE_IO_URING is
// not "off"). On failure `why` (if given) says what refused it.
bool UringAvailable(std::string* why = nullptr);

// A heap buffer aligned for direct I/O, zero-filled unless asked otherwise
// (an unfilled buffer's pages are touched only when first written).
class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  AlignedBuffer(size_t size, size_t alignment = 4096, bool zeroed = true);
  // A moved-from buffer is empty (size 0).
  AlignedBuffer(AlignedBuffer&& other) noexcept
      : data_(std::move(other.data_)), size_(std::exchange(other.size_, 0)) {}
  AlignedBuffer& operator=(AlignedBuffer&& other) noexcept {
    data_ = std::move(other.data_);
    size_ = std::exchange(other.size_, 0);
    return *this;
  }
  std::byte* data() { return data_.get(); }
  const std::byte* data() const { return data_.get(); }
  size_t size() const { return size_; }
  std::span<std::byte> span() { return {data(), size_}; }
  std::span<const std::byte> span() const { return {data(), size_}; }

 private:
  struct Free {
    void operator()(std::byte* p) const;
  };
  std::unique_ptr<std::byte, Free> data_;
  size_t size_ = 0;
};

}  // namespace roundtable::io

#endif  // ROUNDTABLE_IO_BLOCK_DEVICE_H_
