#include "tools/server/commands.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "tools/server/command_call.h"

namespace roundtable::server {

const char* FsyncPolicyName(FsyncPolicy policy) {
  switch (policy) {
    case FsyncPolicy::kAlways: return "always";
    case FsyncPolicy::kEverySec: return "everysec";
    case FsyncPolicy::kNo: return "no";
  }
  return "everysec";
}

namespace commands_internal {

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

bool ParseUint64(std::string_view s, uint64_t* out) {
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return !s.empty() && ec == std::errc() && end == s.data() + s.size();
}

bool EqualsNoCase(std::string_view a, std::string_view b) {
  return absl::EqualsIgnoreCase(AV(a), AV(b));
}

// Whether `key` is stored (reads its block at most, never its value).
absl::StatusOr<bool> Exists(Call& c, std::string_view key) {
  auto where = c.table().Locate(key);
  if (!where.ok()) return where.status();
  return where->where != KeyLocation::Where::kAbsent;
}

namespace {

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

// The value of `key`: nullopt when absent (counted as a miss), or with
// *failed set and an error replied.
std::optional<std::string> Lookup(Call& c, std::string_view key,
                                  bool* failed) {
  *failed = false;
  auto value = c.table().Get(key);
  if (value.ok()) {
    c.counters.keyspace_hits.Add();
    return std::move(*value);
  }
  if (absl::IsNotFound(value.status())) {
    c.counters.keyspace_misses.Add();
    return std::nullopt;
  }
  *failed = c.Failed(value.status());
  return std::nullopt;
}

bool Put(Call& c, std::string_view key, std::string_view value) {
  if (c.Failed(c.table().Put(key, value))) return false;
  c.wrote = true;
  return true;
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
      c.counters.keyspace_hits.Add();
      c.reply.Bulk(*v);
    } else {
      // An error in an array reply is the element's (RESP's error element).
      if (absl::IsNotFound(v.status())) {
        c.counters.keyspace_misses.Add();
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

}  // namespace

// --- The table of commands ---

const std::vector<Spec>& Specs() {
  static const std::vector<Spec> specs = {
      {"append", 3, {"write", "denyoom", "fast"}, 1, 1, 1, Append},
      {"asking", 1, {"fast"}, 0, 0, 0, ReadOnlyMode},
      {"auth", -2, {"noscript", "loading", "stale", "fast", "no_auth"}, 0, 0, 0, Auth},
      {"client", -2, {"noscript", "loading", "stale"}, 0, 0, 0, Client},
      {"cluster", -2, {"loading", "stale"}, 0, 0, 0, Cluster},
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
      {"readonly", 1, {"loading", "stale", "fast"}, 0, 0, 0, ReadOnlyMode},
      {"readwrite", 1, {"loading", "stale", "fast"}, 0, 0, 0, ReadOnlyMode},
      {"scan", -2, {"readonly"}, 0, 0, 0, Scan},
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
  // Lowered on the stack: no command's name is longer.
  char buffer[24];
  if (name.size() > sizeof buffer) return nullptr;
  for (size_t i = 0; i < name.size(); ++i) {
    buffer[i] = absl::ascii_tolower(static_cast<unsigned char>(name[i]));
  }
  const std::string_view lower(buffer, name.size());
  const auto& specs = Specs();
  auto it = std::lower_bound(
      specs.begin(), specs.end(), lower,
      [](const Spec& s, std::string_view n) { return s.name < n; });
  return it != specs.end() && it->name == lower ? &*it : nullptr;
}

}  // namespace commands_internal

using commands_internal::Call;
using commands_internal::Spec;
using commands_internal::AV;
using commands_internal::FindSpec;

Commands::Commands(Table* table, const ServerConfig* config,
                   ServerHooks hooks)
    : table_(table),
      config_(config),
      hooks_(std::move(hooks)),
      started_(std::chrono::steady_clock::now()) {}

bool Commands::Execute(Session& session,
                       std::span<const std::string_view> args,
                       std::string* out, LoopCounters& counters) {
  Turn turn(*this);
  return Execute(session, args, out, counters, turn);
}

bool Commands::Execute(Session& session,
                       std::span<const std::string_view> args,
                       std::string* out, LoopCounters& counters, Turn& turn) {
  Call call{*this, session, args, ReplyWriter(out, session.protocol),
            counters};
  counters.commands_processed.Add();
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
  if (!commands_internal::RouteToSlot(call, *spec)) return false;
  if (std::find(spec->flags.begin(), spec->flags.end(), "readonly") ==
      spec->flags.end()) {
    turn.Take();
  }
  spec->run(call);
  return call.wrote;
}

std::string_view Commands::ReadAheadKey(
    std::span<const std::string_view> args) {
  if (args.size() != 2 || args[0].size() != 3) return {};
  return absl::EqualsIgnoreCase(AV(args[0]), "get") ? args[1]
                                                     : std::string_view();
}

void Commands::ReadAhead(const Session& session,
                         std::span<const std::string_view> keys) {
  if (!config_->requirepass.empty() && !session.authenticated) return;
  table_->Preload(keys);
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
