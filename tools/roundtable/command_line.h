// The roundtable tool's command line: every command with its arguments,
// the flags it takes and an example (the help text and docs/cli.md come
// from one list); checking a command's flags; and the exit status of a
// result.
//
// Thread-safety: constant data and pure functions.
#ifndef ROUNDTABLE_TOOLS_ROUNDTABLE_COMMAND_LINE_H_
#define ROUNDTABLE_TOOLS_ROUNDTABLE_COMMAND_LINE_H_

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"

namespace roundtable::cli {

struct CommandSpec {
  std::string name;                // "get", "experiment stash"
  std::string args;                // "DIR KEY"
  std::string summary;             // one line
  std::vector<std::string> flags;  // the flags it takes, without "--"
  std::string example;             // a whole command line
};

// Every command, in the order the help lists them.
const std::vector<CommandSpec>& Commands();

// The command that the leading words name ("experiment stash" takes two),
// or null; *used is how many words the name took.
const CommandSpec* FindCommand(std::span<const std::string> words,
                               size_t* used);

// The flag names given on a command line ("--batch=7" and "--sync" give
// "batch" and "sync"): an argument that is "-" or "--" and a letter.
std::string FlagName(std::string_view arg);

// InvalidArgument naming the command's flags when `given` holds one it
// does not take.
absl::Status CheckFlags(const CommandSpec& command,
                        std::span<const std::string> given);

// The text of `roundtable --help`: every command with its flags, and the
// exit statuses; HelpFor one command with its example.
std::string HelpText();
std::string HelpFor(const CommandSpec& command);

// The exit statuses (docs/cli.md).
inline constexpr int kExitOk = 0;
inline constexpr int kExitNotFound = 1;     // a key or a table is absent
inline constexpr int kExitUsage = 2;        // a bad command line, flag value or
                                            // input record (InvalidArgument)
inline constexpr int kExitDataLoss = 3;     // a damaged table
inline constexpr int kExitUnavailable = 4;  // locked, read-only, closed
inline constexpr int kExitError = 5;        // anything else (I/O, input)

// The exit status of a command that ended with `status`.
int ExitCodeOf(const absl::Status& status);

}  // namespace roundtable::cli

#endif  // ROUNDTABLE_TOOLS_ROUNDTABLE_COMMAND_LINE_H_
