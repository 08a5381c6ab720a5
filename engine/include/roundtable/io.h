// The block layer's types that a user of the table sees: the I/O backend a
// table's files are opened with (Options::backend) and the physical ledger
// of a file (the io* fields of TableStats). The block layer itself
// (io/block_device.h) is private.
//
// Thread-safety: value types.
#ifndef ROUNDTABLE_IO_H_
#define ROUNDTABLE_IO_H_

#include <cstdint>

namespace roundtable {

// How a table's files are read and written. kAuto: io_uring where a ring can
// be created, POSIX pread/pwrite otherwise (with a one-line notice on
// standard error). kMemory keeps the table in memory only (Options::backend).
enum class Backend { kAuto, kUring, kPosix, kMemory, kMmap };

// The physical ledger: what one file's device did, counted as it happened.
// Counters only grow.
struct IoStats {
  uint64_t blocks_read = 0;
  uint64_t bytes_read = 0;
  uint64_t blocks_written = 0;
  uint64_t bytes_written = 0;
  uint64_t read_ops = 0;     // Read calls plus requests of ReadBatch calls
  uint64_t write_ops = 0;    // Write calls plus requests of WriteBatch calls
  uint64_t submissions = 0;  // system calls that started transfers (0 for
                             // memory; mmap makes them only to sync)
  uint64_t syncs = 0;
  uint64_t wait_ns = 0;  // time spent waiting for transfers and syncs
};

}  // namespace roundtable

#endif  // ROUNDTABLE_IO_H_
