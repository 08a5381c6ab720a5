#include "tools/roundtable/stash_experiment.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <fstream>
#include <map>
#include <mutex>
#include <ostream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/mapping/round_mapping.h"

namespace roundtable::cli {
namespace {

// Inserts between two progress reports of one worker.
constexpr uint64_t kProgressChunk = 1 << 14;

absl::Status Validate(const StashOptions& o) {
  if (o.block_keys.empty() || o.epsilons.empty()) {
    return absl::InvalidArgumentError("no B or no epsilon to run");
  }
  for (const uint32_t b : o.block_keys) {
    if (b == 0 || b > MaxBlockKeys()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--block_keys: ", b, " is outside [1, ", MaxBlockKeys(), "]"));
    }
  }
  for (const double e : o.epsilons) {
    if (!(e > 0 && e <= 0.5)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--epsilons: ", e, " is outside (0, 0.5]"));
    }
  }
  for (const uint64_t s0 : o.s0s) {
    if (s0 < 1 || s0 > (1 << 20)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--s0: ", s0, " is outside [1, 2^20]"));
    }
  }
  if (o.from < 1 || o.to <= o.from || o.to > (uint64_t{1} << 24)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--from=", o.from, " --to=", o.to,
        ": need 1 <= from < to <= 2^24 (n runs from from * B to to * B)"));
  }
  if (o.repetitions < 1) {
    return absl::InvalidArgumentError("--repetitions must be at least 1");
  }
  if (!o.plot_path.empty() && o.csv_path.empty()) {
    return absl::InvalidArgumentError("--plot needs --csv (it plots the CSV)");
  }
  return absl::OkStatus();
}

// The hash seed of repetition `rep` of a run seeded with `seed`.
uint64_t RunSeed(uint64_t seed, int rep) {
  uint64_t z = seed * 0x9e3779b97f4a7c15 + static_cast<uint64_t>(rep) + 1;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9;
  z = (z ^ (z >> 27)) * 0x94d049bb133111eb;
  return z ^ (z >> 31);
}

// Runs jobs 0 .. count - 1 on `threads` threads; the first error stops the
// others at their next job.
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

std::string Ratio(double r) {
  if (r == 0) return "0";
  return absl::StrFormat("%.2g", r);
}

std::string LayoutName(const PaperLayout& l) {
  return absl::StrCat("B=", l.block_keys, " eps=", FormatEpsilon(l.epsilon),
                      " s0=", l.s0);
}

}  // namespace

StashOptions QuickStashOptions() {
  StashOptions o;
  o.block_keys = {512};
  o.epsilons = {1.0 / 4, 1.0 / 16, 1.0 / 64};
  o.s0s = {1, 8, 32};
  o.from = 64;
  o.to = 512;
  return o;
}

double PredictedMaxRatio(const PaperLayout& layout, uint64_t n_min,
                         uint64_t n_max, bool uniform) {
  double best = 0;
  const uint64_t last = BucketsAfter(layout, n_max);
  for (uint64_t m = BucketsAfter(layout, n_min); m <= last; ++m) {
    // The largest n with m buckets, within the range.
    uint64_t n = n_max;
    if (m < last) {
      n = static_cast<uint64_t>(std::floor(
          static_cast<double>(m) * (1 - layout.epsilon) * layout.block_keys));
      while (BucketsAfter(layout, n + 1) <= m) ++n;
      while (n > 0 && BucketsAfter(layout, n) > m) --n;
    }
    if (n < n_min) continue;
    best = std::max(best, ExpectedStash(layout, m, n, uniform) /
                              static_cast<double>(n));
  }
  return best;
}

absl::Status InsertAndWatch(
    const PaperLayout& layout, uint64_t seed, uint64_t n_max,
    const std::function<void(uint64_t, uint64_t, uint64_t)>& watch) {
  auto table = OpenPaperTable(layout, seed);
  if (!table.ok()) return table.status();
  char buffer[8];
  for (uint64_t i = 0; i < n_max; ++i) {
    if (absl::Status s = (*table)->Put(PaperKey(i, buffer), ""); !s.ok()) {
      return s;
    }
    const TableStats stats = (*table)->GetStats();
    watch(i + 1, stats.buckets, stats.stash_records);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<StashCell>> RunStashGrid(const StashOptions& options,
                                                    std::ostream& out) {
  if (absl::Status s = Validate(options); !s.ok()) return s;
  const std::vector<uint64_t> s0s =
      options.s0s.empty() ? std::vector<uint64_t>{1, 2, 4, 8, 16, 32, 64, 128}
                          : options.s0s;
  std::vector<StashCell> cells;
  for (const uint32_t b : options.block_keys) {
    for (const uint64_t s0 : s0s) {
      for (const double e : options.epsilons) {
        StashCell cell;
        cell.layout = {b, e, s0};
        cells.push_back(cell);
      }
    }
  }
  // One job per repetition of a cell, the largest first so that the two
  // workers finish together.
  struct Job {
    size_t cell;
    int rep;
  };
  std::vector<Job> jobs;
  uint64_t total = 0;
  for (size_t c = 0; c < cells.size(); ++c) {
    for (int r = 0; r < options.repetitions; ++r) jobs.push_back({c, r});
    total += options.repetitions * options.to * cells[c].layout.block_keys;
  }
  std::stable_sort(jobs.begin(), jobs.end(), [&](const Job& x, const Job& y) {
    const PaperLayout& a = cells[x.cell].layout;
    const PaperLayout& b = cells[y.cell].layout;
    return std::make_pair(a.block_keys, a.s0) >
           std::make_pair(b.block_keys, b.s0);
  });
  std::vector<std::vector<double>> ratios(cells.size());
  std::vector<double> seconds(cells.size(), 0);
  std::mutex mu;
  std::atomic<size_t> finished{0};
  {
    std::unique_ptr<Progress> progress;
    if (options.progress) {
      progress = std::make_unique<Progress>("experiment stash", total);
    }
    absl::Status status = RunJobs(jobs.size(), options.threads, [&](size_t j) {
      const PaperLayout& layout = cells[jobs[j].cell].layout;
      const uint64_t n_min = options.from * layout.block_keys;
      const uint64_t n_max = options.to * layout.block_keys;
      if (progress) progress->SetNote(LayoutName(layout));
      const auto start = std::chrono::steady_clock::now();
      double worst = 0;
      absl::Status s = InsertAndWatch(
          layout, RunSeed(options.seed, jobs[j].rep), n_max,
          [&](uint64_t n, uint64_t, uint64_t stash) {
            if (n >= n_min) {
              worst = std::max(worst, static_cast<double>(stash) /
                                          static_cast<double>(n));
            }
            if (progress && n % kProgressChunk == 0) {
              progress->Add(kProgressChunk);
            }
          });
      if (!s.ok()) return s;
      const double took = std::chrono::duration<double>(
                              std::chrono::steady_clock::now() - start)
                              .count();
      std::lock_guard<std::mutex> lock(mu);
      ratios[jobs[j].cell].push_back(worst);
      seconds[jobs[j].cell] += took;
      if (progress) {
        progress->SetNote(absl::StrCat(++finished, "/", jobs.size(), " runs"));
      }
      return absl::OkStatus();
    });
    if (!status.ok()) return status;
  }
  for (size_t c = 0; c < cells.size(); ++c) {
    StashCell& cell = cells[c];
    const std::vector<double>& r = ratios[c];
    double sum = 0;
    for (const double x : r) sum += x;
    cell.max_ratio = sum / static_cast<double>(r.size());
    cell.max_ratio_low = *std::min_element(r.begin(), r.end());
    cell.max_ratio_high = *std::max_element(r.begin(), r.end());
    const uint64_t n_min = options.from * cell.layout.block_keys;
    const uint64_t n_max = options.to * cell.layout.block_keys;
    cell.predicted_ratio = PredictedMaxRatio(cell.layout, n_min, n_max, false);
    cell.uniform_ratio = PredictedMaxRatio(cell.layout, n_min, n_max, true);
    cell.seconds = seconds[c];
  }

  // One Markdown table per B: rows s0, columns epsilon.
  for (const uint32_t b : options.block_keys) {
    out << absl::StrFormat(
        "\nB = %d keys per block; max stash / n over n in [%d B, %d B]; "
        "predicted / measured (%d run%s, seed %d)\n\n",
        b, options.from, options.to, options.repetitions,
        options.repetitions > 1 ? "s" : "", options.seed);
    out << "| s0 |";
    for (const double e : options.epsilons) out << " eps = " << FormatEpsilon(e) << " |";
    out << "\n|---|";
    for (size_t i = 0; i < options.epsilons.size(); ++i) out << "---|";
    out << "\n";
    for (const uint64_t s0 : s0s) {
      out << "| " << s0 << " |";
      for (const double e : options.epsilons) {
        for (const StashCell& cell : cells) {
          if (cell.layout.block_keys != b || cell.layout.s0 != s0 ||
              cell.layout.epsilon != e) {
            continue;
          }
          const std::string text = absl::StrCat(
              Ratio(cell.predicted_ratio), " / ", Ratio(cell.max_ratio));
          out << " " << (static_cast<double>(s0) * e > 1 ? "**" + text + "**" : text)
              << " |";
        }
      }
      out << "\n";
    }
    out << "| uniform |";
    for (const double e : options.epsilons) {
      for (const StashCell& cell : cells) {
        if (cell.layout.block_keys == b && cell.layout.epsilon == e) {
          out << " " << Ratio(cell.uniform_ratio) << " |";
          break;
        }
      }
    }
    out << "\n" << std::flush;
  }

  if (!options.csv_path.empty()) {
    std::ofstream csv(options.csv_path);
    csv << "block_keys,epsilon,s0,n_min,n_max,max_stash_ratio,predicted_ratio,"
           "uniform_ratio,repetitions,max_stash_ratio_low,"
           "max_stash_ratio_high,seed,seconds\n";
    for (const StashCell& c : cells) {
      csv << absl::StrFormat(
          "%d,%s,%d,%d,%d,%.6g,%.6g,%.6g,%d,%.6g,%.6g,%d,%.1f\n",
          c.layout.block_keys, FormatEpsilon(c.layout.epsilon), c.layout.s0,
          options.from * c.layout.block_keys, options.to * c.layout.block_keys,
          c.max_ratio, c.predicted_ratio, c.uniform_ratio, options.repetitions,
          c.max_ratio_low, c.max_ratio_high, options.seed, c.seconds);
    }
    if (!csv) {
      return absl::UnavailableError(
          absl::StrCat("cannot write ", options.csv_path));
    }
  }
  return cells;
}

absl::Status RunStashTrace(const StashOptions& options, std::ostream& out) {
  return absl::UnimplementedError("trace");
}

}  // namespace roundtable::cli
