#include "tools/roundtable/transfers_experiment.h"

#include <algorithm>
#include <fstream>
#include <mutex>
#include <ostream>
#include <random>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/mapping/round_mapping.h"
#include "io/base/status_macros.h"
#include "tools/roundtable/progress.h"

namespace roundtable::cli {
namespace {

// Keys at and past this number are never inserted: lookups of absent keys.
constexpr uint64_t kAbsent = uint64_t{1} << 40;

// Logical transfers of the writes: Put, Delete, grows, shrinks and the
// stash copy.
uint64_t WriteTransfers(const LogicalLedger& l) {
  return l.put_reads + l.put_writes + l.delete_reads + l.delete_writes +
         l.grow_reads + l.grow_writes + l.shrink_reads + l.shrink_writes +
         l.stash_copy_writes;
}

// Measures one layout: inserts up to to * B, a point at every power of two
// times B.
class LayoutRun {
 public:
  LayoutRun(const PaperLayout& layout, const TransfersOptions& options,
            ProgressLine* progress)
      : layout_(layout),
        options_(options),
        progress_(progress),
        rng_(RunSeed(options.seed, 1)) {}

  absl::StatusOr<std::vector<TransfersPoint>> Run() {
    RT_ASSIGN_OR_RETURN(table_,
                        OpenPaperTable(layout_, RunSeed(options_.seed, 0)));
    last_ = table_->GetStats();
    std::vector<TransfersPoint> points;
    uint64_t n = 0;
    for (uint64_t target = layout_.block_keys;
         target <= options_.to * layout_.block_keys; target *= 2) {
      TransfersPoint p;
      p.layout = layout_;
      const uint64_t before = WriteTransfers(last_.logical);
      const uint64_t inserted = target - n;
      for (; n < target; ++n) RT_RETURN_IF_ERROR(Put(n, &p));
      progress_->Add(inserted);
      p.insert = static_cast<double>(WriteTransfers(last_.logical) - before) /
                 static_cast<double>(inserted);
      p.n = n;
      p.m = last_.buckets;
      p.stash_fraction =
          static_cast<double>(last_.stash_records) / static_cast<double>(n);
      // The model: a read and a write per insert, and 2 s(m) + 1 for each
      // grow from m that the grow rule makes between the two points.
      double grow_cost = 0;
      for (uint64_t m = BucketsAfter(layout_, target - inserted);
           m < BucketsAfter(layout_, target); ++m) {
        grow_cost += 2.0 * mapping::RoundState(layout_.s0, m).step() + 1;
      }
      p.insert_model = 2 + grow_cost / static_cast<double>(inserted);
      RT_RETURN_IF_ERROR(Lookups(n, /*present=*/true, &p.hit, &p.hit_max));
      RT_RETURN_IF_ERROR(Lookups(n, /*present=*/false, &p.miss, &p.miss_max));
      RT_RETURN_IF_ERROR(DeleteAndRestore(n, &p));
      points.push_back(p);
    }
    return points;
  }

 private:
  // The stats after one operation; `last_` becomes them.
  TableStats Next() {
    TableStats now = table_->GetStats();
    std::swap(now, last_);
    return now;  // the stats before
  }

  absl::Status Put(uint64_t i, TransfersPoint* p) {
    char buffer[8];
    RT_RETURN_IF_ERROR(table_->Put(PaperKey(i, buffer), ""));
    const TableStats before = Next();
    const LogicalLedger& a = before.logical;
    const LogicalLedger& b = last_.logical;
    if (b.grows == a.grows) return absl::OkStatus();
    // One grow from m buckets: z = s(m) reads, z + 1 writes.
    const uint64_t z = mapping::RoundState(layout_.s0, before.buckets).step();
    const uint64_t reads = b.grow_reads - a.grow_reads;
    const uint64_t writes = b.grow_writes - a.grow_writes;
    NoteStep(z, b.grows - a.grows == 1 && reads == z && writes == z + 1,
             &p->grows, &p->grows_exact, p);
    return absl::OkStatus();
  }

  void NoteStep(uint64_t z, bool exact, uint64_t* steps, uint64_t* exact_steps,
                TransfersPoint* p) {
    p->z_min = p->grows + p->shrinks == 0 ? z : std::min(p->z_min, z);
    p->z_max = std::max(p->z_max, z);
    ++*steps;
    if (exact) ++*exact_steps;
  }

  absl::Status Lookups(uint64_t n, bool present, double* mean, uint64_t* max) {
    uint64_t total = 0;
    *max = 0;
    char buffer[8];
    std::string value;
    for (uint64_t k = 0; k < options_.samples; ++k) {
      const uint64_t i = present ? rng_() % n : kAbsent + rng_();
      const absl::Status s = table_->Get(PaperKey(i, buffer), &value);
      if (present != s.ok()) {
        return s.ok() ? absl::InternalError("an absent key was found") : s;
      }
      const TableStats before = Next();
      const uint64_t reads = last_.logical.get_reads - before.logical.get_reads;
      total += reads;
      *max = std::max(*max, reads);
    }
    *mean = static_cast<double>(total) / static_cast<double>(options_.samples);
    return absl::OkStatus();
  }

  absl::Status DeleteAndRestore(uint64_t n, TransfersPoint* p) {
    const uint64_t count = std::min(options_.samples, n / 2);
    // Distinct keys in the order drawn (a hash set's order would differ
    // from process to process, and the run would not repeat).
    absl::flat_hash_set<uint64_t> chosen;
    std::vector<uint64_t> keys;
    while (keys.size() < count) {
      const uint64_t i = rng_() % n;
      if (chosen.insert(i).second) keys.push_back(i);
    }
    const uint64_t before_all = WriteTransfers(last_.logical);
    char buffer[8];
    for (const uint64_t i : keys) {
      RT_RETURN_IF_ERROR(table_->Delete(PaperKey(i, buffer)));
      const TableStats before = Next();
      const LogicalLedger& a = before.logical;
      const LogicalLedger& b = last_.logical;
      if (b.shrinks == a.shrinks) continue;
      // One shrink to m - 1 buckets: z = s(m - 1) writes, z + 1 reads.
      const uint64_t z =
          mapping::RoundState(layout_.s0, before.buckets - 1).step();
      const uint64_t reads = b.shrink_reads - a.shrink_reads;
      const uint64_t writes = b.shrink_writes - a.shrink_writes;
      NoteStep(z, b.shrinks - a.shrinks == 1 && reads == z + 1 && writes == z,
               &p->shrinks, &p->shrinks_exact, p);
    }
    p->remove =
        count == 0
            ? 0
            : static_cast<double>(WriteTransfers(last_.logical) - before_all) /
                  static_cast<double>(count);
    for (const uint64_t i : keys) RT_RETURN_IF_ERROR(Put(i, p));
    return absl::OkStatus();
  }

  const PaperLayout layout_;
  const TransfersOptions& options_;
  ProgressLine* const progress_;
  std::mt19937_64 rng_;
  std::unique_ptr<Table> table_;
  TableStats last_;
};

}  // namespace

TransfersOptions QuickTransfersOptions() {
  TransfersOptions o;
  o.block_keys = {128};
  o.to = 256;
  o.samples = 2000;
  return o;
}

absl::StatusOr<std::vector<TransfersPoint>> RunTransfers(
    const TransfersOptions& options, std::ostream& out) {
  RT_RETURN_IF_ERROR(CheckRun(options.block_keys, options));
  std::vector<PaperLayout> layouts;
  for (const uint32_t b : options.block_keys) {
    for (const double e : options.epsilons) {
      for (const uint64_t s0 : options.s0s) layouts.push_back({b, e, s0});
    }
  }
  if (layouts.empty()) return absl::InvalidArgumentError("nothing to run");
  if (options.to < 1 || options.to > (uint64_t{1} << 24)) {
    return absl::InvalidArgumentError("--to must be in [1, 2^24]");
  }
  uint64_t total = 0;
  for (const PaperLayout& l : layouts) total += options.to * l.block_keys;
  std::vector<std::vector<TransfersPoint>> results(layouts.size());
  {
    ProgressLine progress("experiment transfers", options.progress, "inserts",
                          total);
    RT_RETURN_IF_ERROR(RunJobs(layouts.size(), options.threads, [&](size_t j) {
      progress.SetNote(LayoutName(layouts[j]));
      LayoutRun run(layouts[j], options, &progress);
      RT_ASSIGN_OR_RETURN(results[j], run.Run());
      return absl::OkStatus();
    }));
    progress.Finish();
  }
  std::vector<TransfersPoint> points;
  for (const auto& r : results) points.insert(points.end(), r.begin(), r.end());

  for (size_t j = 0; j < layouts.size(); ++j) {
    out << "\n"
        << LayoutName(layouts[j]) << ": logical block transfers per "
        << "operation (seed " << options.seed << ", " << options.samples
        << " lookups of each kind and up to as many deletes per row)\n\n"
        << "| n / B | m | stash / n | insert (model) | hit (max) | miss (max) "
           "| delete | grows at 2z+1 | shrinks at 2z+1 | z |\n"
           "|---|---|---|---|---|---|---|---|---|---|\n";
    for (const TransfersPoint& p : results[j]) {
      out << absl::StrFormat(
          "| %d | %d | %.2g | %.3f (%.3f) | %.4f (%d) | %.4f (%d) | %.3f | "
          "%d/%d | %d/%d | %s |\n",
          p.n / p.layout.block_keys, p.m, p.stash_fraction, p.insert,
          p.insert_model, p.hit, p.hit_max, p.miss, p.miss_max, p.remove,
          p.grows_exact, p.grows, p.shrinks_exact, p.shrinks,
          p.grows + p.shrinks == 0 ? std::string("-")
                                   : absl::StrCat(p.z_min, "-", p.z_max));
    }
  }
  out << std::flush;

  if (options.csv_path.empty()) return points;
  {
    std::ofstream csv(options.csv_path);
    csv << "block_keys,epsilon,s0,n,m,stash_fraction,insert_transfers,"
           "insert_model,lookup_hit_reads,lookup_hit_max,lookup_miss_reads,"
           "lookup_miss_max,delete_transfers,grows,grows_at_2z1,shrinks,"
           "shrinks_at_2z1,z_min,z_max\n";
    for (const TransfersPoint& p : points) {
      csv << absl::StrFormat(
          "%d,%s,%d,%d,%d,%.6g,%.6f,%.6f,%.6f,%d,%.6f,%d,%.6f,%d,%d,%d,%d,%d,"
          "%d\n",
          p.layout.block_keys, FormatEpsilon(p.layout.epsilon), p.layout.s0,
          p.n, p.m, p.stash_fraction, p.insert, p.insert_model, p.hit,
          p.hit_max, p.miss, p.miss_max, p.remove, p.grows, p.grows_exact,
          p.shrinks, p.shrinks_exact, p.z_min, p.z_max);
    }
    if (!csv) {
      return absl::UnavailableError(
          absl::StrCat("cannot write ", options.csv_path));
    }
  }
  if (options.plot_path.empty()) return points;
  std::string script = absl::StrFormat(
      "set terminal pngcairo size 1000,%d font ',9'\n"
      "set output '%s'\nset datafile separator ','\n"
      "set logscale x 2\nset xlabel 'n / B'\n"
      "set ylabel 'logical block transfers per operation'\n"
      "set key outside right\nset grid\nset yrange [0:*]\n"
      "set multiplot layout %d,1\n",
      260 * layouts.size(), options.plot_path, layouts.size());
  for (const PaperLayout& l : layouts) {
    const std::string select = absl::StrFormat(
        "(column(1) == %d && strcol(2) eq '%s' && column(3) == %d ? ",
        l.block_keys, FormatEpsilon(l.epsilon), l.s0);
    auto series = [&](int column, const char* style, const char* title) {
      return absl::StrFormat(
          "'%s' skip 1 using (column(4) / %d.0):%scolumn(%d) : NaN) with %s "
          "title '%s'",
          options.csv_path, l.block_keys, select, column, style, title);
    };
    absl::StrAppendFormat(
        &script, "set title '%s'\nplot %s, %s, %s, %s, %s\n", LayoutName(l),
        series(7, "linespoints pt 7 lc 1", "insert"),
        series(8, "lines dt 2 lc 1", "insert, model"),
        series(13, "linespoints pt 5 lc 2", "delete"),
        series(9, "linespoints pt 9 lc 3", "lookup, present key"),
        series(11, "linespoints pt 11 lc 4", "lookup, absent key"));
  }
  script += "unset multiplot\n";
  RT_RETURN_IF_ERROR(DrawPlot(script, options.plot_path));
  return points;
}

}  // namespace roundtable::cli
