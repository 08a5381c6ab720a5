// A block device held in memory: for tests, and for experiments that count
// transfers rather than time a device. Sync does nothing (nothing here
// survives the process) but is counted.
//
// Thread-safety: as BlockDevice; one mutex guards the bytes.
#ifndef ROUNDTABLE_IO_MEMORY_DEVICE_H_
#define ROUNDTABLE_IO_MEMORY_DEVICE_H_

#include <memory>

#include "io/block_device.h"

namespace roundtable::io {

// REQUIRES: block_size is a power of two from 512 to 65536.
std::unique_ptr<BlockDevice> NewMemoryDevice(uint32_t block_size);

}  // namespace roundtable::io

#endif  // ROUNDTABLE_IO_MEMORY_DEVICE_H_
