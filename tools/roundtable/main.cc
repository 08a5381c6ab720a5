// roundtable: the command-line tool. Its commands, their arguments, flags
// and examples are the list in command_line.h (what `roundtable --help`
// prints); docs/cli.md describes every flag. Here: the flags, and each
// command's run.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <streambuf>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/reflection.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "io/base/status_macros.h"
#include "roundtable/version.h"
#include "tools/roundtable/balance.h"
#include "tools/roundtable/command_line.h"
#include "tools/roundtable/dump_commands.h"
#include "tools/roundtable/map_command.h"
#include "tools/roundtable/placement_experiment.h"
#include "tools/roundtable/serve_command.h"
#include "tools/roundtable/stash_experiment.h"
#include "tools/roundtable/table_commands.h"
#include "tools/roundtable/transfers_experiment.h"
#include "tools/roundtable/tsv.h"

ABSL_FLAG(std::string, mapping, "round",
          "map: the mapping scheme (round, jump, linear-slack, "
          "linear-litwin, modulo)");
ABSL_FLAG(std::vector<std::string>, s0, {},
          "slack s0 >= 1; map, create and rebuild take one value (default "
          "32), serve one for a new table (default: SuggestedS0 for 16-byte "
          "keys and 100-byte values, 4 in 4 KiB blocks), experiment balance "
          "a comma-separated list (default 1,2,4,...,128)");
ABSL_FLAG(std::optional<uint64_t>, buckets, std::nullopt,
          "number of buckets m >= s0 (required by map; experiment balance "
          "defaults to 10000)");
ABSL_FLAG(uint64_t, grow, 0, "map: print the buckets touched by N grow steps");
ABSL_FLAG(uint64_t, shrink, 0,
          "map: print the buckets touched by N shrink steps");
ABSL_FLAG(uint64_t, values, 1000000000,
          "experiment balance: number of evenly spaced hash values");
ABSL_FLAG(std::vector<std::string>, mappings,
          std::vector<std::string>({"round", "linear-slack", "linear-litwin",
                                    "jump"}),
          "experiment balance: the mappings to measure");
ABSL_FLAG(int, threads, 0, "worker threads for experiments (0: one per core)");
ABSL_FLAG(std::string, csv, "", "experiments: also write CSV here");
ABSL_FLAG(uint32_t, block_size, 4096,
          "create, rebuild, serve (a new table): block size in bytes");
ABSL_FLAG(double, epsilon, 0.1,
          "create, rebuild, serve (a new table): free fraction kept in the "
          "blocks");
ABSL_FLAG(bool, json, false, "stats: print one JSON object");
ABSL_FLAG(uint64_t, records, 1000000, "demo: records to load");
ABSL_FLAG(bool, sync, false,
          "load: make each batch durable (log synced) before the next");
ABSL_FLAG(uint64_t, batch, 1, "load: records per atomic batch");
ABSL_FLAG(std::string, value_file, "",
          "put: read the value's bytes, unescaped, from this file (- for "
          "standard input) instead of the command line");
ABSL_FLAG(std::string, output, "",
          "get: write the value's bytes to this file instead of standard "
          "output");
ABSL_FLAG(std::vector<std::string>, block_keys, {},
          "experiment stash/transfers: keys per block B, a comma-separated "
          "list (default 512,1024,2048)");
ABSL_FLAG(std::vector<std::string>, epsilons, {},
          "experiment stash/transfers: epsilons such as 1/8 or 0.125, a "
          "comma-separated list (default 1/4,1/8,1/16,1/32,1/64)");
ABSL_FLAG(uint64_t, from, 1024,
          "experiment stash: the smallest n watched, in multiples of B");
ABSL_FLAG(uint64_t, to, 8192,
          "experiment stash/transfers: the largest n, in multiples of B");
ABSL_FLAG(uint64_t, samples, 10000,
          "experiment transfers: lookups of each kind and deletes per point");
ABSL_FLAG(uint64_t, seed, 1, "experiments: the seed of the hash seeds");
ABSL_FLAG(int, repetitions, 1,
          "experiment stash: runs per cell, each with its own hash seed");
ABSL_FLAG(bool, quick, false,
          "experiment stash/transfers: a small preset that runs in seconds");
ABSL_FLAG(bool, trace, false,
          "experiment stash: trace the stash against n (Figure 3) instead "
          "of the table of worst cases");
ABSL_FLAG(std::vector<std::string>, algorithms, {},
          "experiment placement: the schemes to measure (default all: "
          "round,jump,rendezvous,ring,maglev,bounded,multiprobe,dchoice)");
ABSL_FLAG(std::vector<std::string>, nodes, {"100"},
          "experiment placement: node counts n >= 2, a comma-separated list");
ABSL_FLAG(std::vector<std::string>, keys, {"1000000"},
          "experiment placement: key counts, a comma-separated list");
ABSL_FLAG(std::vector<std::string>, vnodes, {"100"},
          "experiment placement: ring points per node, a list");
ABSL_FLAG(std::vector<std::string>, table_size, {},
          "experiment placement: Maglev table sizes (primes), a list "
          "(default: the smallest prime >= max(65537, 100 (n + 1)))");
ABSL_FLAG(std::vector<std::string>, probes, {"21"},
          "experiment placement: multi-probe probes per key, a list");
ABSL_FLAG(std::vector<std::string>, c, {"1.25"},
          "experiment placement: bounded loads' c > 1 (capacity "
          "ceil(c keys / n)), a list");
ABSL_FLAG(std::vector<std::string>, choices, {"2"},
          "experiment placement: d of the power of d choices, a list");
ABSL_FLAG(int, runs, 1,
          "experiment placement: runs of each cell, each with its own seed");
ABSL_FLAG(bool, timing, true, "experiment placement: time the lookups");
ABSL_FLAG(std::string, plot, "",
          "experiment stash --trace/transfers: draw the CSV as a PNG here "
          "(needs gnuplot)");

namespace roundtable::cli {
namespace {

// An input stream's buffer over a file descriptor that reports a read
// error (EISDIR for a directory, EIO) as one: the stream's badbit, with
// the error kept for the message, where a file stream would take it for
// the end of its input.
class InputBuffer final : public std::streambuf {
 public:
  InputBuffer(int fd, std::string name) : fd_(fd), name_(std::move(name)) {}
  const std::string& error() const { return error_; }

 protected:
  int_type underflow() override {
    if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
    ssize_t n;
    do {
      n = read(fd_, data_, sizeof(data_));
    } while (n < 0 && errno == EINTR);
    if (n < 0) {
      error_ = absl::StrCat("read ", name_, ": ", std::strerror(errno));
      // The stream catches it and sets its badbit.
      throw std::runtime_error(error_);
    }
    if (n == 0) return traits_type::eof();
    setg(data_, data_, data_ + n);
    return traits_type::to_int_type(*gptr());
  }

 private:
  const int fd_;
  const std::string name_;
  std::string error_;
  char data_[1 << 16];
};

// The whole of file `path` (standard input for "-"), its bytes as they are.
absl::StatusOr<std::string> ReadAll(const std::string& path) {
  const bool from_stdin = path == "-";
  const int fd =
      from_stdin ? STDIN_FILENO : open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return absl::NotFoundError(
        absl::StrCat("cannot read ", path, ": ", std::strerror(errno)));
  }
  std::string out;
  char buffer[1 << 16];
  while (true) {
    const ssize_t n = read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      if (!from_stdin) close(fd);
      return absl::UnavailableError(
          absl::StrCat("read ", from_stdin ? "standard input" : path, ": ",
                       std::strerror(err)));
    }
    if (n == 0) break;
    out.append(buffer, static_cast<size_t>(n));
  }
  if (!from_stdin) close(fd);
  return out;
}

// Prints "roundtable COMMAND: message" and returns the status's exit code.
int Fail(std::string_view command, const absl::Status& status) {
  std::cerr << "roundtable " << command << ": " << status.message() << "\n";
  return ExitCodeOf(status);
}

// A usage error: the message and exit status 2.
int Usage(std::string_view command, const std::string& message) {
  return Fail(command, absl::InvalidArgumentError(message));
}

absl::StatusOr<std::vector<uint64_t>> ParseList(
    const std::string& flag, const std::vector<std::string>& items) {
  std::vector<uint64_t> values;
  for (const std::string& item : items) {
    const std::optional<uint64_t> v = ParseUint64(item);
    if (!v) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--", flag, ": '", item, "' is not an unsigned integer"));
    }
    values.push_back(*v);
  }
  return values;
}

int Map() {
  MapOptions options;
  options.mapping = absl::GetFlag(FLAGS_mapping);
  auto s0 = ParseList("s0", absl::GetFlag(FLAGS_s0));
  if (!s0.ok()) return Fail("map", s0.status());
  if (s0->size() > 1) return Usage("map", "--s0 takes one value");
  if (!s0->empty()) options.s0 = s0->front();
  if (!absl::GetFlag(FLAGS_buckets))
    return Usage("map", "--buckets is required");
  options.buckets = *absl::GetFlag(FLAGS_buckets);
  options.grow = absl::GetFlag(FLAGS_grow);
  options.shrink = absl::GetFlag(FLAGS_shrink);

  std::ios::sync_with_stdio(false);
  const absl::Status status = RunMap(options, std::cin, std::cout);
  std::cout.flush();
  if (!status.ok()) return Fail("map", status);
  return 0;
}

int Threads() {
  const int threads = absl::GetFlag(FLAGS_threads);
  if (threads > 0) return threads;
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

int Balance() {
  BalanceOptions options;
  if (auto b = absl::GetFlag(FLAGS_buckets)) options.buckets = *b;
  options.values = absl::GetFlag(FLAGS_values);
  if (!absl::GetFlag(FLAGS_s0).empty()) {
    auto s0 = ParseList("s0", absl::GetFlag(FLAGS_s0));
    if (!s0.ok()) return Fail("experiment balance", s0.status());
    options.s0s = *s0;
  }
  options.mappings = absl::GetFlag(FLAGS_mappings);
  options.threads = Threads();
  options.csv_path = absl::GetFlag(FLAGS_csv);
  options.show_progress = isatty(STDERR_FILENO);
  auto rows = RunBalance(options, std::cout);
  if (!rows.ok()) return Fail("experiment balance", rows.status());
  return 0;
}

absl::StatusOr<std::vector<uint32_t>> ParseBlockKeys() {
  auto values = ParseList("block_keys", absl::GetFlag(FLAGS_block_keys));
  if (!values.ok()) return values.status();
  std::vector<uint32_t> keys;
  for (const uint64_t v : *values) {
    if (v > UINT32_MAX) {
      return absl::InvalidArgumentError(
          absl::StrCat("--block_keys: ", v, " is too large"));
    }
    keys.push_back(static_cast<uint32_t>(v));
  }
  return keys;
}

absl::StatusOr<std::vector<double>> ParseEpsilons() {
  std::vector<double> values;
  for (const std::string& text : absl::GetFlag(FLAGS_epsilons)) {
    auto e = ParseEpsilon(text);
    if (!e.ok()) return e.status();
    values.push_back(*e);
  }
  return values;
}

// Overrides an experiment's layouts with --block_keys, --epsilons and --s0
// where they are given.
absl::Status LayoutFlags(std::vector<uint32_t>* block_keys,
                         std::vector<double>* epsilons,
                         std::vector<uint64_t>* s0s) {
  auto keys = ParseBlockKeys();
  if (!keys.ok()) return keys.status();
  if (!keys->empty()) *block_keys = *keys;
  auto eps = ParseEpsilons();
  if (!eps.ok()) return eps.status();
  if (!eps->empty()) *epsilons = *eps;
  if (!absl::GetFlag(FLAGS_s0).empty()) {
    auto s0 = ParseList("s0", absl::GetFlag(FLAGS_s0));
    if (!s0.ok()) return s0.status();
    *s0s = *s0;
  }
  return absl::OkStatus();
}

// The flags every experiment on tables shares.
void RunFlags(RunOptions* o) {
  o->seed = absl::GetFlag(FLAGS_seed);
  o->threads = Threads();
  o->csv_path = absl::GetFlag(FLAGS_csv);
  o->plot_path = absl::GetFlag(FLAGS_plot);
}

// The flags of `experiment stash`, over the defaults or the --quick preset.
absl::StatusOr<StashOptions> StashFlags() {
  StashOptions o =
      absl::GetFlag(FLAGS_quick) ? QuickStashOptions() : StashOptions();
  // The trace runs at s0 = 2 / epsilon unless --s0 is given.
  if (absl::GetFlag(FLAGS_trace)) o.s0s.clear();
  RT_RETURN_IF_ERROR(LayoutFlags(&o.block_keys, &o.epsilons, &o.s0s));
  if (!absl::GetFlag(FLAGS_quick)) {
    o.from = absl::GetFlag(FLAGS_from);
    o.to = absl::GetFlag(FLAGS_to);
  }
  o.repetitions = absl::GetFlag(FLAGS_repetitions);
  RunFlags(&o);
  return o;
}

int Stash() {
  const char* name = "experiment stash";
  auto options = StashFlags();
  if (!options.ok()) return Fail(name, options.status());
  absl::Status status;
  if (absl::GetFlag(FLAGS_trace)) {
    status = RunStashTrace(*options, std::cout);
  } else {
    status = RunStashGrid(*options, std::cout).status();
  }
  if (!status.ok()) return Fail(name, status);
  return 0;
}

int Transfers() {
  const char* name = "experiment transfers";
  TransfersOptions o =
      absl::GetFlag(FLAGS_quick) ? QuickTransfersOptions() : TransfersOptions();
  const absl::Status flags = LayoutFlags(&o.block_keys, &o.epsilons, &o.s0s);
  if (!flags.ok()) return Fail(name, flags);
  if (!absl::GetFlag(FLAGS_quick)) {
    o.to = absl::GetFlag(FLAGS_to);
    o.samples = absl::GetFlag(FLAGS_samples);
  }
  RunFlags(&o);
  auto points = RunTransfers(o, std::cout);
  if (!points.ok()) return Fail(name, points.status());
  return 0;
}

int PlacementExperiment() {
  const char* name = "experiment placement";
  PlacementOptions o;
  if (!absl::GetFlag(FLAGS_algorithms).empty()) {
    o.algorithms = absl::GetFlag(FLAGS_algorithms);
  }
  auto list = [&](const char* flag, const std::vector<std::string>& items,
                  std::vector<uint64_t>* into) {
    auto values = ParseList(flag, items);
    if (!values.ok()) return values.status();
    *into = *values;
    return absl::OkStatus();
  };
  absl::Status status = list("nodes", absl::GetFlag(FLAGS_nodes), &o.nodes);
  if (status.ok()) status = list("keys", absl::GetFlag(FLAGS_keys), &o.keys);
  if (status.ok() && !absl::GetFlag(FLAGS_s0).empty()) {
    status = list("s0", absl::GetFlag(FLAGS_s0), &o.s0s);
  }
  if (status.ok()) {
    status = list("vnodes", absl::GetFlag(FLAGS_vnodes), &o.vnodes);
  }
  if (status.ok()) {
    status =
        list("table_size", absl::GetFlag(FLAGS_table_size), &o.table_sizes);
  }
  if (status.ok()) {
    status = list("probes", absl::GetFlag(FLAGS_probes), &o.probes);
  }
  if (status.ok()) {
    status = list("choices", absl::GetFlag(FLAGS_choices), &o.choices);
  }
  if (!status.ok()) return Fail(name, status);
  o.cs.clear();
  for (const std::string& text : absl::GetFlag(FLAGS_c)) {
    double c = 0;
    if (!absl::SimpleAtod(text, &c)) {
      return Usage(name, absl::StrCat("--c: '", text, "' is not a number"));
    }
    o.cs.push_back(c);
  }
  o.seed = absl::GetFlag(FLAGS_seed);
  o.runs = absl::GetFlag(FLAGS_runs);
  o.timing = absl::GetFlag(FLAGS_timing);
  o.csv_path = absl::GetFlag(FLAGS_csv);
  o.plot_path = absl::GetFlag(FLAGS_plot);
  o.progress = isatty(STDERR_FILENO);
  auto rows = RunPlacement(o, std::cout);
  if (!rows.ok()) return Fail(name, rows.status());
  return 0;
}

// Runs a store command; `words` are the command and its arguments.
// `given`: the names of the flags on the command line.
int TableCommand(const std::vector<std::string>& words,
                 const std::vector<std::string>& given) {
  auto was_given = [&](const char* flag) {
    return std::find(given.begin(), given.end(), flag) != given.end();
  };
  const std::string& command = words[0];
  const size_t args = words.size() - 1;
  auto usage = [&](const char* shape) {
    return Usage(command,
                 absl::StrCat("usage: roundtable ", command, " ", shape));
  };
  // The layout fields given as --block_size, --s0 and --epsilon (the
  // others left unset: a default, or the stored layout).
  auto layout_flags = [&](Options* layout) -> absl::Status {
    if (was_given("block_size")) {
      layout->block_size = absl::GetFlag(FLAGS_block_size);
    }
    if (was_given("epsilon")) layout->epsilon = absl::GetFlag(FLAGS_epsilon);
    if (!was_given("s0")) return absl::OkStatus();
    RT_ASSIGN_OR_RETURN(const std::vector<uint64_t> s0,
                        ParseList("s0", absl::GetFlag(FLAGS_s0)));
    if (s0.size() != 1) {
      return absl::InvalidArgumentError("--s0 takes one value");
    }
    layout->s0 = s0.front();
    return absl::OkStatus();
  };
  absl::Status status;
  if (command == "create") {
    if (args != 1) return usage("DIR [--block_size --s0 --epsilon]");
    Options layout;
    if (absl::Status s = layout_flags(&layout); !s.ok()) {
      return Fail(command, s);
    }
    status = RunCreate(words[1], layout);
  } else if (command == "put") {
    const std::string value_file = absl::GetFlag(FLAGS_value_file);
    if (value_file.empty()) {
      if (args != 3) return usage("DIR KEY VALUE | DIR KEY --value_file=PATH");
      status = RunPut(words[1], words[2], words[3]);
    } else {
      if (args != 2) return usage("DIR KEY --value_file=PATH");
      absl::StatusOr<std::string> value = ReadAll(value_file);
      if (!value.ok()) return Fail(command, value.status());
      status = RunPut(words[1], words[2], *value, /*raw=*/true);
    }
  } else if (command == "get") {
    if (args != 2) return usage("DIR KEY [--output=PATH]");
    const std::string output = absl::GetFlag(FLAGS_output);
    // The bytes as they are; a newline after them only on a terminal.
    std::ios::sync_with_stdio(false);
    status = RunGet(words[1], words[2], output,
                    output.empty() && isatty(STDOUT_FILENO) ? "\n" : "");
    if (absl::IsNotFound(status) && status.message() == "key not found") {
      return Fail(command, absl::NotFoundError("not found"));
    }
  } else if (command == "del") {
    if (args != 2) return usage("DIR KEY");
    status = RunDel(words[1], words[2]);
  } else if (command == "load") {
    if (args != 1 && args != 2) return usage("DIR [FILE]");
    LoadOptions load;
    load.sync = absl::GetFlag(FLAGS_sync);
    load.batch = absl::GetFlag(FLAGS_batch);
    load.progress = isatty(STDERR_FILENO);
    int fd = STDIN_FILENO;
    if (args == 2) {
      fd = open(words[2].c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) {
        return Fail(command,
                    absl::NotFoundError(absl::StrCat(
                        "cannot read ", words[2], ": ", std::strerror(errno))));
      }
    }
    InputBuffer buffer(fd, args == 2 ? words[2] : "standard input");
    std::istream in(&buffer);
    status = RunLoad(words[1], in, load);
    if (!status.ok() && in.bad() && !buffer.error().empty()) {
      status = absl::Status(
          status.code(), absl::StrCat(status.message(), ": ", buffer.error()));
    }
    if (args == 2) close(fd);
  } else if (command == "locate") {
    if (args != 2) return usage("DIR KEY [--json]");
    auto key = Unescape(words[2]);
    if (!key.ok()) return Fail(command, key.status());
    status = RunLocate(words[1], *key, absl::GetFlag(FLAGS_json), std::cout);
  } else if (command == "scan") {
    if (args != 1) return usage("DIR");
    std::ios::sync_with_stdio(false);
    status = RunScan(words[1], std::cout);
    std::cout.flush();
  } else if (command == "stats") {
    if (args != 1) return usage("DIR [--json]");
    status = RunStats(words[1], absl::GetFlag(FLAGS_json), std::cout);
  } else if (command == "check") {
    if (args != 1) return usage("DIR");
    status = RunCheck(words[1], absl::GetFlag(FLAGS_json), std::cout);
  } else if (command == "dump") {
    if (args != 2) return usage("DIR FILE");
    std::ios::sync_with_stdio(false);
    status = RunDump(words[1], words[2]);
    std::cout.flush();
  } else if (command == "restore") {
    if (args != 2) return usage("FILE DIR");
    std::ios::sync_with_stdio(false);
    status = RunRestore(words[1], words[2]);
  } else if (command == "backup") {
    if (args != 2) return usage("DIR COPY");
    status = RunBackup(words[1], words[2]);
  } else if (command == "salvage") {
    if (args != 2) return usage("DIR NEWDIR [--json]");
    status =
        RunSalvage(words[1], words[2], absl::GetFlag(FLAGS_json), std::cout);
  } else if (command == "rebuild") {
    if (args != 1) return usage("DIR [--block_size --s0 --epsilon]");
    Options layout;  // only what is given changes
    if (absl::Status s = layout_flags(&layout); !s.ok()) {
      return Fail(command, s);
    }
    status = RunRebuild(words[1], layout);
  } else if (command == "serve") {
    if (args != 1) {
      return usage(
          "DIR [--port=6380 --bind=127.0.0.1 --fsync=everysec "
          "--requirepass=PASS --maxclients=N --cache_mb=256 "
          "--write_buffer_mb=64 --memory_mb=0 "
          "--cluster_topology=FILE --cluster_node=NAME "
          "--block_size --s0 --epsilon]");
    }
    auto o = ServeOptionsFromFlags();
    if (!o.ok()) {
      return absl::IsInvalidArgument(o.status())
                 ? Usage(command, std::string(o.status().message()))
                 : Fail(command, o.status());
    }
    if (absl::Status s = layout_flags(&o->layout); !s.ok()) {
      return Fail(command, s);
    }
    status = RunServe(words[1], *o, std::cerr);
  } else if (command == "demo") {
    if (args > 1) return usage("[DIR] [--records=N] [--json]");
    std::string dir;
    if (args == 1) {
      dir = words[1];
    } else {
      char tmpl[] = "/tmp/roundtable-demo-XXXXXX";
      if (mkdtemp(tmpl) == nullptr) {
        return Fail(command, absl::UnavailableError(
                                 "cannot create a directory under /tmp"));
      }
      dir = std::string(tmpl) + "/table";
    }
    status = RunDemo(dir, absl::GetFlag(FLAGS_records), isatty(STDERR_FILENO),
                     absl::GetFlag(FLAGS_json), std::cout);
  } else {
    return -1;
  }
  if (!status.ok()) return Fail(command, status);
  return 0;
}

bool IsHelpFlag(const std::string& name) {
  return name == "help" || name == "h" || name == "helpfull" ||
         name == "helpshort";
}

// Sets the flags given on the command line: each name with its value
// (none for a boolean given alone; "--noNAME" clears a boolean).
absl::Status SetFlags(
    const std::vector<std::pair<std::string, std::optional<std::string>>>&
        given) {
  for (const auto& [name, value] : given) {
    absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
    std::string text = value.value_or("true");
    if (flag == nullptr && name.substr(0, 2) == "no" && !value) {
      flag = absl::FindCommandLineFlag(name.substr(2));
      if (flag != nullptr && flag->IsOfType<bool>()) text = "false";
    }
    if (flag == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("unknown flag --", name));
    }
    if (!value && !flag->IsOfType<bool>()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", name, " needs a value"));
    }
    std::string error;
    if (!flag->ParseFrom(text, &error)) {
      return absl::InvalidArgumentError(absl::StrCat("--", name, ": ", error));
    }
  }
  return absl::OkStatus();
}

int Main(int argc, char** argv) {
  // The command words are every argument that is not a flag: a flag is
  // "-" or "--" and a letter (no flag's name starts otherwise), so "-1" or
  // "-" is a word, and everything after "--" is one, whatever it looks
  // like (a key such as "--x").
  std::vector<std::pair<std::string, std::optional<std::string>>> flags;
  std::vector<std::string> names;
  std::vector<std::string> words;
  bool literal = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    const std::string name = literal ? "" : FlagName(arg);
    if (!literal && arg == "--") {
      literal = true;
    } else if (!name.empty()) {
      std::optional<std::string> value;
      if (const size_t eq = arg.find('='); eq != std::string_view::npos) {
        value = std::string(arg.substr(eq + 1));
      } else if (const absl::CommandLineFlag* flag =
                     absl::FindCommandLineFlag(name);
                 flag != nullptr && !flag->IsOfType<bool>() && i + 1 < argc) {
        // "--flag value" for a flag that is not a bool: the value is its.
        value = argv[++i];
      }
      flags.emplace_back(name, value);
      names.push_back(name);
    } else {
      words.emplace_back(arg);
    }
  }
  const bool help = std::any_of(names.begin(), names.end(), IsHelpFlag) ||
                    (!words.empty() && words[0] == "help");
  if (help) {
    std::vector<std::string> topic = words;
    if (!topic.empty() && topic[0] == "help") topic.erase(topic.begin());
    if (topic.empty()) {
      std::cout << HelpText();
      return kExitOk;
    }
    size_t used = 0;
    const CommandSpec* spec = FindCommand(topic, &used);
    if (spec == nullptr || used != topic.size()) {
      return Usage(
          "help", absl::StrCat("no command '", absl::StrJoin(topic, " "), "'"));
    }
    std::cout << HelpFor(*spec);
    return kExitOk;
  }
  if (std::find(names.begin(), names.end(), "version") != names.end()) {
    std::cout << "roundtable " ROUNDTABLE_VERSION_STRING "\n";
    return kExitOk;
  }
  if (words.empty()) {
    std::cerr << HelpText();
    return kExitUsage;
  }
  size_t used = 0;
  const CommandSpec* spec = FindCommand(words, &used);
  if (spec == nullptr) {
    std::cerr << "roundtable: unknown command '" << absl::StrJoin(words, " ")
              << "'; roundtable --help lists the commands\n";
    return kExitUsage;
  }
  if (absl::Status s = CheckFlags(*spec, names); !s.ok()) {
    return Usage(spec->name, std::string(s.message()));
  }
  if (absl::Status s = SetFlags(flags); !s.ok()) {
    return Usage(spec->name, std::string(s.message()));
  }
  const bool bare = used == words.size();
  auto no_arguments = [&] {
    return Usage(spec->name,
                 absl::StrCat("takes no arguments: roundtable ", spec->name));
  };
  if (spec->name == "map") return bare ? Map() : no_arguments();
  if (spec->name == "experiment balance") {
    return bare ? Balance() : no_arguments();
  }
  if (spec->name == "experiment stash") return bare ? Stash() : no_arguments();
  if (spec->name == "experiment transfers") {
    return bare ? Transfers() : no_arguments();
  }
  if (spec->name == "experiment placement") {
    return bare ? PlacementExperiment() : no_arguments();
  }
  return TableCommand(words, names);
}

}  // namespace
}  // namespace roundtable::cli

int main(int argc, char** argv) { return roundtable::cli::Main(argc, argv); }
