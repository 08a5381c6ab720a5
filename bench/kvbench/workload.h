// The parts of kvbench every engine shares: the keys and values it writes,
// the order it visits them in, the latency histogram, and what the process
// and the device did (bytes on disk, /proc/self/io, the block device's read
// count, peak memory).
//
// Thread-safety: KeySpace, ZipfGenerator's tables and ValueSource are
// read-only after construction and may be shared; a LatencyHistogram and a
// ZipfGenerator's Next belong to one thread (merge histograms afterwards).
#ifndef ROUNDTABLE_BENCH_KVBENCH_WORKLOAD_H_
#define ROUNDTABLE_BENCH_KVBENCH_WORKLOAD_H_

#include <array>
#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace roundtable::kvbench {

inline constexpr size_t kKeyBytes = 16;

// The keys of a run of n records. Key(i) is the 16 lowercase hex digits of
// 2i, so keys sort in index order and fillseq writes them in key order; the
// random workloads visit the same keys in the order of a keyed permutation
// of [0, n). MissingKey(i), the digits of 2i + 1, is never stored and sorts
// between Key(i) and Key(i + 1): a miss falls among the stored keys, as a
// real one would, not past the last of them (where an ordered store would
// answer every miss from its last page).
class KeySpace {
 public:
  KeySpace(uint64_t n, uint64_t seed);

  uint64_t size() const { return n_; }
  // A bijection of [0, n): a four-round Feistel network on the smallest
  // even number of bits that holds n - 1, walked until it lands below n.
  uint64_t Permute(uint64_t i) const;
  static std::array<char, kKeyBytes> Key(uint64_t index);
  static std::array<char, kKeyBytes> MissingKey(uint64_t index);

 private:
  uint64_t Round(int round, uint64_t half) const;

  uint64_t n_;
  int half_bits_;
  uint64_t half_mask_;
  std::array<uint64_t, 4> round_keys_;
};

// Ranks in [0, n) with P(rank = k) proportional to 1 / (k + 1)^theta
// (theta < 1), by Gray et al.'s inversion with a precomputed zeta(n), the
// method YCSB uses. Rank 0 is the most popular; callers scatter ranks over
// the key space with KeySpace::Permute.
class ZipfGenerator {
 public:
  ZipfGenerator(uint64_t n, double theta, uint64_t seed);
  uint64_t Next();

 private:
  uint64_t n_;
  double theta_, alpha_, zetan_, eta_;
  std::mt19937_64 rng_;
};

// Values of a given size: slices of one random buffer, so that compression
// (off in every engine) would find nothing and producing a value costs
// nothing.
class ValueSource {
 public:
  ValueSource(size_t value_bytes, uint64_t seed);
  std::string_view Value(uint64_t i) const;

 private:
  size_t value_bytes_;
  std::string buffer_;
};

// Latencies in nanoseconds, in buckets of 1/32 of a power of two (a relative
// error under 3.2%), with the exact maximum.
class LatencyHistogram {
 public:
  LatencyHistogram();
  void Add(uint64_t ns);
  void Merge(const LatencyHistogram& other);
  uint64_t count() const { return count_; }
  uint64_t max_ns() const { return max_ns_; }
  // The upper edge of the bucket holding the q-quantile (q in [0, 1]),
  // capped at the maximum; 0 when empty.
  uint64_t Quantile(double q) const;

 private:
  static constexpr int kSubBits = 5;
  static size_t Bucket(uint64_t ns);
  static uint64_t BucketTop(size_t bucket);

  std::vector<uint64_t> counts_;
  uint64_t count_ = 0;
  uint64_t max_ns_ = 0;
};

// /proc/self/io: what the whole process (every thread, including the
// engines' background threads) asked of the kernel and of the storage.
struct ProcIo {
  uint64_t read_bytes = 0;   // fetched from storage for this process
  uint64_t write_bytes = 0;  // sent (or to be sent) to storage
  uint64_t read_syscalls = 0;
};
ProcIo ReadProcIo();

// What the block device that holds `dir` completed (from
// /sys/dev/block/MAJ:MIN/stat), whoever asked for it: reads, and bytes
// written. Unavailable on a filesystem with no block device (tmpfs,
// overlay).
struct DeviceCounters {
  uint64_t reads = 0;
  uint64_t written_bytes = 0;
};
absl::StatusOr<DeviceCounters> ReadDeviceCounters(const std::string& dir);

// Bytes allocated on disk to the files under `path` (st_blocks * 512).
uint64_t BytesOnDisk(const std::string& path);

// Writes back and drops from the page cache every file under `path`
// (fdatasync, then POSIX_FADV_DONTNEED), so that the next reads of them go
// to the device. Needs no privileges.
absl::Status DropPageCache(const std::string& path);

// The process's peak resident set (VmHWM), and its reset (malloc_trim, so
// that what earlier engines freed is returned, then clear_refs 5): peak
// memory per workload. It counts the pages of mapped files the engine
// touched, as the kernel does.
uint64_t PeakRssBytes();
void ResetPeakRss();

}  // namespace roundtable::kvbench

#endif  // ROUNDTABLE_BENCH_KVBENCH_WORKLOAD_H_
