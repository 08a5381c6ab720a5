// roundtable serve: the Redis-protocol server over one table
// (docs/server.md), from the command line to the table's close.
//
// Thread-safety: one call at a time per process (it owns the process's
// SIGTERM and SIGINT handlers while it runs).
#ifndef ROUNDTABLE_TOOLS_ROUNDTABLE_SERVE_COMMAND_H_
#define ROUNDTABLE_TOOLS_ROUNDTABLE_SERVE_COMMAND_H_

#include <cstdint>
#include <iosfwd>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "roundtable/options.h"
#include "tools/server/commands.h"

namespace roundtable::cli {

struct ServeOptions {
  server::ServerConfig config;
  uint64_t cache_bytes = uint64_t{256} << 20;  // the table's block cache
  uint64_t write_buffer_bytes = uint64_t{64} << 20;  // and write buffer
  // One budget for both instead (Options::memory_bytes); 0: none.
  uint64_t memory_bytes = 0;
  // The layout of a table the server creates (block_size, s0, epsilon; an
  // existing table's must match where set). With s0 unset, a new table
  // takes SuggestedS0 for the records of kServeKeyBytes and
  // kServeValueBytes in its blocks, rather than the library's default:
  // each grow then rewrites 7 blocks rather than 63.
  Options layout;
};

// The record a new table's s0 is suggested for: a key as long as
// redis-benchmark's (key:000000000000) and a 100-byte value.
inline constexpr size_t kServeKeyBytes = 16;
inline constexpr size_t kServeValueBytes = 100;

// "always", "everysec" or "no" (appendfsync's names).
absl::StatusOr<server::FsyncPolicy> ParseFsyncPolicy(std::string_view name);

// The options of `roundtable serve` from its flags (--port, --bind,
// --fsync, --requirepass or --requirepass_file, --maxclients,
// --protected_mode, --cache_mb, --write_buffer_mb, --memory_mb,
// --cluster_topology and
// --cluster_node); InvalidArgument for a bad --fsync,
// NotFound for an unreadable password file.
absl::StatusOr<ServeOptions> ServeOptionsFromFlags();

// Opens (or creates, with `options.layout`) the table at `dir`, serves it
// until SIGTERM or SIGINT, then closes it (a checkpoint: the next start
// replays nothing). Says where it listens on `log` once it does
// ("listening on HOST:PORT").
absl::Status RunServe(const std::string& dir, const ServeOptions& options,
                      std::ostream& log);

}  // namespace roundtable::cli

#endif  // ROUNDTABLE_TOOLS_ROUNDTABLE_SERVE_COMMAND_H_
