// The payload of a write-ahead log record: the puts and deletes of one
// write (docs/format.md), in this grammar:
//
//   record := varint(count) op*count
//   op     := 0x01 varint(key length) key varint(value length) value   (put)
//           | 0x02 varint(key length) key                             (delete)
//
// A WriteBatch keeps its operations in this form as they are added, so that
// Table::Write logs the batch as it is and applies views into it.
//
// Thread-safety: free functions on values.
#ifndef ROUNDTABLE_ENGINE_INTERNAL_LOG_RECORD_H_
#define ROUNDTABLE_ENGINE_INTERNAL_LOG_RECORD_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace roundtable::internal {

// One put or delete, as views into its caller's bytes.
struct Op {
  bool put;
  std::string_view key;
  std::string_view value;
};

// The record of no operations.
std::string EmptyLogRecord();

// Appends `op` to the record `rep` and counts it in the record's count.
void AppendOp(std::string* rep, const Op& op);

// The record of `ops`: its size, and written at `out` (which has room for
// that size; returns the byte after it).
size_t EncodedOpsSize(std::span<const Op> ops);
char* EncodeOpsTo(std::span<const Op> ops, char* out);

// The operations of `record`, as views into it; DataLoss naming log record
// `seq` when the bytes do not follow the grammar.
absl::StatusOr<std::vector<Op>> DecodeOps(std::string_view record,
                                          uint64_t seq);

}  // namespace roundtable::internal

#endif  // ROUNDTABLE_ENGINE_INTERNAL_LOG_RECORD_H_
