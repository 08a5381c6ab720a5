#include "engine/internal/block_format.h"

#include <xxhash.h>

#include <cstring>

#include "absl/strings/str_cat.h"

namespace roundtable::internal {
namespace {

// Header fields, by byte offset.
constexpr size_t kMagicAt = 0;
constexpr size_t kCountAt = 4;
constexpr size_t kBucketAt = 8;
constexpr size_t kUsedAt = 16;
constexpr size_t kChecksumAt = 24;

absl::Status Corrupt(uint64_t bucket, std::string_view what) {
  return absl::DataLossError(absl::StrCat("block of bucket ", bucket,
                                          " is corrupt: ", std::string(what)));
}

// Checks the header and checksum; on success sets *count and *used.
absl::Status Verify(std::span<const std::byte> in, uint64_t bucket,
                    uint32_t* count, uint32_t* used) {
  const char* p = reinterpret_cast<const char*>(in.data());
  if (GetFixed32(p + kMagicAt) != kBlockMagic) {
    return Corrupt(bucket, "bad magic number");
  }
  if (GetFixed64(p + kChecksumAt) != BlockChecksum(p, in.size())) {
    return Corrupt(bucket, "checksum mismatch");
  }
  if (GetFixed64(p + kBucketAt) != bucket) {
    return Corrupt(bucket,
                   absl::StrCat("holds bucket ", GetFixed64(p + kBucketAt)));
  }
  *count = GetFixed32(p + kCountAt);
  *used = GetFixed32(p + kUsedAt);
  if (*used > in.size() - kBlockHeaderBytes) {
    return Corrupt(bucket, "record bytes exceed the block");
  }
  return absl::OkStatus();
}

// Walks the records of a verified block, calling fn(key, value) for each
// until it returns true. DataLoss when the framing does not add up.
template <typename Fn>
absl::Status ForEachRecord(std::span<const std::byte> in, uint64_t bucket,
                           uint32_t count, uint32_t used, Fn fn) {
  const char* p = reinterpret_cast<const char*>(in.data()) + kBlockHeaderBytes;
  const char* end = p + used;
  for (uint32_t i = 0; i < count; ++i) {
    const auto key_len = GetVarint(&p, end);
    const auto value_len = GetVarint(&p, end);
    if (!key_len || !value_len ||
        *key_len + *value_len > static_cast<uint64_t>(end - p)) {
      return Corrupt(bucket, "record framing");
    }
    const std::string_view key(p, *key_len);
    const std::string_view value(p + *key_len, *value_len);
    p += *key_len + *value_len;
    if (fn(key, value)) return absl::OkStatus();
  }
  if (p != end) return Corrupt(bucket, "record bytes do not add up");
  return absl::OkStatus();
}

}  // namespace

uint64_t BlockChecksum(const char* data, size_t size) {
  const uint64_t header = XXH3_64bits(data, kChecksumAt);
  return XXH3_64bits_withSeed(data + kBlockHeaderBytes,
                              size - kBlockHeaderBytes, header);
}

int BucketBlock::Find(std::string_view key) const {
  for (size_t i = 0; i < records.size(); ++i) {
    if (records[i].key == key) return static_cast<int>(i);
  }
  return -1;
}

void BucketBlock::Add(Record r) {
  used_bytes += EncodedSize(r.key, r.value);
  records.push_back(std::move(r));
}

void BucketBlock::RemoveAt(size_t i) {
  used_bytes -= EncodedSize(records[i].key, records[i].value);
  records[i] = std::move(records.back());
  records.pop_back();
}

void EncodeBlock(const BucketBlock& block, std::span<std::byte> out) {
  char* p = reinterpret_cast<char*>(out.data());
  std::memset(p, 0, out.size());
  PutFixed32(p + kMagicAt, kBlockMagic);
  PutFixed32(p + kCountAt, static_cast<uint32_t>(block.records.size()));
  PutFixed64(p + kBucketAt, block.bucket);
  PutFixed32(p + kUsedAt, static_cast<uint32_t>(block.used_bytes));
  char* q = p + kBlockHeaderBytes;
  for (const Record& r : block.records) {
    q = PutVarint(q, r.key.size());
    q = PutVarint(q, r.value.size());
    std::memcpy(q, r.key.data(), r.key.size());
    q += r.key.size();
    std::memcpy(q, r.value.data(), r.value.size());
    q += r.value.size();
  }
  PutFixed64(p + kChecksumAt, BlockChecksum(p, out.size()));
}

absl::StatusOr<BucketBlock> DecodeBlock(std::span<const std::byte> in,
                                        uint64_t bucket) {
  uint32_t count, used;
  if (absl::Status s = Verify(in, bucket, &count, &used); !s.ok()) return s;
  BucketBlock block;
  block.bucket = bucket;
  block.records.reserve(count);
  absl::Status s = ForEachRecord(
      in, bucket, count, used, [&](std::string_view k, std::string_view v) {
        block.Add(Record{std::string(k), std::string(v)});
        return false;
      });
  if (!s.ok()) return s;
  return block;
}

absl::StatusOr<std::optional<std::string>> FindInBlock(
    std::span<const std::byte> in, uint64_t bucket, std::string_view key) {
  uint32_t count, used;
  if (absl::Status s = Verify(in, bucket, &count, &used); !s.ok()) return s;
  std::optional<std::string> found;
  absl::Status s = ForEachRecord(in, bucket, count, used,
                                 [&](std::string_view k, std::string_view v) {
                                   if (k != key) return false;
                                   found.emplace(v);
                                   return true;
                                 });
  if (!s.ok()) return s;
  return found;
}

}  // namespace roundtable::internal
