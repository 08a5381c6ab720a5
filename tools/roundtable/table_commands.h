// The store commands of the roundtable CLI: create, put, get, del, load,
// scan, stats, check, and the demo. Keys and values on the command line and
// in load/scan text use the escaping of tsv.h. Each function opens the table
// at `dir` (with its stored layout), does its work and closes it.
//
// Thread-safety: each call is independent.
#ifndef ROUNDTABLE_TOOLS_ROUNDTABLE_TABLE_COMMANDS_H_
#define ROUNDTABLE_TOOLS_ROUNDTABLE_TABLE_COMMANDS_H_

#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "roundtable/table.h"

namespace roundtable::cli {

// AlreadyExists when there is a table at `dir`.
absl::Status RunCreate(const std::string& dir, const Options& layout);
// `value` escaped, or, with `raw`, the value's bytes as they are (read
// from a file).
absl::Status RunPut(const std::string& dir, const std::string& key,
                    const std::string& value, bool raw = false);
// Writes the value's bytes, unchanged, and then `end` (a newline on a
// terminal), to standard output or (made or emptied once the value is
// found) the file `output`; NotFound when absent.
absl::Status RunGet(const std::string& dir, const std::string& key,
                    const std::string& output, std::string_view end = "");
absl::Status RunDel(const std::string& dir, const std::string& key);
struct LoadOptions {
  bool sync = false;      // each write durable (log synced) before the next
  uint64_t batch = 1;     // records per atomic batch (the last may be short)
  bool progress = false;  // a counter on standard error
};
// One record per line, of any length: escaped key, a tab, escaped value.
// Blank lines are skipped. Records are written in batches of options.batch,
// each atomic; a bad line stops the load with its line number, and the whole
// batches before it are stored.
absl::Status RunLoad(const std::string& dir, std::istream& in,
                     const LoadOptions& options);
// Every record as a load line, in no particular order.
absl::Status RunScan(const std::string& dir, std::ostream& out);
// Where `key` lives (Table::Locate): hash, bucket, block, block, stash,
// write buffer or absent, and a value's size and place; with `json` one
// object. An absent key is not an error (where: absent).
absl::Status RunLocate(const std::string& dir, std::string_view key, bool json,
                       std::ostream& out);
absl::Status RunStats(const std::string& dir, bool json, std::ostream& out);
// Verifies every checksum and placement invariant (Table::Check); prints a
// one-line verdict, or with `json` one object: {"ok", "error", "records",
// "buckets", "stash_records", "buffered_records", "value_count",
// "value_bytes"} (printed for a failed check too).
absl::Status RunCheck(const std::string& dir, bool json, std::ostream& out);

// Creates a table in `dir`, loads `records` records (16-byte keys, 100-byte
// values) with a progress bar, reads them all back, deletes half, and
// prints a summary.
absl::Status RunDemo(const std::string& dir, uint64_t records, bool progress,
                     bool json, std::ostream& out);

// Stats as one JSON object: the fields of TableStats, with `records` the
// exact count (Table::Count) and `stored_records` TableStats::records.
std::string StatsJson(const TableStats& s, uint64_t records,
                      uint64_t file_bytes);

}  // namespace roundtable::cli

#endif  // ROUNDTABLE_TOOLS_ROUNDTABLE_TABLE_COMMANDS_H_
