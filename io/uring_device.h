// A block device on a file through io_uring (liburing 2.3): a batch is
// submitted as up to queue_depth transfers in flight at once and reaped as
// they complete; short transfers are resubmitted for the rest, -EINTR and
// -EAGAIN completions retried. Single transfers, Sync and Resize are the
// file device's (io/posix_device.h), by pread, pwrite and fdatasync: one
// system call either way, and on a warm page cache pread is the faster path
// (docs/io.md has the figures).
//
// Thread-safety: as BlockDevice; batches share the device's one ring and
// take turns on it, single transfers run concurrently.
#ifndef ROUNDTABLE_IO_URING_DEVICE_H_
#define ROUNDTABLE_IO_URING_DEVICE_H_

#include <memory>
#include <string>

#include "io/block_device.h"

namespace roundtable::io {

// Opens the file as OpenPosixDevice does and sets up a ring of
// options.queue_depth entries. The error of io_uring_queue_init when the ring
// cannot be created.
absl::StatusOr<std::unique_ptr<BlockDevice>> OpenUringDevice(
    const std::string& path, const DeviceOptions& options);

}  // namespace roundtable::io

#endif  // ROUNDTABLE_IO_URING_DEVICE_H_
