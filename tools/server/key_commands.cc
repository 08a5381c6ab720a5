// The key commands: TYPE, the time-to-live answers, KEYS, SCAN, RANDOMKEY,
// DBSIZE and FLUSHDB.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "roundtable/table.h"
#include "tools/server/command_call.h"

namespace roundtable::server::commands_internal {

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

// SCAN cursor [MATCH pattern] [COUNT count] [TYPE type]. The cursor is a
// hash: Table::Scan walks the keys in hash order, so a key present for the
// whole scan is returned once however the table grows or shrinks meanwhile.
void Scan(Call& c) {
  uint64_t cursor = 0;
  if (!ParseUint64(c.arg(1), &cursor)) {
    c.reply.Error("ERR invalid cursor");
    return;
  }
  std::optional<std::string_view> pattern;
  int64_t count = 10;
  bool strings = true;
  for (size_t i = 2; i < c.args.size(); i += 2) {
    if (i + 1 >= c.args.size()) {
      c.reply.Error(kSyntaxError);
      return;
    }
    const std::string_view option = c.arg(i), value = c.arg(i + 1);
    if (EqualsNoCase(option, "match")) {
      pattern = value;
    } else if (EqualsNoCase(option, "count")) {
      if (!ParseInt64(value, &count)) {
        c.reply.Error(kNotInteger);
        return;
      }
      if (count < 1) {
        c.reply.Error(kSyntaxError);
        return;
      }
    } else if (EqualsNoCase(option, "type")) {
      strings = EqualsNoCase(value, "string");  // every key is a string
    } else {
      c.reply.Error(kSyntaxError);
      return;
    }
  }
  std::vector<std::string> keys;
  auto next = c.table().Scan(
      cursor, static_cast<size_t>(std::min<int64_t>(count, 1 << 20)), &keys);
  if (c.Failed(next.status())) return;
  std::erase_if(keys, [&](const std::string& k) {
    return !strings || (pattern && !Commands::GlobMatch(*pattern, k));
  });
  c.reply.Array(2);
  c.reply.Bulk(absl::StrCat(*next));
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

}  // namespace roundtable::server::commands_internal
