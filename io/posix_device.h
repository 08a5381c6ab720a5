// A block device on a file through pread, pwrite and fdatasync: the fallback
// where io_uring is refused, and selectable by option. Batches run one
// transfer after the other.
//
// Thread-safety: as BlockDevice; transfers run concurrently (pread and pwrite
// take their own offsets), Resize and Sync need no lock of ours.
#ifndef ROUNDTABLE_IO_POSIX_DEVICE_H_
#define ROUNDTABLE_IO_POSIX_DEVICE_H_

#include <memory>
#include <string>

#include "io/block_device.h"

namespace roundtable::io {

// Opens the file at `path` (creating it when options.create_if_missing),
// with O_DIRECT when options.direct_io. Its size in blocks is the file size
// divided by the block size, rounded down.
absl::StatusOr<std::unique_ptr<BlockDevice>> OpenPosixDevice(
    const std::string& path, const DeviceOptions& options);

// Opens the file descriptor for `path` as the posix and io_uring backends do;
// returns the descriptor and the file size in bytes.
absl::StatusOr<std::pair<int, uint64_t>> OpenDeviceFile(
    const std::string& path, const DeviceOptions& options);

// pread or pwrite of exactly `size` bytes at `offset`: short transfers are
// resubmitted for the rest, EINTR and EAGAIN retried. `submissions` counts the
// system calls made.
absl::Status PreadFully(int fd, const std::string& path, void* data,
                        size_t size, uint64_t offset, uint64_t& submissions);
absl::Status PwriteFully(int fd, const std::string& path, const void* data,
                         size_t size, uint64_t offset, uint64_t& submissions);

}  // namespace roundtable::io

#endif  // ROUNDTABLE_IO_POSIX_DEVICE_H_
