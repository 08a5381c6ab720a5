#include "tools/roundtable/placement_experiment.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <functional>
#include <memory>
#include <numeric>
#include <ostream>
#include <span>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "io/base/status_macros.h"
#include "roundtable/placement.h"
#include "tools/roundtable/experiment_table.h"
#include "tools/roundtable/progress.h"
#include "xxhash.h"

namespace roundtable::cli {
namespace {

using mapping::Mix64;
using mapping::NodeId;
using mapping::Placement;
using mapping::PlacementParams;

// One row to measure: a scheme with its parameters on n nodes and K keys.
struct Job {
  std::string algorithm;
  PlacementParams params;
  uint64_t nodes = 0;
  uint64_t keys = 0;
  uint64_t seed = 0;
};

// Lookups are timed in chunks until this much time has passed or every
// key was looked up once (whichever is later), capped at kMaxLookups.
constexpr double kTimingSeconds = 0.2;
constexpr uint64_t kMaxLookups = 4'000'000;
constexpr size_t kChunk = 64;
// String keys timed: "key" and a 13-digit number, 16 bytes.
constexpr size_t kStringKeys = 1 << 16;

// ns per call of lookup(i), i cycling over [0, count).
template <typename Lookup>
double NsPerLookup(size_t count, const Lookup& lookup) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  uint64_t done = 0, sink = 0;
  double seconds = 0;
  do {
    for (size_t j = 0; j < kChunk; ++j) sink ^= lookup((done + j) % count);
    done += kChunk;
    seconds = std::chrono::duration<double>(Clock::now() - start).count();
  } while ((seconds < kTimingSeconds || done < count) && done < kMaxLookups);
  // The sink keeps the lookups from being optimised away.
  if (sink == 42) std::fputc('\0', stderr);
  return seconds * 1e9 / static_cast<double>(done);
}

std::vector<NodeId> Assigned(Placement& p, std::span<const uint64_t> hashes) {
  std::vector<NodeId> out(hashes.size());
  p.Assign(hashes, out);
  return out;
}

// The fraction of keys whose node differs between `before` and `after`
// when `node` joined or left; *stray counts those that moved between two
// other nodes.
double MovedFraction(const std::vector<NodeId>& before,
                     const std::vector<NodeId>& after, NodeId node,
                     uint64_t* stray) {
  uint64_t moved = 0;
  for (size_t i = 0; i < before.size(); ++i) {
    if (before[i] == after[i]) continue;
    ++moved;
    if (before[i] != node && after[i] != node) ++*stray;
  }
  return static_cast<double>(moved) / static_cast<double>(before.size());
}

absl::StatusOr<PlacementRow> Measure(const Job& job, bool timing) {
  RT_ASSIGN_OR_RETURN(std::unique_ptr<Placement> p,
                      mapping::MakePlacement(job.algorithm, job.params));
  std::vector<NodeId> ids(job.nodes);
  std::iota(ids.begin(), ids.end(), 0);
  RT_RETURN_IF_ERROR(p->AddNodes(ids));
  std::vector<uint64_t> hashes(job.keys);
  for (uint64_t i = 0; i < job.keys; ++i) hashes[i] = Mix64(i, job.seed);

  PlacementRow row;
  row.algorithm = job.algorithm;
  row.params = p->params();
  row.nodes = job.nodes;
  row.keys = job.keys;
  row.seed = job.seed;

  const std::vector<NodeId> placed = Assigned(*p, hashes);
  std::vector<uint64_t> loads(job.nodes, 0);
  for (const NodeId n : placed) ++loads[n];  // ids are 0 .. n - 1
  const double mean =
      static_cast<double>(job.keys) / static_cast<double>(job.nodes);
  double squares = 0;
  for (const uint64_t l : loads) {
    row.max_load = std::max(row.max_load, l);
    squares +=
        (static_cast<double>(l) - mean) * (static_cast<double>(l) - mean);
  }
  row.peak_to_average = static_cast<double>(row.max_load) / mean;
  row.sigma_over_mu =
      std::sqrt(squares / static_cast<double>(job.nodes)) / mean;
  row.bytes_per_node =
      static_cast<double>(p->MemoryBytes()) / static_cast<double>(job.nodes);

  if (timing) {
    row.ns_per_lookup = NsPerLookup(
        hashes.size(), [&](size_t i) { return p->Locate(hashes[i]); });
    std::vector<std::string> strings(std::min<size_t>(kStringKeys, job.keys));
    for (size_t i = 0; i < strings.size(); ++i) {
      strings[i] = absl::StrFormat("key%013d", i);
    }
    row.ns_per_lookup_string = NsPerLookup(strings.size(), [&](size_t i) {
      const std::string& s = strings[i];
      return p->Locate(XXH3_64bits_withSeed(s.data(), s.size(), job.seed));
    });
  }

  // One node joins (id n), then leaves again; then one of the first n
  // leaves: a random one, or the newest where only the newest may.
  const NodeId joined = job.nodes;
  RT_RETURN_IF_ERROR(p->AddNode(joined));
  row.moved_on_add =
      MovedFraction(placed, Assigned(*p, hashes), joined, &row.stray_on_add);
  RT_RETURN_IF_ERROR(p->RemoveNode(joined));

  const NodeId gone = p->traits().arbitrary_removal
                          ? Mix64(job.seed, 2) % job.nodes
                          : job.nodes - 1;
  RT_RETURN_IF_ERROR(p->RemoveNode(gone));
  row.moved_on_remove =
      MovedFraction(placed, Assigned(*p, hashes), gone, &row.stray_on_remove);
  return row;
}

// Every job of the options, in the order of the flags: algorithm, its
// parameter, nodes, keys, run.
absl::StatusOr<std::vector<Job>> Jobs(const PlacementOptions& o) {
  if (o.runs < 1) return absl::InvalidArgumentError("--runs must be >= 1");
  for (const uint64_t n : o.nodes) {
    if (n < 2 || n > (uint64_t{1} << 31)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--nodes: ", n, " is not in [2, 2^31]"));
    }
  }
  for (const uint64_t k : o.keys) {
    if (k == 0 || k > (uint64_t{1} << 32)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--keys: ", k, " is not in [1, 2^32]"));
    }
  }
  const std::vector<std::string> names = mapping::PlacementNames();
  std::vector<Job> jobs;
  for (const std::string& algorithm : o.algorithms) {
    if (std::find(names.begin(), names.end(), algorithm) == names.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--algorithms: unknown '", algorithm,
                       "'; expected some of ", absl::StrJoin(names, ",")));
    }
    // The values of this scheme's own parameter, written into params.
    std::vector<std::function<void(PlacementParams&, uint64_t)>> settings;
    auto each = [&](const auto& values, auto set) {
      for (const auto& v : values) {
        settings.push_back(
            [v, set](PlacementParams& p, uint64_t) { set(p, v); });
      }
    };
    if (algorithm == "round") {
      each(o.s0s, [](PlacementParams& p, uint64_t v) { p.s0 = v; });
    } else if (algorithm == "ring") {
      each(o.vnodes, [](PlacementParams& p, uint64_t v) { p.vnodes = v; });
    } else if (algorithm == "maglev" && !o.table_sizes.empty()) {
      each(o.table_sizes,
           [](PlacementParams& p, uint64_t v) { p.table_size = v; });
    } else if (algorithm == "maglev") {
      settings.push_back([](PlacementParams& p, uint64_t n) {
        p.table_size = mapping::MaglevTableSizeFor(n + 1);
      });
    } else if (algorithm == "multiprobe") {
      each(o.probes, [](PlacementParams& p, uint64_t v) { p.probes = v; });
    } else if (algorithm == "bounded") {
      each(o.cs, [](PlacementParams& p, double v) { p.c = v; });
    } else if (algorithm == "dchoice") {
      each(o.choices, [](PlacementParams& p, uint64_t v) { p.choices = v; });
    }
    if (settings.empty()) settings.push_back([](PlacementParams&, uint64_t) {});
    for (const auto& set : settings) {
      for (const uint64_t n : o.nodes) {
        for (const uint64_t k : o.keys) {
          for (int run = 0; run < o.runs; ++run) {
            Job job{algorithm, {}, n, k, RunSeed(o.seed, run)};
            set(job.params, n);
            job.params.seed = Mix64(job.seed, 1);
            // Round places on s0 nodes at least and must keep them when
            // one leaves.
            if (algorithm == "round") {
              job.params.s0 = std::min(job.params.s0, n - 1);
            }
            RT_RETURN_IF_ERROR(
                mapping::MakePlacement(algorithm, job.params).status());
            jobs.push_back(job);
          }
        }
      }
    }
  }
  return jobs;
}

absl::Status WriteCsv(const std::string& path,
                      const std::vector<PlacementRow>& rows) {
  std::ofstream csv(path);
  csv << "algorithm,nodes,keys,params,seed,peak_to_average,sigma_over_mu,"
         "max_load,moved_on_add,ideal_on_add,moved_on_remove,"
         "ideal_on_remove,stray_on_add,stray_on_remove,ns_per_lookup,"
         "ns_per_lookup_string,bytes_per_node\n";
  for (const PlacementRow& r : rows) {
    csv << absl::StrFormat(
        "%s,%d,%d,%s,%d,%.6f,%.6f,%d,%.6g,%.6g,%.6g,%.6g,%d,%d,%.2f,%.2f,"
        "%.1f\n",
        r.algorithm, r.nodes, r.keys, r.params, r.seed, r.peak_to_average,
        r.sigma_over_mu, r.max_load, r.moved_on_add,
        1.0 / static_cast<double>(r.nodes + 1), r.moved_on_remove,
        1.0 / static_cast<double>(r.nodes), r.stray_on_add, r.stray_on_remove,
        r.ns_per_lookup, r.ns_per_lookup_string, r.bytes_per_node);
  }
  if (!csv) return absl::UnavailableError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

// Peak to average against n, one line per algorithm and parameters.
absl::Status Plot(const PlacementOptions& o,
                  const std::vector<PlacementRow>& rows) {
  // A line per scheme and parameters; Maglev's automatic table size
  // changes with n and stays on one line.
  auto label = [&](const PlacementRow& r) {
    const bool one_line =
        r.params.empty() || (r.algorithm == "maglev" && o.table_sizes.empty());
    return one_line ? r.algorithm : r.algorithm + " " + r.params;
  };
  std::vector<std::string> series;
  for (const PlacementRow& r : rows) {
    const std::string name = label(r);
    if (std::find(series.begin(), series.end(), name) == series.end()) {
      series.push_back(name);
    }
  }
  std::string script = absl::StrFormat(
      "set terminal pngcairo size 1000,600 font ',9'\n"
      "set output '%s'\nset datafile separator ','\n"
      "set logscale x 10\nset xlabel 'nodes'\n"
      "set ylabel 'peak-to-average load'\n"
      "set key outside right noenhanced\nset grid\nset yrange [1:*]\n"
      "plot ",
      o.plot_path);
  for (size_t i = 0; i < series.size(); ++i) {
    const std::string& name = series[i];
    const size_t space = name.find(' ');
    const std::string algorithm = name.substr(0, space);
    // Rows of this line: the scheme, and its parameters when named.
    const std::string params =
        space == std::string::npos
            ? ""
            : absl::StrCat(" && strcol(4) eq '", name.substr(space + 1), "'");
    absl::StrAppendFormat(
        &script,
        "%s'%s' skip 1 using 2:(strcol(1) eq '%s'%s ? column(6) : NaN) "
        "smooth unique with linespoints title '%s'",
        i == 0 ? "" : ", ", o.csv_path, algorithm, params, name);
  }
  script += "\n";
  return DrawPlot(script, o.plot_path);
}

}  // namespace

absl::StatusOr<std::vector<PlacementRow>> RunPlacement(
    const PlacementOptions& options, std::ostream& out) {
  if (!options.plot_path.empty() && options.csv_path.empty()) {
    return absl::InvalidArgumentError("--plot needs --csv");
  }
  RT_ASSIGN_OR_RETURN(const std::vector<Job> jobs, Jobs(options));
  ProgressLine progress("experiment placement", options.progress, "runs",
                        jobs.size());
  std::vector<PlacementRow> rows;
  for (size_t i = 0; i < jobs.size(); ++i) {
    const Job& job = jobs[i];
    progress.SetNote(
        absl::StrCat(job.algorithm, " n=", job.nodes, " keys=", job.keys));
    RT_ASSIGN_OR_RETURN(PlacementRow row, Measure(job, options.timing));
    rows.push_back(std::move(row));
    progress.Add(1);
  }
  progress.Finish();

  out << "| algorithm | params | nodes | keys | peak/avg | sigma/mu | max load "
         "| moved on add (x ideal) | moved on remove (x ideal) | stray | "
         "ns/lookup | ns/lookup (string) | bytes/node |\n"
         "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n";
  for (const PlacementRow& r : rows) {
    const double n = static_cast<double>(r.nodes);
    out << absl::StrFormat(
        "| %s | %s | %d | %d | %.3f | %.3f | %d | %.4f (%.2f) | %.4f (%.2f) "
        "| %d | %.1f | %.1f | %.0f |\n",
        r.algorithm, r.params, r.nodes, r.keys, r.peak_to_average,
        r.sigma_over_mu, r.max_load, r.moved_on_add, r.moved_on_add * (n + 1),
        r.moved_on_remove, r.moved_on_remove * n,
        r.stray_on_add + r.stray_on_remove, r.ns_per_lookup,
        r.ns_per_lookup_string, r.bytes_per_node);
  }
  out << std::flush;
  if (!options.csv_path.empty()) {
    RT_RETURN_IF_ERROR(WriteCsv(options.csv_path, rows));
  }
  if (!options.plot_path.empty()) RT_RETURN_IF_ERROR(Plot(options, rows));
  return rows;
}

}  // namespace roundtable::cli
