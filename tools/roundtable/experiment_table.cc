#include "tools/roundtable/experiment_table.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/mapping/round_mapping.h"

namespace roundtable::cli {
namespace {

// An 8-byte key and an empty value in a block: a 4-byte slot, two one-byte
// lengths, the key (docs/format.md).
constexpr uint32_t kPaperRecordBytes = 4 + 1 + 1 + 8;
constexpr uint32_t kBlockHeaderBytes = 32;

// The smallest power-of-two block that takes `keys` paper records.
uint32_t BlockSizeFor(uint32_t keys) {
  for (uint32_t bs = 512; bs <= 65536; bs *= 2) {
    if (bs - kBlockHeaderBytes >= uint64_t{keys} * kPaperRecordBytes) return bs;
  }
  return 0;
}

}  // namespace

uint32_t MaxBlockKeys() {
  return (65536 - kBlockHeaderBytes) / kPaperRecordBytes;
}

absl::Status CheckRun(const std::vector<uint32_t>& block_keys,
                      const RunOptions& run) {
  for (const uint32_t b : block_keys) {
    if (b == 0 || b > MaxBlockKeys()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--block_keys: ", b, " is outside [1, ", MaxBlockKeys(), "]"));
    }
  }
  if (!run.plot_path.empty() && run.csv_path.empty()) {
    return absl::InvalidArgumentError("--plot needs --csv (it plots the CSV)");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Table>> OpenPaperTable(const PaperLayout& layout,
                                                      uint64_t seed) {
  if (absl::Status s = CheckRun({layout.block_keys}, RunOptions()); !s.ok()) {
    return s;
  }
  Options o;
  o.backend = Backend::kMemory;
  o.block_size = BlockSizeFor(layout.block_keys);
  o.block_records = layout.block_keys;
  o.s0 = layout.s0;
  o.epsilon = layout.epsilon;
  o.hash_seed = seed;
  o.block_cache_bytes = 0;
  o.checkpoint_bytes = uint64_t{1} << 62;
  return Table::Open(o, "paper-experiment");
}

std::string LayoutName(const PaperLayout& l) {
  return absl::StrCat("B=", l.block_keys, " eps=", FormatEpsilon(l.epsilon),
                      " s0=", l.s0);
}

uint64_t RunSeed(uint64_t seed, int rep) {
  uint64_t z = seed * 0x9e3779b97f4a7c15 + static_cast<uint64_t>(rep) + 1;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9;
  z = (z ^ (z >> 27)) * 0x94d049bb133111eb;
  return z ^ (z >> 31);
}

absl::Status RunJobs(size_t count, int threads,
                     const std::function<absl::Status(size_t)>& job) {
  std::atomic<size_t> next{0};
  std::mutex mu;
  absl::Status first;
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < count;) {
      absl::Status s = job(i);
      if (!s.ok()) {
        std::lock_guard<std::mutex> lock(mu);
        if (first.ok()) first = s;
        next = count;
      }
    }
  };
  std::vector<std::thread> workers;
  for (int t = 1; t < std::max(1, threads); ++t) workers.emplace_back(work);
  work();
  for (auto& w : workers) w.join();
  return first;
}

std::string_view PaperKey(uint64_t i, char (&buffer)[8]) {
  for (char& c : buffer) {
    c = static_cast<char>(i & 0xff);
    i >>= 8;
  }
  return std::string_view(buffer, sizeof(buffer));
}

absl::StatusOr<double> ParseEpsilon(const std::string& text) {
  double value = 0;
  bool ok = false;
  if (const size_t slash = text.find('/'); slash != std::string::npos) {
    double num = 0, den = 0;
    ok = absl::SimpleAtod(text.substr(0, slash), &num) &&
         absl::SimpleAtod(text.substr(slash + 1), &den) && den != 0;
    if (ok) value = num / den;
  } else {
    ok = absl::SimpleAtod(text, &value);
  }
  if (!ok || !(value > 0 && value <= 0.5)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "epsilon '", text, "' is not a number in (0, 0.5] such as 1/8"));
  }
  return value;
}

std::string FormatEpsilon(double epsilon) {
  const double inverse = 1 / epsilon;
  if (std::abs(inverse - std::round(inverse)) < 1e-9) {
    return absl::StrCat("1/", static_cast<int64_t>(std::round(inverse)));
  }
  return absl::StrFormat("%g", epsilon);
}

double PoissonExcess(double lambda, uint64_t block_keys) {
  if (lambda <= 0) return 0;
  // The terms (x - B) P(X = x) for x > B, from x = B + 1 on, with
  // P(X = x + 1) = P(X = x) * lambda / (x + 1).
  const double b = static_cast<double>(block_keys);
  double p = std::exp((b + 1) * std::log(lambda) - lambda - std::lgamma(b + 2));
  double sum = 0;
  for (double x = b + 1;; x += 1) {
    const double term = (x - b) * p;
    sum += term;
    if (x > lambda && term <= sum * 1e-16) break;
    p *= lambda / (x + 1);
  }
  return sum;
}

double ExpectedStash(const PaperLayout& layout, uint64_t m, uint64_t n,
                     bool uniform) {
  const double keys = static_cast<double>(n);
  if (uniform) {
    return static_cast<double>(m) *
           PoissonExcess(keys / static_cast<double>(m), layout.block_keys);
  }
  // k(s + 1) short arcs of length 1/((s + 1) G), (G - k) s long ones of
  // length 1/(s G) (docs/mapping.md).
  const mapping::RoundState state(layout.s0, m);
  const double g = static_cast<double>(state.groups());
  const double s = static_cast<double>(state.step());
  const double k = static_cast<double>(state.converted());
  double stash = 0;
  if (k > 0) {
    stash +=
        k * (s + 1) * PoissonExcess(keys / ((s + 1) * g), layout.block_keys);
  }
  stash += (g - k) * s * PoissonExcess(keys / (s * g), layout.block_keys);
  return stash;
}

uint64_t BucketsAfter(const PaperLayout& layout, uint64_t n) {
  const auto needed = static_cast<uint64_t>(std::ceil(
      static_cast<double>(n) /
      ((1 - layout.epsilon) * static_cast<double>(layout.block_keys))));
  return std::max(needed, layout.s0);
}

bool GnuplotAvailable() {
  return std::system("command -v gnuplot >/dev/null 2>&1") == 0;
}

absl::Status DrawPlot(const std::string& script, const std::string& png) {
  if (!GnuplotAvailable()) {
    std::fprintf(stderr,
                 "gnuplot is not installed (apt-get install gnuplot-nox): the "
                 "CSV is written, the plot %s is not\n",
                 png.c_str());
    return absl::OkStatus();
  }
  FILE* pipe = popen("gnuplot", "w");
  if (pipe == nullptr) {
    return absl::InternalError(
        absl::StrCat("cannot start gnuplot: ", std::strerror(errno)));
  }
  std::fwrite(script.data(), 1, script.size(), pipe);
  if (pclose(pipe) != 0) {
    return absl::InternalError(absl::StrCat("gnuplot failed to draw ", png));
  }
  return absl::OkStatus();
}

}  // namespace roundtable::cli
