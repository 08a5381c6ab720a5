// blockbench: measures the io layer on a file, comparable with fio jobs over
// the same file (docs/benchmarks.md has both side by side).
//
//   blockbench --file=PATH --size=4G --pattern=randread --block_size=4096
//              --qd=32 --direct --backend=auto --seconds=10 [--json]
//
// The file is created and filled when missing or short. Queue depth 1 times
// every Read or Write call; a larger depth issues batches of 16 x qd requests
// through ReadBatch/WriteBatch, of which at most qd are in flight at once, and
// its latency figures are per batch (printed as such). The queue runs dry
// only while a batch's last qd requests finish: about 1/32 of the time, where
// batches of 4 x qd lost about a tenth of fio's rate at depth 32.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "roundtable/version.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "io/block_device.h"
#include "io/base/status_macros.h"

ABSL_FLAG(std::string, file, "", "the file to measure (required)");
ABSL_FLAG(std::string, size, "1G",
          "bytes of the file to use; suffixes K, M, G (powers of 1024)");
ABSL_FLAG(std::string, pattern, "randread",
          "randread, randwrite, read, write or randrw");
ABSL_FLAG(uint32_t, block_size, 4096, "bytes per transfer");
ABSL_FLAG(uint32_t, qd, 1, "queue depth: transfers in flight at once");
ABSL_FLAG(bool, direct, false, "O_DIRECT (bypass the page cache)");
ABSL_FLAG(std::string, backend, "auto", "auto, uring, posix or mmap");
ABSL_FLAG(double, seconds, 10, "how long to run");
ABSL_FLAG(uint64_t, count, 0, "stop after this many transfers (0: no limit)");
ABSL_FLAG(uint32_t, rwmix_read, 50, "randrw: percent of reads");
ABSL_FLAG(uint64_t, seed, 1, "seed of the random offsets");
ABSL_FLAG(bool, json, false, "print one JSON object instead of text");

namespace roundtable::io {
namespace {

using Clock = std::chrono::steady_clock;

absl::StatusOr<uint64_t> ParseSize(const std::string& text) {
  if (text.empty()) return absl::InvalidArgumentError("--size is empty");
  uint64_t scale = 1;
  std::string digits = text;
  switch (text.back()) {
    case 'K':
    case 'k':
      scale = uint64_t{1} << 10;
      digits.pop_back();
      break;
    case 'M':
    case 'm':
      scale = uint64_t{1} << 20;
      digits.pop_back();
      break;
    case 'G':
    case 'g':
      scale = uint64_t{1} << 30;
      digits.pop_back();
      break;
    default:
      break;
  }
  uint64_t value = 0;
  if (digits.empty() ||
      digits.find_first_not_of("0123456789") != std::string::npos ||
      digits.size() > 15) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--size=", text, ": expected a number with an optional K, M or G"));
  }
  value = std::stoull(digits);
  return value * scale;
}

struct Settings {
  std::string file;
  uint64_t size_bytes;
  std::string pattern;
  uint32_t block_size;
  uint32_t qd;
  bool direct;
  std::string backend;
  double seconds;
  uint64_t count;
  uint32_t rwmix_read;
  uint64_t seed;
};

bool Random(const std::string& p) { return p.rfind("rand", 0) == 0; }

// Writes the file's missing blocks, 1 MiB at a time, so that reads hit real
// data rather than holes.
absl::Status Fill(BlockDevice& device, uint64_t blocks) {
  const uint64_t have = device.num_blocks();
  if (have >= blocks) return absl::OkStatus();
  RT_RETURN_IF_ERROR(device.Resize(blocks));
  const uint32_t bs = device.block_size();
  const uint64_t chunk = std::max<uint64_t>(1, (1u << 20) / bs);
  AlignedBuffer data(chunk * bs);
  std::mt19937_64 rng(99);
  for (size_t i = 0; i < data.size(); i += 8) {
    const uint64_t v = rng();
    std::memcpy(data.data() + i, &v, std::min<size_t>(8, data.size() - i));
  }
  const bool tty = isatty(STDERR_FILENO);
  for (uint64_t b = have; b < blocks; b += chunk) {
    const uint64_t n = std::min(chunk, blocks - b);
    RT_RETURN_IF_ERROR(device.Write(b, data.span().first(n * bs)));
    if (tty && (b / chunk) % 64 == 0) {
      std::fprintf(stderr, "\rblockbench: filling %s: %3.0f%%",
                   device.path().c_str(), 100.0 * (b - have) / (blocks - have));
    }
  }
  if (tty) std::fprintf(stderr, "\r%60s\r", "");
  return device.Sync();
}

double Percentile(std::vector<uint64_t>& v, double p) {
  if (v.empty()) return 0;
  const size_t rank = std::min(v.size() - 1, static_cast<size_t>(p * v.size()));
  std::nth_element(v.begin(), v.begin() + rank, v.end());
  return static_cast<double>(v[rank]);
}

absl::Status Run(const Settings& s) {
  RT_ASSIGN_OR_RETURN(const Backend backend, ParseBackend(s.backend));
  if (backend == Backend::kMemory) {
    return absl::InvalidArgumentError("--backend: blockbench measures files");
  }
  if (s.pattern != "randread" && s.pattern != "randwrite" &&
      s.pattern != "read" && s.pattern != "write" && s.pattern != "randrw") {
    return absl::InvalidArgumentError(
        absl::StrCat("--pattern=", s.pattern,
                     ": expected randread, randwrite, read, write or randrw"));
  }
  if (s.qd < 1) return absl::InvalidArgumentError("--qd must be at least 1");
  if (s.rwmix_read > 100) {
    return absl::InvalidArgumentError("--rwmix_read is a percentage");
  }
  DeviceOptions options;
  options.backend = backend;
  options.block_size = s.block_size;
  options.direct_io = s.direct;
  options.queue_depth = s.qd;
  RT_ASSIGN_OR_RETURN(auto device, OpenBlockDevice(s.file, options));
  const uint64_t blocks = s.size_bytes / s.block_size;
  if (blocks == 0) {
    return absl::InvalidArgumentError("--size is smaller than one block");
  }
  RT_RETURN_IF_ERROR(Fill(*device, blocks));

  const uint32_t batch = s.qd == 1 ? 1 : 16 * s.qd;
  std::vector<AlignedBuffer> buffers;
  for (uint32_t i = 0; i < batch; ++i) {
    buffers.emplace_back(s.block_size);
    std::memset(buffers.back().data(), 0x5a, s.block_size);
  }
  std::mt19937_64 rng(s.seed);
  uint64_t next_sequential = 0;
  auto next_block = [&] {
    if (Random(s.pattern)) return rng() % blocks;
    const uint64_t b = next_sequential;
    next_sequential = (next_sequential + 1) % blocks;
    return b;
  };
  auto is_read = [&] {
    if (s.pattern == "randrw") return rng() % 100 < s.rwmix_read;
    return s.pattern == "randread" || s.pattern == "read";
  };

  std::vector<uint64_t> latencies_ns;
  latencies_ns.reserve(1 << 20);
  uint64_t ops = 0;
  const IoStats before = device->stats();
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::duration_cast<Clock::duration>(
                                    std::chrono::duration<double>(s.seconds));
  const bool progress = isatty(STDERR_FILENO) && s.seconds > 3;
  auto last_report = start;
  std::vector<ReadRequest> reads;
  std::vector<WriteRequest> writes;
  while (Clock::now() < deadline && (s.count == 0 || ops < s.count)) {
    reads.clear();
    writes.clear();
    for (uint32_t i = 0; i < batch; ++i) {
      const uint64_t b = next_block();
      if (is_read()) {
        reads.push_back({b, buffers[i].span()});
      } else {
        writes.push_back({b, buffers[i].span()});
      }
    }
    const auto t0 = Clock::now();
    if (batch == 1) {
      RT_RETURN_IF_ERROR(reads.empty()
                             ? device->Write(writes[0].block, writes[0].buffer)
                             : device->Read(reads[0].block, reads[0].buffer));
    } else {
      RT_RETURN_IF_ERROR(device->ReadBatch(reads));
      RT_RETURN_IF_ERROR(device->WriteBatch(writes));
    }
    const auto t1 = Clock::now();
    latencies_ns.push_back(
        std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count());
    ops += batch;
    if (progress && t1 - last_report > std::chrono::seconds(1)) {
      last_report = t1;
      const double elapsed = std::chrono::duration<double>(t1 - start).count();
      std::fprintf(stderr, "\rblockbench: %.0f/%.0f s, %.0f IOPS   ", elapsed,
                   s.seconds, ops / elapsed);
    }
  }
  const double elapsed =
      std::chrono::duration<double>(Clock::now() - start).count();
  if (progress) std::fprintf(stderr, "\r%60s\r", "");
  const IoStats after = device->stats();

  const double iops = ops / elapsed;
  const double mib = iops * s.block_size / (1 << 20);
  const double p50 = Percentile(latencies_ns, 0.50) / 1e3;
  const double p99 = Percentile(latencies_ns, 0.99) / 1e3;
  const double p999 = Percentile(latencies_ns, 0.999) / 1e3;
  const std::string latency_of =
      batch == 1 ? "op" : absl::StrCat("batch of ", batch);
  const std::string used = device->capabilities().backend;
  if (absl::GetFlag(FLAGS_json)) {
    std::cout << absl::StrFormat(
        "{\"backend\":\"%s\",\"pattern\":\"%s\",\"block_size\":%d,\"qd\":%d,"
        "\"direct\":%s,\"size_bytes\":%d,\"seconds\":%.3f,\"ops\":%d,"
        "\"iops\":%.1f,\"mib_per_s\":%.2f,\"p50_us\":%.2f,\"p99_us\":%.2f,"
        "\"p999_us\":%.2f,\"latency_of\":\"%s\",\"submissions\":%d}\n",
        used, s.pattern, s.block_size, s.qd, s.direct ? "true" : "false",
        s.size_bytes, elapsed, ops, iops, mib, p50, p99, p999, latency_of,
        after.submissions - before.submissions);
  } else {
    std::cout << absl::StrFormat(
        "%s %s bs=%d qd=%d direct=%d: %.0f IOPS, %.1f MiB/s; latency (%s) "
        "p50 %.1f us, p99 %.1f us, p99.9 %.1f us; %d ops in %.2f s\n",
        used, s.pattern, s.block_size, s.qd, s.direct, iops, mib, latency_of,
        p50, p99, p999, ops, elapsed);
  }
  return absl::OkStatus();
}

}  // namespace
}  // namespace roundtable::io

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "blockbench --file=PATH [--size=1G] [--pattern=randread] "
      "[--block_size=4096] [--qd=1] [--direct] [--backend=auto] "
      "[--seconds=10] [--json]");
  absl::FlagsUsageConfig usage_config;
  usage_config.version_string = [] {
    return std::string("blockbench (roundtable " ROUNDTABLE_VERSION_STRING
                       ")\n");
  };
  absl::SetFlagsUsageConfig(usage_config);
  absl::ParseCommandLine(argc, argv);
  roundtable::io::Settings s;
  s.file = absl::GetFlag(FLAGS_file);
  if (s.file.empty()) {
    std::cerr << "blockbench: --file is required\n";
    return 1;
  }
  auto size = roundtable::io::ParseSize(absl::GetFlag(FLAGS_size));
  if (!size.ok()) {
    std::cerr << "blockbench: " << size.status().message() << "\n";
    return 1;
  }
  s.size_bytes = *size;
  s.pattern = absl::GetFlag(FLAGS_pattern);
  s.block_size = absl::GetFlag(FLAGS_block_size);
  s.qd = absl::GetFlag(FLAGS_qd);
  s.direct = absl::GetFlag(FLAGS_direct);
  s.backend = absl::GetFlag(FLAGS_backend);
  s.seconds = absl::GetFlag(FLAGS_seconds);
  s.count = absl::GetFlag(FLAGS_count);
  s.rwmix_read = absl::GetFlag(FLAGS_rwmix_read);
  s.seed = absl::GetFlag(FLAGS_seed);
  const absl::Status status = roundtable::io::Run(s);
  if (!status.ok()) {
    std::cerr << "blockbench: " << status.message() << "\n";
    return 1;
  }
  return 0;
}
