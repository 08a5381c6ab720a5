// BatchWriter: records written into a table in batches of up to 1024
// records or 4 MiB of keys and values, for the calls that copy a table
// whole (RebuildTable, SalvageTable, the restore command), with the running
// totals reported after each batch.
//
// Thread-safety: one thread.
#ifndef ROUNDTABLE_ENGINE_BATCH_WRITER_H_
#define ROUNDTABLE_ENGINE_BATCH_WRITER_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "roundtable/table.h"

namespace roundtable {

class BatchWriter {
 public:
  static constexpr size_t kBatchRecords = 1024;
  static constexpr size_t kBatchBytes = size_t{4} << 20;

  // `into` must outlive the writer. `progress` (may be empty) is called
  // with the totals after each batch written; `kill_point` (may be empty)
  // names the kill point reached after each batch.
  BatchWriter(Table* into, RebuildProgress progress,
              std::string_view kill_point = {});

  // Adds a record, or a delete, in order; writes the batch once it is
  // full.
  absl::Status Put(std::string_view key, std::string_view value);
  absl::Status Delete(std::string_view key);
  // Writes what is left.
  absl::Status Finish();

  uint64_t records() const { return records_; }  // puts

 private:
  absl::Status WriteBatchOut();

  Table* const into_;
  const RebuildProgress progress_;
  const std::string kill_point_;
  WriteBatch batch_;
  size_t batch_bytes_ = 0;
  uint64_t records_ = 0;
  uint64_t bytes_ = 0;
};

}  // namespace roundtable

#endif  // ROUNDTABLE_ENGINE_BATCH_WRITER_H_
