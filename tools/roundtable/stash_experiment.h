// `roundtable experiment stash`: the paper's Tables 3-5 (the worst stash
// size over n for each B, epsilon and s0, measured on the engine next to the
// Poisson model's prediction) and Figure 3 (the stash while n grows).
// docs/experiments.md shows the results and how to run them.
//
// Thread-safety: each function runs its own worker threads; calls are
// independent of each other.
#ifndef ROUNDTABLE_TOOLS_ROUNDTABLE_STASH_EXPERIMENT_H_
#define ROUNDTABLE_TOOLS_ROUNDTABLE_STASH_EXPERIMENT_H_

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tools/roundtable/experiment_table.h"

namespace roundtable::cli {

struct StashOptions : RunOptions {
  std::vector<uint32_t> block_keys = {512, 1024, 2048};
  std::vector<double> epsilons = {1.0 / 4, 1.0 / 8, 1.0 / 16, 1.0 / 32,
                                  1.0 / 64};
  // Empty: {1, 2, ..., 128} for the grid, 2 / epsilon for the trace.
  std::vector<uint64_t> s0s;
  // n runs over [from * B, to * B]; the table is filled from empty.
  uint64_t from = 1024;
  uint64_t to = 8192;
  int repetitions = 1;  // runs per cell, each with its own hash seed
  // The plot (RunOptions::plot_path) is the trace's only.
};

// The `--quick` preset: B = 512, three epsilons and s0 values, n from 2^6 B
// to 2^9 B; seconds, for CI.
StashOptions QuickStashOptions();

struct StashCell {
  PaperLayout layout;
  // max over n in the range of stash / n, per repetition: the mean, and
  // the smallest and largest repetition.
  double max_ratio = 0;
  double max_ratio_low = 0;
  double max_ratio_high = 0;
  // The same maximum of E[stash] / n under the Poisson model, for
  // round-hashing and for a uniform hash function over m buckets.
  double predicted_ratio = 0;
  double uniform_ratio = 0;
  double seconds = 0;  // of all repetitions
};

// The largest of E[stash(n)] / n over n in [n_min, n_max], under the
// Poisson model (ExpectedStash); at a fixed m the ratio grows with n, so
// each m is evaluated at its largest n.
double PredictedMaxRatio(const PaperLayout& layout, uint64_t n_min,
                         uint64_t n_max, bool uniform);

// Inserts keys 0 .. n_max - 1 into a new paper table and calls
// watch(n, m, stash records) after each insert.
absl::Status InsertAndWatch(
    const PaperLayout& layout, uint64_t seed, uint64_t n_max,
    const std::function<void(uint64_t, uint64_t, uint64_t)>& watch);

// The grid: every (B, epsilon, s0) cell, a Markdown table per B on `out`
// (prediction / measurement; cells with s0 * epsilon > 1 in bold, as the
// paper prints them; the uniform prediction as the last row) and the CSV.
// InvalidArgument for a bad option, before any work.
absl::StatusOr<std::vector<StashCell>> RunStashGrid(const StashOptions& options,
                                                    std::ostream& out);

// Figure 3: for each (B, epsilon), the stash at each bucket count m while n
// grows over the range, at s0 = 2 / epsilon (or each given s0); CSV, a
// summary of the rounds on `out`, and the plot when asked.
absl::Status RunStashTrace(const StashOptions& options, std::ostream& out);

}  // namespace roundtable::cli

#endif  // ROUNDTABLE_TOOLS_ROUNDTABLE_STASH_EXPERIMENT_H_
