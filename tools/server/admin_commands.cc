// The connection and server commands: PING, ECHO, QUIT, SELECT, AUTH,
// HELLO, CLIENT, COMMAND, CONFIG and INFO (docs/server.md).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <utility>

#include "absl/strings/ascii.h"
#include "roundtable/version.h"
#include "tools/server/command_call.h"

namespace roundtable::server::commands_internal {
namespace {

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

bool ValidClientName(std::string_view name) {
  for (char ch : name) {
    if (ch < '!' || ch > '~') return false;
  }
  return true;
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

// INFO's sections: each a title and its fields, in Redis's order, then
// the table's own.

struct InfoSection {
  std::string_view name;  // as INFO's argument names it
  std::string_view title;
  std::vector<std::pair<std::string_view, std::string>> fields;
};

std::vector<InfoSection> InfoSections(Call& c) {
  const ServerConfig& config = *c.server.config();
  const ServerStats stats = c.server.hooks().stats();
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
        {"redis_mode", config.cluster ? "cluster" : "standalone"},
        {"process_id", n(getpid())},
        {"tcp_port", n(config.port)},
        {"event_loops", n(config.event_loops)},
        {"uptime_in_seconds", n(uptime)},
        {"uptime_in_days", n(uptime / 86400)}}},
      {"clients", "Clients",
       {{"connected_clients", n(stats.connected_clients)},
        {"maxclients", n(config.maxclients)}}},
      {"memory", "Memory",
       {{"maxmemory", n(config.memory_budget_bytes)},
        {"table_held_blocks", n(t.held_blocks)},
        {"table_buffered_bytes", n(t.buffered_bytes)},
        {"table_stash_bytes", n(t.stash_bytes)},
        {"table_cache_bytes", n(t.cache_bytes)},
        {"table_stash_memory_bytes", n(t.stash_memory_bytes)},
        {"table_bucket_memory_bytes", n(t.bucket_memory_bytes)}}},
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
        {"buffered_deletes", n(t.buffered_deletes)},
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
        {"blocks_written_ahead", n(t.written_ahead)},
        {"wal_bytes_written", n(t.physical_wal.bytes_written)},
        {"wal_syncs", n(t.physical_wal.syncs)},
        {"journal_bytes_written", n(t.physical_journal.bytes_written)}}},
      {"cluster", "Cluster", {{"cluster_enabled", config.cluster ? "1" : "0"}}},
      {"keyspace", "Keyspace", {}},
  };
  // An estimate while writes wait in the write buffer (DBSIZE is exact):
  // the stored records, plus the puts waiting, less the deletes.
  const uint64_t puts = t.buffered_records - t.buffered_deletes;
  const uint64_t keys =
      t.records + puts - std::min(t.records + puts, t.buffered_deletes);
  if (keys > 0) {
    sections.back().fields.emplace_back(
        "db0", absl::StrCat("keys=", keys, ",expires=0,avg_ttl=0"));
  }
  return sections;
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
      {"io-threads", absl::StrCat(config.event_loops)},
      {"maxclients", absl::StrCat(config.maxclients)},
      {"maxmemory", absl::StrCat(config.memory_budget_bytes)},
      {"port", absl::StrCat(config.port)},
      {"protected-mode", config.protected_mode ? "yes" : "no"},
      {"proto-max-bulk-len", absl::StrCat(config.limits.max_bulk_bytes)},
      {"client-query-buffer-limit", absl::StrCat(config.client_query_limit)},
      {"save", ""},
      {"timeout", "0"},
      {"cluster-enabled", config.cluster ? "yes" : "no"},
  };
}

}  // namespace

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

void Auth(Call& c) {
  if (c.args.size() > 3) {
    c.reply.Error(kSyntaxError);
    return;
  }
  const std::string_view user = c.args.size() == 3 ? c.arg(1) : "default";
  if (CheckPassword(c, user, c.args.back())) c.reply.Simple("OK");
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
      for (const Session& s : c.server.hooks().clients()) line(s);
    }
    c.reply.Verbatim(text);
  } else {
    c.reply.Error(absl::StrCat("ERR unknown subcommand or wrong number of "
                               "arguments for '", AV(c.arg(1)),
                               "'. Try CLIENT HELP."));
  }
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
    c.server.hooks().reset_stats();
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

}  // namespace roundtable::server::commands_internal
