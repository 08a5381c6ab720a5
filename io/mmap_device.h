// A block device on a file mapped into memory (MAP_SHARED): a write is a
// copy into the kernel's page cache with no system call, so it survives a
// crash of the process as a pwrite would; Sync (msync, then fdatasync) makes
// it survive power loss. The table's write-ahead log uses it, where one
// small append per write would otherwise cost a system call each. Resize
// reserves the file's blocks (fallocate) before mapping them, so that a
// write can never meet a full disk as a SIGBUS.
//
// Thread-safety: as BlockDevice. Transfers run concurrently under a shared
// lock; Resize remaps under an exclusive one.
#ifndef ROUNDTABLE_IO_MMAP_DEVICE_H_
#define ROUNDTABLE_IO_MMAP_DEVICE_H_

#include <memory>
#include <string>

#include "io/block_device.h"

namespace roundtable::io {

// Opens the file at `path` (creating it when options.create_if_missing) and
// maps it. InvalidArgument with direct I/O (a mapping goes through the page
// cache); the system's error, with the path, otherwise.
absl::StatusOr<std::unique_ptr<BlockDevice>> OpenMmapDevice(
    const std::string& path, const DeviceOptions& options);

}  // namespace roundtable::io

#endif  // ROUNDTABLE_IO_MMAP_DEVICE_H_
