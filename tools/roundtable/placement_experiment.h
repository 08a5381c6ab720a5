// `roundtable experiment placement`: the placement schemes of
// roundtable/placement.h on n nodes and K keys: balance (peak to
// average, sigma / mu, the fullest node), the keys one added and one
// removed node move against the ideal 1/(n + 1) and 1/n, whether any key
// moved between two nodes that stayed, lookup time for pre-hashed and
// string keys, and memory per node. docs/placement.md shows the results.
//
// Thread-safety: RunPlacement runs on the calling thread (lookup times are
// measured one scheme at a time).
#ifndef ROUNDTABLE_TOOLS_ROUNDTABLE_PLACEMENT_EXPERIMENT_H_
#define ROUNDTABLE_TOOLS_ROUNDTABLE_PLACEMENT_EXPERIMENT_H_

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace roundtable::cli {

struct PlacementOptions {
  std::vector<std::string> algorithms = {"round",      "jump",   "rendezvous",
                                         "ring",       "maglev", "bounded",
                                         "multiprobe", "dchoice"};
  std::vector<uint64_t> nodes = {100};
  std::vector<uint64_t> keys = {1000000};
  // Each scheme runs once for every value of its own parameter.
  std::vector<uint64_t> s0s = {8};  // round; clamped to n - 1 below
  std::vector<uint64_t> vnodes = {100};
  // Maglev's M; empty: mapping::MaglevTableSizeFor(n + 1), room for the
  // node that joins.
  std::vector<uint64_t> table_sizes;
  std::vector<uint64_t> probes = {21};
  std::vector<double> cs = {1.25};
  std::vector<uint64_t> choices = {2};
  uint64_t seed = 1;
  int runs = 1;        // each with its own seed, one row each
  bool timing = true;  // measure lookup times
  std::string csv_path;
  std::string plot_path;  // peak to average against n, needs the CSV
  bool progress = true;
};

struct PlacementRow {
  std::string algorithm;
  std::string params;  // "vnodes=100"
  uint64_t nodes = 0;
  uint64_t keys = 0;
  uint64_t seed = 0;
  double peak_to_average = 0;  // fullest node / (keys / nodes)
  double sigma_over_mu = 0;    // standard deviation of loads / mean
  uint64_t max_load = 0;
  // Fractions of all keys moved by adding node n, and by removing one node
  // (a random one, or the newest where only the newest may leave).
  double moved_on_add = 0;
  double moved_on_remove = 0;
  // Keys that moved between two nodes present before and after.
  uint64_t stray_on_add = 0;
  uint64_t stray_on_remove = 0;
  double ns_per_lookup = 0;         // pre-hashed keys
  double ns_per_lookup_string = 0;  // 16-byte strings hashed with XXH3
  double bytes_per_node = 0;
};

// Runs every (algorithm, its parameter, nodes, keys, run), prints a
// Markdown table on `out`, writes the CSV and the plot when asked.
// InvalidArgument for an unknown algorithm, a bad parameter, fewer than two
// nodes or no keys.
absl::StatusOr<std::vector<PlacementRow>> RunPlacement(
    const PlacementOptions& options, std::ostream& out);

}  // namespace roundtable::cli

#endif  // ROUNDTABLE_TOOLS_ROUNDTABLE_PLACEMENT_EXPERIMENT_H_
