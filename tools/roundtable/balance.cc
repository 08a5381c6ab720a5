#include "tools/roundtable/balance.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <fstream>
#include <ostream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace roundtable::cli {
namespace {

// Mapping names whose placement depends on s0.
bool UsesSlack(std::string_view name) {
  return name == "round" || name == "linear-slack";
}

// Values counted between two progress reports by one worker.
constexpr uint64_t kProgressChunk = uint64_t{1} << 22;

}  // namespace

BalanceStats SummariseSizes(std::vector<uint64_t> sizes) {
  std::sort(sizes.begin(), sizes.end());
  const double n = static_cast<double>(sizes.size());
  double sum = 0;
  for (const uint64_t s : sizes) sum += static_cast<double>(s);
  const double mean = sum / n;
  double squares = 0;
  for (const uint64_t s : sizes) {
    const double d = static_cast<double>(s) - mean;
    squares += d * d;
  }
  // Nearest rank: the smallest size with at least p of the buckets at or
  // below it.
  auto percentile = [&](double p) {
    const size_t rank = static_cast<size_t>(std::ceil(p * n));
    return static_cast<double>(sizes[std::max<size_t>(rank, 1) - 1]) / mean;
  };
  BalanceStats stats;
  stats.sigma_over_mu = std::sqrt(squares / n) / mean;
  stats.min = static_cast<double>(sizes.front()) / mean;
  stats.max = static_cast<double>(sizes.back()) / mean;
  stats.p1 = percentile(0.01);
  stats.p99 = percentile(0.99);
  stats.p99_over_p1 = stats.p99 / stats.p1;
  return stats;
}

std::vector<uint64_t> CountEvenlySpaced(const mapping::BucketMapping& map,
                                        uint64_t values, int threads,
                                        ProgressLine* progress) {
  const uint64_t m = map.num_buckets();
  threads = std::max(1, threads);
  // 2^64 = q * values + r, so floor(i * 2^64 / values) = i * q +
  // floor(i * r / values), stepped without a 128-bit division per value.
  const unsigned __int128 range = static_cast<unsigned __int128>(1) << 64;
  const uint64_t q = static_cast<uint64_t>(range / values);
  const uint64_t r = static_cast<uint64_t>(range % values);

  std::vector<std::vector<uint64_t>> partial(threads,
                                             std::vector<uint64_t>(m, 0));
  auto work = [&](int t) {
    const uint64_t begin = values / threads * t;
    const uint64_t end = t + 1 == threads ? values : values / threads * (t + 1);
    const unsigned __int128 start = static_cast<unsigned __int128>(begin) * r;
    uint64_t hash = begin * q + static_cast<uint64_t>(start / values);
    uint64_t remainder = static_cast<uint64_t>(start % values);
    std::vector<uint64_t>& counts = partial[t];
    for (uint64_t i = begin; i < end; ++i) {
      ++counts[map.FindBucket(hash)];
      hash += q;
      remainder += r;
      if (remainder >= values) {
        remainder -= values;
        ++hash;
      }
      if (progress != nullptr &&
          ((i - begin + 1) & (kProgressChunk - 1)) == 0) {
        progress->Add(kProgressChunk);
      }
    }
    if (progress != nullptr)
      progress->Add((end - begin) & (kProgressChunk - 1));
  };
  std::vector<std::thread> workers;
  for (int t = 1; t < threads; ++t) workers.emplace_back(work, t);
  work(0);
  for (auto& w : workers) w.join();
  std::vector<uint64_t> counts(m, 0);
  for (const auto& p : partial) {
    for (uint64_t b = 0; b < m; ++b) counts[b] += p[b];
  }
  return counts;
}

absl::StatusOr<std::vector<BalanceRow>> RunBalance(
    const BalanceOptions& options, std::ostream& out) {
  if (options.values == 0) {
    return absl::InvalidArgumentError("--values must be at least 1");
  }
  // Build every mapping first so that a bad option fails before any work.
  struct Job {
    std::unique_ptr<mapping::BucketMapping> map;
    uint64_t s0;
  };
  std::vector<Job> jobs;
  for (const std::string& name : options.mappings) {
    const bool slack = UsesSlack(name);
    for (const uint64_t s0 : options.s0s) {
      auto made = mapping::MakeMapping(name, s0, options.buckets);
      if (!made.ok()) return made.status();
      jobs.push_back({*std::move(made), slack ? s0 : 0});
      if (!slack) break;
    }
  }

  out << absl::StrFormat(
      "Bucket sizes / mean for %d evenly spaced 64-bit values in %d buckets\n",
      options.values, options.buckets);
  out << absl::StrFormat("%-14s %5s %9s %8s %8s %8s %8s %8s %8s\n", "mapping",
                         "s0", "sigma/mu", "min", "max", "1%", "99%", "99%/1%",
                         "seconds");
  std::vector<BalanceRow> rows;
  ProgressLine progress("experiment balance", options.show_progress, "values",
                        options.values * jobs.size());
  for (const Job& job : jobs) {
    const std::string label =
        absl::StrCat(std::string(job.map->name()),
                     job.s0 ? absl::StrCat(" s0=", job.s0) : "");
    progress.SetNote(label);
    const auto start = std::chrono::steady_clock::now();
    std::vector<uint64_t> counts =
        CountEvenlySpaced(*job.map, options.values, options.threads, &progress);
    BalanceRow row;
    row.mapping = std::string(job.map->name());
    row.s0 = job.s0;
    row.stats = SummariseSizes(std::move(counts));
    row.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    const BalanceStats& s = row.stats;
    progress.Clear();  // the row goes where the line was
    out << absl::StrFormat(
               "%-14s %5s %9.5f %8.5f %8.5f %8.5f %8.5f %8.5f %8.1f\n",
               row.mapping, row.s0 ? absl::StrCat(row.s0) : "-",
               s.sigma_over_mu, s.min, s.max, s.p1, s.p99, s.p99_over_p1,
               row.seconds)
        << std::flush;
    rows.push_back(std::move(row));
  }
  progress.Finish();

  if (!options.csv_path.empty()) {
    std::ofstream csv(options.csv_path);
    csv << "mapping,s0,buckets,values,sigma_over_mu,min,max,p1,p99,"
           "p99_over_p1,seconds\n";
    for (const BalanceRow& row : rows) {
      const BalanceStats& s = row.stats;
      csv << absl::StrFormat("%s,%d,%d,%d,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%.3f\n",
                             row.mapping, row.s0, options.buckets,
                             options.values, s.sigma_over_mu, s.min, s.max,
                             s.p1, s.p99, s.p99_over_p1, row.seconds);
    }
    if (!csv) {
      return absl::UnavailableError(
          absl::StrCat("cannot write ", options.csv_path));
    }
  }
  return rows;
}

}  // namespace roundtable::cli
