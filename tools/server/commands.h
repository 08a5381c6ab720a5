// The server's commands: each request a client sends, run against the table,
// its reply encoded for that client (docs/server.md lists every command and
// how it differs from Redis). Thread-safety: one thread runs commands (the
// server's event loop), so a read-modify-write (INCR, APPEND, SET NX) is
// atomic; the Table itself may be shared with other threads (a syncer).
#ifndef ROUNDTABLE_TOOLS_SERVER_COMMANDS_H_
#define ROUNDTABLE_TOOLS_SERVER_COMMANDS_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "roundtable/table.h"
#include "tools/server/cluster.h"
#include "tools/server/resp.h"

namespace roundtable::server {

// When a write's reply may go (appendfsync's names and meanings).
enum class FsyncPolicy {
  kAlways,    // after the write is synced (the loop syncs once per round)
  kEverySec,  // after it is logged; a thread syncs the log every second
  kNo,        // after it is logged; the kernel writes it back when it will
};
const char* FsyncPolicyName(FsyncPolicy policy);

// What the server was started with, as CONFIG GET and INFO report it.
struct ServerConfig {
  std::string bind = "127.0.0.1";
  int port = 6380;
  std::string requirepass;  // empty: no AUTH needed
  bool protected_mode = true;
  FsyncPolicy fsync = FsyncPolicy::kEverySec;
  uint64_t maxclients = 10000;
  RequestLimits limits;
  // A client whose unread replies pass this many bytes stops being read
  // until they drain; its buffered input is capped at this many bytes plus
  // one request's.
  uint64_t client_output_limit = uint64_t{64} << 20;
  uint64_t client_query_limit = uint64_t{1} << 30;  // client-query-buffer-limit
  std::string table_path;
  uint64_t memory_budget_bytes = 0;  // the table's cache and write buffer
  // The Redis Cluster topology this server is a node of; null: not a
  // cluster node.
  std::shared_ptr<const ClusterTopology> cluster;
};

// One client's state, owned by its connection.
struct Session {
  uint64_t id = 0;
  std::string name;
  std::string address;  // "ip:port"
  int protocol = 2;     // RESP2 until HELLO 3
  bool authenticated = false;
  bool close_after_reply = false;  // QUIT, or a protocol error
  std::chrono::steady_clock::time_point connected;
};

// Counters the commands keep and INFO reports.
struct ServerStats {
  uint64_t connections_received = 0;
  uint64_t connected_clients = 0;
  uint64_t rejected_connections = 0;
  uint64_t commands_processed = 0;
  uint64_t keyspace_hits = 0;
  uint64_t keyspace_misses = 0;
  uint64_t net_input_bytes = 0;
  uint64_t net_output_bytes = 0;
  uint64_t syncs = 0;
  uint64_t sync_errors = 0;
};

// Runs commands against one table.
class Commands {
 public:
  // `table`, `config` and `stats` outlive this. `list_clients` returns
  // the sessions of the connected clients (CLIENT LIST, INFO).
  Commands(Table* table, const ServerConfig* config, ServerStats* stats,
           std::function<std::vector<const Session*>()> list_clients);

  // Runs the request `args` (args[0] the command's name) for `session`,
  // appending its reply to *out. Returns whether it changed the table (the
  // loop syncs before sending such replies under FsyncPolicy::kAlways).
  bool Execute(Session& session, std::span<const std::string_view> args,
               std::string* out);

  // Redis's glob: * ? [abc] [^a-z] and \ to escape, on bytes.
  static bool GlobMatch(std::string_view pattern, std::string_view text,
                        bool nocase = false);

  // What the handlers read and count.
  const ServerConfig* config() const { return config_; }
  ServerStats* stats() const { return stats_; }
  std::vector<const Session*> clients() const { return list_clients_(); }
  std::chrono::steady_clock::time_point started() const { return started_; }

  struct Spec;  // a command's name, arity, flags and handler
  struct Call;  // one running request

 private:

  Table* const table_;
  const ServerConfig* const config_;
  ServerStats* const stats_;
  const std::function<std::vector<const Session*>()> list_clients_;
  const std::chrono::steady_clock::time_point started_;
};

}  // namespace roundtable::server

#endif  // ROUNDTABLE_TOOLS_SERVER_COMMANDS_H_
