#include "tools/roundtable/command_line.h"

#include <algorithm>
#include <cctype>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace roundtable::cli {

const std::vector<CommandSpec>& Commands() {
  static const std::vector<CommandSpec>* commands = new std::vector<
      CommandSpec>{
      {"create",
       "DIR",
       "a new, empty table with the layout given",
       {"block_size", "s0", "epsilon"},
       "roundtable create /tmp/users --block_size=4096 --s0=4"},
      {"put",
       "DIR KEY VALUE | DIR KEY --value_file=PATH",
       "store a record (escaped: \\t \\n \\\\ \\xHH; a key that starts with "
       "- and a letter goes after --; --value_file=PATH or - for a value's "
       "raw bytes, of any size)",
       {"value_file"},
       "roundtable put /tmp/users alice 42"},
      {"get",
       "DIR KEY",
       "write the value's bytes (to PATH with --output); exit status 1 when "
       "absent",
       {"output"},
       "roundtable get /tmp/users alice"},
      {"del",
       "DIR KEY",
       "remove a record (an absent key is fine)",
       {},
       "roundtable del /tmp/users alice"},
      {"load",
       "DIR [FILE]",
       "store tab-separated records from FILE or standard input",
       {"batch", "sync"},
       "roundtable load /tmp/users records.tsv --batch=100"},
      {"locate",
       "DIR KEY",
       "where the key lives: its hash, bucket and block; in its block, the "
       "stash or the write buffer, or absent; its value's size and place",
       {"json"},
       "roundtable locate /tmp/users alice"},
      {"scan",
       "DIR",
       "print every record, tab-separated and escaped",
       {},
       "roundtable scan /tmp/users"},
      {"stats",
       "DIR",
       "the exact record count, layout, sizes and ledgers",
       {"json"},
       "roundtable stats /tmp/users --json"},
      {"check",
       "DIR",
       "verify every checksum, placement and value",
       {"json"},
       "roundtable check /tmp/users"},
      {"dump",
       "DIR FILE",
       "write the table's layout and every record to FILE (- for standard "
       "output) in the checksummed dump format (docs/format.md)",
       {},
       "roundtable dump /tmp/users /tmp/users.dump"},
      {"restore",
       "FILE DIR",
       "a new table at DIR with the layout and records of the dump FILE (- "
       "for standard input), renamed into place once whole",
       {},
       "roundtable restore /tmp/users.dump /tmp/users2"},
      {"backup",
       "DIR COPY",
       "a consistent copy of the table, as of one moment, in the directory "
       "COPY, which opens as a table of its own (Table::Backup: writers go "
       "on while it copies)",
       {},
       "roundtable backup /tmp/users /tmp/users.backup"},
      {"salvage",
       "DIR NEWDIR",
       "copy every record of a damaged table that can be read (blocks that "
       "pass their checksums, the stash, the write buffer, the log) into a "
       "new table, and report what was lost; a table that cannot be opened "
       "has its files read one by one; never writes to DIR",
       {"json"},
       "roundtable salvage /tmp/users /tmp/users.saved"},
      {"rebuild",
       "DIR",
       "copy every record into a new table of the layout given (the flags "
       "not given keep the table's) and put it in the old one's place in "
       "one rename: a crash leaves the old table or the new one",
       {"block_size", "s0", "epsilon"},
       "roundtable rebuild /tmp/users --block_size=8192 --s0=8"},
      {"demo",
       "[DIR]",
       "load, read back and delete --records records; --json prints the "
       "figures as one object",
       {"records", "json"},
       "roundtable demo --records=100000"},
      {"serve",
       "DIR",
       "a Redis-protocol server over the table (made if missing) until "
       "SIGTERM or SIGINT: redis-cli and every Redis client talk to it "
       "(docs/server.md)",
       {"port", "bind", "fsync", "requirepass", "requirepass_file",
        "maxclients", "protected_mode", "cache_mb", "write_buffer_mb",
        "memory_mb", "event_loops", "cluster_topology", "cluster_node",
        "block_size", "s0", "epsilon"},
       "roundtable serve /tmp/users --port=6380 --fsync=always"},
      {"map",
       "",
       "the bucket of each hash on standard input, or the buckets touched by "
       "--grow=N / --shrink=N steps",
       {"mapping", "s0", "buckets", "grow", "shrink"},
       "roundtable map --s0=3 --buckets=10 --grow=2"},
      {"experiment balance",
       "",
       "bucket-size distribution of evenly spaced hashes (Table 2)",
       {"buckets", "values", "s0", "mappings", "threads", "csv"},
       "roundtable experiment balance --buckets=1000 --values=1000000"},
      {"experiment stash",
       "",
       "worst stash size per B, epsilon and s0 (Tables 3-5); --trace: the "
       "stash while n grows (Figure 3)",
       {"block_keys", "epsilons", "s0", "seed", "threads", "csv", "plot",
        "quick", "trace", "from", "to", "repetitions"},
       "roundtable experiment stash --quick"},
      {"experiment transfers",
       "",
       "block transfers per operation as n grows",
       {"block_keys", "epsilons", "s0", "seed", "threads", "csv", "plot",
        "quick", "to", "samples"},
       "roundtable experiment transfers --quick"},
      {"experiment placement",
       "",
       "balance, moves and lookup cost of the placement schemes",
       {"algorithms", "nodes", "keys", "s0", "vnodes", "table_size", "probes",
        "c", "choices", "seed", "runs", "timing", "csv", "plot"},
       "roundtable experiment placement --nodes=10 --keys=10000"},
  };
  return *commands;
}

const CommandSpec* FindCommand(std::span<const std::string> words,
                               size_t* used) {
  const CommandSpec* best = nullptr;
  size_t best_words = 0;
  for (const CommandSpec& c : Commands()) {
    const std::vector<std::string> name = absl::StrSplit(c.name, ' ');
    if (name.size() > words.size() || name.size() <= best_words) continue;
    if (std::equal(name.begin(), name.end(), words.begin())) {
      best = &c;
      best_words = name.size();
    }
  }
  *used = best_words;
  return best;
}

std::string FlagName(std::string_view arg) {
  const size_t dashes = arg.substr(0, 2) == "--" ? 2 : arg.substr(0, 1) == "-";
  if (dashes == 0 || arg.size() <= dashes ||
      !std::isalpha(static_cast<unsigned char>(arg[dashes]))) {
    return "";
  }
  std::string_view name = arg.substr(dashes);
  name = name.substr(0, name.find('='));
  // Abseil takes --noFLAG for a boolean FLAG = false.
  return std::string(name);
}

namespace {

std::string FlagList(const CommandSpec& c) {
  if (c.flags.empty()) return "no flags";
  std::vector<std::string> dashed;
  for (const std::string& f : c.flags) dashed.push_back("--" + f);
  return absl::StrJoin(dashed, " ");
}

}  // namespace

absl::Status CheckFlags(const CommandSpec& command,
                        std::span<const std::string> given) {
  for (const std::string& flag : given) {
    const bool negated = flag.size() > 2 && flag.substr(0, 2) == "no";
    const auto takes = [&](const std::string& name) {
      return std::find(command.flags.begin(), command.flags.end(), name) !=
             command.flags.end();
    };
    if (takes(flag) || (negated && takes(flag.substr(2)))) continue;
    return absl::InvalidArgumentError(absl::StrCat(
        "does not take --", flag, "; it takes ", FlagList(command)));
  }
  return absl::OkStatus();
}

std::string HelpFor(const CommandSpec& c) {
  return absl::StrCat("roundtable ", c.name, c.args.empty() ? "" : " ", c.args,
                      "\n  ", c.summary, "\n  flags: ", FlagList(c),
                      "\n  example: ", c.example, "\n");
}

std::string HelpText() {
  std::string text =
      "roundtable <command> [flags]: an embedded key-value table on disk\n\n";
  for (const CommandSpec& c : Commands()) absl::StrAppend(&text, HelpFor(c));
  absl::StrAppend(
      &text,
      "\nroundtable help COMMAND: one command; roundtable --version: the "
      "version.\nExit status: 0 success, 1 not found, 2 usage (a bad "
      "command line, flag\nvalue or input record), 3 a damaged table, 4 a "
      "table locked or read-only,\n5 any other error. docs/cli.md has "
      "more.\n");
  return text;
}

int ExitCodeOf(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kOk:
      return kExitOk;
    case absl::StatusCode::kNotFound:
      return kExitNotFound;
    case absl::StatusCode::kInvalidArgument:
      return kExitUsage;
    case absl::StatusCode::kDataLoss:
      return kExitDataLoss;
    case absl::StatusCode::kFailedPrecondition:
      return kExitUnavailable;
    default:
      return kExitError;
  }
}

}  // namespace roundtable::cli
