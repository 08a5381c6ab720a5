// What the server's commands share, private to tools/server/: a running
// request (Commands::Call), a command's description (Commands::Spec), the
// parsing and error texts every handler uses, and the handlers that
// admin_commands.cc (connection and server commands) and key_commands.cc
// define; the string commands are in commands.cc, beside the table of all
// of them.
// Thread-safety: as Commands.
#ifndef ROUNDTABLE_TOOLS_SERVER_COMMAND_CALL_H_
#define ROUNDTABLE_TOOLS_SERVER_COMMAND_CALL_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "tools/server/commands.h"

namespace roundtable::server {
namespace commands_internal {

// Abseil's own string_view, where its functions take one.
absl::string_view AV(std::string_view s);
std::string Lower(std::string_view s);
std::string Upper(std::string_view s);
// An integer as Redis's string2ll takes one: no blanks, no "+", no
// leading zeros.
bool ParseInt64(std::string_view s, int64_t* out);
// An unsigned integer of decimal digits only (SCAN's cursor, a slot).
bool ParseUint64(std::string_view s, uint64_t* out);
bool EqualsNoCase(std::string_view a, std::string_view b);

inline constexpr std::string_view kSyntaxError = "ERR syntax error";
inline constexpr std::string_view kNotInteger =
    "ERR value is not an integer or out of range";
inline constexpr std::string_view kNotFloat = "ERR value is not a valid float";
inline constexpr std::string_view kNoExpiry =
    "ERR expiry is not supported: roundtable keeps no time to live "
    "(docs/server.md)";

}  // namespace commands_internal

// One running request: what its handler reads and where it replies.
struct Commands::Call {
  Commands& server;
  Session& session;
  std::span<const std::string_view> args;
  ReplyWriter reply;
  LoopCounters& counters;  // the running loop's
  bool wrote = false;

  Table& table() { return *server.table_; }
  std::string_view arg(size_t i) const { return args[i]; }
  // The command's name in lower case, as Redis quotes it in errors.
  std::string name() const { return commands_internal::Lower(args[0]); }
  // Replies with the table's error; true when `status` is one.
  bool Failed(const absl::Status& status) {
    if (status.ok()) return false;
    reply.Error(absl::StrCat("ERR ", status.message()));
    return true;
  }
};

// A command: its name (lower case), arity (Redis's: n exactly n
// arguments with the name, -n at least n), flags as COMMAND lists them,
// its keys' positions (first, last (-1: the last argument), step), and
// what runs it.
struct Commands::Spec {
  std::string_view name;
  int arity;
  std::vector<std::string_view> flags;
  int first_key, last_key, step;
  void (*run)(Call&);
};

namespace commands_internal {

using Call = Commands::Call;
using Spec = Commands::Spec;

// Every command, sorted by name, and the one named `name` (any case) or
// null.
const std::vector<Spec>& Specs();
const Spec* FindSpec(std::string_view name);

// Whether `key` is stored (reads its block at most, never its value).
absl::StatusOr<bool> Exists(Call& c, std::string_view key);

// admin_commands.cc.
void Ping(Call& c);
void Echo(Call& c);
void Quit(Call& c);
void Select(Call& c);
void Auth(Call& c);
void Hello(Call& c);
void Client(Call& c);
void Command(Call& c);
void Config(Call& c);
void Info(Call& c);

// cluster.cc: whether the request runs here (its keys in one slot, this
// node's), else a MOVED, CROSSSLOT or CLUSTERDOWN error replied; CLUSTER,
// and READONLY, READWRITE and ASKING (accepted, nothing to change).
bool RouteToSlot(Call& c, const Spec& spec);
void Cluster(Call& c);
void ReadOnlyMode(Call& c);

// key_commands.cc.
void Type(Call& c);
void Ttl(Call& c);
void Persist(Call& c);
void Expire(Call& c);
void Keys(Call& c);
void Scan(Call& c);
void RandomKey(Call& c);
void DbSize(Call& c);
void FlushDb(Call& c);

}  // namespace commands_internal
}  // namespace roundtable::server

#endif  // ROUNDTABLE_TOOLS_SERVER_COMMAND_CALL_H_
