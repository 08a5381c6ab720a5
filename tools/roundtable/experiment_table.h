// What the paper experiments share: a table in the paper's model (blocks of
// exactly B keys, in memory), its keys, the Poisson model of bucket loads,
// the runs spread over threads, and plots drawn with gnuplot.
//
// Thread-safety: free functions are thread-safe.
#ifndef ROUNDTABLE_TOOLS_ROUNDTABLE_EXPERIMENT_TABLE_H_
#define ROUNDTABLE_TOOLS_ROUNDTABLE_EXPERIMENT_TABLE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "roundtable/table.h"

namespace roundtable::cli {

// What every experiment on paper tables takes besides its layouts.
struct RunOptions {
  uint64_t seed = 1;
  int threads = 2;
  std::string csv_path;   // empty: no CSV
  std::string plot_path;  // empty: no plot (a PNG drawn from the CSV)
  bool progress = true;
};

// InvalidArgument for a B outside [1, MaxBlockKeys()] or a plot without a
// CSV.
absl::Status CheckRun(const std::vector<uint32_t>& block_keys,
                      const RunOptions& run);

// One layout of the paper's experiments.
struct PaperLayout {
  uint32_t block_keys = 512;  // B
  double epsilon = 0.25;
  uint64_t s0 = 1;
};

// The largest B a table of 8-byte keys and empty values takes.
uint32_t MaxBlockKeys();

// A new in-memory table of `layout`: keys of 8 bytes and empty values in
// the smallest block that takes B of them, with a record limit of B, so
// that a block holds exactly B keys; XXH3 seeded with `seed`. No block
// cache, and no checkpoint before Close: every block stays held in memory.
// InvalidArgument when B is 0 or above MaxBlockKeys().
absl::StatusOr<std::unique_ptr<Table>> OpenPaperTable(const PaperLayout& layout,
                                                      uint64_t seed);

// "B=512 eps=1/8 s0=16".
std::string LayoutName(const PaperLayout& layout);

// The hash seed of repetition `rep` of a run seeded with `seed`.
uint64_t RunSeed(uint64_t seed, int rep);

// Runs job(0) .. job(count - 1) on `threads` threads; the first error stops
// the others before their next job and is returned.
absl::Status RunJobs(size_t count, int threads,
                     const std::function<absl::Status(size_t)>& job);

// The key of the i-th insert: i as 8 little-endian bytes, in `buffer`.
std::string_view PaperKey(uint64_t i, char (&buffer)[8]);

// "1/8" or "0.125"; InvalidArgument unless in (0, 0.5].
absl::StatusOr<double> ParseEpsilon(const std::string& text);
// 1/8 as "1/8" when 1/epsilon is a whole number, else as "%g".
std::string FormatEpsilon(double epsilon);

// E[max(0, X - B)] for X ~ Poisson(lambda): the expected overflow of a
// bucket of mean load lambda into the stash.
double PoissonExcess(double lambda, uint64_t block_keys);

// The expected stash of n keys in m buckets of `layout`, with every key
// hashed uniformly onto the round-mapping arcs (two arc lengths), or onto m
// equal buckets when `uniform`.
double ExpectedStash(const PaperLayout& layout, uint64_t m, uint64_t n,
                     bool uniform);

// The buckets the table has after n inserts: max(s0, ceil(n / ((1 - eps) B))).
uint64_t BucketsAfter(const PaperLayout& layout, uint64_t n);

// Whether gnuplot is on the PATH.
bool GnuplotAvailable();

// Runs `script`, which draws `png`, with gnuplot; Internal when gnuplot
// fails. Without gnuplot it says so on standard error and returns OK.
absl::Status DrawPlot(const std::string& script, const std::string& png);

}  // namespace roundtable::cli

#endif  // ROUNDTABLE_TOOLS_ROUNDTABLE_EXPERIMENT_TABLE_H_
