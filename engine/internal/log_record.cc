#include "engine/internal/log_record.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "engine/internal/coding.h"

namespace roundtable::internal {
namespace {

constexpr char kLogPut = 1, kLogDelete = 2;

// The bytes of `op` in a record.
size_t OpBytes(const Op& op) {
  size_t n = 1 + VarintLength(op.key.size()) + op.key.size();
  if (op.put) n += VarintLength(op.value.size()) + op.value.size();
  return n;
}

// Writes `op` at p and returns the byte after it.
char* PutOp(char* p, const Op& op) {
  *p++ = op.put ? kLogPut : kLogDelete;
  p = PutVarint(p, op.key.size());
  std::memcpy(p, op.key.data(), op.key.size());
  p += op.key.size();
  if (op.put) {
    p = PutVarint(p, op.value.size());
    std::memcpy(p, op.value.data(), op.value.size());
    p += op.value.size();
  }
  return p;
}

}  // namespace

std::string EmptyLogRecord() { return std::string(1, '\0'); }

void AppendOp(std::string* rep, const Op& op) {
  // The count leads the record: it is rewritten in place, and the record
  // moves up a byte only when the count's varint grows (at 128, 16384, ...).
  const char* p = rep->data();
  const uint64_t count = *GetVarint(&p, p + rep->size());
  const size_t old_len = VarintLength(count);
  const size_t new_len = VarintLength(count + 1);
  if (new_len > old_len) rep->insert(0, new_len - old_len, '\0');
  PutVarint(rep->data(), count + 1);
  const size_t at = rep->size();
  rep->resize(at + OpBytes(op));
  PutOp(rep->data() + at, op);
}

size_t EncodedOpsSize(std::span<const Op> ops) {
  size_t size = VarintLength(ops.size());
  for (const Op& op : ops) size += OpBytes(op);
  return size;
}

char* EncodeOpsTo(std::span<const Op> ops, char* out) {
  char* p = PutVarint(out, ops.size());
  for (const Op& op : ops) p = PutOp(p, op);
  return p;
}

absl::StatusOr<std::vector<Op>> DecodeOps(std::string_view record,
                                          uint64_t seq) {
  const char* p = record.data();
  const char* end = p + record.size();
  auto bad = [&] {
    return absl::DataLossError(
        absl::StrCat("write-ahead log record ", seq, " is malformed"));
  };
  auto bytes = [&](std::string_view* out) {
    const auto n = GetVarint(&p, end);
    if (!n || *n > static_cast<uint64_t>(end - p)) return false;
    *out = std::string_view(p, *n);
    p += *n;
    return true;
  };
  const auto count = GetVarint(&p, end);
  if (!count || *count > record.size()) return bad();
  std::vector<Op> ops(*count);
  for (Op& op : ops) {
    if (p == end || (*p != kLogPut && *p != kLogDelete)) return bad();
    op.put = *p++ == kLogPut;
    if (!bytes(&op.key) || (op.put && !bytes(&op.value))) return bad();
  }
  if (p != end) return bad();
  return ops;
}

}  // namespace roundtable::internal
