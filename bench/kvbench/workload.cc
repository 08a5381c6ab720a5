#include "bench/kvbench/workload.h"

#include <fcntl.h>
#include <malloc.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace roundtable::kvbench {
namespace {

uint64_t Mix64(uint64_t x) {  // the splitmix64 finaliser
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

KeySpace::KeySpace(uint64_t n, uint64_t seed) : n_(std::max<uint64_t>(n, 1)) {
  const int bits = std::max(2, static_cast<int>(std::bit_width(n_ - 1)));
  half_bits_ = (bits + 1) / 2;
  half_mask_ = (uint64_t{1} << half_bits_) - 1;
  for (int r = 0; r < 4; ++r) round_keys_[r] = Mix64(seed * 4 + r + 1);
}

uint64_t KeySpace::Round(int round, uint64_t half) const {
  return Mix64(half ^ round_keys_[round]) & half_mask_;
}

uint64_t KeySpace::Permute(uint64_t i) const {
  // Cycle walking: the network permutes [0, 4^half_bits), at most four times
  // n, so the walk takes under four steps on average and ends below n.
  uint64_t x = i;
  do {
    uint64_t left = x >> half_bits_;
    uint64_t right = x & half_mask_;
    for (int r = 0; r < 4; ++r) {
      const uint64_t next = left ^ Round(r, right);
      left = right;
      right = next;
    }
    x = (left << half_bits_) | right;
  } while (x >= n_);
  return x;
}

namespace {

std::array<char, kKeyBytes> HexKey(uint64_t v) {
  std::array<char, kKeyBytes> key;
  for (int d = kKeyBytes - 1; d >= 0; --d, v >>= 4) {
    key[d] = "0123456789abcdef"[v & 15];
  }
  return key;
}

}  // namespace

std::array<char, kKeyBytes> KeySpace::Key(uint64_t index) {
  return HexKey(index << 1);
}

std::array<char, kKeyBytes> KeySpace::MissingKey(uint64_t index) {
  return HexKey((index << 1) | 1);
}

ZipfGenerator::ZipfGenerator(uint64_t n, double theta, uint64_t seed)
    : n_(std::max<uint64_t>(n, 2)), theta_(theta), rng_(seed) {
  zetan_ = 0;
  for (uint64_t i = 1; i <= n_; ++i) zetan_ += std::pow(i, -theta_);
  const double zeta2 = 1 + std::pow(2.0, -theta_);
  alpha_ = 1 / (1 - theta_);
  eta_ = (1 - std::pow(2.0 / n_, 1 - theta_)) / (1 - zeta2 / zetan_);
}

uint64_t ZipfGenerator::Next() {
  const double u = std::uniform_real_distribution<double>(0, 1)(rng_);
  const double uz = u * zetan_;
  if (uz < 1) return 0;
  if (uz < 1 + std::pow(0.5, theta_)) return 1;
  const auto rank = static_cast<uint64_t>(
      static_cast<double>(n_) * std::pow(eta_ * u - eta_ + 1, alpha_));
  return std::min(rank, n_ - 1);
}

ValueSource::ValueSource(size_t value_bytes, uint64_t seed)
    : value_bytes_(value_bytes) {
  std::mt19937_64 rng(seed);
  buffer_.resize((1 << 20) + value_bytes);
  for (char& c : buffer_) c = static_cast<char>(rng());
}

std::string_view ValueSource::Value(uint64_t i) const {
  const size_t offset = Mix64(i) % (buffer_.size() - value_bytes_);
  return std::string_view(buffer_).substr(offset, value_bytes_);
}

LatencyHistogram::LatencyHistogram() : counts_((64 - kSubBits + 1) << kSubBits) {}

size_t LatencyHistogram::Bucket(uint64_t ns) {
  if (ns < (uint64_t{1} << kSubBits)) return ns;
  const int e = std::bit_width(ns) - 1;
  const uint64_t sub = (ns >> (e - kSubBits)) & ((1 << kSubBits) - 1);
  return ((e - kSubBits + 1) << kSubBits) + sub;
}

uint64_t LatencyHistogram::BucketTop(size_t bucket) {
  if (bucket < (size_t{1} << kSubBits)) return bucket;
  const int e = static_cast<int>(bucket >> kSubBits) + kSubBits - 1;
  const uint64_t sub = bucket & ((1 << kSubBits) - 1);
  const uint64_t low = ((uint64_t{1} << kSubBits) + sub) << (e - kSubBits);
  return low + (uint64_t{1} << (e - kSubBits)) - 1;
}

void LatencyHistogram::Add(uint64_t ns) {
  ++counts_[Bucket(ns)];
  ++count_;
  max_ns_ = std::max(max_ns_, ns);
}

void LatencyHistogram::Merge(const LatencyHistogram& other) {
  for (size_t b = 0; b < counts_.size(); ++b) counts_[b] += other.counts_[b];
  count_ += other.count_;
  max_ns_ = std::max(max_ns_, other.max_ns_);
}

uint64_t LatencyHistogram::Quantile(double q) const {
  if (count_ == 0) return 0;
  const auto rank = static_cast<uint64_t>(std::ceil(q * count_));
  uint64_t seen = 0;
  for (size_t b = 0; b < counts_.size(); ++b) {
    seen += counts_[b];
    if (seen >= std::max<uint64_t>(rank, 1)) {
      return std::min(BucketTop(b), max_ns_);
    }
  }
  return max_ns_;
}

ProcIo ReadProcIo() {
  ProcIo io;
  std::ifstream in("/proc/self/io");
  std::string name;
  uint64_t value;
  while (in >> name >> value) {
    if (name == "read_bytes:") io.read_bytes = value;
    if (name == "write_bytes:") io.write_bytes = value;
    if (name == "syscr:") io.read_syscalls = value;
  }
  return io;
}

absl::StatusOr<DeviceCounters> ReadDeviceCounters(const std::string& dir) {
  struct stat st;
  if (stat(dir.c_str(), &st) != 0) {
    return absl::NotFoundError(absl::StrCat("stat ", dir));
  }
  const std::string path = absl::StrCat("/sys/dev/block/", major(st.st_dev),
                                        ":", minor(st.st_dev), "/stat");
  std::ifstream in(path);
  // Reads, merged reads, sectors read, read ticks, writes, merged writes,
  // sectors written (512 bytes each, whatever the device's sector).
  uint64_t fields[7] = {};
  for (uint64_t& field : fields) {
    if (!(in >> field)) {
      return absl::UnavailableError(
          absl::StrCat(dir, " is on no block device (", path, ")"));
    }
  }
  return DeviceCounters{fields[0], fields[6] * 512};
}

uint64_t BytesOnDisk(const std::string& path) {
  std::error_code ec;
  uint64_t bytes = 0;
  auto add = [&](const std::filesystem::path& p) {
    struct stat st;
    if (lstat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
      bytes += static_cast<uint64_t>(st.st_blocks) * 512;
    }
  };
  if (!std::filesystem::is_directory(path, ec)) {
    add(path);
    return bytes;
  }
  for (const auto& entry :
       std::filesystem::recursive_directory_iterator(path, ec)) {
    add(entry.path());
  }
  return bytes;
}

absl::Status DropPageCache(const std::string& path) {
  std::error_code ec;
  for (const auto& entry :
       std::filesystem::recursive_directory_iterator(path, ec)) {
    if (!entry.is_regular_file(ec)) continue;
    const int fd = open(entry.path().c_str(), O_RDONLY);
    if (fd < 0) continue;  // a file the engine removed meanwhile
    const bool ok = fdatasync(fd) == 0 &&
                    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0;
    close(fd);
    if (!ok) {
      return absl::InternalError(
          absl::StrCat("dropping the page cache of ", entry.path().string()));
    }
  }
  return ec ? absl::InternalError(absl::StrCat("listing ", path, ": ",
                                               ec.message()))
            : absl::OkStatus();
}

uint64_t PeakRssBytes() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("VmHWM:", 0) == 0) {
      std::istringstream fields(line.substr(6));
      uint64_t kib = 0;
      fields >> kib;
      return kib * 1024;
    }
  }
  return 0;
}

void ResetPeakRss() {
  // Memory an earlier engine freed goes back to the system first, so that
  // it does not count as this workload's.
  malloc_trim(0);
  std::ofstream("/proc/self/clear_refs") << "5";
}

}  // namespace roundtable::kvbench
