#include "engine/batch_writer.h"

#include <utility>

#include "engine/internal/kill_points.h"
#include "io/base/status_macros.h"

namespace roundtable {

BatchWriter::BatchWriter(Table* into, RebuildProgress progress,
                         std::string_view kill_point)
    : into_(into), progress_(std::move(progress)), kill_point_(kill_point) {}

absl::Status BatchWriter::Put(std::string_view key, std::string_view value) {
  batch_.Put(key, value);
  batch_bytes_ += key.size() + value.size();
  ++records_;
  bytes_ += key.size() + value.size();
  if (batch_.Count() < kBatchRecords && batch_bytes_ < kBatchBytes) {
    return absl::OkStatus();
  }
  return WriteBatchOut();
}

absl::Status BatchWriter::Delete(std::string_view key) {
  batch_.Delete(key);
  batch_bytes_ += key.size();
  if (batch_.Count() < kBatchRecords && batch_bytes_ < kBatchBytes) {
    return absl::OkStatus();
  }
  return WriteBatchOut();
}

absl::Status BatchWriter::Finish() { return WriteBatchOut(); }

absl::Status BatchWriter::WriteBatchOut() {
  RT_RETURN_IF_ERROR(into_->Write(batch_));
  if (!kill_point_.empty()) internal::KillPoint(kill_point_);
  batch_.Clear();
  batch_bytes_ = 0;
  if (progress_) progress_(records_, bytes_);
  return absl::OkStatus();
}

}  // namespace roundtable
