// `roundtable dump` and `restore`: a table to a dump file (dump_file.h)
// and back, byte for byte, with its layout; and `rebuild`, a table into
// another layout in place.
#ifndef ROUNDTABLE_TOOLS_ROUNDTABLE_DUMP_COMMANDS_H_
#define ROUNDTABLE_TOOLS_ROUNDTABLE_DUMP_COMMANDS_H_

#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "roundtable/options.h"

namespace roundtable::cli {

// Writes the layout and every record of the table at `dir` to `path`
// ("-": standard output), opening the table read-only (other readers may
// share it; a writer is refused while it runs). A file that could not be
// written whole is removed.
absl::Status RunDump(const std::string& dir, const std::string& path);

// Creates the table at `dir` (which must not hold one) with the layout and
// records of the dump at `path` ("-": standard input). The table is built
// beside it (DIR.restoring) and renamed into place only once the whole
// dump has been read and verified: a failed restore leaves no table.
absl::Status RunRestore(const std::string& path, const std::string& dir);

// Writes a consistent copy of the table at `dir` to `copy` (Table::Backup),
// opening it to write: another process's writer must close it first.
absl::Status RunBackup(const std::string& dir, const std::string& copy);

// Copies what can be read of the damaged table at `dir` into a new table
// at `copy` (SalvageTable) and reports what was saved and lost; with
// `json` as one object {"saved", "damaged_blocks", "lost", "lost_values"}.
absl::Status RunSalvage(const std::string& dir, const std::string& copy,
                        bool json, std::ostream& out);

// Rebuilds the table at `dir` into the layout fields `layout` sets
// (RebuildTable), with progress on a terminal.
absl::Status RunRebuild(const std::string& dir, const Options& layout);

}  // namespace roundtable::cli

#endif  // ROUNDTABLE_TOOLS_ROUNDTABLE_DUMP_COMMANDS_H_
