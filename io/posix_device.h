// A block device on a file through pread, pwrite and fdatasync: the fallback
// where io_uring is refused, and selectable by option. Read batches run one
// transfer after the other; a write batch is sorted by block and each run of
// adjacent blocks goes to the file in one pwritev.
//
// Thread-safety: as BlockDevice; transfers run concurrently (pread and pwrite
// take their own offsets), Resize and Sync need no lock of ours.
#ifndef ROUNDTABLE_IO_POSIX_DEVICE_H_
#define ROUNDTABLE_IO_POSIX_DEVICE_H_

#include <atomic>
#include <memory>
#include <string>

#include "io/block_device.h"

namespace roundtable::io {

// A block device on an open file descriptor: single transfers by pread and
// pwrite (short transfers resubmitted, EINTR and EAGAIN retried), Sync by
// fdatasync, Resize by ftruncate; read batches one transfer after the other,
// write batches one pwritev per run of adjacent blocks. The POSIX backend is
// this class as it is; the io_uring backend derives from it and overrides
// the batches it runs on its ring.
class FileDevice : public BlockDevice {
 public:
  // Takes `fd` over (closed by the destructor); `file_bytes` is its size.
  FileDevice(const std::string& path, const DeviceOptions& options, int fd,
             uint64_t file_bytes, std::string backend, bool parallel_batches);
  ~FileDevice() override;

  const Capabilities& capabilities() const override { return caps_; }
  uint64_t num_blocks() const override { return num_blocks_.load(); }

 protected:
  absl::Status DoRead(uint64_t block, std::span<std::byte> buffer) override;
  absl::Status DoWrite(uint64_t block,
                       std::span<const std::byte> buffer) override;
  absl::Status DoWriteBatch(std::span<const WriteRequest> requests) override;
  absl::Status DoSync() override;
  absl::Status DoWriteBack() override;
  absl::Status DoResize(uint64_t num_blocks) override;

  int fd() const { return fd_; }
  // For a backend's own capabilities (the memory map's partial writes).
  Capabilities& mutable_capabilities() { return caps_; }

 private:
  Capabilities caps_;
  const int fd_;
  std::atomic<uint64_t> num_blocks_{0};
};

// Opens the file at `path` (creating it when options.create_if_missing),
// with O_DIRECT when options.direct_io. Its size in blocks is the file size
// divided by the block size, rounded down.
absl::StatusOr<std::unique_ptr<BlockDevice>> OpenPosixDevice(
    const std::string& path, const DeviceOptions& options);

// sync_file_range(SYNC_FILE_RANGE_WRITE) over the whole of `fd`: write-back
// started, not waited for (BlockDevice::WriteBack). Its errors are left to
// the next fdatasync, which reports a write-back that failed.
void StartWriteBack(int fd);

// Opens the file descriptor for `path` as the file backends do; returns the
// descriptor and the file size in bytes.
absl::StatusOr<std::pair<int, uint64_t>> OpenDeviceFile(
    const std::string& path, const DeviceOptions& options);

}  // namespace roundtable::io

#endif  // ROUNDTABLE_IO_POSIX_DEVICE_H_
