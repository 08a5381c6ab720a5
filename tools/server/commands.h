// The server's commands: each request a client sends, run against the table,
// its reply encoded for that client (docs/server.md lists every command and
// how it differs from Redis). Thread-safety: Execute may run on several
// threads at once (the server's event loops). A command flagged readonly
// runs beside any other (the table's reads are concurrent, and MGET is
// one MultiGet); every other command runs alone among those, under the
// commands' mutex, so a read-modify-write (INCR, APPEND, SET NX) is
// atomic, and a command that reads or changes a session or the counters
// of the server (CLIENT, HELLO, INFO, CONFIG RESETSTAT) sees them still.
#ifndef ROUNDTABLE_TOOLS_SERVER_COMMANDS_H_
#define ROUNDTABLE_TOOLS_SERVER_COMMANDS_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "io/base/mutex.h"
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
  // Event loops, each on a thread of its own serving its share of the
  // clients (1 to kMaxEventLoops).
  int event_loops = 1;
  static constexpr int kMaxEventLoops = 64;
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

// The server's counters as INFO reports them.
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

// A count one thread adds to and any thread reads: no read-modify-write
// on a line another core shares.
class Counter {
 public:
  void Add(uint64_t n = 1) {
    v_.store(v_.load(std::memory_order_relaxed) + n,
             std::memory_order_relaxed);
  }
  uint64_t Get() const { return v_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> v_{0};
};

// What one event loop counts, its thread alone adding.
struct LoopCounters {
  Counter connections_received;
  Counter rejected_connections;
  Counter commands_processed;
  Counter keyspace_hits;
  Counter keyspace_misses;
  Counter net_input_bytes;
  Counter net_output_bytes;
};

// What the commands ask of the server running them; each is called under
// the commands' mutex.
struct ServerHooks {
  // Copies of the connected clients' sessions (CLIENT LIST).
  std::function<std::vector<Session>()> clients;
  // The counters since the last reset, summed over the loops (INFO).
  std::function<ServerStats()> stats;
  // CONFIG RESETSTAT.
  std::function<void()> reset_stats;
};

// Runs commands against one table.
class Commands {
 public:
  // `table` and `config` outlive this.
  Commands(Table* table, const ServerConfig* config, ServerHooks hooks);

  // Runs the request `args` (args[0] the command's name) for `session`,
  // appending its reply to *out and counting into `counters` (the calling
  // loop's). Returns whether it changed the table (the loop syncs before
  // sending such replies under FsyncPolicy::kAlways).
  bool Execute(Session& session, std::span<const std::string_view> args,
               std::string* out, LoopCounters& counters);

  // The commands' mutex as one loop holds it over a run of pipelined
  // requests: taken by the first command of the run that runs alone and
  // kept to the end of the run (Release, or the end of its scope), so
  // that a pipeline of writes takes it once.
  class Turn {
   public:
    explicit Turn(Commands& commands) : mu_(&commands.mu_) {}
    ~Turn() { Release(); }
    Turn(const Turn&) = delete;
    Turn& operator=(const Turn&) = delete;
    void Take() ABSL_NO_THREAD_SAFETY_ANALYSIS {
      if (held_) return;
      mu_->Lock();
      held_ = true;
    }
    void Release() ABSL_NO_THREAD_SAFETY_ANALYSIS {
      if (!held_) return;
      held_ = false;
      mu_->Unlock();
    }

   private:
    Mutex* const mu_;
    bool held_ = false;
  };
  // Execute within `turn` (the caller's run of requests).
  bool Execute(Session& session, std::span<const std::string_view> args,
               std::string* out, LoopCounters& counters, Turn& turn);

  // Reading ahead of a pipeline: the key whose block a request reads (a
  // GET's), or empty; then, for `session`, the blocks of such keys of the
  // next requests read into the table's cache in one batch (Table::
  // Preload), so that each GET then finds its block in memory. Nothing
  // for a session that has not authenticated where a password is set.
  static std::string_view ReadAheadKey(std::span<const std::string_view> args);
  void ReadAhead(const Session& session,
                 std::span<const std::string_view> keys);

  // Redis's glob: * ? [abc] [^a-z] and \ to escape, on bytes.
  static bool GlobMatch(std::string_view pattern, std::string_view text,
                        bool nocase = false);

  // What the handlers read and count.
  const ServerConfig* config() const { return config_; }
  const ServerHooks& hooks() const { return hooks_; }
  std::chrono::steady_clock::time_point started() const { return started_; }

  struct Spec;  // a command's name, arity, flags and handler
  struct Call;  // one running request

 private:

  Table* const table_;
  const ServerConfig* const config_;
  const ServerHooks hooks_;
  const std::chrono::steady_clock::time_point started_;
  // Held by every command but those flagged readonly.
  Mutex mu_;
};

}  // namespace roundtable::server

#endif  // ROUNDTABLE_TOOLS_SERVER_COMMANDS_H_
