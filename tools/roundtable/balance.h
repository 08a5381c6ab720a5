// `roundtable experiment balance`: the bucket-size distribution of evenly
// spaced 64-bit hash values under each mapping, the paper's Table 2.
//
// Thread-safety: RunBalance uses its own worker threads; calls are
// independent of each other.
#ifndef ROUNDTABLE_TOOLS_ROUNDTABLE_BALANCE_H_
#define ROUNDTABLE_TOOLS_ROUNDTABLE_BALANCE_H_

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "roundtable/mapping.h"
#include "tools/roundtable/progress.h"

namespace roundtable::cli {

// Bucket sizes divided by the mean (values / buckets), as the paper reports.
struct BalanceStats {
  double sigma_over_mu = 0;  // population standard deviation / mean
  double min = 0;
  double max = 0;
  double p1 = 0;   // 1% percentile (nearest rank)
  double p99 = 0;  // 99% percentile (nearest rank)
  double p99_over_p1 = 0;
};

// Summarises raw bucket sizes. REQUIRES: sizes non-empty, some size > 0.
BalanceStats SummariseSizes(std::vector<uint64_t> sizes);

// The sizes of map's buckets when the hashes floor(i * 2^64 / values), for
// i = 0 .. values - 1, are mapped; split over `threads` threads. The values
// mapped are added to `progress` (may be null) as the workers go.
std::vector<uint64_t> CountEvenlySpaced(const mapping::BucketMapping& map,
                                        uint64_t values, int threads,
                                        ProgressLine* progress = nullptr);

struct BalanceOptions {
  uint64_t buckets = 10000;
  uint64_t values = 1000000000;
  std::vector<uint64_t> s0s = {1, 2, 4, 8, 16, 32, 64, 128};
  std::vector<std::string> mappings = {"round", "linear-slack", "linear-litwin",
                                       "jump"};
  int threads = 2;
  std::string csv_path;  // empty: no CSV
  bool show_progress = false;
};

struct BalanceRow {
  std::string mapping;
  uint64_t s0 = 0;  // 0 for schemes without a slack
  BalanceStats stats;
  double seconds = 0;
};

// Runs every (mapping, s0) pair (schemes without a slack run once), prints a
// table on `out` and writes the CSV when asked. InvalidArgument for a bad
// mapping name, s0 or bucket count.
absl::StatusOr<std::vector<BalanceRow>> RunBalance(
    const BalanceOptions& options, std::ostream& out);

}  // namespace roundtable::cli

#endif  // ROUNDTABLE_TOOLS_ROUNDTABLE_BALANCE_H_
