// RebuildTable (roundtable/table.h): every record of a table copied into a
// new one of another layout, built beside it and exchanged with it in one
// rename, so that a crash at any point leaves the old table or the new
// one, whole.
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "engine/batch_writer.h"
#include "engine/internal/kill_points.h"
#include "engine/internal/table_files.h"
#include "io/base/status_macros.h"
#include "roundtable/table.h"

namespace roundtable {
namespace {

// Each layout field `given` sets replaces the stored one.
Options NewLayout(const Options& stored, const Options& given) {
  Options o = stored;
  if (given.block_size) o.block_size = given.block_size;
  if (given.s0) o.s0 = given.s0;
  if (given.epsilon) o.epsilon = given.epsilon;
  if (given.hash_seed) o.hash_seed = given.hash_seed;
  if (given.block_records) o.block_records = given.block_records;
  return o;
}

}  // namespace

std::string RebuildScratchPath(const std::string& path) {
  std::string p = path;
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  return p + ".rebuild";
}

absl::Status RebuildTable(const std::string& path, const Options& layout,
                          const RebuildProgress& progress) {
  RT_ASSIGN_OR_RETURN(const Options stored, Table::ReadLayout(path));
  // The old table, open to write: no other handle may change it meanwhile.
  Options old_options = stored;
  old_options.create_if_missing = false;
  old_options.block_cache_bytes = layout.block_cache_bytes;
  old_options.memory_bytes = layout.memory_bytes;
  RT_ASSIGN_OR_RETURN(std::unique_ptr<Table> old_table,
                      Table::Open(old_options, path));
  // What a crash left beside it: a new table never exchanged, or an old
  // one exchanged and not yet removed.
  const std::string scratch = RebuildScratchPath(path);
  RT_RETURN_IF_ERROR(DestroyTable(scratch));
  Options new_options = NewLayout(stored, layout);
  new_options.error_if_exists = true;
  new_options.block_cache_bytes = layout.block_cache_bytes;
  new_options.write_buffer_bytes = layout.write_buffer_bytes;
  new_options.memory_bytes = layout.memory_bytes;
  new_options.checkpoint_bytes = layout.checkpoint_bytes;
  RT_ASSIGN_OR_RETURN(std::unique_ptr<Table> new_table,
                      Table::Open(new_options, scratch));
  {
    BatchWriter copy(new_table.get(), progress, "rebuild: batch copied");
    auto it = old_table->NewIterator();
    for (; it->Valid(); it->Next()) {
      RT_RETURN_IF_ERROR(copy.Put(it->key(), it->value()));
    }
    RT_RETURN_IF_ERROR(it->status());
    RT_RETURN_IF_ERROR(copy.Finish());
  }
  RT_RETURN_IF_ERROR(new_table->Flush());
  RT_RETURN_IF_ERROR(new_table->Close());  // checkpointed and synced
  RT_RETURN_IF_ERROR(
      internal::SyncDirectory(internal::ParentDirectory(scratch)));
  internal::KillPoint("rebuild: copied");
  // The one step that publishes it: the two directories trade places.
  if (renameat2(AT_FDCWD, scratch.c_str(), AT_FDCWD, path.c_str(),
                RENAME_EXCHANGE) != 0) {
    const int err = errno;
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot exchange ", scratch, " and ", path,
        " atomically: ", std::strerror(err),
        err == EINVAL ? " (the file system lacks RENAME_EXCHANGE)" : ""));
  }
  RT_RETURN_IF_ERROR(internal::SyncDirectory(internal::ParentDirectory(path)));
  internal::KillPoint("rebuild: exchanged");
  // The old table is now at the scratch path.
  RT_RETURN_IF_ERROR(old_table->Close());
  old_table.reset();
  return DestroyTable(scratch);
}

}  // namespace roundtable
