// A block device on a file mapped into memory (MAP_SHARED): a write is a
// copy into the kernel's page cache with no system call, so it survives a
// crash of the process as a pwrite would; Sync (msync, then fdatasync) makes
// it survive power loss. The table's write-ahead log uses it, where one
// small append per write would otherwise cost a system call each. Only
// blocks the file system has reserved (fallocate) are mapped, and Resize
// reserves the blocks it adds before the file grows to them, so that a
// store can never meet a full disk as a SIGBUS: where a file system cannot
// reserve (no fallocate, or no room when the file was opened), those
// blocks are written by pwrite, which reports the error. Reads are pread,
// never through the mapping. Opened read-only, nothing is mapped. (A file
// cut short under the mapping by another process would still raise SIGBUS
// at a store: the table's lock keeps every other writer away.)
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
