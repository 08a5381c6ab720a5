#include "tools/roundtable/serve_command.h"

#include <signal.h>

#include <atomic>
#include <ostream>

#include "absl/strings/str_cat.h"
#include "io/base/status_macros.h"
#include "roundtable/table.h"
#include "tools/server/server.h"

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

absl::Status RunServe(const std::string& dir, const ServeOptions& options,
                      std::ostream& log) {
  Options table_options;
  table_options.block_cache_bytes = options.cache_bytes;
  RT_ASSIGN_OR_RETURN(std::unique_ptr<Table> table,
                      Table::Open(table_options, dir));
  server::ServerConfig config = options.config;
  config.table_path = dir;
  config.memory_budget_bytes =
      table_options.block_cache_bytes + table_options.write_buffer_bytes;
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
