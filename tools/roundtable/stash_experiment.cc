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
#include "tools/roundtable/progress.h"

namespace roundtable::cli {
namespace {

// Inserts between two progress reports of one worker.
constexpr uint64_t kProgressChunk = 1 << 14;

absl::Status Validate(const StashOptions& o) {
  if (o.block_keys.empty() || o.epsilons.empty()) {
    return absl::InvalidArgumentError("no B or no epsilon to run");
  }
  if (absl::Status s = CheckRun(o.block_keys, o); !s.ok()) return s;
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
  return absl::OkStatus();
}

std::string Ratio(double r) {
  if (r == 0) return "0";
  return absl::StrFormat("%.2g", r);
}

// The stash over one bucket count m of a trace.
struct TraceRow {
  uint64_t m = 0;
  uint64_t n_first = 0, n_last = 0;  // the inserts seen at m
  uint64_t stash_min = 0, stash_max = 0, stash_last = 0;
  double expected = 0, uniform = 0;  // ExpectedStash at n_last
};

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
    best = std::max(
        best, ExpectedStash(layout, m, n, uniform) / static_cast<double>(n));
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
    ProgressLine progress("experiment stash", options.progress, "inserts",
                          total);
    absl::Status status = RunJobs(jobs.size(), options.threads, [&](size_t j) {
      const PaperLayout& layout = cells[jobs[j].cell].layout;
      const uint64_t n_min = options.from * layout.block_keys;
      const uint64_t n_max = options.to * layout.block_keys;
      progress.SetNote(LayoutName(layout));
      const auto start = std::chrono::steady_clock::now();
      double worst = 0;
      absl::Status s = InsertAndWatch(
          layout, RunSeed(options.seed, jobs[j].rep), n_max,
          [&](uint64_t n, uint64_t, uint64_t stash) {
            if (n >= n_min) {
              worst = std::max(
                  worst, static_cast<double>(stash) / static_cast<double>(n));
            }
            if (n % kProgressChunk == 0) {
              progress.Add(kProgressChunk);
            }
          });
      if (!s.ok()) return s;
      const double took = std::chrono::duration<double>(
                              std::chrono::steady_clock::now() - start)
                              .count();
      std::lock_guard<std::mutex> lock(mu);
      ratios[jobs[j].cell].push_back(worst);
      seconds[jobs[j].cell] += took;
      progress.Add(n_max % kProgressChunk);
      progress.SetNote(absl::StrCat(++finished, "/", jobs.size(), " runs"));
      return absl::OkStatus();
    });
    if (!status.ok()) return status;
    progress.Finish();
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
    for (const double e : options.epsilons)
      out << " eps = " << FormatEpsilon(e) << " |";
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
          const std::string text = absl::StrCat(Ratio(cell.predicted_ratio),
                                                " / ", Ratio(cell.max_ratio));
          out << " "
              << (static_cast<double>(s0) * e > 1 ? "**" + text + "**" : text)
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
  if (absl::Status s = Validate(options); !s.ok()) return s;
  struct Curve {
    PaperLayout layout;
    std::vector<TraceRow> rows;
  };
  std::vector<Curve> curves;
  for (const uint32_t b : options.block_keys) {
    for (const double e : options.epsilons) {
      std::vector<uint64_t> s0s = options.s0s;
      if (s0s.empty()) {
        s0s = {
            std::max<uint64_t>(1, static_cast<uint64_t>(std::llround(2 / e)))};
      }
      for (const uint64_t s0 : s0s) curves.push_back({{b, e, s0}, {}});
    }
  }
  uint64_t total = 0;
  for (const Curve& c : curves) total += options.to * c.layout.block_keys;
  {
    ProgressLine progress("experiment stash --trace", options.progress,
                          "inserts", total);
    absl::Status status =
        RunJobs(curves.size(), options.threads, [&](size_t c) {
          Curve& curve = curves[c];
          progress.SetNote(LayoutName(curve.layout));
          const uint64_t n_min = options.from * curve.layout.block_keys;
          const uint64_t n_max = options.to * curve.layout.block_keys;
          TraceRow row;
          auto flush = [&] {
            if (row.n_first == 0 || row.n_last < n_min) return;
            row.expected =
                ExpectedStash(curve.layout, row.m, row.n_last, false);
            row.uniform = ExpectedStash(curve.layout, row.m, row.n_last, true);
            curve.rows.push_back(row);
          };
          absl::Status s =
              InsertAndWatch(curve.layout, RunSeed(options.seed, 0), n_max,
                             [&](uint64_t n, uint64_t m, uint64_t stash) {
                               if (m != row.m) {
                                 flush();
                                 row = TraceRow{};
                                 row.m = m;
                                 row.n_first = n;
                                 row.stash_min = stash;
                               }
                               row.n_last = n;
                               row.stash_min = std::min(row.stash_min, stash);
                               row.stash_max = std::max(row.stash_max, stash);
                               row.stash_last = stash;
                               if (n == n_max) flush();
                               if (n % kProgressChunk == 0) {
                                 progress.Add(kProgressChunk);
                               }
                             });
          progress.Add(n_max % kProgressChunk);
          return s;
        });
    if (!status.ok()) return status;
    progress.Finish();
  }

  // The cyclic pattern in numbers: per round, the largest stash / n over
  // the first and over the last quarter of its bucket counts, measured and
  // under the Poisson model.
  out << absl::StrFormat(
      "Stash / n per round, n in [%d B, %d B] (seed %d): the largest over "
      "the first and the last quarter of each round's bucket counts, "
      "measured (model)\n\n",
      options.from, options.to, options.seed);
  out << "| B | eps | s0 | round | buckets | first quarter | last quarter |\n"
         "|---|---|---|---|---|---|---|\n";
  for (const Curve& curve : curves) {
    const uint64_t s0 = curve.layout.s0;
    struct Quarter {
      double measured = 0, model = 0;
      bool seen = false;
    };
    std::map<int, std::pair<Quarter, Quarter>> rounds;
    for (const TraceRow& r : curve.rows) {
      const mapping::RoundState state(s0, r.m);
      const double start = static_cast<double>(s0 * state.groups());
      const double f = (static_cast<double>(r.m) - start) / start;
      auto& [first, last] = rounds[state.log2_groups() + 1];
      Quarter* q = f < 0.25 ? &first : f >= 0.75 ? &last : nullptr;
      if (q == nullptr) continue;
      const double n = static_cast<double>(r.n_last);
      q->measured = std::max(q->measured, static_cast<double>(r.stash_max) / n);
      q->model = std::max(q->model, r.expected / n);
      q->seen = true;
    }
    for (const auto& [round, quarters] : rounds) {
      const auto& [first, last] = quarters;
      if (!first.seen || !last.seen) continue;
      const uint64_t lo = s0 << (round - 1);
      out << absl::StrFormat(
          "| %d | %s | %d | %d | %d-%d | %s (%s) | %s (%s) |\n",
          curve.layout.block_keys, FormatEpsilon(curve.layout.epsilon), s0,
          round, lo, 2 * lo, Ratio(first.measured), Ratio(first.model),
          Ratio(last.measured), Ratio(last.model));
    }
  }
  out << std::flush;

  if (options.csv_path.empty()) return absl::OkStatus();
  {
    std::ofstream csv(options.csv_path);
    csv << "block_keys,epsilon,s0,m,round,step,converted,n_first,n_last,"
           "stash_min,stash_max,stash_last,expected_stash,uniform_stash\n";
    for (const Curve& curve : curves) {
      for (const TraceRow& r : curve.rows) {
        const mapping::RoundState state(curve.layout.s0, r.m);
        csv << absl::StrFormat(
            "%d,%s,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%.6g,%.6g\n",
            curve.layout.block_keys, FormatEpsilon(curve.layout.epsilon),
            curve.layout.s0, r.m, state.log2_groups() + 1, state.step(),
            state.converted(), r.n_first, r.n_last, r.stash_min, r.stash_max,
            r.stash_last, r.expected, r.uniform);
      }
    }
    if (!csv) {
      return absl::UnavailableError(
          absl::StrCat("cannot write ", options.csv_path));
    }
  }
  if (options.plot_path.empty()) return absl::OkStatus();
  // A panel per (epsilon, s0) and B: the measured stash / n (the largest at
  // each bucket count) and, dashed, the Poisson model's, against m / s0 on
  // a log scale, so that each round is one octave between grid lines.
  const int columns = static_cast<int>(options.block_keys.size());
  const int rows = static_cast<int>(curves.size()) / columns;
  std::string script = absl::StrFormat(
      "set terminal pngcairo size %d,%d font ',9'\n"
      "set output '%s'\nset datafile separator ','\n"
      "set logscale x 2\nset logscale y 10\nset format y '10^{%%L}'\n"
      "set grid xtics\nset xlabel 'buckets m / s0 (a round per octave)'\n"
      "set ylabel 'stash / n'\nset key top left\n"
      "set multiplot layout %d,%d\n",
      560 * columns, 260 * rows, options.plot_path, rows, columns);
  for (const double e : options.epsilons) {
    for (const uint32_t b : options.block_keys) {
      for (const Curve& curve : curves) {
        if (curve.layout.block_keys != b || curve.layout.epsilon != e) {
          continue;
        }
        const std::string eps = FormatEpsilon(e);
        const std::string select = absl::StrFormat(
            "(column(1) == %d && strcol(2) eq '%s' && column(3) == %d ? ", b,
            eps, curve.layout.s0);
        absl::StrAppendFormat(
            &script,
            "set title 'B = %d, eps = %s, s0 = %d'\n"
            "plot '%s' skip 1 using (column(4) / %d.0):%scolumn(11) / "
            "column(9) : NaN) with lines lw 1.2 lc 1 title 'measured', "
            "'%s' skip 1 using (column(4) / %d.0):%scolumn(13) / column(9) : "
            "NaN) with lines dt 2 lc 2 title 'Poisson model'\n",
            b, eps, curve.layout.s0, options.csv_path, curve.layout.s0, select,
            options.csv_path, curve.layout.s0, select);
      }
    }
  }
  script += "unset multiplot\n";
  return DrawPlot(script, options.plot_path);
}

}  // namespace roundtable::cli
