#include "engine/internal/log_record.h"
#include "roundtable/table.h"

namespace roundtable {

WriteBatch::WriteBatch() : rep_(internal::EmptyLogRecord()) {}

void WriteBatch::Put(std::string_view key, std::string_view value) {
  internal::AppendOp(&rep_, {true, key, value});
  ++count_;
}

void WriteBatch::Delete(std::string_view key) {
  internal::AppendOp(&rep_, {false, key, {}});
  ++count_;
}

void WriteBatch::Clear() {
  rep_ = internal::EmptyLogRecord();
  count_ = 0;
}

}  // namespace roundtable
