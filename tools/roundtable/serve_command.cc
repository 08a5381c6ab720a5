#include "tools/roundtable/serve_command.h"

#include <signal.h>

#include <atomic>
#include <fstream>
#include <ostream>
#include <tuple>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "io/base/status_macros.h"
#include "roundtable/table.h"
#include "tools/server/server.h"

ABSL_FLAG(int, port, 6380, "serve: the TCP port (0: one the kernel picks)");
ABSL_FLAG(std::string, bind, "127.0.0.1",
          "serve: the address to listen on (::1, 0.0.0.0, ...)");
ABSL_FLAG(std::string, fsync, "everysec",
          "serve: when a write's reply goes: always (after the log is "
          "synced), everysec (the log synced every second), no");
ABSL_FLAG(std::string, requirepass, "",
          "serve: the password clients give with AUTH (empty: none)");
ABSL_FLAG(std::string, requirepass_file, "",
          "serve: read the password from this file (its first line)");
ABSL_FLAG(int, event_loops, 1,
          "serve: event loops, each a thread serving its share of the "
          "clients (reads from several run at once; writes one at a time)");
ABSL_FLAG(uint64_t, maxclients, 10000,
          "serve: clients connected at once; more are refused");
ABSL_FLAG(bool, protected_mode, true,
          "serve: with no password, refuse clients that are not on the "
          "loopback");
ABSL_FLAG(uint64_t, cache_mb, 256, "serve: the table's block cache, MiB");
ABSL_FLAG(uint64_t, write_buffer_mb, 64,
          "serve: the table's write buffer, MiB (0: none)");
ABSL_FLAG(uint64_t, memory_mb, 0,
          "serve: one memory budget for the table's cache and write buffer, "
          "MiB, instead of --cache_mb and --write_buffer_mb (0: those)");
ABSL_FLAG(std::string, cluster_topology, "",
          "serve: a Redis Cluster topology file (NAME HOST:PORT SLOTS... a "
          "line; docs/server.md); the server is its node --cluster_node");
ABSL_FLAG(std::string, cluster_node, "",
          "serve: this server's name in --cluster_topology");

namespace roundtable::cli {
namespace {

// The server a signal stops: set while RunServe serves.
std::atomic<server::Server*> serving{nullptr};

void OnStopSignal(int) {
  if (server::Server* s = serving.load()) s->Stop();
}

}  // namespace

absl::StatusOr<server::FsyncPolicy> ParseFsyncPolicy(std::string_view name) {
  if (name == "always") return server::FsyncPolicy::kAlways;
  if (name == "everysec") return server::FsyncPolicy::kEverySec;
  if (name == "no") return server::FsyncPolicy::kNo;
  return absl::InvalidArgumentError(absl::StrCat(
      "--fsync: '", std::string(name), "' is not always, everysec or no"));
}

absl::StatusOr<ServeOptions> ServeOptionsFromFlags() {
  ServeOptions o;
  o.config.port = absl::GetFlag(FLAGS_port);
  o.config.bind = absl::GetFlag(FLAGS_bind);
  RT_ASSIGN_OR_RETURN(o.config.fsync,
                      ParseFsyncPolicy(absl::GetFlag(FLAGS_fsync)));
  o.config.requirepass = absl::GetFlag(FLAGS_requirepass);
  if (const std::string file = absl::GetFlag(FLAGS_requirepass_file);
      !file.empty()) {
    std::ifstream in(file);
    if (!in || !std::getline(in, o.config.requirepass)) {
      return absl::NotFoundError(
          absl::StrCat("--requirepass_file: cannot read a line of ", file));
    }
  }
  o.config.event_loops = absl::GetFlag(FLAGS_event_loops);
  o.config.maxclients = absl::GetFlag(FLAGS_maxclients);
  o.config.protected_mode = absl::GetFlag(FLAGS_protected_mode);
  for (const auto& [name, mb, bytes] :
       {std::tuple{"--cache_mb", absl::GetFlag(FLAGS_cache_mb), &o.cache_bytes},
        std::tuple{"--write_buffer_mb", absl::GetFlag(FLAGS_write_buffer_mb),
                   &o.write_buffer_bytes},
        std::tuple{"--memory_mb", absl::GetFlag(FLAGS_memory_mb),
                   &o.memory_bytes}}) {
    if (mb > (~uint64_t{0} >> 20)) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, "=", mb, " is more bytes than 64 bits hold"));
    }
    *bytes = mb << 20;
  }
  const std::string topology = absl::GetFlag(FLAGS_cluster_topology);
  const std::string node = absl::GetFlag(FLAGS_cluster_node);
  if (topology.empty() != node.empty()) {
    return absl::InvalidArgumentError(
        "--cluster_topology and --cluster_node go together");
  }
  if (!topology.empty()) {
    RT_ASSIGN_OR_RETURN(server::ClusterTopology t,
                        server::ClusterTopology::Load(topology, node));
    o.config.cluster =
        std::make_shared<const server::ClusterTopology>(std::move(t));
  }
  return o;
}

absl::Status RunServe(const std::string& dir, const ServeOptions& options,
                      std::ostream& log) {
  RT_RETURN_IF_ERROR(server::Server::CheckConfig(options.config));
  Options table_options = options.layout;
  // An existing table keeps its own (any other error is Open's to say).
  if (!table_options.s0 && absl::IsNotFound(Table::ReadLayout(dir).status())) {
    table_options.s0 = SuggestedS0(
        table_options.block_size.value_or(Options::kDefaultBlockSize),
        kServeKeyBytes, kServeValueBytes);
  }
  table_options.block_cache_bytes = options.cache_bytes;
  table_options.write_buffer_bytes = options.write_buffer_bytes;
  table_options.memory_bytes = options.memory_bytes;
  RT_ASSIGN_OR_RETURN(std::unique_ptr<Table> table,
                      Table::Open(table_options, dir));
  server::ServerConfig config = options.config;
  config.table_path = dir;
  config.memory_budget_bytes =
      options.memory_bytes != 0
          ? options.memory_bytes
          : table_options.block_cache_bytes + table_options.write_buffer_bytes;
  RT_ASSIGN_OR_RETURN(std::unique_ptr<server::Server> server,
                      server::Server::Listen(table.get(), config));
  serving.store(server.get());
  struct sigaction action {};
  action.sa_handler = OnStopSignal;
  sigemptyset(&action.sa_mask);
  struct sigaction old_term {}, old_int {};
  sigaction(SIGTERM, &action, &old_term);
  sigaction(SIGINT, &action, &old_int);
  log << "roundtable serve: listening on " << config.bind << ":"
      << server->port() << std::endl;
  absl::Status status = server->Run();
  sigaction(SIGTERM, &old_term, nullptr);
  sigaction(SIGINT, &old_int, nullptr);
  serving.store(nullptr);
  server.reset();
  const absl::Status closed = table->Close();
  if (status.ok()) status = closed;
  if (status.ok()) log << "roundtable serve: table closed" << std::endl;
  return status;
}

}  // namespace roundtable::cli
