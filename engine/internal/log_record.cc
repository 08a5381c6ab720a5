#include "engine/internal/log_record.h"

#include "absl/strings/str_cat.h"
#include "engine/internal/coding.h"

namespace roundtable::internal {
namespace {

constexpr char kLogPut = 1, kLogDelete = 2;

void AppendVarint(std::string* out, uint64_t v) {
  char varint[10];
  out->append(varint, internal::PutVarint(varint, v) - varint);
}

void AppendOpBody(std::string* out, const Op& op) {
  out->push_back(op.put ? kLogPut : kLogDelete);
  AppendVarint(out, op.key.size());
  out->append(op.key);
  if (op.put) {
    AppendVarint(out, op.value.size());
    out->append(op.value);
  }
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
  AppendOpBody(rep, op);
}

void EncodeOps(std::span<const Op> ops, std::string* out) {
  out->clear();
  AppendVarint(out, ops.size());
  for (const Op& op : ops) AppendOpBody(out, op);
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
