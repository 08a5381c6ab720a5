// `roundtable experiment transfers`: the logical block transfers of each
// operation as n grows, on the engine in the paper's model (blocks of
// exactly B keys), against the paper's costs: 2 per insert plus a share of
// the grows, at most 1 per lookup, and 2z + 1 per grow or shrink step.
// docs/experiments.md shows the results and how to run them.
//
// Thread-safety: RunTransfers runs its own worker threads.
#ifndef ROUNDTABLE_TOOLS_ROUNDTABLE_TRANSFERS_EXPERIMENT_H_
#define ROUNDTABLE_TOOLS_ROUNDTABLE_TRANSFERS_EXPERIMENT_H_

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tools/roundtable/experiment_table.h"

namespace roundtable::cli {

struct TransfersOptions : RunOptions {
  std::vector<uint32_t> block_keys = {512};
  std::vector<double> epsilons = {1.0 / 8, 1.0 / 32};
  std::vector<uint64_t> s0s = {1, 8, 32};
  // Measured at n = B, 2B, 4B, ... up to `to` * B.
  uint64_t to = 8192;
  uint64_t samples = 10000;  // lookups of each kind and deletes per point
};

// The `--quick` preset: B = 128, up to 256 B, 2000 samples.
TransfersOptions QuickTransfersOptions();

// One measurement point: the table at n keys, m buckets.
struct TransfersPoint {
  PaperLayout layout;
  uint64_t n = 0;
  uint64_t m = 0;
  double stash_fraction = 0;  // stash records / n
  // Inserts since the previous point: logical transfers per insert (block
  // reads and writes of the Put, grows, stash-copy writes), and the
  // paper's cost: 2, plus 2 s(m) + 1 for each grow from m that
  // ceil(n / ((1 - epsilon) B)) makes over these inserts, per insert.
  double insert = 0;
  double insert_model = 0;
  // Block reads per lookup of a present and of an absent key (the mean and
  // the most any one lookup read).
  double hit = 0;
  uint64_t hit_max = 0;
  double miss = 0;
  uint64_t miss_max = 0;
  // Transfers per delete, shrinks included (the deleted keys are then put
  // back, uncounted here).
  double remove = 0;
  // Grow and shrink steps since the previous point, and how many cost
  // exactly 2z + 1 transfers with z the step s of round-mapping.
  uint64_t grows = 0, grows_exact = 0;
  uint64_t shrinks = 0, shrinks_exact = 0;
  uint64_t z_min = 0, z_max = 0;
};

// Runs every (B, epsilon, s0), prints a Markdown table per layout on
// `out`, writes the CSV and the plot when asked.
absl::StatusOr<std::vector<TransfersPoint>> RunTransfers(
    const TransfersOptions& options, std::ostream& out);

}  // namespace roundtable::cli

#endif  // ROUNDTABLE_TOOLS_ROUNDTABLE_TRANSFERS_EXPERIMENT_H_
