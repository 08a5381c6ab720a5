// The Redis-protocol server over one table (docs/server.md): event loops
// (epoll), each on a thread of its own, that accept clients from one
// listening socket, parse their pipelined requests, run them (Commands)
// and write the replies back, with the limits of ServerConfig; a client
// stays with the loop that accepted it. Under FsyncPolicy::kEverySec one
// more thread syncs the table's log every second.
//
// Thread-safety: Run on one thread (it runs the first loop and starts the
// others); Stop from any thread or a signal handler (it writes to an
// eventfd and nothing else).
#ifndef ROUNDTABLE_TOOLS_SERVER_SERVER_H_
#define ROUNDTABLE_TOOLS_SERVER_SERVER_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "roundtable/table.h"
#include "tools/server/commands.h"

namespace roundtable::server {

class Server {
 public:
  // InvalidArgument unless `config` is one Listen takes (checked before
  // anything is opened for it).
  static absl::Status CheckConfig(const ServerConfig& config);

  // Listens on config.bind:config.port (port 0: one the kernel picks; see
  // port()). `table` outlives the server. CheckConfig's error, or
  // Unavailable when the address cannot be bound.
  static absl::StatusOr<std::unique_ptr<Server>> Listen(Table* table,
                                                        ServerConfig config);
  ~Server();

  // The port it listens on.
  int port() const { return config_.port; }

  // Serves until Stop: returns OK then, every client disconnected and the
  // log synced (the table stays open: its owner closes it).
  absl::Status Run();

  // Makes Run return soon. Async-signal-safe.
  void Stop();

 private:
  struct Connection;
  class Loop;
  Server(Table* table, ServerConfig config);

  // The counters since the last reset and the sessions, over every loop.
  ServerStats Stats();
  void ResetStats();
  std::vector<Session> Clients();

  Table* const table_;
  ServerConfig config_;
  Commands commands_;
  int listen_fd_ = -1;
  int stop_fd_ = -1;
  std::vector<std::unique_ptr<Loop>> loops_;
  std::atomic<bool> stopping_{false};
  std::atomic<uint64_t> next_id_{1};
  std::atomic<uint64_t> next_loop_{0};  // the loop the next client goes to
  std::atomic<uint64_t> connected_{0};  // clients, over every loop
  // Syncs of the log and failed ones, by whichever thread made them.
  std::atomic<uint64_t> syncs_{0};
  std::atomic<uint64_t> sync_errors_{0};
  // Guards every loop's list of connections where another thread reads
  // it (Clients); and what CONFIG RESETSTAT zeroed, subtracted from then.
  std::mutex sessions_mu_;
  ServerStats reset_at_;
};

}  // namespace roundtable::server

#endif  // ROUNDTABLE_TOOLS_SERVER_SERVER_H_
