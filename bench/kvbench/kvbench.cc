// kvbench: roundtable side by side with the embedded stores a user would
// pick instead, on the same keys, values and machine, in one run.
//
// Workloads (--benchmarks, run in order per engine, as db_bench does; the
// fills start from an empty directory, the rest use what came before):
//   fillseq       --num puts in key order into an empty store
//   fillrandom    --num puts in a keyed random order into an empty store
//   readrandom    --reads gets of present keys, uniform
//   readzipf      --reads gets of present keys, Zipf(--zipf_theta) over a
//                 scattered popularity order
//   readmissing   --reads gets of keys never stored
//   overwrite     --num puts over present keys, uniform
//   readrandomwriterandom  --reads operations, --readwritepercent gets and
//                 the rest puts over present keys
//   readseq       one walk over every record
//   readcold      reopen with every file out of the page cache, then
//                 --reads gets of present keys: device reads per lookup
//   deleterandom  deletes every present key, in a random order
//   growth        --num puts into an empty store opened with no size hint,
//                 sampled every second (throughput, max latency, file size);
//                 --duration cuts it short (ops says how far it got)
//   fillsync      --sync_writes puts, each durable before it returns
// Keys are 16 bytes; values --value_size bytes of random data.
//
// Output: a line per engine and workload on stderr; with --json one JSON
// object per line on stdout (an "environment" object first, then one
// "result" object each); --csv, --series_csv and --markdown write files.
#include <sys/statfs.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "bench/kvbench/kv_engine.h"
#include "bench/kvbench/runner.h"

ABSL_FLAG(std::string, engines, "all",
          "comma-separated engines, or all (every engine compiled in)");
ABSL_FLAG(std::string, benchmarks, "",
          "comma-separated workloads, run in order (default: all, in the "
          "order of the list at the top of kvbench.cc)");
ABSL_FLAG(uint64_t, num, 1000000, "records the fills write");
ABSL_FLAG(uint64_t, reads, 0, "operations of the read workloads (0: --num)");
ABSL_FLAG(uint64_t, sync_writes, 0, "writes of fillsync (0: --num / 100)");
ABSL_FLAG(uint32_t, value_size, 100, "bytes per value");
ABSL_FLAG(int32_t, threads, 1, "threads of the read, write and sync workloads");
ABSL_FLAG(int32_t, batch, 1,
          "records per write call of the fills (a batch is one atomic write)");
ABSL_FLAG(bool, sync, false, "make every write durable before it returns");
ABSL_FLAG(uint64_t, roundtable_s0, 0,
          "roundtable's slack s0 (0: SuggestedS0 for the keys and values)");
ABSL_FLAG(int64_t, roundtable_write_buffer, -1,
          "bytes of roundtable's write buffer on top of a block cache of "
          "the budget (-1: one memory budget, Options::memory_bytes, for "
          "the cache and the buffer; 0: no buffer)");
ABSL_FLAG(uint64_t, cache_size, 256 << 20,
          "memory budget of each engine's caches, bytes");
ABSL_FLAG(int32_t, readwritepercent, 50,
          "readrandomwriterandom: percentage of reads");
ABSL_FLAG(double, zipf_theta, 0.99, "readzipf's skew, in (0, 1)");
ABSL_FLAG(uint64_t, duration, 0,
          "growth stops after this many seconds, short of --num (0: none); "
          "the later workloads use the records it stored");
ABSL_FLAG(uint64_t, seed, 301, "seed of the key order and values");
ABSL_FLAG(std::string, db_dir, "/tmp/kvbench",
          "directory for the stores (one subdirectory per engine, removed "
          "afterwards)");
ABSL_FLAG(bool, json, false, "one JSON object per line on stdout");
ABSL_FLAG(std::string, csv, "", "write one row per engine and workload here");
ABSL_FLAG(std::string, series_csv, "",
          "write growth's per-second samples here");
ABSL_FLAG(std::string, markdown, "",
          "write a table per workload, every engine side by side, here");
ABSL_FLAG(bool, quick, false,
          "smoke test: --num=20000 (and reads, sync writes to match) unless "
          "given; every engine and workload in a few minutes");

namespace roundtable::kvbench {
namespace {

std::string JsonString(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += absl::StrFormat("\\u%04x", c);
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string JsonNumber(double v) {
  if (!std::isfinite(v)) return "null";
  return absl::StrFormat("%.6g", v);
}

std::string FilesystemName(const std::string& dir) {
  struct statfs fs;
  if (statfs(dir.c_str(), &fs) != 0) return "unknown";
  static const std::map<int64_t, const char*> names = {
      {0xEF53, "ext4"},      {0x58465342, "xfs"},   {0x9123683E, "btrfs"},
      {0x01021994, "tmpfs"}, {0x794c7630, "overlay"}, {0x2FC12FC1, "zfs"},
      {0xF2F52010, "f2fs"}};
  auto it = names.find(static_cast<int64_t>(fs.f_type));
  return it != names.end() ? it->second
                           : absl::StrFormat("0x%x", fs.f_type);
}

// Whether the loaded library whose file name starts with `prefix` calls
// __assert_fail (built with assertions); nullopt when it cannot be told.
std::optional<bool> AssertionsEnabled(const std::string& prefix) {
  if (prefix.empty()) return std::nullopt;
  std::ifstream maps("/proc/self/maps");
  std::string path;
  for (std::string line; std::getline(maps, line);) {
    const size_t slash = line.find('/');
    if (slash == std::string::npos) continue;
    const std::string file = line.substr(slash);
    const std::string base = file.substr(file.rfind('/') + 1);
    if (base.rfind(prefix, 0) == 0) {
      path = file;
      break;
    }
  }
  if (path.empty()) return std::nullopt;
  FILE* nm = popen(("nm -D --undefined-only '" + path + "' 2>/dev/null").c_str(),
                   "r");
  if (nm == nullptr) return std::nullopt;
  bool found = false, any = false;
  char line[512];
  while (fgets(line, sizeof line, nm) != nullptr) {
    any = true;
    if (std::string_view(line).find("__assert_fail") != std::string_view::npos) {
      found = true;
    }
  }
  pclose(nm);
  if (!any) return std::nullopt;
  return found;
}

std::string EnvironmentJson(const std::vector<const EngineInfo*>& engines,
                            const std::string& db_dir) {
  struct utsname u;
  uname(&u);
  const std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  std::vector<std::string> list;
  for (const EngineInfo* e : engines) {
    const std::optional<bool> asserts = AssertionsEnabled(e->library);
    list.push_back(absl::StrCat(
        "{\"name\":", JsonString(e->name), ",\"version\":",
        JsonString(e->version), ",\"config\":", JsonString(e->config),
        ",\"assertions\":",
        asserts.has_value() ? (*asserts ? "true" : "false") : "null", "}"));
  }
  return absl::StrCat(
      "{\"type\":\"environment\",\"date\":", JsonString(date),
      ",\"kernel\":", JsonString(absl::StrCat(u.sysname, " ", u.release)),
      ",\"machine\":", JsonString(u.machine),
      ",\"cpus\":", sysconf(_SC_NPROCESSORS_ONLN),
      ",\"filesystem\":", JsonString(FilesystemName(db_dir)),
      ",\"db_dir\":", JsonString(db_dir), ",\"engines\":[",
      absl::StrJoin(list, ","), "]}");
}

double Us(uint64_t ns) { return ns / 1000.0; }

std::string ResultJson(const Result& r, const RunConfig& config) {
  std::string stats;
  for (const auto& [name, value] : r.engine_stats) {
    if (!stats.empty()) stats += ",";
    stats += absl::StrCat(JsonString(name), ":", JsonNumber(value));
  }
  std::string json = absl::StrCat(
      "{\"type\":\"result\",\"engine\":", JsonString(r.engine),
      ",\"benchmark\":", JsonString(r.benchmark), ",\"num\":", config.num,
      ",\"threads\":", r.threads, ",\"batch\":", r.batch,
      ",\"value_size\":", r.value_size, ",\"ops\":", r.ops,
      ",\"found\":", r.found, ",\"seconds\":", JsonNumber(r.seconds),
      ",\"ops_per_s\":", JsonNumber(r.ops_per_s()),
      ",\"p50_us\":", JsonNumber(Us(r.latency.Quantile(0.5))),
      ",\"p99_us\":", JsonNumber(Us(r.latency.Quantile(0.99))),
      ",\"p999_us\":", JsonNumber(Us(r.latency.Quantile(0.999))),
      ",\"max_us\":", JsonNumber(Us(r.latency.max_ns())),
      ",\"records\":", r.records, ",\"bytes_on_disk\":", r.bytes_on_disk,
      ",\"space_amp\":", JsonNumber(r.space_amplification()),
      ",\"user_bytes_written\":", r.user_bytes_written,
      ",\"write_bytes\":", r.io.write_bytes,
      ",\"write_amp\":", JsonNumber(r.write_amplification()),
      ",\"device_write_bytes\":",
      r.device_write_bytes.has_value() ? absl::StrCat(*r.device_write_bytes)
                                       : "null",
      ",\"device_write_amp\":",
      r.device_write_bytes.has_value()
          ? JsonNumber(r.device_write_amplification())
          : "null",
      ",\"read_bytes\":", r.io.read_bytes,
      ",\"read_bytes_per_op\":", JsonNumber(r.read_bytes_per_op()),
      ",\"device_reads_per_op\":",
      r.device_reads.has_value() ? JsonNumber(r.device_reads_per_op()) : "null",
      ",\"peak_rss_bytes\":", r.peak_rss_bytes, ",\"engine_stats\":{", stats,
      "}");
  if (!r.series.empty()) {
    std::vector<std::string> samples;
    for (const GrowthSample& s : r.series) {
      samples.push_back(absl::StrCat(
          "[", JsonNumber(s.seconds), ",", s.ops, ",",
          JsonNumber(Us(s.max_ns)), ",", s.records, ",", s.bytes_on_disk,
          "]"));
    }
    absl::StrAppend(&json,
                    ",\"series_columns\":[\"seconds\",\"ops\",\"max_us\","
                    "\"records\",\"bytes_on_disk\"],\"series\":[",
                    absl::StrJoin(samples, ","), "]");
  }
  return json + "}";
}

std::string HumanLine(const Result& r) {
  std::string line = absl::StrFormat(
      "%-13s %-21s : %10.3f micros/op %10.0f ops/s; p50 %.1f p99 %.1f "
      "max %.0f us; %.1f MB on disk",
      r.engine, r.benchmark, r.ops > 0 ? r.seconds * 1e6 / r.ops : 0,
      r.ops_per_s(), Us(r.latency.Quantile(0.5)), Us(r.latency.Quantile(0.99)),
      Us(r.latency.max_ns()), r.bytes_on_disk / 1e6);
  if (r.benchmark.rfind("read", 0) == 0 && r.benchmark != "readseq") {
    absl::StrAppendFormat(&line, "; found %d of %d", r.found, r.ops);
  }
  if (r.device_reads.has_value() && r.benchmark == "readcold") {
    absl::StrAppendFormat(&line, "; %.2f device reads/op",
                          r.device_reads_per_op());
  }
  return line;
}

constexpr const char* kCsvHeader =
    "engine,benchmark,num,threads,batch,value_size,ops,found,seconds,"
    "ops_per_s,p50_us,p99_us,p999_us,max_us,records,bytes_on_disk,space_amp,"
    "write_amp,read_bytes_per_op,device_reads_per_op,peak_rss_bytes";

std::string CsvRow(const Result& r, const RunConfig& config) {
  return absl::StrFormat(
      "%s,%s,%d,%d,%d,%d,%d,%d,%.6f,%.1f,%.3f,%.3f,%.3f,%.3f,%d,%d,%.4f,"
      "%.4f,%.1f,%s,%d",
      r.engine, r.benchmark, config.num, r.threads, r.batch, r.value_size,
      r.ops, r.found, r.seconds, r.ops_per_s(), Us(r.latency.Quantile(0.5)),
      Us(r.latency.Quantile(0.99)), Us(r.latency.Quantile(0.999)),
      Us(r.latency.max_ns()), r.records, r.bytes_on_disk,
      r.space_amplification(), r.write_amplification(), r.read_bytes_per_op(),
      r.device_reads.has_value()
          ? absl::StrFormat("%.3f", r.device_reads_per_op())
          : "",
      r.peak_rss_bytes);
}

// A table per workload, engines side by side, throughput against
// roundtable's.
std::string Markdown(const std::vector<Result>& results,
                     const std::vector<std::string>& benchmarks,
                     const RunConfig& config) {
  std::string md;
  for (const std::string& b : benchmarks) {
    double base = 0;
    for (const Result& r : results) {
      if (r.benchmark == b && r.engine == "roundtable") base = r.ops_per_s();
    }
    absl::StrAppendFormat(
        &md,
        "#### %s (num %d, value %d B, threads %d, batch %d)\n\n"
        "| engine | ops/s | x roundtable | p50 us | p99 us | p99.9 us | "
        "max us | disk MB | space amp | write amp | dev reads/op | "
        "peak RSS MB |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|---|\n",
        b, config.num, config.value_size, config.threads, config.batch);
    for (const Result& r : results) {
      if (r.benchmark != b) continue;
      absl::StrAppendFormat(
          &md,
          "| %s | %.0f | %s | %.1f | %.1f | %.1f | %.0f | %.1f | %.2f | %s | "
          "%s | %.0f |\n",
          r.engine, r.ops_per_s(),
          base > 0 ? absl::StrFormat("%.2f", r.ops_per_s() / base) : "-",
          Us(r.latency.Quantile(0.5)), Us(r.latency.Quantile(0.99)),
          Us(r.latency.Quantile(0.999)), Us(r.latency.max_ns()),
          r.bytes_on_disk / 1e6, r.space_amplification(),
          r.user_bytes_written > 0
              ? absl::StrFormat("%.2f", r.write_amplification())
              : "-",
          r.device_reads.has_value()
              ? absl::StrFormat("%.2f", r.device_reads_per_op())
              : "-",
          r.peak_rss_bytes / 1e6);
    }
    md += "\n";
  }
  return md;
}

int Main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "kvbench [--engines=roundtable,rocksdb,...] "
      "[--benchmarks=fillrandom,readrandom,...] [--num=N] [--json]\n"
      "Runs the same workloads on each engine compiled in; see "
      "docs/benchmarks.md.");
  const std::vector<char*> rest = absl::ParseCommandLine(argc, argv);
  if (rest.size() > 1) {
    std::cerr << "kvbench: unexpected argument " << rest[1] << "\n";
    return 1;
  }
  RunConfig config;
  const bool quick = absl::GetFlag(FLAGS_quick);
  config.num = absl::GetFlag(FLAGS_num);
  config.reads = absl::GetFlag(FLAGS_reads);
  config.sync_writes = absl::GetFlag(FLAGS_sync_writes);
  if (quick) {
    // Defaults of the smoke test, where the flags were left at theirs.
    if (config.num == 1000000) config.num = 20000;
    if (config.sync_writes == 0) config.sync_writes = 200;
  }
  config.value_size = absl::GetFlag(FLAGS_value_size);
  config.threads = absl::GetFlag(FLAGS_threads);
  config.batch = absl::GetFlag(FLAGS_batch);
  config.sync = absl::GetFlag(FLAGS_sync);
  config.cache_bytes = absl::GetFlag(FLAGS_cache_size);
  config.read_write_percent = absl::GetFlag(FLAGS_readwritepercent);
  config.zipf_theta = absl::GetFlag(FLAGS_zipf_theta);
  config.duration_seconds = absl::GetFlag(FLAGS_duration);
  config.seed = absl::GetFlag(FLAGS_seed);
  config.roundtable_s0 = absl::GetFlag(FLAGS_roundtable_s0);
  config.roundtable_write_buffer = absl::GetFlag(FLAGS_roundtable_write_buffer);
  config.db_dir = absl::GetFlag(FLAGS_db_dir);

  std::string bad;
  if (config.num == 0) bad = "--num must be at least 1";
  if (config.threads < 1 || config.threads > 256) {
    bad = "--threads must be from 1 to 256";
  }
  if (config.batch < 1 || config.batch > 100000) {
    bad = "--batch must be from 1 to 100000";
  }
  if (config.read_write_percent < 0 || config.read_write_percent > 100) {
    bad = "--readwritepercent must be from 0 to 100";
  }
  if (!(config.zipf_theta > 0 && config.zipf_theta < 1)) {
    bad = "--zipf_theta must be in (0, 1)";
  }
  if (config.value_size > (16 << 20)) bad = "--value_size is at most 16 MiB";
  if (!bad.empty()) {
    std::cerr << "kvbench: " << bad << "\n";
    return 1;
  }

  std::vector<std::string> benchmarks = absl::StrSplit(
      absl::GetFlag(FLAGS_benchmarks), ',', absl::SkipWhitespace());
  if (benchmarks.empty()) benchmarks = BenchmarkNames();
  for (const std::string& b : benchmarks) {
    if (std::find(BenchmarkNames().begin(), BenchmarkNames().end(), b) ==
        BenchmarkNames().end()) {
      std::cerr << "kvbench: unknown benchmark \"" << b << "\"; known: "
                << absl::StrJoin(BenchmarkNames(), ",") << "\n";
      return 1;
    }
  }
  std::vector<const EngineInfo*> engines;
  const std::string engine_flag = absl::GetFlag(FLAGS_engines);
  if (engine_flag == "all") {
    for (const EngineInfo& e : Engines()) engines.push_back(&e);
  } else {
    const std::vector<std::string> names =
        absl::StrSplit(engine_flag, ',', absl::SkipWhitespace());
    for (const std::string& name : names) {
      const EngineInfo* found = nullptr;
      for (const EngineInfo& e : Engines()) {
        if (e.name == name) found = &e;
      }
      if (found == nullptr) {
        const auto& known = KnownEngineNames();
        const bool is_known =
            std::find(known.begin(), known.end(), name) != known.end();
        std::cerr << "kvbench: engine \"" << name << "\" "
                  << (is_known ? "is not compiled in: install its Debian "
                                 "-dev package (tools/kvbench.sh does) and "
                                 "rebuild"
                               : "is unknown; known: " +
                                     absl::StrJoin(known, ","))
                  << "\n";
        return 1;
      }
      engines.push_back(found);
    }
  }

  std::error_code ec;
  std::filesystem::create_directories(config.db_dir, ec);
  if (ec) {
    std::cerr << "kvbench: cannot create " << config.db_dir << ": "
              << ec.message() << "\n";
    return 1;
  }
  const bool json = absl::GetFlag(FLAGS_json);
  if (json) std::cout << EnvironmentJson(engines, config.db_dir) << std::endl;

  std::vector<Result> results;
  int failures = 0;
  for (const EngineInfo* engine : engines) {
    Runner runner(*engine, config);
    for (const std::string& b : benchmarks) {
      absl::StatusOr<Result> r = runner.Run(
          b, [](const std::string& line) { std::cerr << line << std::endl; });
      if (!r.ok()) {
        std::cerr << engine->name << " " << b << ": " << r.status() << "\n";
        ++failures;
        break;  // the engine's later workloads depend on this one
      }
      std::cerr << HumanLine(*r) << std::endl;
      if (json) std::cout << ResultJson(*r, config) << std::endl;
      results.push_back(std::move(*r));
    }
    absl::Status s = runner.Finish();
    if (!s.ok()) {
      std::cerr << engine->name << " close: " << s << "\n";
      ++failures;
    }
  }

  auto write_file = [&](const std::string& path, const std::string& text) {
    if (path.empty()) return;
    std::ofstream out(path);
    out << text;
    if (!out.good()) {
      std::cerr << "kvbench: cannot write " << path << "\n";
      ++failures;
    }
  };
  std::string csv = std::string(kCsvHeader) + "\n";
  std::string series = "engine,seconds,ops,max_us,records,bytes_on_disk\n";
  for (const Result& r : results) {
    csv += CsvRow(r, config) + "\n";
    for (const GrowthSample& s : r.series) {
      absl::StrAppendFormat(&series, "%s,%.3f,%d,%.1f,%d,%d\n", r.engine,
                            s.seconds, s.ops, Us(s.max_ns), s.records,
                            s.bytes_on_disk);
    }
  }
  write_file(absl::GetFlag(FLAGS_csv), csv);
  write_file(absl::GetFlag(FLAGS_series_csv), series);
  write_file(absl::GetFlag(FLAGS_markdown),
             Markdown(results, benchmarks, config));
  return failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace roundtable::kvbench

int main(int argc, char** argv) {
  return roundtable::kvbench::Main(argc, argv);
}
