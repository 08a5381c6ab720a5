// The roundtable binary as a user runs it: exit codes, messages, and the
// flags' own parsing errors.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "tests/engine/mapping/reference_round_mapping.h"

namespace {

struct Outcome {
  int exit_code = -1;
  std::string out;
  std::string err;
};

std::string Slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Runs the tool with `args` and `input` on standard input.
Outcome RunTool(const std::string& args, const std::string& input = "") {
  // ctest runs the cases as parallel processes: one file set per process.
  const std::string base =
      testing::TempDir() + "/roundtable_cli_" + std::to_string(getpid());
  const std::string in = base + ".in", out = base + ".out", err = base + ".err";
  std::ofstream(in) << input;
  const std::string command = std::string(RT_CLI_PATH) + " " + args + " <" +
                              in + " >" + out + " 2>" + err;
  const int status = std::system(command.c_str());
  Outcome o;
  if (WIFEXITED(status)) o.exit_code = WEXITSTATUS(status);
  o.out = Slurp(out);
  o.err = Slurp(err);
  return o;
}

TEST(RoundtableCliTest, MapPrintsBuckets) {
  const Outcome o = RunTool("map --s0=3 --buckets=48",
                            "0x8000000000000000\n"
                            "0x9e3779b97f4a7c15\n");
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(o.out, "3\n44\n");
}

TEST(RoundtableCliTest, MapGrowAndShrink) {
  Outcome o = RunTool("map --s0=3 --buckets=32 --grow=2");
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(o.out, "0 1 2 24 32\n12 16 20 25 33\n");
  o = RunTool("map --s0=3 --buckets=34 --shrink=2");
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(o.out, "12 16 20 25 33\n0 1 2 24 32\n");
}

TEST(RoundtableCliTest, MapAgreesWithTheReferenceOnRandomStates) {
  using roundtable::testing_support::LogUniform;
  using roundtable::testing_support::ReferenceFindBucket;
  const uint64_t seed = 0xC11;
  std::mt19937_64 rng(seed);
  for (int trial = 0; trial < 40; ++trial) {
    // Half the trials on small tables, where every case of the formula is
    // common; half over the whole 64-bit range.
    uint64_t s0, m;
    if (trial % 2 == 0) {
      s0 = 1 + rng() % 8;
      m = s0 + rng() % (64 * s0);
    } else {
      s0 = std::max<uint64_t>(1, LogUniform(rng));
      m = std::max<uint64_t>(1, LogUniform(rng));
      if (s0 > m) std::swap(s0, m);
    }
    std::ostringstream input, want;
    for (int i = 0; i < 200; ++i) {
      const uint64_t h = i == 0 ? ~uint64_t{0} : rng();
      // Alternate decimal and hex input.
      if (i % 2) {
        input << "0x" << std::hex << h << std::dec << "\n";
      } else {
        input << h << "\n";
      }
      want << ReferenceFindBucket(s0, m, h) << "\n";
    }
    const Outcome o = RunTool(
        "map --s0=" + std::to_string(s0) + " --buckets=" + std::to_string(m),
        input.str());
    ASSERT_EQ(o.exit_code, 0) << o.err;
    ASSERT_EQ(o.out, want.str())
        << "seed " << seed << " trial " << trial << " s0=" << s0 << " m=" << m;
  }
}

TEST(RoundtableCliTest, BadInputExitsNonZeroWithAMessage) {
  struct Bad {
    std::string args, input, says;
  };
  for (const Bad& bad : std::vector<Bad>{
           {"map --s0=3 --buckets=10", "12\nxyz\n", "line 2"},
           {"map --s0=0 --buckets=10", "1\n", "s0 must be at least 1"},
           {"map --s0=11 --buckets=10", "1\n", "below s0"},
           {"map --s0=3", "1\n", "--buckets is required"},
           {"map --s0=abc --buckets=10", "1\n", "abc"},
           {"map --s0=3 --buckets=-5", "1\n", "buckets"},
           {"map --s0=3 --buckets=10 --shrink=9", "", "--shrink=9"},
           {"map --s0=3 --buckets=10", "-1\n", "line 1"},
           {"map --s0=3 --buckets=10", "99999999999999999999\n", "line 1"},
           {"frobnicate", "", "unknown command"},
       }) {
    const Outcome o = RunTool(bad.args, bad.input);
    EXPECT_NE(o.exit_code, 0) << bad.args;
    EXPECT_GT(o.exit_code, 0) << bad.args << " (crashed?)";
    EXPECT_NE(o.err.find(bad.says), std::string::npos)
        << bad.args << "\nstderr: " << o.err;
  }
}

std::string TableDir() {
  static int counter = 0;
  const std::string dir = testing::TempDir() + "/cli_table_" +
                          std::to_string(getpid()) + "_" +
                          std::to_string(counter++);
  std::system(("rm -rf " + dir).c_str());
  return dir;
}

// load --batch=3 --sync: a bad line 8 stops the load; the two whole batches
// before it (lines 1-6) are stored, line 7 of the cut batch is not.
TEST(RoundtableCliTest, LoadStoresWholeBatches) {
  const std::string dir = TableDir();
  ASSERT_EQ(RunTool("create " + dir + " --s0=4 --block_size=1024").exit_code,
            0);
  std::string input;
  for (int i = 1; i <= 10; ++i) {
    const std::string n = std::to_string(i);
    input += i == 8 ? "no tab here\n" : "k" + n + "\tv" + n + "\n";
  }
  Outcome o = RunTool("load " + dir + " --batch=3 --sync", input);
  EXPECT_EQ(o.exit_code, 2);  // a bad input record
  EXPECT_NE(o.err.find("line 8"), std::string::npos) << o.err;
  o = RunTool("scan " + dir);
  ASSERT_EQ(o.exit_code, 0) << o.err;
  for (int i = 1; i <= 10; ++i) {
    const std::string n = std::to_string(i);
    EXPECT_EQ(o.out.find("k" + n + "\tv" + n + "\n") != std::string::npos,
              i <= 6)
        << "k" << i << " in " << o.out;
  }
  o = RunTool("load " + dir + " --batch=0", "k\tv\n");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("--batch"), std::string::npos) << o.err;
  std::system(("rm -rf " + dir).c_str());
}

// `load --sync` killed with SIGKILL at a random moment: the table reopens
// (check passes) holding exactly a prefix of the input, byte-exact, and with
// --batch=B a prefix of whole batches (or all of it).
TEST(RoundtableCliTest, KilledLoadLeavesAPrefixOfWholeBatches) {
  std::mt19937_64 rng(77);
  const int n = 3000;
  std::string input;
  std::vector<std::string> lines;
  for (int i = 0; i < n; ++i) {
    lines.push_back("key" + std::to_string(i) + "\t" +
                    std::string(1 + i % 50, static_cast<char>('a' + i % 26)) +
                    "\n");
    input += lines.back();
  }
  const std::string in =
      testing::TempDir() + "/kill_load_" + std::to_string(getpid()) + ".tsv";
  std::ofstream(in) << input;
  for (const int batch : {1, 100}) {
    const std::string batch_flag = "--batch=" + std::to_string(batch);
    // How long a whole load takes here starts the kill delay; each round
    // then moves it towards the middle of the load (later when the kill came
    // before the first record, earlier when the load had finished), so kills
    // land inside the load whatever the machine's speed and load.
    const std::string timing_dir = TableDir();
    ASSERT_EQ(
        RunTool("create " + timing_dir + " --s0=4 --block_size=1024").exit_code,
        0);
    const auto start = std::chrono::steady_clock::now();
    ASSERT_EQ(RunTool("load " + timing_dir + " " + in + " --sync " + batch_flag)
                  .exit_code,
              0);
    double delay_us = static_cast<double>(
                          std::chrono::duration_cast<std::chrono::microseconds>(
                              std::chrono::steady_clock::now() - start)
                              .count()) /
                      2;
    std::system(("rm -rf " + timing_dir).c_str());
    int cut = 0;  // rounds killed part-way through the input
    for (int round = 0; round < 40 && (round < 6 || cut < 2); ++round) {
      SCOPED_TRACE("batch " + std::to_string(batch) + ", round " +
                   std::to_string(round));
      const std::string dir = TableDir();
      ASSERT_EQ(
          RunTool("create " + dir + " --s0=4 --block_size=1024").exit_code, 0);
      const pid_t child = fork();
      ASSERT_GE(child, 0);
      if (child == 0) {
        execl(RT_CLI_PATH, RT_CLI_PATH, "load", dir.c_str(), in.c_str(),
              "--sync", batch_flag.c_str(), static_cast<char*>(nullptr));
        _exit(127);
      }
      // A random moment in [0.5, 1.5) times the current delay.
      usleep(static_cast<useconds_t>(
          delay_us * (0.5 + static_cast<double>(rng() % 1000) / 1000)));
      kill(child, SIGKILL);
      int status = 0;
      ASSERT_EQ(waitpid(child, &status, 0), child);
      Outcome o = RunTool("check " + dir);
      ASSERT_EQ(o.exit_code, 0) << o.err;
      o = RunTool("scan " + dir);
      ASSERT_EQ(o.exit_code, 0) << o.err;
      // The stored lines are lines 0 .. k-1 of the input, each exact.
      std::vector<std::string> stored;
      std::istringstream scan(o.out);
      for (std::string line; std::getline(scan, line);) {
        stored.push_back(line + "\n");
      }
      std::sort(stored.begin(), stored.end());
      const size_t k = stored.size();
      std::vector<std::string> prefix(lines.begin(), lines.begin() + k);
      std::sort(prefix.begin(), prefix.end());
      ASSERT_EQ(stored, prefix) << k << " records stored";
      EXPECT_TRUE(k % batch == 0 || k == lines.size()) << k;
      cut += k > 0 && k < lines.size();
      if (k == 0) delay_us *= 1.5;
      if (k == lines.size()) delay_us *= 0.6;
      std::system(("rm -rf " + dir).c_str());
    }
    EXPECT_GT(cut, 0) << "no kill landed inside the load";
  }
  std::remove(in.c_str());
}

TEST(RoundtableCliTest, StoreCommandsRoundTrip) {
  const std::string dir = TableDir();
  Outcome o = RunTool("create " + dir + " --s0=4 --block_size=1024");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  o = RunTool("put " + dir + " 'tab\\there' 'new\\nline'");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  o = RunTool("get " + dir + " 'tab\\there'");
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(o.out, "new\nline");  // the raw bytes (a newline only on a tty)
  o = RunTool("load " + dir, "k1\tv1\nk2\tv\\x002\n\nk3\t\n");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  o = RunTool("scan " + dir);
  ASSERT_EQ(o.exit_code, 0) << o.err;
  for (const char* line :
       {"tab\\there\tnew\\nline\n", "k1\tv1\n", "k2\tv\\x002\n", "k3\t\n"}) {
    EXPECT_NE(o.out.find(line), std::string::npos) << line << " in " << o.out;
  }
  EXPECT_EQ(std::count(o.out.begin(), o.out.end(), '\n'), 4);
  // Values and keys that start with a dash: "-1" is no flag, and after
  // "--" anything is taken literally.
  o = RunTool("put " + dir + " counter -1");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  o = RunTool("get " + dir + " counter");
  EXPECT_EQ(o.out, "-1") << o.err;
  o = RunTool("put " + dir + " -- --x -y");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  o = RunTool("get " + dir + " -- --x");
  EXPECT_EQ(o.out, "-y") << o.err;
  // A flag's value as the next argument, then "--".
  const std::string out_file = dir + ".out";
  o = RunTool("get " + dir + " --output " + out_file + " -- --x");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(Slurp(out_file), "-y");
  std::remove(out_file.c_str());
  for (const char* key : {"counter", "--x"}) {
    ASSERT_EQ(RunTool("del " + dir + " -- " + key).exit_code, 0);
  }
  o = RunTool("del " + dir + " k1");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  o = RunTool("get " + dir + " k1");
  EXPECT_EQ(o.exit_code, 1);
  EXPECT_NE(o.err.find("not found"), std::string::npos) << o.err;
  o = RunTool("stats " + dir + " --json");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  // Each command opens the table anew, with nothing cached: the puts wait
  // in the write buffer, and so do the deletes, each in place of its key's
  // put (counter, --x, k1), and the exact count counts them.
  for (const char* field :
       {"\"buckets\":4",          "\"records\":3",
        "\"stored_records\":0",   "\"stash_records\":0",
        "\"buffered_records\":6", "\"physical_write_buffer_copy\":{",
        "\"block_size\":1024",    "\"s0\":4",
        "\"epsilon\":0.1",        "\"data_bytes\":",
        "\"utilization\":",       "\"logical\":{",
        "\"get_block_reads\":",   "\"physical_block_file\":{",
        "\"held_blocks\":0",      "\"recovered_records\":0",
        "\"physical_wal\":{",     "\"physical_journal\":{",
        "\"value_count\":0",      "\"value_file_bytes\":0",
        "\"physical_values\":{",  "\"physical_spacemap\":{"}) {
    EXPECT_NE(o.out.find(field), std::string::npos) << field << " in " << o.out;
  }
  o = RunTool("check " + dir);
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("ok: 3 records in 4 buckets (0 in the stash, 6 puts "
                       "and deletes in the write buffer)"),
            std::string::npos)
      << o.out;
  std::system(("rm -rf " + dir).c_str());
}

// Values of any size: put from a file or standard input, get to a file
// or standard output byte for byte, load and scan lines of any length,
// stats and check counting the values out of line.
TEST(RoundtableCliTest, LargeValuesRoundTripThroughFilesPipesAndLoad) {
  const std::string dir = TableDir();
  ASSERT_EQ(RunTool("create " + dir).exit_code, 0);
  std::string big(3 << 20, '\0');
  std::mt19937_64 rng(3);
  for (char& c : big) c = static_cast<char>(rng());
  const std::string in = dir + "_in", out = dir + "_out";
  {
    std::ofstream f(in, std::ios::binary);
    f.write(big.data(), static_cast<std::streamsize>(big.size()));
  }
  Outcome o = RunTool("put " + dir + " big --value_file=" + in);
  ASSERT_EQ(o.exit_code, 0) << o.err;
  o = RunTool("put " + dir + " piped --value_file=-", big);
  ASSERT_EQ(o.exit_code, 0) << o.err;
  o = RunTool("get " + dir + " big --output=" + out);
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_TRUE(o.out.empty());
  {
    std::ifstream f(out, std::ios::binary);
    const std::string got((std::istreambuf_iterator<char>(f)),
                          std::istreambuf_iterator<char>());
    EXPECT_TRUE(got == big) << got.size() << " bytes";
  }
  o = RunTool("get " + dir + " piped");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_TRUE(o.out == big) << o.out.size() << " bytes";
  // An absent key makes no output file.
  std::remove(out.c_str());
  EXPECT_EQ(RunTool("get " + dir + " absent --output=" + out).exit_code, 1);
  EXPECT_FALSE(std::ifstream(out).good());
  o = RunTool("put " + dir + " k --value_file=/nonexistent/file");
  EXPECT_EQ(o.exit_code, 1);
  EXPECT_NE(o.err.find("No such file"), std::string::npos) << o.err;
  o = RunTool("put " + dir + " k v --value_file=" + in);
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("usage"), std::string::npos) << o.err;
  // scan prints the 3 MiB values on lines of their own; load takes them
  // back into another table.
  o = RunTool("scan " + dir);
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(std::count(o.out.begin(), o.out.end(), '\n'), 2);
  const std::string copy = dir + "_copy";
  ASSERT_EQ(RunTool("create " + copy).exit_code, 0);
  const Outcome loaded = RunTool("load " + copy + " --batch=2", o.out);
  ASSERT_EQ(loaded.exit_code, 0) << loaded.err;
  o = RunTool("get " + copy + " piped");
  EXPECT_TRUE(o.out == big) << o.out.size() << " bytes";
  o = RunTool("stats " + copy + " --json");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("\"value_count\":2"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("\"value_bytes\":" + std::to_string(2 * big.size())),
            std::string::npos)
      << o.out;
  o = RunTool("stats " + copy);
  EXPECT_NE(o.out.find("large values   2"), std::string::npos) << o.out;
  o = RunTool("check " + copy);
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("2 values out of line"), std::string::npos) << o.out;
  std::system(("rm -rf " + dir + " " + copy + " " + in + " " + out).c_str());
}

TEST(RoundtableCliTest, StoreCommandsRefuseBadInput) {
  const std::string dir = TableDir();
  ASSERT_EQ(RunTool("create " + dir).exit_code, 0);
  struct Bad {
    std::string args, input, says;
    int code;  // the exit status (docs/cli.md)
  };
  for (const Bad& bad : std::vector<Bad>{
           {"create " + dir, "", "exists", 5},
           {"create " + dir + "_x --block_size=1000", "", "block size", 2},
           {"create " + dir + "_y --epsilon=2", "", "epsilon", 2},
           {"get " + dir + "_missing k", "", "no table", 1},
           {"put " + dir + " k", "", "usage", 2},
           {"put " + dir + " 'bad\\q' v", "", "unknown escape", 2},
           {"load " + dir, "k1 without a tab\n", "line 1", 2},
           {"put " + dir + " " + std::string(2000, 'k') + " v", "",
            "exceeds the limit of 977 bytes", 2},
           // A read error of the input, not an empty load.
           {"load " + dir + " /etc", "", "Is a directory", 5},
           {"load " + dir + " /nonexistent/file", "", "No such file", 1},
           // An oversize record at its own line, not its batch's last.
           {"load " + dir + " --batch=10",
            "a\tb\n" + std::string(2000, 'k') + "\tv\nc\td\n", "line 2:", 2},
           // A line of any length is read whole: this one has no tab.
           {"load " + dir, std::string(1 << 20, 'x'), "expected an escaped key",
            2},
           {"put " + dir + " -k v", "", "does not take --k", 2},
       }) {
    const Outcome o = RunTool(bad.args, bad.input);
    EXPECT_EQ(o.exit_code, bad.code) << bad.args;
    EXPECT_NE(o.err.find(bad.says), std::string::npos)
        << bad.args << "\nstderr: " << o.err;
  }
  // A corrupt block: check fails with a message naming it.
  {
    const std::string blocks = dir + "/blocks";
    FILE* f = std::fopen(blocks.c_str(), "r+b");
    ASSERT_NE(f, nullptr);
    std::fseek(f, 3 * 4096 + 100, SEEK_SET);
    std::fputc('!', f);
    std::fclose(f);
  }
  const Outcome o = RunTool("check " + dir);
  EXPECT_EQ(o.exit_code, 3);  // a damaged table
  EXPECT_NE(o.err.find("bucket 1"), std::string::npos) << o.err;
  const Outcome j = RunTool("check " + dir + " --json");
  EXPECT_EQ(j.exit_code, 3);
  EXPECT_EQ(j.out.rfind("{\"ok\":false,\"error\":\"", 0), 0u) << j.out;
  EXPECT_NE(j.out.find("bucket 1"), std::string::npos) << j.out;
  std::system(("rm -rf " + dir + " " + dir + "_x " + dir + "_y").c_str());
}

// Processes of the CLI on one table at once, each in a loop bounded in
// count and time: writers put keys of their own, readers get preloaded
// keys, scan and stat. Every command either does its work or is refused
// at once by the table's lock (exit status 1, "locked" or "read-only" in
// its message): no signal, no hang, no other error, no wrong value, no
// scan with a key twice or a preloaded key missing; afterwards every put
// that exited 0 is there.
TEST(RoundtableCliTest, ProcessesOnOneTableAreLockedOutNeverBroken) {
  const std::string dir = TableDir();
  ASSERT_EQ(RunTool("create " + dir + " --block_size=512 --s0=4").exit_code, 0);
  constexpr int kPreloaded = 400;
  std::string preload;
  for (int i = 0; i < kPreloaded; ++i) {
    preload += "p" + std::to_string(i) + "\tvalue" + std::to_string(i) + "\n";
  }
  ASSERT_EQ(RunTool("load " + dir + " --batch=50", preload).exit_code, 0);
  // Writers 0 and 1, readers 2 and 3: each a child process running the
  // CLI up to kRounds times or for kSeconds.
  constexpr int kRounds = 60;
  constexpr auto kSeconds = std::chrono::seconds(20);
  auto refused = [](const Outcome& o) {
    return o.exit_code == 4 &&  // locked
           (o.err.find("locked by a writer") != std::string::npos ||
            o.err.find("open read-only by another") != std::string::npos);
  };
  auto acked_file = [&](int id) {
    return dir + "_acked_" + std::to_string(id);
  };
  std::vector<pid_t> children;
  for (int id = 0; id < 4; ++id) {
    std::fflush(nullptr);
    const pid_t pid = fork();
    if (pid == 0) {
      const auto deadline = std::chrono::steady_clock::now() + kSeconds;
      std::ofstream acked(acked_file(id));
      std::mt19937 rng(id);
      int done = 0, locked_out = 0;
      for (int r = 0;
           r < kRounds && std::chrono::steady_clock::now() < deadline; ++r) {
        Outcome o;
        std::string what;
        if (id < 2) {
          const std::string key =
              "w" + std::to_string(id) + "_" + std::to_string(r);
          what = "put " + key;
          o = RunTool("put " + dir + " " + key + " v" + key);
          if (o.exit_code == 0) acked << key << "\n" << std::flush;
        } else if (r % 3 == 0) {
          what = "scan";
          o = RunTool("scan " + dir);
          if (o.exit_code == 0) {
            std::istringstream lines(o.out);
            std::string line;
            std::set<std::string> keys;
            int preloaded = 0;
            while (std::getline(lines, line)) {
              const std::string key = line.substr(0, line.find('\t'));
              if (!keys.insert(key).second) {
                std::fprintf(stderr, "scan: %s twice\n", key.c_str());
                _exit(1);
              }
              if (key[0] == 'p') ++preloaded;
            }
            if (preloaded != kPreloaded) {
              std::fprintf(stderr, "scan: %d preloaded keys\n", preloaded);
              _exit(1);
            }
          }
        } else {
          const int i = static_cast<int>(rng() % kPreloaded);
          what = "get p" + std::to_string(i);
          o = RunTool("get " + dir + " p" + std::to_string(i));
          if (o.exit_code == 0 && o.out != "value" + std::to_string(i)) {
            std::fprintf(stderr, "get p%d: %s\n", i, o.out.c_str());
            _exit(1);
          }
        }
        if (o.exit_code == 0) {
          ++done;
        } else if (refused(o)) {
          ++locked_out;
        } else {
          std::fprintf(stderr, "%s: exit %d: %s\n", what.c_str(), o.exit_code,
                       o.err.c_str());
          _exit(1);
        }
      }
      std::printf("process %d: %d done, %d locked out\n", id, done, locked_out);
      std::fflush(nullptr);
      _exit(done > 0 ? 0 : 2);
    }
    children.push_back(pid);
  }
  for (const pid_t pid : children) {
    int status = 0;
    waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "a child failed: status " << status;
  }
  // Every acknowledged put is there, and the table checks.
  ASSERT_EQ(RunTool("check " + dir).exit_code, 0);
  const Outcome scan = RunTool("scan " + dir);
  ASSERT_EQ(scan.exit_code, 0);
  int acknowledged = 0;
  for (int id = 0; id < 2; ++id) {
    std::ifstream in(acked_file(id));
    std::string key;
    while (std::getline(in, key)) {
      ++acknowledged;
      EXPECT_NE(scan.out.find(key + "\tv" + key + "\n"), std::string::npos)
          << key << " was acknowledged and is gone";
    }
  }
  EXPECT_GT(acknowledged, 0);
  std::system(("rm -rf " + dir + " " + dir + "_acked_*").c_str());
}

TEST(RoundtableCliTest, DemoRunsAndSummarises) {
  const std::string dir = TableDir();
  const Outcome o = RunTool("demo " + dir + " --records=5000");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  for (const char* part : {"5000 records", "puts/s", "gets/s", "deletes/s",
                           "utilization", "stash", "MiB in "}) {
    EXPECT_NE(o.out.find(part), std::string::npos) << part << " in " << o.out;
  }
  EXPECT_EQ(RunTool("check " + dir).exit_code, 0);
  std::system(("rm -rf " + dir).c_str());
}

TEST(RoundtableCliTest, DemoJsonIsOneObjectOfTheSameFigures) {
  const std::string dir = TableDir();
  const Outcome o = RunTool("demo " + dir + " --records=4000 --json");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  ASSERT_EQ(o.out.rfind("{\"records\":4000,\"puts_per_s\":", 0), 0u) << o.out;
  EXPECT_EQ(o.out.find('\n'), o.out.size() - 1) << o.out;  // one line
  // Half the records are deleted; the table's own count agrees.
  EXPECT_NE(o.out.find("\"final_records\":2000,"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("\"dir\":\"" + dir + "\"}"), std::string::npos) << o.out;
  const Outcome stats = RunTool("stats " + dir + " --json");
  EXPECT_NE(stats.out.find("\"records\":2000,"), std::string::npos)
      << stats.out;
  std::system(("rm -rf " + dir).c_str());
}

TEST(RoundtableCliTest, BalanceExperimentRunsSmall) {
  const std::string csv =
      testing::TempDir() + "/balance_" + std::to_string(getpid()) + ".csv";
  const Outcome o = RunTool(
      "experiment balance --buckets=100 --values=100000 "
      "--s0=1,64 --threads=2 --csv=" +
      csv);
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("linear-litwin"), std::string::npos) << o.out;
  const std::string table = Slurp(csv);
  EXPECT_EQ(table.rfind("mapping,s0,buckets,values,", 0), 0u) << table;
  // round and linear-slack for two s0 each, litwin and jump once.
  EXPECT_EQ(std::count(table.begin(), table.end(), '\n'), 1 + 2 + 2 + 1 + 1);
}

TEST(RoundtableCliTest, StashExperimentWritesTheTableAndTheCsv) {
  const std::string base =
      testing::TempDir() + "/stash_" + std::to_string(getpid());
  Outcome o = RunTool(
      "experiment stash --block_keys=32 --epsilons=1/8,1/4 --s0=2,8 "
      "--from=8 --to=64 --threads=2 --csv=" +
      base + ".csv");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("| s0 | eps = 1/8 | eps = 1/4 |"), std::string::npos)
      << o.out;
  EXPECT_NE(o.out.find("| uniform |"), std::string::npos) << o.out;
  std::string csv = Slurp(base + ".csv");
  EXPECT_EQ(csv.rfind("block_keys,epsilon,s0,n_min,n_max,max_stash_ratio,"
                      "predicted_ratio,uniform_ratio,",
                      0),
            0u)
      << csv;
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 1 + 4);
  EXPECT_NE(csv.find("\n32,1/8,2,256,2048,"), std::string::npos) << csv;

  // The trace at s0 = 2 / epsilon, with a plot when gnuplot is here.
  o = RunTool(
      "experiment stash --trace --block_keys=32 --epsilons=1/8 --from=8 "
      "--to=64 --csv=" +
      base + "_trace.csv --plot=" + base + ".png");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("| 32 | 1/8 | 16 |"), std::string::npos) << o.out;
  csv = Slurp(base + "_trace.csv");
  EXPECT_EQ(csv.rfind("block_keys,epsilon,s0,m,round,step,", 0), 0u) << csv;
  EXPECT_GT(std::count(csv.begin(), csv.end(), '\n'), 50);
  if (std::system("command -v gnuplot >/dev/null 2>&1") == 0) {
    EXPECT_GT(Slurp(base + ".png").size(), 1000u);
  } else {
    EXPECT_NE(o.err.find("gnuplot is not installed"), std::string::npos)
        << o.err;
  }
}

// The preset CI and tools/paper_experiments.sh --quick run.
TEST(RoundtableCliTest, StashExperimentQuickPresetRuns) {
  const std::string csv =
      testing::TempDir() + "/stash_quick_" + std::to_string(getpid()) + ".csv";
  const Outcome o = RunTool("experiment stash --quick --csv=" + csv);
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("over n in [64 B, 512 B]"), std::string::npos) << o.out;
  const std::string table = Slurp(csv);
  // B = 512, three epsilons, three s0.
  EXPECT_EQ(std::count(table.begin(), table.end(), '\n'), 1 + 9);
}

TEST(RoundtableCliTest, TransfersExperimentRunsQuick) {
  const std::string csv =
      testing::TempDir() + "/transfers_" + std::to_string(getpid()) + ".csv";
  const Outcome o = RunTool("experiment transfers --quick --s0=4 --csv=" + csv);
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("B=128 eps=1/8 s0=4"), std::string::npos) << o.out;
  const std::string table = Slurp(csv);
  EXPECT_EQ(table.rfind("block_keys,epsilon,s0,n,m,", 0), 0u) << table;
  // n = B, 2B, ..., 256B for two epsilons.
  EXPECT_EQ(std::count(table.begin(), table.end(), '\n'), 1 + 2 * 9);
}

TEST(RoundtableCliTest, PlacementExperimentWritesItsCsv) {
  const std::string csv =
      testing::TempDir() + "/placement_" + std::to_string(getpid()) + ".csv";
  const Outcome o = RunTool(
      "experiment placement --algorithms=ring,bounded --nodes=5,20 "
      "--keys=3000 --vnodes=10,50 --c=1.5 --timing=false --csv=" +
      csv);
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("| ring | vnodes=50 | 20 | 3000 |"), std::string::npos)
      << o.out;
  const std::string table = Slurp(csv);
  EXPECT_EQ(table.rfind("algorithm,nodes,keys,params,", 0), 0u) << table;
  // ring twice and bounded once, on two node counts.
  EXPECT_EQ(std::count(table.begin(), table.end(), '\n'), 1 + 3 * 2);
}

// Sorted lines of `scan`: the table's records, escaped, in an order that
// does not depend on its layout.
std::vector<std::string> SortedScan(const std::string& dir) {
  const Outcome o = RunTool("scan " + dir);
  EXPECT_EQ(o.exit_code, 0) << o.err;
  std::vector<std::string> lines;
  std::istringstream in(o.out);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::sort(lines.begin(), lines.end());
  return lines;
}

// Random records of random bytes: empty, short, past the inline limit of
// the smaller layouts, and large; as escaped TSV for load.
std::string RandomRecords(std::mt19937_64& rng, int n) {
  std::string tsv;
  auto bytes = [&](size_t size) {
    std::string text;
    for (size_t i = 0; i < size; ++i) {
      char hex[5];
      std::snprintf(hex, sizeof hex, "\\x%02x", static_cast<int>(rng() & 0xff));
      text += hex;
    }
    return text;
  };
  for (int i = 0; i < n; ++i) {
    const size_t sizes[] = {0, 1, 30, 300, 3000, 70000};
    tsv += "k" + std::to_string(i) + bytes(rng() % 8) + "\t" +
           bytes(sizes[rng() % (i % 50 == 0 ? 6 : 5)]) + "\n";
  }
  return tsv;
}

// dump then restore gives the same records, byte for byte, and the same
// layout, in every block size (and other s0 and epsilon); through files and
// through a pipe.
TEST(RoundtableCliTest, DumpAndRestoreRoundTripInEveryLayout) {
  std::mt19937_64 rng(17);
  for (const char* layout :
       {"--block_size=512 --s0=2 --epsilon=0.25", "--block_size=1024 --s0=4",
        "--block_size=4096", "--block_size=16384 --s0=8 --epsilon=0.05",
        "--block_size=65536 --s0=1"}) {
    SCOPED_TRACE(layout);
    const std::string dir = TableDir(), copy = TableDir(), piped = TableDir();
    const std::string dump = dir + ".dump";
    ASSERT_EQ(RunTool("create " + dir + " " + layout).exit_code, 0);
    Outcome o = RunTool("load " + dir, RandomRecords(rng, 400));
    ASSERT_EQ(o.exit_code, 0) << o.err;
    o = RunTool("dump " + dir + " " + dump);
    ASSERT_EQ(o.exit_code, 0) << o.err;
    EXPECT_EQ(o.out + o.err, "");  // not a terminal: nothing extra
    o = RunTool("restore " + dump + " " + copy);
    ASSERT_EQ(o.exit_code, 0) << o.err;
    const std::vector<std::string> records = SortedScan(dir);
    ASSERT_EQ(records.size(), 400u);
    EXPECT_TRUE(records == SortedScan(copy));
    const std::string stats = RunTool("stats " + dir + " --json").out;
    const std::string copied = RunTool("stats " + copy + " --json").out;
    for (const char* field : {"\"block_size\":", "\"s0\":", "\"epsilon\":"}) {
      const size_t at = stats.find(field), end = stats.find(',', at);
      EXPECT_NE(copied.find(stats.substr(at, end - at)), std::string::npos)
          << field;
    }
    EXPECT_EQ(RunTool("check " + copy).exit_code, 0);
    // Through a pipe.
    const std::string cli = RT_CLI_PATH;
    ASSERT_EQ(std::system(
                  (cli + " dump " + dir + " - | " + cli + " restore - " + piped)
                      .c_str()),
              0);
    EXPECT_TRUE(records == SortedScan(piped));
    std::system(
        ("rm -rf " + dir + " " + copy + " " + piped + " " + dump).c_str());
  }
}

// rebuild between every pair of block sizes keeps every record byte for
// byte and takes the new layout; killed (SIGKILL) at random moments it
// leaves the old table or the new one, whole.
TEST(RoundtableCliTest, RebuildChangesTheLayoutAndSurvivesKills) {
  std::mt19937_64 rng(29);
  const std::string dir = TableDir();
  ASSERT_EQ(RunTool("create " + dir + " --block_size=512 --s0=2").exit_code, 0);
  ASSERT_EQ(RunTool("load " + dir, RandomRecords(rng, 3000)).exit_code, 0);
  const std::vector<std::string> records = SortedScan(dir);
  auto block_size = [&] {
    const std::string stats = RunTool("stats " + dir + " --json").out;
    const size_t at = stats.find("\"block_size\":");
    return at == std::string::npos
               ? std::string()
               : stats.substr(at + 13, stats.find(',', at) - at - 13);
  };
  for (const char* size :
       {"1024", "4096", "16384", "512", "4096", "1024", "16384", "512"}) {
    const Outcome o = RunTool("rebuild " + dir + " --block_size=" + size);
    ASSERT_EQ(o.exit_code, 0) << o.err;
    EXPECT_EQ(block_size(), size);
    EXPECT_TRUE(records == SortedScan(dir)) << size;
  }
  EXPECT_EQ(RunTool("check " + dir).exit_code, 0);
  // Kills at moments spread over a rebuild's length.
  const std::string cli = RT_CLI_PATH;
  for (int round = 0; round < 8; ++round) {
    const std::string before = block_size();
    const std::string target = before == "512" ? "8192" : "512";
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      const std::string flag = "--block_size=" + target;
      execl(cli.c_str(), cli.c_str(), "rebuild", dir.c_str(), flag.c_str(),
            static_cast<char*>(nullptr));
      _exit(127);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5 + 15 * round));
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    const std::string after = block_size();
    EXPECT_TRUE(after == before || after == target) << after;
    EXPECT_TRUE(records == SortedScan(dir)) << "round " << round;
  }
  EXPECT_EQ(RunTool("rebuild " + dir + " --block_size=4096").exit_code, 0);
  EXPECT_TRUE(records == SortedScan(dir));
  EXPECT_EQ(RunTool("check " + dir).exit_code, 0);
  EXPECT_EQ(RunTool("rebuild " + dir + " --block_size=1000").exit_code, 2);
  EXPECT_EQ(RunTool("rebuild " + dir + "_none").exit_code, 1);
  std::system(("rm -rf " + dir + " " + dir + ".rebuild").c_str());
}

// The number after "field": in a JSON object (0 when missing).
uint64_t JsonNumber(const std::string& json, const std::string& field) {
  const size_t at = json.find("\"" + field + "\":");
  if (at == std::string::npos) return 0;
  return std::strtoull(json.c_str() + at + field.size() + 3, nullptr, 10);
}

// locate names the hash and bucket that the table's own mapping gives
// (XXH3 with the default seed, then round-mapping over the table's m
// buckets, by the reference implementation), and where the record is.
TEST(RoundtableCliTest, LocateAgreesWithTheMapping) {
  const std::string dir = TableDir();
  ASSERT_EQ(RunTool("create " + dir + " --block_size=1024 --s0=4").exit_code,
            0);
  std::string tsv;
  for (int i = 0; i < 1500; ++i) tsv += "k" + std::to_string(i) + "\tvalue\n";
  ASSERT_EQ(RunTool("load " + dir, tsv).exit_code, 0);
  const std::string big(5000, 'b');
  const std::string big_file = dir + ".big";
  std::ofstream(big_file) << big;
  ASSERT_EQ(RunTool("put " + dir + " big --value_file=" + big_file).exit_code,
            0);
  const uint64_t m =
      JsonNumber(RunTool("stats " + dir + " --json").out, "buckets");
  ASSERT_GT(m, 4u);
  std::set<std::string> wheres;
  for (int i = 0; i < 1500; i += 37) {
    const std::string key = "k" + std::to_string(i);
    const Outcome o = RunTool("locate " + dir + " " + key + " --json");
    ASSERT_EQ(o.exit_code, 0) << o.err;
    const uint64_t h =
        XXH3_64bits_withSeed(key.data(), key.size(), 0x726f756e64746162);
    EXPECT_EQ(JsonNumber(o.out, "hash"), h) << o.out;
    EXPECT_EQ(JsonNumber(o.out, "bucket"),
              roundtable::testing_support::ReferenceFindBucket(4, m, h))
        << o.out;
    // The block there is the bucket's (its number at byte 8 of the block).
    const uint64_t block = JsonNumber(o.out, "block");
    std::ifstream blocks(dir + "/blocks", std::ios::binary);
    blocks.seekg(static_cast<std::streamoff>(block * 1024 + 8));
    unsigned char number[8] = {};
    blocks.read(reinterpret_cast<char*>(number), 8);
    uint64_t holds = 0;
    for (int i = 7; i >= 0; --i) holds = holds << 8 | number[i];
    EXPECT_EQ(holds, JsonNumber(o.out, "bucket")) << o.out;
    EXPECT_EQ(JsonNumber(o.out, "block_offset"), block * 1024) << o.out;
    EXPECT_EQ(JsonNumber(o.out, "value_bytes"), 5u);
    const size_t at = o.out.find("\"where\":\"") + 9;
    wheres.insert(o.out.substr(at, o.out.find('"', at) - at));
  }
  EXPECT_EQ(wheres.count("absent"), 0u);
  EXPECT_FALSE(wheres.empty());
  Outcome o = RunTool("locate " + dir + " big");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("value   5000 bytes out of line, at byte"),
            std::string::npos)
      << o.out;
  o = RunTool("locate " + dir + " nobody");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("where   absent"), std::string::npos) << o.out;
  EXPECT_EQ(RunTool("locate " + dir).exit_code, 2);
  EXPECT_EQ(RunTool("locate " + dir + "_none k").exit_code, 1);
  std::system(("rm -rf " + dir + " " + big_file).c_str());
}

// backup copies a table that opens as a table of its own with the same
// records; over a table it is refused; while another process writes the
// table it is refused with the lock's exit status (a process that has the
// table open takes its backups with Table::Backup).
TEST(RoundtableCliTest, BackupCopiesATable) {
  std::mt19937_64 rng(31);
  const std::string dir = TableDir(), copy = TableDir();
  ASSERT_EQ(RunTool("create " + dir + " --block_size=2048").exit_code, 0);
  ASSERT_EQ(RunTool("load " + dir, RandomRecords(rng, 800)).exit_code, 0);
  Outcome o = RunTool("backup " + dir + " " + copy);
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(o.out + o.err, "");
  EXPECT_TRUE(SortedScan(dir) == SortedScan(copy));
  EXPECT_EQ(RunTool("check " + copy).exit_code, 0);
  EXPECT_EQ(RunTool("put " + copy + " new v").exit_code, 0);
  EXPECT_EQ(RunTool("get " + dir + " new").exit_code, 1);
  o = RunTool("backup " + dir + " " + copy);
  EXPECT_EQ(o.exit_code, 5);
  EXPECT_NE(o.err.find("exists"), std::string::npos) << o.err;
  // A writer holds the table (a load waiting on its input).
  int input[2];
  ASSERT_EQ(pipe(input), 0);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    dup2(input[0], STDIN_FILENO);
    close(input[1]);
    execl(RT_CLI_PATH, RT_CLI_PATH, "load", dir.c_str(),
          static_cast<char*>(nullptr));
    _exit(127);
  }
  close(input[0]);
  ASSERT_TRUE(write(input[1], "w\tv\n", 4) == 4);
  // Once the load has the table's lock file open, it holds the lock (any
  // probe through the tool could itself make the load's open fail).
  const std::string lock_file =
      std::filesystem::path(dir + "/LOCK").lexically_normal().string();
  bool holding = false;
  for (int i = 0; i < 500 && !holding; ++i) {
    std::error_code ec;
    for (const auto& fd : std::filesystem::directory_iterator(
             "/proc/" + std::to_string(pid) + "/fd", ec)) {
      std::error_code link_ec;
      const auto target = std::filesystem::read_symlink(fd.path(), link_ec);
      holding = holding || (!link_ec && target.string() == lock_file);
    }
    if (!holding) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(holding) << "the load never opened the table";
  o = RunTool("backup " + dir + " " + copy + "_locked");
  EXPECT_EQ(o.exit_code, 4) << o.err;
  EXPECT_NE(o.err.find("locked by a writer"), std::string::npos) << o.err;
  close(input[1]);
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_EQ(RunTool("backup " + dir + "_none " + copy + "_x").exit_code, 1);
  std::system(("rm -rf " + dir + " " + copy + " " + copy + "_locked").c_str());
}

// salvage of a table with damaged blocks saves the others' records into a
// table that checks, reports the saved and lost ones (saved + lost = the
// records there were), and leaves the damaged table as it was.
TEST(RoundtableCliTest, SalvageSavesWhatCanBeRead) {
  const std::string dir = TableDir(), saved = TableDir();
  ASSERT_EQ(RunTool("create " + dir + " --block_size=512 --s0=2").exit_code, 0);
  std::string tsv;
  for (int i = 0; i < 3000; ++i) tsv += "k" + std::to_string(i) + "\tv\n";
  ASSERT_EQ(RunTool("load " + dir, tsv).exit_code, 0);
  {
    std::fstream f(dir + "/blocks",
                   std::ios::in | std::ios::out | std::ios::binary);
    for (int block : {4, 20, 40}) {
      f.seekp(block * 512 + 200);
      f.write("DAMAGE", 6);
    }
  }
  EXPECT_EQ(RunTool("check " + dir).exit_code, 3);
  const std::string before = Slurp(dir + "/blocks");
  Outcome o = RunTool("salvage " + dir + " " + saved + " --json");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(JsonNumber(o.out, "damaged_blocks"), 3u) << o.out;
  EXPECT_GT(JsonNumber(o.out, "lost"), 0u) << o.out;
  EXPECT_EQ(JsonNumber(o.out, "saved") + JsonNumber(o.out, "lost"), 3000u)
      << o.out;
  EXPECT_EQ(SortedScan(saved).size(), JsonNumber(o.out, "saved"));
  EXPECT_EQ(RunTool("check " + saved).exit_code, 0);
  EXPECT_TRUE(Slurp(dir + "/blocks") == before) << "the damaged table changed";
  o = RunTool("salvage " + dir + " " + saved);
  EXPECT_EQ(o.exit_code, 5) << o.err;
  EXPECT_EQ(RunTool("salvage " + dir).exit_code, 2);
  std::system(("rm -rf " + dir + " " + saved).c_str());
}

// salvage of a table that cannot be opened (both superblocks and the
// journal's copy damaged) reads its files one by one and says so; one with
// no whole block at all is DataLoss (exit status 3).
TEST(RoundtableCliTest, SalvageReadsTheFilesOfATableThatCannotBeOpened) {
  const std::string dir = TableDir(), saved = TableDir();
  ASSERT_EQ(RunTool("create " + dir + " --block_size=1024 --s0=4").exit_code,
            0);
  std::string tsv;
  for (int i = 0; i < 2000; ++i) tsv += "k" + std::to_string(i) + "\tv\n";
  ASSERT_EQ(RunTool("load " + dir, tsv).exit_code, 0);
  const std::vector<std::string> records = SortedScan(dir);
  auto damage = [](const std::string& path, std::vector<long> offsets) {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    for (const long offset : offsets) {
      f.seekp(offset);
      f.write("DAMAGE", 6);
    }
  };
  damage(dir + "/blocks", {100, 1024 + 100});
  damage(dir + "/journal", {40});
  EXPECT_EQ(RunTool("stats " + dir).exit_code, 3);
  Outcome o = RunTool("salvage " + dir + " " + saved);
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("2000 records saved in " + saved +
                       "; 0 damaged "
                       "blocks, an unknown number of records lost"),
            std::string::npos)
      << o.out;
  EXPECT_NE(o.out.find("the table could not be opened"), std::string::npos);
  EXPECT_NE(o.out.find("no superblock was valid"), std::string::npos);
  EXPECT_EQ(SortedScan(saved), records);
  std::system(("rm -rf " + saved).c_str());
  o = RunTool("salvage " + dir + " " + saved + " --json");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("\"opened\":false,\"layout_known\":false,"),
            std::string::npos)
      << o.out;
  EXPECT_EQ(JsonNumber(o.out, "saved"), 2000u) << o.out;
  std::system(("rm -rf " + saved).c_str());
  // Every block damaged: nothing tells the block size.
  std::vector<long> everywhere;
  for (long at = 0; at < 64 * 1024; at += 512) everywhere.push_back(at + 40);
  damage(dir + "/blocks", everywhere);
  o = RunTool("salvage " + dir + " " + saved);
  EXPECT_EQ(o.exit_code, 3) << o.err;
  EXPECT_NE(o.err.find("no block size at which the first blocks after the "
                       "superblocks hold a whole bucket block"),
            std::string::npos)
      << o.err;
  std::system(("rm -rf " + dir + " " + saved).c_str());
}

// A damaged, cut or extended dump is refused (exit status 3) naming what is
// wrong, and leaves no table; a restore onto a table is refused.
TEST(RoundtableCliTest, RestoreRefusesADamagedDumpAndLeavesNoTable) {
  std::mt19937_64 rng(23);
  const std::string dir = TableDir(), dump = dir + ".dump";
  ASSERT_EQ(RunTool("create " + dir + " --block_size=1024").exit_code, 0);
  ASSERT_EQ(RunTool("load " + dir, RandomRecords(rng, 60)).exit_code, 0);
  ASSERT_EQ(RunTool("dump " + dir + " " + dump).exit_code, 0);
  const std::string good = Slurp(dump);
  ASSERT_GT(good.size(), 200u);
  const std::string target = TableDir(), bad = dir + ".bad";
  auto refused = [&](const std::string& bytes, const std::string& says) {
    std::ofstream(bad, std::ios::binary) << bytes;
    const Outcome o = RunTool("restore " + bad + " " + target);
    EXPECT_EQ(o.exit_code, 3) << says << ": " << o.err;
    EXPECT_NE(o.err.find(says), std::string::npos) << o.err;
    EXPECT_NE(access(target.c_str(), F_OK), 0) << "a table was left";
    EXPECT_NE(access((target + ".restoring").c_str(), F_OK), 0);
  };
  for (size_t at : {size_t{0}, size_t{20}, size_t{50}}) {
    std::string b = good;
    b[at] ^= 0x10;
    refused(b, at == 0 ? "not a roundtable dump" : "header fails its checksum");
  }
  for (size_t at = 60; at + 25 < good.size(); at += good.size() / 17) {
    std::string b = good;
    b[at] ^= 0x01;
    refused(b, "record");
  }
  {
    std::string b = good;
    b[b.size() - 3] ^= 0x01;
    refused(b, "trailer");
  }
  refused(good.substr(0, good.size() / 2), "cut short");
  refused(good.substr(0, good.size() - 1), "cut short");
  refused(good + "x", "bytes follow the dump's trailer");
  refused("", "not a roundtable dump");
  // The good dump restores; again onto the table it made is refused.
  ASSERT_EQ(RunTool("restore " + dump + " " + target).exit_code, 0);
  const Outcome o = RunTool("restore " + dump + " " + target);
  EXPECT_EQ(o.exit_code, 5);
  EXPECT_NE(o.err.find("exists"), std::string::npos) << o.err;
  EXPECT_EQ(RunTool("restore /nonexistent/dump " + dir + "_none").exit_code, 1);
  EXPECT_EQ(RunTool("dump " + dir + "_none x").exit_code, 1);
  std::system(
      ("rm -rf " + dir + " " + target + " " + dump + " " + bad).c_str());
}

// --help lists every command with its flags and an example, help COMMAND
// one; --version; a flag a command does not take, a missing value, an
// unknown command or none at all are usage errors (exit status 2) naming
// what is wrong.
TEST(RoundtableCliTest, HelpVersionAndUsageErrors) {
  Outcome o = RunTool("--help");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  for (const char* command : {"create DIR",
                              "put DIR KEY VALUE | DIR KEY --value_file=PATH",
                              "get DIR KEY",
                              "del DIR KEY",
                              "load DIR [FILE]",
                              "scan DIR",
                              "stats DIR",
                              "check DIR",
                              "dump DIR FILE",
                              "restore FILE DIR",
                              "rebuild DIR",
                              "locate DIR KEY",
                              "backup DIR COPY",
                              "salvage DIR NEWDIR",
                              "demo [DIR]",
                              "map",
                              "experiment balance",
                              "experiment stash",
                              "experiment transfers",
                              "experiment placement"}) {
    EXPECT_NE(o.out.find(std::string("roundtable ") + command + "\n"),
              std::string::npos)
        << command;
  }
  EXPECT_EQ(o.out.find("experiment placement"),
            o.out.rfind("experiment placement\n"))
      << "listed twice";
  EXPECT_NE(o.out.find("flags: --batch --sync"), std::string::npos);
  EXPECT_NE(o.out.find("Exit status: 0 success, 1 not found, 2 usage"),
            std::string::npos);
  o = RunTool("help load");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(o.out.rfind("roundtable load DIR [FILE]\n", 0), 0u) << o.out;
  EXPECT_NE(o.out.find("example: roundtable load"), std::string::npos);
  EXPECT_EQ(RunTool("stats --help").out.rfind("roundtable stats DIR", 0), 0u);
  o = RunTool("--version");
  EXPECT_EQ(o.exit_code, 0);
  EXPECT_EQ(o.out.rfind("roundtable ", 0), 0u);
  struct Bad {
    std::string args, says;
  };
  for (const Bad& bad : std::vector<Bad>{
           {"", "roundtable <command>"},
           {"frobnicate x", "unknown command 'frobnicate x'"},
           {"help frobnicate", "no command 'frobnicate'"},
           {"get /tmp/x k --batch=7",
            "get: does not take --batch; it takes "
            "--output"},
           {"scan /tmp/x --json",
            "scan: does not take --json; it takes no "
            "flags"},
           {"create /tmp/x --output=y", "it takes --block_size --s0 --epsilon"},
           {"put /tmp/x k v --sync", "put: does not take --sync"},
           {"del /tmp/x k --json", "del: does not take --json"},
           {"load /tmp/x --output=y", "load: does not take --output"},
           {"stats /tmp/x --batch=1", "stats: does not take --batch"},
           {"check /tmp/x --sync", "check: does not take --sync"},
           {"demo --output=x", "demo: does not take --output"},
           {"map --records=5", "map: does not take --records"},
           {"experiment stash --nodes=3", "does not take --nodes"},
           {"experiment placement --trace", "does not take --trace"},
           {"load /tmp/x --batch=abc", "--batch: Illegal value 'abc'"},
           {"map --grow", "--grow needs a value"},
           {"map extra", "takes no arguments"},
           {"get /tmp/x", "usage: roundtable get DIR KEY"},
           {"dump /tmp/x", "usage: roundtable dump DIR FILE"},
           {"dump /tmp/x f --json", "dump: does not take --json"},
           {"restore f", "usage: roundtable restore FILE DIR"},
           {"backup /tmp/x", "usage: roundtable backup DIR COPY"},
           {"backup /tmp/x y --sync", "backup: does not take --sync"},
           {"rebuild /tmp/x --json", "rebuild: does not take --json"},
           {"locate /tmp/x", "usage: roundtable locate DIR KEY"},
           {"salvage /tmp/x y --block_size=512",
            "salvage: does not take --block_size"},
       }) {
    o = RunTool(bad.args);
    EXPECT_EQ(o.exit_code, 2) << bad.args << "\n" << o.err;
    EXPECT_NE(o.err.find(bad.says), std::string::npos)
        << bad.args << "\nstderr: " << o.err;
  }
}

TEST(RoundtableCliTest, ExperimentsRefuseBadFlags) {
  struct Bad {
    std::string args, says;
  };
  for (const Bad& bad : std::vector<Bad>{
           {"experiment stash --epsilons=2", "epsilon '2'"},
           {"experiment stash --epsilons=1/x", "epsilon '1/x'"},
           {"experiment stash --block_keys=0", "--block_keys"},
           {"experiment stash --block_keys=9999", "--block_keys"},
           {"experiment stash --from=5 --to=5", "--from=5 --to=5"},
           {"experiment stash --repetitions=0", "--repetitions"},
           {"experiment stash --trace --plot=x.png", "--plot needs --csv"},
           {"experiment transfers --block_keys=abc", "abc"},
           {"experiment transfers --to=0", "--to"},
           {"experiment placement --algorithms=chord", "unknown 'chord'"},
           {"experiment placement --nodes=1", "--nodes: 1"},
           {"experiment placement --keys=x", "--keys: 'x'"},
           {"experiment placement --c=1", "c = 1"},
           {"experiment placement --c=abc", "--c: 'abc'"},
           {"experiment placement --table_size=1000", "not a prime"},
       }) {
    const Outcome o = RunTool(bad.args);
    EXPECT_EQ(o.exit_code, 2) << bad.args << "\n" << o.err;
    EXPECT_NE(o.err.find(bad.says), std::string::npos)
        << bad.args << "\nstderr: " << o.err;
  }
}

}  // namespace
