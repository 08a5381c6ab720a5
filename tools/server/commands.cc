#include "tools/server/commands.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>
#include <random>
#include <unordered_set>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "roundtable/version.h"

#include <unistd.h>

namespace roundtable::server {
namespace {

// Abseil's own string_view, where its functions take one.
absl::string_view AV(std::string_view s) { return {s.data(), s.size()}; }

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& ch : out) ch = absl::ascii_tolower(static_cast<unsigned char>(ch));
  return out;
}

std::string Upper(std::string_view s) {
  std::string out(s);
  for (char& ch : out) ch = absl::ascii_toupper(static_cast<unsigned char>(ch));
  return out;
}

}  // namespace

const char* FsyncPolicyName(FsyncPolicy policy) {
  switch (policy) {
    case FsyncPolicy::kAlways: return "always";
    case FsyncPolicy::kEverySec: return "everysec";
    case FsyncPolicy::kNo: return "no";
  }
  return "everysec";
}

// One running request: what its handler reads and where it replies.
struct Commands::Call {
  Commands& server;
  Session& session;
  std::span<const std::string_view> args;
  ReplyWriter reply;
  bool wrote = false;

  Table& table() { return *server.table_; }
  std::string_view arg(size_t i) const { return args[i]; }
  // The command's name in lower case, as Redis quotes it in errors.
  std::string name() const { return Lower(args[0]); }
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

namespace {

using Call = Commands::Call;
using Spec = Commands::Spec;

constexpr std::string_view kSyntaxError = "ERR syntax error";
constexpr std::string_view kNotInteger =
    "ERR value is not an integer or out of range";
constexpr std::string_view kNotFloat = "ERR value is not a valid float";
constexpr std::string_view kNoExpiry =
    "ERR expiry is not supported: roundtable keeps no time to live "
    "(docs/server.md)";

bool ParseInt64(std::string_view s, int64_t* out) {
  if (s.empty() || s.size() > 20) return false;
  // Redis takes no blanks, no "+" and no leading zeros.
  if (s[0] == '+' || (s.size() > 1 && s[0] == '0') ||
      (s.size() > 2 && s[0] == '-' && s[1] == '0')) {
    return false;
  }
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && end == s.data() + s.size();
}

bool ParseDouble(std::string_view s, long double* out) {
  if (s.empty() || s.size() > 5000 || std::isspace(static_cast<unsigned char>(s[0]))) {
    return false;
  }
  std::string copy(s);
  char* end = nullptr;
  errno = 0;
  const long double v = std::strtold(copy.c_str(), &end);
  if (end != copy.c_str() + copy.size() || errno == ERANGE || std::isnan(v)) {
    return false;
  }
  *out = v;
  return true;
}

bool EqualsNoCase(std::string_view a, std::string_view b) {
  return absl::EqualsIgnoreCase(AV(a), AV(b));
}

// The value of `key`: nullopt when absent (counted as a miss), or with
// *failed set and an error replied.
std::optional<std::string> Lookup(Call& c, std::string_view key,
                                  bool* failed) {
  *failed = false;
  auto value = c.table().Get(key);
  if (value.ok()) {
    ++c.server.stats()->keyspace_hits;
    return std::move(*value);
  }
  if (absl::IsNotFound(value.status())) {
    ++c.server.stats()->keyspace_misses;
    return std::nullopt;
  }
  *failed = c.Failed(value.status());
  return std::nullopt;
}

// Whether `key` is stored (reads its block at most, never its value).
absl::StatusOr<bool> Exists(Call& c, std::string_view key) {
  auto where = c.table().Locate(key);
  if (!where.ok()) return where.status();
  return where->where != KeyLocation::Where::kAbsent;
}

bool Put(Call& c, std::string_view key, std::string_view value) {
  if (c.Failed(c.table().Put(key, value))) return false;
  c.wrote = true;
  return true;
}

// --- Connection ---

void Ping(Call& c) {
  if (c.args.size() > 2) {
    c.reply.Error("ERR wrong number of arguments for 'ping' command");
  } else if (c.args.size() == 2) {
    c.reply.Bulk(c.arg(1));
  } else {
    c.reply.Simple("PONG");
  }
}

void Echo(Call& c) { c.reply.Bulk(c.arg(1)); }

void Quit(Call& c) {
  c.reply.Simple("OK");
  c.session.close_after_reply = true;
}

void Select(Call& c) {
  int64_t db = 0;
  if (!ParseInt64(c.arg(1), &db)) {
    c.reply.Error(kNotInteger);
  } else if (db != 0) {
    c.reply.Error("ERR DB index is out of range");
  } else {
    c.reply.Simple("OK");
  }
}

// Checks `user` and `password` against the server's password; replies
// with the error when they do not match.
bool CheckPassword(Call& c, std::string_view user, std::string_view password) {
  const std::string& required = c.server.config()->requirepass;
  if (required.empty()) {
    c.reply.Error(
        "ERR AUTH <password> called without any password configured for the "
        "default user. Are you sure your configuration is correct?");
    return false;
  }
  if (user != "default" || password != required) {
    c.reply.Error(
        "WRONGPASS invalid username-password pair or user is disabled.");
    return false;
  }
  c.session.authenticated = true;
  return true;
}

void Auth(Call& c) {
  if (c.args.size() > 3) {
    c.reply.Error(kSyntaxError);
    return;
  }
  const std::string_view user = c.args.size() == 3 ? c.arg(1) : "default";
  if (CheckPassword(c, user, c.args.back())) c.reply.Simple("OK");
}

bool ValidClientName(std::string_view name) {
  for (char ch : name) {
    if (ch < '!' || ch > '~') return false;
  }
  return true;
}

void Hello(Call& c) {
  int64_t protocol = c.session.protocol;
  size_t i = 1;
  if (c.args.size() > 1) {
    if (!ParseInt64(c.arg(1), &protocol)) {
      c.reply.Error("ERR Protocol version is not an integer or out of range");
      return;
    }
    if (protocol != 2 && protocol != 3) {
      c.reply.Error("NOPROTO unsupported protocol version");
      return;
    }
    i = 2;
  }
  std::optional<std::string_view> name;
  for (; i < c.args.size(); ++i) {
    const bool more = i + 1 < c.args.size();
    if (EqualsNoCase(c.arg(i), "AUTH") && i + 2 < c.args.size()) {
      if (!CheckPassword(c, c.arg(i + 1), c.arg(i + 2))) return;
      i += 2;
    } else if (EqualsNoCase(c.arg(i), "SETNAME") && more) {
      name = c.arg(++i);
      if (!ValidClientName(*name)) {
        c.reply.Error(
            "ERR Client names cannot contain spaces, newlines or special "
            "characters.");
        return;
      }
    } else {
      c.reply.Error(absl::StrCat("ERR Syntax error in HELLO option '",
                                 AV(c.arg(i)), "'"));
      return;
    }
  }
  if (!c.server.config()->requirepass.empty() && !c.session.authenticated) {
    c.reply.Error(
        "NOAUTH HELLO must be called with the client already authenticated, "
        "otherwise the HELLO <proto> AUTH <user> <pass> option can be used "
        "to authenticate the client and select the RESP protocol version at "
        "the same time");
    return;
  }
  if (name) c.session.name = std::string(*name);
  c.session.protocol = static_cast<int>(protocol);
  // The writer took the old protocol: replies from here on take the new.
  ReplyWriter w(c.reply.out(), c.session.protocol);
  w.Map(7);
  w.Bulk("server");
  w.Bulk("roundtable");
  w.Bulk("version");
  w.Bulk(ROUNDTABLE_VERSION_STRING);
  w.Bulk("proto");
  w.Integer(c.session.protocol);
  w.Bulk("id");
  w.Integer(static_cast<int64_t>(c.session.id));
  w.Bulk("mode");
  w.Bulk("standalone");
  w.Bulk("role");
  w.Bulk("master");
  w.Bulk("modules");
  w.Array(0);
}

void Client(Call& c) {
  const std::string sub = Upper(c.arg(1));
  if (sub == "SETNAME" && c.args.size() == 3) {
    if (!ValidClientName(c.arg(2))) {
      c.reply.Error(
          "ERR Client names cannot contain spaces, newlines or special "
          "characters.");
      return;
    }
    c.session.name = std::string(c.arg(2));
    c.reply.Simple("OK");
  } else if (sub == "GETNAME" && c.args.size() == 2) {
    if (c.session.name.empty()) {
      c.reply.Null();
    } else {
      c.reply.Bulk(c.session.name);
    }
  } else if (sub == "ID" && c.args.size() == 2) {
    c.reply.Integer(static_cast<int64_t>(c.session.id));
  } else if (sub == "SETINFO" && c.args.size() == 4) {
    c.reply.Simple("OK");
  } else if ((sub == "LIST" || sub == "INFO") &&
             c.args.size() == 2) {
    const auto now = std::chrono::steady_clock::now();
    std::string text;
    auto line = [&](const Session& s) {
      absl::StrAppend(
          &text, "id=", s.id, " addr=", s.address, " name=", s.name, " age=",
          std::chrono::duration_cast<std::chrono::seconds>(now - s.connected)
              .count(),
          " db=0 resp=", s.protocol, "\n");
    };
    if (sub == "INFO") {
      line(c.session);
    } else {
      for (const Session* s : c.server.clients()) line(*s);
    }
    c.reply.Verbatim(text);
  } else {
    c.reply.Error(absl::StrCat("ERR unknown subcommand or wrong number of "
                               "arguments for '", AV(c.arg(1)),
                               "'. Try CLIENT HELP."));
  }
}

// --- Strings ---

void Get(Call& c) {
  bool failed;
  auto value = Lookup(c, c.arg(1), &failed);
  if (failed) return;
  if (value) {
    c.reply.Bulk(*value);
  } else {
    c.reply.Null();
  }
}

void SetCommand(Call& c) {
  bool nx = false, xx = false, get = false;
  for (size_t i = 3; i < c.args.size(); ++i) {
    const std::string opt = Upper(c.arg(i));
    if (opt == "NX" && !xx) {
      nx = true;
    } else if (opt == "XX" && !nx) {
      xx = true;
    } else if (opt == "GET") {
      get = true;
    } else if (opt == "KEEPTTL") {
      // No key has a time to live: keeping it keeps nothing.
    } else if ((opt == "EX" || opt == "PX" || opt == "EXAT" ||
                opt == "PXAT") &&
               i + 1 < c.args.size()) {
      c.reply.Error(kNoExpiry);
      return;
    } else {
      c.reply.Error(kSyntaxError);
      return;
    }
  }
  std::optional<std::string> old;
  bool exists = false;
  if (get) {
    bool failed;
    old = Lookup(c, c.arg(1), &failed);
    if (failed) return;
    exists = old.has_value();
  } else if (nx || xx) {
    auto e = Exists(c, c.arg(1));
    if (c.Failed(e.status())) return;
    exists = *e;
  }
  const bool skip = (nx && exists) || (xx && !exists);
  if (!skip && !Put(c, c.arg(1), c.arg(2))) return;
  if (get) {
    if (old) {
      c.reply.Bulk(*old);
    } else {
      c.reply.Null();
    }
  } else if (skip) {
    c.reply.Null();
  } else {
    c.reply.Simple("OK");
  }
}

void SetNx(Call& c) {
  auto e = Exists(c, c.arg(1));
  if (c.Failed(e.status())) return;
  if (*e) {
    c.reply.Integer(0);
  } else if (Put(c, c.arg(1), c.arg(2))) {
    c.reply.Integer(1);
  }
}

void GetSet(Call& c) {
  bool failed;
  auto old = Lookup(c, c.arg(1), &failed);
  if (failed || !Put(c, c.arg(1), c.arg(2))) return;
  if (old) {
    c.reply.Bulk(*old);
  } else {
    c.reply.Null();
  }
}

void GetDel(Call& c) {
  bool failed;
  auto old = Lookup(c, c.arg(1), &failed);
  if (failed) return;
  if (!old) {
    c.reply.Null();
    return;
  }
  if (c.Failed(c.table().Delete(c.arg(1)))) return;
  c.wrote = true;
  c.reply.Bulk(*old);
}

void MGet(Call& c) {
  auto values = c.table().MultiGet(c.args.subspan(1));
  c.reply.Array(values.size());
  for (auto& v : values) {
    if (v.ok()) {
      ++c.server.stats()->keyspace_hits;
      c.reply.Bulk(*v);
    } else {
      // An error in an array reply is the element's (RESP's error element).
      if (absl::IsNotFound(v.status())) {
        ++c.server.stats()->keyspace_misses;
        c.reply.Null();
      } else {
        c.reply.Error(absl::StrCat("ERR ", v.status().message()));
      }
    }
  }
}

// MSET's and MSETNX's pairs as one batch: all or nothing.
bool WritePairs(Call& c) {
  WriteBatch batch;
  for (size_t i = 1; i + 1 < c.args.size(); i += 2) {
    batch.Put(c.arg(i), c.arg(i + 1));
  }
  if (c.Failed(c.table().Write(batch))) return false;
  c.wrote = true;
  return true;
}

bool EvenPairs(Call& c) {
  if (c.args.size() % 2 == 1) return true;
  c.reply.Error(absl::StrCat("ERR wrong number of arguments for '", c.name(),
                             "' command"));
  return false;
}

void MSet(Call& c) {
  if (EvenPairs(c) && WritePairs(c)) c.reply.Simple("OK");
}

void MSetNx(Call& c) {
  if (!EvenPairs(c)) return;
  for (size_t i = 1; i < c.args.size(); i += 2) {
    auto e = Exists(c, c.arg(i));
    if (c.Failed(e.status())) return;
    if (*e) {
      c.reply.Integer(0);
      return;
    }
  }
  if (WritePairs(c)) c.reply.Integer(1);
}

void Del(Call& c) {
  WriteBatch batch;
  absl::flat_hash_set<std::string_view> seen;
  for (size_t i = 1; i < c.args.size(); ++i) {
    if (!seen.insert(c.arg(i)).second) continue;
    auto e = Exists(c, c.arg(i));
    if (c.Failed(e.status())) return;
    if (*e) batch.Delete(c.arg(i));
  }
  if (batch.Count() > 0) {
    if (c.Failed(c.table().Write(batch))) return;
    c.wrote = true;
  }
  c.reply.Integer(static_cast<int64_t>(batch.Count()));
}

void ExistsCommand(Call& c) {
  int64_t n = 0;
  for (size_t i = 1; i < c.args.size(); ++i) {
    auto e = Exists(c, c.arg(i));
    if (c.Failed(e.status())) return;
    n += *e;
  }
  c.reply.Integer(n);
}

void StrLen(Call& c) {
  auto where = c.table().Locate(c.arg(1));
  if (c.Failed(where.status())) return;
  c.reply.Integer(where->where == KeyLocation::Where::kAbsent
                      ? 0
                      : static_cast<int64_t>(where->value_bytes));
}

bool CheckSize(Call& c, uint64_t size) {
  if (size <= c.server.config()->limits.max_bulk_bytes) return true;
  c.reply.Error(
      "ERR string exceeds maximum allowed size (proto-max-bulk-len)");
  return false;
}

void Append(Call& c) {
  bool failed;
  auto old = Lookup(c, c.arg(1), &failed);
  if (failed) return;
  std::string value = old ? std::move(*old) : std::string();
  if (!CheckSize(c, value.size() + c.arg(2).size())) return;
  value.append(c.arg(2));
  if (Put(c, c.arg(1), value)) {
    c.reply.Integer(static_cast<int64_t>(value.size()));
  }
}

void GetRange(Call& c) {
  int64_t start = 0, end = 0;
  if (!ParseInt64(c.arg(2), &start) || !ParseInt64(c.arg(3), &end)) {
    c.reply.Error(kNotInteger);
    return;
  }
  bool failed;
  auto value = Lookup(c, c.arg(1), &failed);
  if (failed) return;
  const int64_t n = value ? static_cast<int64_t>(value->size()) : 0;
  // Redis: negative offsets count from the end; a start past the end, or
  // both negative with start > end, is empty.
  if (start < 0 && end < 0 && start > end) {
    c.reply.Bulk("");
    return;
  }
  if (start < 0) start = std::max<int64_t>(n + start, 0);
  if (end < 0) end = std::max<int64_t>(n + end, 0);
  if (end >= n) end = n - 1;
  if (n == 0 || start > end) {
    c.reply.Bulk("");
    return;
  }
  c.reply.Bulk(std::string_view(*value).substr(start, end - start + 1));
}

void SetRange(Call& c) {
  int64_t offset = 0;
  if (!ParseInt64(c.arg(2), &offset)) {
    c.reply.Error(kNotInteger);
    return;
  }
  if (offset < 0) {
    c.reply.Error("ERR offset is out of range");
    return;
  }
  bool failed;
  auto old = Lookup(c, c.arg(1), &failed);
  if (failed) return;
  std::string value = old ? std::move(*old) : std::string();
  const std::string_view piece = c.arg(3);
  if (piece.empty()) {
    // Nothing to write: the length as it is, and no key made.
    c.reply.Integer(static_cast<int64_t>(value.size()));
    return;
  }
  if (!CheckSize(c, static_cast<uint64_t>(offset) + piece.size())) return;
  if (value.size() < offset + piece.size()) {
    value.resize(offset + piece.size(), '\0');
  }
  value.replace(offset, piece.size(), piece);
  if (Put(c, c.arg(1), value)) {
    c.reply.Integer(static_cast<int64_t>(value.size()));
  }
}

void IncrBy(Call& c, int64_t by) {
  bool failed;
  auto old = Lookup(c, c.arg(1), &failed);
  if (failed) return;
  int64_t n = 0;
  if (old && !ParseInt64(*old, &n)) {
    c.reply.Error(kNotInteger);
    return;
  }
  int64_t result;
  if (__builtin_add_overflow(n, by, &result)) {
    c.reply.Error("ERR increment or decrement would overflow");
    return;
  }
  if (Put(c, c.arg(1), absl::StrCat(result))) c.reply.Integer(result);
}

void Incr(Call& c) { IncrBy(c, 1); }
void Decr(Call& c) { IncrBy(c, -1); }

void IncrByCommand(Call& c) {
  int64_t by = 0;
  if (!ParseInt64(c.arg(2), &by)) {
    c.reply.Error(kNotInteger);
    return;
  }
  IncrBy(c, by);
}

void DecrByCommand(Call& c) {
  int64_t by = 0;
  if (!ParseInt64(c.arg(2), &by)) {
    c.reply.Error(kNotInteger);
    return;
  }
  if (by == std::numeric_limits<int64_t>::min()) {
    c.reply.Error("ERR decrement would overflow");
    return;
  }
  IncrBy(c, -by);
}

void IncrByFloat(Call& c) {
  long double by = 0;
  if (!ParseDouble(c.arg(2), &by)) {
    c.reply.Error(kNotFloat);
    return;
  }
  bool failed;
  auto old = Lookup(c, c.arg(1), &failed);
  if (failed) return;
  long double n = 0;
  if (old && !ParseDouble(*old, &n)) {
    c.reply.Error(kNotFloat);
    return;
  }
  const double result = static_cast<double>(n + by);
  if (std::isnan(result) || std::isinf(result)) {
    c.reply.Error("ERR increment would produce NaN or Infinity");
    return;
  }
  const std::string text = FormatDouble(result);
  if (Put(c, c.arg(1), text)) c.reply.Bulk(text);
}

// --- Keys ---

void Type(Call& c) {
  auto e = Exists(c, c.arg(1));
  if (c.Failed(e.status())) return;
  c.reply.Simple(*e ? "string" : "none");
}

void Ttl(Call& c) {
  auto e = Exists(c, c.arg(1));
  if (c.Failed(e.status())) return;
  // No key has a time to live: -1 for a key, -2 for none (Redis's codes).
  c.reply.Integer(*e ? -1 : -2);
}

void Persist(Call& c) {
  auto e = Exists(c, c.arg(1));
  if (c.Failed(e.status())) return;
  c.reply.Integer(0);  // nothing had a time to live to remove
}

void Expire(Call& c) { c.reply.Error(kNoExpiry); }

void Keys(Call& c) {
  std::vector<std::string> keys;
  auto it = c.table().NewIterator();
  for (; it->Valid(); it->Next()) {
    if (Commands::GlobMatch(c.arg(1), it->key())) {
      keys.emplace_back(it->key());
    }
  }
  if (c.Failed(it->status())) return;
  c.reply.Array(keys.size());
  for (const std::string& k : keys) c.reply.Bulk(k);
}

void RandomKey(Call& c) {
  // One pass over the records, keeping each with probability 1/i: every
  // key equally likely. Costs a walk of the table.
  thread_local std::mt19937_64 random(std::random_device{}());
  std::optional<std::string> chosen;
  uint64_t seen = 0;
  auto it = c.table().NewIterator();
  for (; it->Valid(); it->Next()) {
    ++seen;
    if (random() % seen == 0) chosen = std::string(it->key());
  }
  if (c.Failed(it->status())) return;
  if (chosen) {
    c.reply.Bulk(*chosen);
  } else {
    c.reply.Null();
  }
}

void DbSize(Call& c) {
  auto n = c.table().Count();
  if (c.Failed(n.status())) return;
  c.reply.Integer(static_cast<int64_t>(*n));
}

void FlushDb(Call& c) {
  if (c.args.size() > 2 || (c.args.size() == 2 &&
                             !EqualsNoCase(c.arg(1), "SYNC") &&
                             !EqualsNoCase(c.arg(1), "ASYNC"))) {
    c.reply.Error(kSyntaxError);
    return;
  }
  // The keys first, then deleted in batches of a thousand: the walk sees
  // each bucket once, and deleting while walking would shrink the table
  // under it.
  std::vector<std::string> keys;
  auto it = c.table().NewIterator();
  for (; it->Valid(); it->Next()) keys.emplace_back(it->key());
  if (c.Failed(it->status())) return;
  for (size_t i = 0; i < keys.size(); i += 1000) {
    WriteBatch batch;
    for (size_t j = i; j < std::min(keys.size(), i + 1000); ++j) {
      batch.Delete(keys[j]);
    }
    if (c.Failed(c.table().Write(batch))) return;
    c.wrote = true;
  }
  c.reply.Simple("OK");
}

// --- Server ---

void Info(Call& c);
void Config(Call& c);
void Command(Call& c);

const std::vector<Spec>& Specs() {
  static const std::vector<Spec> specs = {
      {"append", 3, {"write", "denyoom", "fast"}, 1, 1, 1, Append},
      {"auth", -2, {"noscript", "loading", "stale", "fast", "no_auth"}, 0, 0, 0, Auth},
      {"client", -2, {"noscript", "loading", "stale"}, 0, 0, 0, Client},
      {"command", -1, {"loading", "stale"}, 0, 0, 0, Command},
      {"config", -2, {"admin", "noscript", "loading", "stale"}, 0, 0, 0, Config},
      {"dbsize", 1, {"readonly", "fast"}, 0, 0, 0, DbSize},
      {"decr", 2, {"write", "denyoom", "fast"}, 1, 1, 1, Decr},
      {"decrby", 3, {"write", "denyoom", "fast"}, 1, 1, 1, DecrByCommand},
      {"del", -2, {"write"}, 1, -1, 1, Del},
      {"echo", 2, {"fast"}, 0, 0, 0, Echo},
      {"exists", -2, {"readonly", "fast"}, 1, -1, 1, ExistsCommand},
      {"expire", -3, {"write", "fast"}, 1, 1, 1, Expire},
      {"expireat", -3, {"write", "fast"}, 1, 1, 1, Expire},
      {"flushall", -1, {"write"}, 0, 0, 0, FlushDb},
      {"flushdb", -1, {"write"}, 0, 0, 0, FlushDb},
      {"get", 2, {"readonly", "fast"}, 1, 1, 1, Get},
      {"getdel", 2, {"write", "fast"}, 1, 1, 1, GetDel},
      {"getrange", 4, {"readonly"}, 1, 1, 1, GetRange},
      {"getset", 3, {"write", "denyoom", "fast"}, 1, 1, 1, GetSet},
      {"hello", -1, {"noscript", "loading", "stale", "fast", "no_auth"}, 0, 0, 0, Hello},
      {"incr", 2, {"write", "denyoom", "fast"}, 1, 1, 1, Incr},
      {"incrby", 3, {"write", "denyoom", "fast"}, 1, 1, 1, IncrByCommand},
      {"incrbyfloat", 3, {"write", "denyoom", "fast"}, 1, 1, 1, IncrByFloat},
      {"info", -1, {"loading", "stale"}, 0, 0, 0, Info},
      {"keys", 2, {"readonly"}, 0, 0, 0, Keys},
      {"mget", -2, {"readonly", "fast"}, 1, -1, 1, MGet},
      {"mset", -3, {"write", "denyoom"}, 1, -1, 2, MSet},
      {"msetnx", -3, {"write", "denyoom"}, 1, -1, 2, MSetNx},
      {"persist", 2, {"write", "fast"}, 1, 1, 1, Persist},
      {"pexpire", -3, {"write", "fast"}, 1, 1, 1, Expire},
      {"pexpireat", -3, {"write", "fast"}, 1, 1, 1, Expire},
      {"ping", -1, {"fast", "stale"}, 0, 0, 0, Ping},
      {"pttl", 2, {"readonly", "fast"}, 1, 1, 1, Ttl},
      {"quit", -1, {"loading", "stale", "fast", "no_auth"}, 0, 0, 0, Quit},
      {"randomkey", 1, {"readonly"}, 0, 0, 0, RandomKey},
      {"select", 2, {"loading", "stale", "fast"}, 0, 0, 0, Select},
      {"set", -3, {"write", "denyoom"}, 1, 1, 1, SetCommand},
      {"setnx", 3, {"write", "denyoom", "fast"}, 1, 1, 1, SetNx},
      {"setrange", 4, {"write", "denyoom"}, 1, 1, 1, SetRange},
      {"strlen", 2, {"readonly", "fast"}, 1, 1, 1, StrLen},
      {"ttl", 2, {"readonly", "fast"}, 1, 1, 1, Ttl},
      {"type", 2, {"readonly", "fast"}, 1, 1, 1, Type},
      {"unlink", -2, {"write", "fast"}, 1, -1, 1, Del},
  };
  return specs;
}

const Spec* FindSpec(std::string_view name) {
  const std::string lower = Lower(name);
  const auto& specs = Specs();
  auto it = std::lower_bound(
      specs.begin(), specs.end(), lower,
      [](const Spec& s, const std::string& n) { return s.name < n; });
  return it != specs.end() && it->name == lower ? &*it : nullptr;
}

void DescribeSpec(ReplyWriter& w, const Spec& s) {
  w.Array(10);
  w.Bulk(s.name);
  w.Integer(s.arity);
  w.Set(s.flags.size());
  for (std::string_view f : s.flags) w.Simple(f);
  w.Integer(s.first_key);
  w.Integer(s.last_key);
  w.Integer(s.step);
  w.Set(0);  // ACL categories
  w.Set(0);  // tips
  w.Array(0);  // key specifications
  w.Array(0);  // subcommands
}

void Command(Call& c) {
  const auto& specs = Specs();
  if (c.args.size() == 1) {
    c.reply.Array(specs.size());
    for (const Spec& s : specs) DescribeSpec(c.reply, s);
    return;
  }
  const std::string sub = Upper(c.arg(1));
  if (sub == "COUNT" && c.args.size() == 2) {
    c.reply.Integer(static_cast<int64_t>(specs.size()));
  } else if (sub == "INFO") {
    c.reply.Array(c.args.size() - 2);
    for (size_t i = 2; i < c.args.size(); ++i) {
      if (const Spec* s = FindSpec(c.arg(i))) {
        DescribeSpec(c.reply, *s);
      } else {
        c.reply.NullArray();
      }
    }
  } else if (sub == "LIST" && c.args.size() == 2) {
    c.reply.Array(specs.size());
    for (const Spec& s : specs) c.reply.Bulk(s.name);
  } else if (sub == "DOCS") {
    // No documentation through the protocol: docs/server.md has it (a
    // client falls back on its own hints).
    c.reply.Map(0);
  } else {
    c.reply.Error(absl::StrCat("ERR unknown subcommand or wrong number of "
                               "arguments for '", AV(c.arg(1)),
                               "'. Try COMMAND HELP."));
  }
}

// CONFIG GET's settings: name and value, as Redis names them.
std::vector<std::pair<std::string, std::string>> Settings(
    const ServerConfig& config) {
  return {
      {"appendfsync", FsyncPolicyName(config.fsync)},
      {"appendonly", "yes"},
      {"bind", config.bind},
      {"databases", "1"},
      {"dir", config.table_path},
      {"maxclients", absl::StrCat(config.maxclients)},
      {"maxmemory", absl::StrCat(config.memory_budget_bytes)},
      {"port", absl::StrCat(config.port)},
      {"protected-mode", config.protected_mode ? "yes" : "no"},
      {"proto-max-bulk-len", absl::StrCat(config.limits.max_bulk_bytes)},
      {"client-query-buffer-limit", absl::StrCat(config.client_query_limit)},
      {"save", ""},
      {"timeout", "0"},
      {"cluster-enabled", "no"},
  };
}

void Config(Call& c) {
  const std::string sub = Upper(c.arg(1));
  if (sub == "GET" && c.args.size() >= 3) {
    std::vector<std::pair<std::string, std::string>> found;
    for (auto& [name, value] : Settings(*c.server.config())) {
      for (size_t i = 2; i < c.args.size(); ++i) {
        if (Commands::GlobMatch(c.arg(i), name, /*nocase=*/true)) {
          found.emplace_back(name, value);
          break;
        }
      }
    }
    c.reply.Map(found.size());
    for (auto& [name, value] : found) {
      c.reply.Bulk(name);
      c.reply.Bulk(value);
    }
  } else if (sub == "RESETSTAT" && c.args.size() == 2) {
    ServerStats& s = *c.server.stats();
    s.commands_processed = s.keyspace_hits = s.keyspace_misses = 0;
    s.net_input_bytes = s.net_output_bytes = 0;
    s.rejected_connections = 0;
    c.reply.Simple("OK");
  } else if (sub == "SET") {
    c.reply.Error(
        "ERR CONFIG SET is not supported: settings are given at start "
        "(roundtable serve --help)");
  } else {
    c.reply.Error(absl::StrCat("ERR unknown subcommand or wrong number of "
                               "arguments for '", AV(c.arg(1)),
                               "'. Try CONFIG HELP."));
  }
}

// INFO's sections: each a title and its fields, in Redis's order, then
// the table's own.
struct InfoSection {
  std::string_view name;  // as INFO's argument names it
  std::string_view title;
  std::vector<std::pair<std::string_view, std::string>> fields;
};

std::vector<InfoSection> InfoSections(Call& c) {
  const ServerConfig& config = *c.server.config();
  const ServerStats& stats = *c.server.stats();
  const TableStats t = c.table().GetStats();
  const LogicalLedger& l = t.logical;
  const int64_t uptime = std::chrono::duration_cast<std::chrono::seconds>(
                             std::chrono::steady_clock::now() -
                             c.server.started())
                             .count();
  auto n = [](auto v) { return absl::StrCat(v); };
  std::vector<InfoSection> sections = {
      {"server", "Server",
       {{"redis_version", "7.0.0"},
        {"roundtable_version", ROUNDTABLE_VERSION_STRING},
        {"redis_mode", "standalone"},
        {"process_id", n(getpid())},
        {"tcp_port", n(config.port)},
        {"uptime_in_seconds", n(uptime)},
        {"uptime_in_days", n(uptime / 86400)}}},
      {"clients", "Clients",
       {{"connected_clients", n(stats.connected_clients)},
        {"maxclients", n(config.maxclients)}}},
      {"memory", "Memory",
       {{"maxmemory", n(config.memory_budget_bytes)},
        {"table_held_blocks", n(t.held_blocks)},
        {"table_buffered_bytes", n(t.buffered_bytes)},
        {"table_stash_bytes", n(t.stash_bytes)}}},
      {"persistence", "Persistence",
       {{"loading", "0"},
        {"aof_enabled", "1"},
        {"appendfsync", FsyncPolicyName(config.fsync)},
        {"table_wal_bytes", n(t.wal_bytes)},
        {"table_checkpoints", n(t.checkpoints)},
        {"table_recovered_records", n(t.recovered_records)},
        {"log_syncs", n(stats.syncs)},
        {"log_sync_errors", n(stats.sync_errors)}}},
      {"stats", "Stats",
       {{"total_connections_received", n(stats.connections_received)},
        {"total_commands_processed", n(stats.commands_processed)},
        {"total_net_input_bytes", n(stats.net_input_bytes)},
        {"total_net_output_bytes", n(stats.net_output_bytes)},
        {"rejected_connections", n(stats.rejected_connections)},
        {"keyspace_hits", n(stats.keyspace_hits)},
        {"keyspace_misses", n(stats.keyspace_misses)}}},
      {"table", "Table",
       {{"buckets", n(t.buckets)},
        {"records", n(t.records)},
        {"buffered_records", n(t.buffered_records)},
        {"stash_records", n(t.stash_records)},
        {"block_size", n(t.block_size)},
        {"utilization", n(t.utilization)},
        {"cache_hits", n(t.cache_hits)},
        {"held_hits", n(t.held_hits)},
        {"cache_misses", n(t.cache_misses)},
        {"value_count", n(t.value_count)},
        {"value_bytes", n(t.value_bytes)},
        {"get_reads", n(l.get_reads)},
        {"put_reads", n(l.put_reads)},
        {"put_writes", n(l.put_writes)},
        {"delete_reads", n(l.delete_reads)},
        {"delete_writes", n(l.delete_writes)},
        {"grows", n(l.grows)},
        {"shrinks", n(l.shrinks)},
        {"block_file_blocks_read", n(t.physical_blocks.blocks_read)},
        {"block_file_blocks_written", n(t.physical_blocks.blocks_written)},
        {"wal_bytes_written", n(t.physical_wal.bytes_written)},
        {"wal_syncs", n(t.physical_wal.syncs)},
        {"journal_bytes_written", n(t.physical_journal.bytes_written)}}},
      {"keyspace", "Keyspace", {}},
  };
  const uint64_t keys = t.records + t.buffered_records;
  if (keys > 0) {
    sections.back().fields.emplace_back(
        "db0", absl::StrCat("keys=", keys, ",expires=0,avg_ttl=0"));
  }
  return sections;
}

void Info(Call& c) {
  std::vector<std::string> wanted;
  for (size_t i = 1; i < c.args.size(); ++i) wanted.push_back(Lower(c.arg(i)));
  // Every section is a default one; "all" and "everything" name them all.
  auto want = [&](std::string_view section) {
    if (wanted.empty()) return true;
    for (const std::string& w : wanted) {
      if (w == section || w == "all" || w == "everything" || w == "default") {
        return true;
      }
    }
    return false;
  };
  std::string text;
  for (const InfoSection& s : InfoSections(c)) {
    if (!want(s.name)) continue;
    if (!text.empty()) text.append("\r\n");
    absl::StrAppend(&text, "# ", AV(s.title), "\r\n");
    for (const auto& [field, value] : s.fields) {
      absl::StrAppend(&text, AV(field), ":", value, "\r\n");
    }
  }
  c.reply.Verbatim(text);
}

}  // namespace

Commands::Commands(Table* table, const ServerConfig* config,
                   ServerStats* stats,
                   std::function<std::vector<const Session*>()> list_clients)
    : table_(table),
      config_(config),
      stats_(stats),
      list_clients_(std::move(list_clients)),
      started_(std::chrono::steady_clock::now()) {}

bool Commands::Execute(Session& session,
                       std::span<const std::string_view> args,
                       std::string* out) {
  Call call{*this, session, args, ReplyWriter(out, session.protocol)};
  ++stats_->commands_processed;
  const Spec* spec = FindSpec(args[0]);
  if (spec == nullptr) {
    std::string quoted;
    for (size_t i = 1; i < args.size() && quoted.size() < 128; ++i) {
      absl::StrAppend(&quoted, "'", AV(args[i].substr(0, 128)), "' ");
    }
    call.reply.Error(absl::StrCat("ERR unknown command '",
                                  AV(args[0].substr(0, 128)),
                                  "', with args beginning with: ", quoted));
    return false;
  }
  if (!config_->requirepass.empty() && !session.authenticated &&
      std::find(spec->flags.begin(), spec->flags.end(), "no_auth") ==
          spec->flags.end()) {
    call.reply.Error("NOAUTH Authentication required.");
    return false;
  }
  const int n = static_cast<int>(args.size());
  if ((spec->arity > 0 && n != spec->arity) ||
      (spec->arity < 0 && n < -spec->arity)) {
    call.reply.Error(absl::StrCat("ERR wrong number of arguments for '",
                                  AV(spec->name), "' command"));
    return false;
  }
  spec->run(call);
  return call.wrote;
}

bool Commands::GlobMatch(std::string_view pattern, std::string_view text,
                         bool nocase) {
  auto fold = [nocase](char ch) {
    return nocase ? absl::ascii_tolower(static_cast<unsigned char>(ch)) : ch;
  };
  size_t p = 0, t = 0;
  // The last '*' seen and where in the text it began to match: on a
  // mismatch, it takes one more byte (linear backtracking, no recursion).
  size_t star = std::string_view::npos, star_text = 0;
  while (t < text.size()) {
    if (p < pattern.size()) {
      const char pc = pattern[p];
      if (pc == '*') {
        star = p++;
        star_text = t;
        continue;
      }
      if (pc == '?') {
        ++p;
        ++t;
        continue;
      }
      if (pc == '[') {
        size_t q = p + 1;
        const bool negate = q < pattern.size() && pattern[q] == '^';
        if (negate) ++q;
        bool matched = false;
        const char tc = fold(text[t]);
        while (q < pattern.size() && pattern[q] != ']') {
          if (pattern[q] == '\\' && q + 1 < pattern.size()) {
            if (fold(pattern[q + 1]) == tc) matched = true;
            q += 2;
          } else if (q + 2 < pattern.size() && pattern[q + 1] == '-' &&
                     pattern[q + 2] != ']') {
            char lo = fold(pattern[q]), hi = fold(pattern[q + 2]);
            if (lo > hi) std::swap(lo, hi);
            if (tc >= lo && tc <= hi) matched = true;
            q += 3;
          } else {
            if (fold(pattern[q]) == tc) matched = true;
            ++q;
          }
        }
        // An unclosed class takes the rest of the pattern, as Redis's.
        if (matched != negate) {
          p = q < pattern.size() ? q + 1 : q;
          ++t;
          continue;
        }
      } else {
        size_t q = p;
        if (pc == '\\' && q + 1 < pattern.size()) ++q;
        if (fold(pattern[q]) == fold(text[t])) {
          p = q + 1;
          ++t;
          continue;
        }
      }
    }
    if (star == std::string_view::npos) return false;
    p = star + 1;
    t = ++star_text;
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

}  // namespace roundtable::server
