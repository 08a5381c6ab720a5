// kvbench's shared parts (the key permutation, Zipf ranks, the latency
// histogram, the disk and cache helpers), one contract run over every engine
// compiled in, and the --quick smoke run of the whole program with its JSON
// output checked field by field.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include "bench/kvbench/kv_engine.h"
#include "bench/kvbench/runner.h"
#include "bench/kvbench/workload.h"
#include "gtest/gtest.h"

namespace roundtable::kvbench {
namespace {

std::string TestDir(const std::string& tag) {
  const std::string dir = testing::TempDir() + "/kvbench_" + tag + "_" +
                          std::to_string(getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

TEST(KeySpaceTest, PermuteIsABijectionOfEverySize) {
  for (const uint64_t n : {1, 2, 3, 5, 16, 17, 1000, 4097, 65536, 100003}) {
    for (const uint64_t seed : {1, 2, 301}) {
      SCOPED_TRACE("n " + std::to_string(n) + " seed " + std::to_string(seed));
      const KeySpace keys(n, seed);
      std::vector<bool> seen(n, false);
      for (uint64_t i = 0; i < n; ++i) {
        const uint64_t p = keys.Permute(i);
        ASSERT_LT(p, n);
        ASSERT_FALSE(seen[p]) << i << " -> " << p;
        seen[p] = true;
      }
    }
  }
}

TEST(KeySpaceTest, PermuteDependsOnTheSeedAndScatters) {
  const uint64_t n = 10000;
  const KeySpace a(n, 1), b(n, 2);
  int same = 0, fixed = 0;
  for (uint64_t i = 0; i < n; ++i) {
    same += a.Permute(i) == b.Permute(i);
    fixed += a.Permute(i) == i;
  }
  EXPECT_LT(same, 20);  // about 1 expected
  EXPECT_LT(fixed, 20);
}

std::string Str(const std::array<char, kKeyBytes>& key) {
  return std::string(key.begin(), key.end());
}

TEST(KeySpaceTest, KeysSortInIndexOrderWithEachMissBetweenTwoKeys) {
  std::mt19937_64 rng(5);
  for (int t = 0; t < 10000; ++t) {
    // Indices below 2^62, the most a run could use.
    const uint64_t i = (rng() >> 2) >> (rng() % 62);
    const uint64_t j = (rng() >> 2) >> (rng() % 62);
    EXPECT_EQ(i < j, Str(KeySpace::Key(i)) < Str(KeySpace::Key(j)))
        << i << " " << j;
    EXPECT_LT(Str(KeySpace::Key(i)), Str(KeySpace::MissingKey(i))) << i;
    EXPECT_LT(Str(KeySpace::MissingKey(i)), Str(KeySpace::Key(i + 1))) << i;
    EXPECT_NE(Str(KeySpace::MissingKey(i)), Str(KeySpace::Key(j)));
  }
  EXPECT_EQ(Str(KeySpace::Key(0xabc)), "0000000000001578");
  EXPECT_EQ(Str(KeySpace::MissingKey(0xabc)), "0000000000001579");
}

TEST(ZipfGeneratorTest, RanksFollowTheLaw) {
  const uint64_t n = 1000;
  const double theta = 0.99;
  ZipfGenerator zipf(n, theta, 7);
  std::vector<uint64_t> counts(n, 0);
  const int draws = 1000000;
  for (int i = 0; i < draws; ++i) {
    const uint64_t r = zipf.Next();
    ASSERT_LT(r, n);
    ++counts[r];
  }
  double zeta = 0;
  for (uint64_t i = 1; i <= n; ++i) zeta += std::pow(i, -theta);
  // The first ranks, where the generator is exact, within 3 % of the law
  // (each has over 10^4 draws: a sigma of about 1 %).
  for (uint64_t k : {0, 1}) {
    const double expected = draws * std::pow(k + 1, -theta) / zeta;
    EXPECT_NEAR(counts[k], expected, 0.03 * expected) << "rank " << k;
  }
  // Further on the inversion is approximate: the top tenth of ranks still
  // takes about its share of the mass.
  uint64_t head = 0;
  for (uint64_t k = 0; k < n / 10; ++k) head += counts[k];
  double head_expected = 0;
  for (uint64_t k = 1; k <= n / 10; ++k) head_expected += std::pow(k, -theta);
  head_expected *= draws / zeta;
  EXPECT_NEAR(head, head_expected, 0.05 * head_expected);
}

TEST(LatencyHistogramTest, QuantilesAreWithinTheBucketError) {
  std::mt19937_64 rng(11);
  std::vector<uint64_t> values;
  LatencyHistogram a, b;
  for (int i = 0; i < 100000; ++i) {
    // Log-uniform over 1 ns .. 1 s.
    const auto v = static_cast<uint64_t>(
        std::exp(std::uniform_real_distribution<double>(0, 20.7)(rng)));
    values.push_back(v);
    (i % 2 ? a : b).Add(v);
  }
  a.Merge(b);
  std::sort(values.begin(), values.end());
  EXPECT_EQ(a.count(), values.size());
  EXPECT_EQ(a.max_ns(), values.back());
  for (const double q : {0.0, 0.01, 0.5, 0.9, 0.99, 0.999, 1.0}) {
    const uint64_t exact =
        values[std::max<size_t>(std::ceil(q * values.size()), 1) - 1];
    const uint64_t got = a.Quantile(q);
    EXPECT_GE(got, exact) << q;
    EXPECT_LE(got, exact + exact / 32 + 1) << q;
  }
  EXPECT_EQ(LatencyHistogram().Quantile(0.5), 0u);
}

TEST(DiskHelpersTest, BytesOnDiskAndDropPageCache) {
  const std::string dir = TestDir("disk");
  std::filesystem::create_directories(dir + "/sub");
  std::ofstream(dir + "/a") << std::string(100000, 'x');
  std::ofstream(dir + "/sub/b") << std::string(50000, 'y');
  const uint64_t bytes = BytesOnDisk(dir);
  EXPECT_GE(bytes, 150000u);
  EXPECT_LT(bytes, 150000u + 64 * 1024);
  EXPECT_TRUE(DropPageCache(dir).ok());
  std::ifstream in(dir + "/sub/b");
  std::string back((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(back, std::string(50000, 'y'));
  std::filesystem::remove_all(dir);
}

// Every engine compiled in runs every workload through the same Runner, and
// what it reports agrees with what was written.
class EngineContractTest : public testing::TestWithParam<std::string> {
 protected:
  const EngineInfo& Info() {
    for (const EngineInfo& e : Engines()) {
      if (e.name == GetParam()) return e;
    }
    std::abort();
  }
};

std::vector<std::string> EngineNames() {
  std::vector<std::string> names;
  for (const EngineInfo& e : Engines()) names.push_back(e.name);
  return names;
}

Result MustRun(Runner& runner, const std::string& benchmark) {
  absl::StatusOr<Result> r = runner.Run(benchmark);
  EXPECT_TRUE(r.ok()) << benchmark << ": " << r.status();
  return r.ok() ? *r : Result();
}

TEST_P(EngineContractTest, WorkloadsSeeWhatWasWritten) {
  for (const int threads : {1, 2}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    RunConfig config;
    config.num = 3000;
    config.reads = 2000;
    config.sync_writes = 40;
    config.threads = threads;
    config.batch = threads == 1 ? 1 : 7;  // batches, with a short last one
    config.cache_bytes = 8 << 20;
    config.db_dir = TestDir("contract_" + GetParam());
    Runner runner(Info(), config);

    Result r = MustRun(runner, "fillseq");
    EXPECT_EQ(r.ops, 3000u);
    EXPECT_EQ(r.records, 3000u);
    EXPECT_EQ(MustRun(runner, "readseq").ops, 3000u);
    r = MustRun(runner, "fillrandom");
    EXPECT_EQ(r.latency.count(), threads == 1 ? 3000u : (3000u + 6) / 7);
    EXPECT_GT(r.bytes_on_disk, 3000u * 116 / 2);
    EXPECT_EQ(r.user_bytes_written, 3000u * 116);
    for (const char* read : {"readrandom", "readzipf", "readcold"}) {
      r = MustRun(runner, read);
      EXPECT_EQ(r.ops, 2000u) << read;
      EXPECT_EQ(r.found, 2000u) << read;
      EXPECT_GT(r.ops_per_s(), 0) << read;
    }
    r = MustRun(runner, "readmissing");
    EXPECT_EQ(r.found, 0u);
    r = MustRun(runner, "overwrite");
    EXPECT_EQ(r.ops, 3000u);
    r = MustRun(runner, "readrandomwriterandom");
    EXPECT_EQ(r.ops, 2000u);
    // About half are reads, and every read finds its key.
    EXPECT_GT(r.found, 800u);
    EXPECT_LT(r.found, 1200u);
    EXPECT_NEAR(r.user_bytes_written / 116.0 + r.found, 2000, 0.5);
    EXPECT_EQ(MustRun(runner, "readseq").ops, 3000u);
    r = MustRun(runner, "deleterandom");
    EXPECT_EQ(r.ops, 3000u);
    EXPECT_EQ(r.records, 0u);
    EXPECT_EQ(MustRun(runner, "readseq").ops, 0u);
    r = MustRun(runner, "growth");
    EXPECT_EQ(r.ops, 3000u);
    ASSERT_FALSE(r.series.empty());
    EXPECT_EQ(r.series.back().records, 3000u);
    EXPECT_EQ(MustRun(runner, "readseq").ops, 3000u);
    r = MustRun(runner, "fillsync");
    EXPECT_EQ(r.ops, 40u);
    EXPECT_EQ(MustRun(runner, "readseq").ops, 40u);
    EXPECT_TRUE(runner.Finish().ok());
    EXPECT_FALSE(std::filesystem::exists(config.db_dir + "/" + GetParam()));
    std::filesystem::remove_all(config.db_dir);
  }
}

TEST_P(EngineContractTest, GrowthCutShortByDurationLeavesWhatItStored) {
  RunConfig config;
  config.num = 100000000;  // far more than a second's inserts
  config.reads = 2000;
  config.duration_seconds = 1;
  config.cache_bytes = 8 << 20;
  config.db_dir = TestDir("duration_" + GetParam());
  Runner runner(Info(), config);
  Result r = MustRun(runner, "growth");
  EXPECT_GT(r.ops, 0u);
  EXPECT_LT(r.ops, config.num);
  EXPECT_EQ(r.records, r.ops);
  EXPECT_LT(r.seconds, 30);
  ASSERT_FALSE(r.series.empty());
  EXPECT_EQ(r.series.back().records, r.ops);
  const uint64_t stored = r.ops;
  r = MustRun(runner, "readrandom");
  EXPECT_EQ(r.found, 2000u);
  EXPECT_EQ(MustRun(runner, "readseq").ops, stored);
  EXPECT_TRUE(runner.Finish().ok());
  std::filesystem::remove_all(config.db_dir);
}

TEST_P(EngineContractTest, UnknownBenchmarkIsInvalidArgument) {
  RunConfig config;
  config.num = 10;
  config.db_dir = TestDir("unknown_" + GetParam());
  Runner runner(Info(), config);
  EXPECT_TRUE(absl::IsInvalidArgument(runner.Run("fillrandomly").status()));
  std::filesystem::remove_all(config.db_dir);
}

INSTANTIATE_TEST_SUITE_P(Engines, EngineContractTest,
                         testing::ValuesIn(EngineNames()),
                         [](const testing::TestParamInfo<std::string>& info) {
                           std::string name = info.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

// A JSON value, parsed strictly (the grammar of RFC 8259, less what kvbench
// never writes: escapes other than \" \\ and \u).
struct Json {
  std::variant<std::nullptr_t, bool, double, std::string, std::vector<Json>,
               std::map<std::string, Json>>
      v;
  const std::map<std::string, Json>& object() const {
    return std::get<std::map<std::string, Json>>(v);
  }
};

class JsonParser {
 public:
  explicit JsonParser(std::string_view text) : s_(text) {}
  bool Parse(Json* out) {
    if (!Value(out)) return false;
    Space();
    return pos_ == s_.size();
  }

 private:
  void Space() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_])))
      ++pos_;
  }
  bool Literal(std::string_view word) {
    if (s_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }
  bool String(std::string* out) {
    if (!Literal("\"")) return false;
    while (pos_ < s_.size() && s_[pos_] != '"') {
      if (s_[pos_] == '\\') {
        ++pos_;
        if (pos_ < s_.size() && s_[pos_] == 'u') pos_ += 4;
      }
      out->push_back(s_[pos_++]);
    }
    return Literal("\"");
  }
  bool Value(Json* out) {
    Space();
    if (pos_ >= s_.size()) return false;
    const char c = s_[pos_];
    if (c == '{') {
      ++pos_;
      std::map<std::string, Json> members;
      Space();
      if (Literal("}")) {
        out->v = members;
        return true;
      }
      do {
        Space();
        std::string key;
        if (!String(&key)) return false;
        Space();
        if (!Literal(":")) return false;
        Json value;
        if (!Value(&value)) return false;
        if (!members.emplace(key, value).second) return false;  // duplicate
        Space();
      } while (Literal(","));
      out->v = members;
      return Literal("}");
    }
    if (c == '[') {
      ++pos_;
      std::vector<Json> items;
      Space();
      if (Literal("]")) {
        out->v = items;
        return true;
      }
      do {
        Json item;
        if (!Value(&item)) return false;
        items.push_back(item);
        Space();
      } while (Literal(","));
      out->v = items;
      return Literal("]");
    }
    if (c == '"') {
      std::string str;
      if (!String(&str)) return false;
      out->v = str;
      return true;
    }
    if (Literal("null")) return out->v = nullptr, true;
    if (Literal("true")) return out->v = true, true;
    if (Literal("false")) return out->v = false, true;
    size_t used = 0;
    try {
      out->v = std::stod(std::string(s_.substr(pos_, 40)), &used);
    } catch (...) {
      return false;
    }
    pos_ += used;
    return used > 0;
  }

  std::string_view s_;
  size_t pos_ = 0;
};

// The --quick profile end to end: every engine compiled in and every
// workload, one JSON object per line, each with the fields the docs name.
TEST(KvbenchProgramTest, QuickRunPrintsOneWellFormedObjectPerResult) {
  const std::string dir = TestDir("quick");
  const std::string out = dir + "/out.json", err = dir + "/err.txt",
                    csv = dir + "/results.csv", md = dir + "/results.md";
  const std::string cmd = std::string(KVBENCH_PATH) +
                          " --quick --json --db_dir=" + dir + "/db --csv=" +
                          csv + " --markdown=" + md + " >" + out + " 2>" + err;
  const int status = std::system(cmd.c_str());
  std::ifstream err_in(err);
  const std::string err_text((std::istreambuf_iterator<char>(err_in)), {});
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << err_text;

  std::ifstream in(out);
  std::vector<Json> lines;
  for (std::string line; std::getline(in, line);) {
    Json j;
    ASSERT_TRUE(JsonParser(line).Parse(&j)) << line;
    lines.push_back(j);
  }
  ASSERT_FALSE(lines.empty());
  const auto& env = lines[0].object();
  EXPECT_EQ(std::get<std::string>(env.at("type").v), "environment");
  for (const char* key : {"kernel", "filesystem", "date"}) {
    EXPECT_FALSE(std::get<std::string>(env.at(key).v).empty()) << key;
  }
  EXPECT_GE(std::get<double>(env.at("cpus").v), 1);
  const auto& engines = std::get<std::vector<Json>>(env.at("engines").v);
  EXPECT_EQ(engines.size(), Engines().size());

  std::set<std::pair<std::string, std::string>> seen;
  for (size_t i = 1; i < lines.size(); ++i) {
    const auto& o = lines[i].object();
    SCOPED_TRACE("line " + std::to_string(i + 1));
    EXPECT_EQ(std::get<std::string>(o.at("type").v), "result");
    const std::string engine = std::get<std::string>(o.at("engine").v);
    const std::string benchmark = std::get<std::string>(o.at("benchmark").v);
    EXPECT_TRUE(seen.insert({engine, benchmark}).second);
    for (const char* key :
         {"ops_per_s", "p50_us", "p99_us", "p999_us", "max_us",
          "bytes_on_disk", "space_amp", "write_amp", "peak_rss_bytes"}) {
      ASSERT_TRUE(o.count(key)) << key;
      const double v = std::get<double>(o.at(key).v);
      EXPECT_GE(v, 0) << key;
    }
    EXPECT_GT(std::get<double>(o.at("ops_per_s").v), 0) << engine << benchmark;
    EXPECT_LE(std::get<double>(o.at("p50_us").v),
              std::get<double>(o.at("p99_us").v));
    EXPECT_LE(std::get<double>(o.at("p99_us").v),
              std::get<double>(o.at("max_us").v));
    // Null only where the directory has no block device to count.
    ASSERT_TRUE(o.count("device_reads_per_op"));
    ASSERT_TRUE(o.count("device_write_bytes"));
    ASSERT_TRUE(o.count("device_write_amp"));
    EXPECT_TRUE(o.count("engine_stats"));
    if (benchmark == "growth") {
      EXPECT_FALSE(std::get<std::vector<Json>>(o.at("series").v).empty());
    }
  }
  EXPECT_EQ(seen.size(), Engines().size() * BenchmarkNames().size());

  // The CSV has a row per result; the Markdown a table per workload.
  std::ifstream csv_in(csv);
  int rows = 0;
  for (std::string line; std::getline(csv_in, line);) ++rows;
  EXPECT_EQ(rows, static_cast<int>(seen.size()) + 1);
  std::ifstream md_in(md);
  const std::string md_text((std::istreambuf_iterator<char>(md_in)), {});
  for (const std::string& b : BenchmarkNames()) {
    EXPECT_NE(md_text.find("#### " + b + " "), std::string::npos) << b;
  }
  std::filesystem::remove_all(dir);
}

TEST(KvbenchProgramTest, BadFlagsExitOneWithAMessage) {
  const std::string dir = TestDir("bad");
  for (const std::string flags :
       {"--engines=nosuchdb", "--benchmarks=fillrandomly", "--threads=0",
        "--zipf_theta=1.5", "--num=0", "extra"}) {
    const std::string cmd = std::string(KVBENCH_PATH) + " " + flags +
                            " --db_dir=" + dir + " 2>" + dir + "/err";
    const int status = std::system(cmd.c_str());
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1) << flags;
    std::ifstream in(dir + "/err");
    const std::string text((std::istreambuf_iterator<char>(in)), {});
    EXPECT_NE(text.find("kvbench: "), std::string::npos) << flags << text;
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace roundtable::kvbench
