// The Redis-protocol server over one table (docs/server.md): an epoll event
// loop on one thread that accepts clients, parses their pipelined requests,
// runs them (Commands) and writes the replies back, with the limits of
// ServerConfig; under FsyncPolicy::kEverySec a second thread syncs the
// table's log every second.
//
// Thread-safety: Run on one thread; Stop from any thread or a signal
// handler (it writes to an eventfd and nothing else).
#ifndef ROUNDTABLE_TOOLS_SERVER_SERVER_H_
#define ROUNDTABLE_TOOLS_SERVER_SERVER_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "roundtable/table.h"
#include "tools/server/commands.h"

namespace roundtable::server {

class Server {
 public:
  // Listens on config.bind:config.port (port 0: one the kernel picks; see
  // port()). `table` outlives the server. Unavailable when the address
  // cannot be bound.
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
  Server(Table* table, ServerConfig config);

  void Accept();
  // Reads what the client sent and runs its whole requests.
  void Read(Connection& c);
  void RunRequests(Connection& c);
  // Writes what the client has waiting; false when it closed.
  bool Flush(Connection& c);
  void Close(Connection& c);
  void Watch(Connection& c);  // epoll interest from the connection's state
  void SyncEverySecond();

  Table* const table_;
  ServerConfig config_;
  ServerStats stats_;
  Commands commands_;
  int listen_fd_ = -1;
  int epoll_fd_ = -1;
  int stop_fd_ = -1;
  uint64_t next_id_ = 1;
  class Connections;
  std::unique_ptr<Connections> connections_;
  std::atomic<bool> stopping_{false};
  // What one recv takes from a client, unless a request needs more.
  char receive_[16 << 10];
  // Whether a command changed the table since the last sync (kAlways
  // syncs it before any reply goes).
  bool wrote_ = false;
  // Syncs of the log and failed ones, by whichever thread made them.
  std::atomic<uint64_t> syncs_{0};
  std::atomic<uint64_t> sync_errors_{0};
};

}  // namespace roundtable::server

#endif  // ROUNDTABLE_TOOLS_SERVER_SERVER_H_
