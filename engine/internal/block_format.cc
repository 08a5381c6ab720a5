#include "engine/internal/block_format.h"

#include <xxhash.h>

#include <cstring>

#include "absl/strings/str_cat.h"
#include "io/status_macros.h"

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

void EncodedBlock::Init(uint64_t b) {
  std::memset(data(), 0, bytes_.size());
  PutFixed32(data() + kMagicAt, kBlockMagic);
  PutFixed64(data() + kBucketAt, b);
}

uint64_t EncodedBlock::bucket() const { return GetFixed64(data() + kBucketAt); }
uint32_t EncodedBlock::count() const { return GetFixed32(data() + kCountAt); }
size_t EncodedBlock::used() const { return GetFixed32(data() + kUsedAt); }
size_t EncodedBlock::room() const {
  return bytes_.size() - kBlockHeaderBytes - used();
}

std::optional<EncodedBlock::Found> EncodedBlock::Find(
    std::string_view key) const {
  const char* start = data();
  const char* p = start + kBlockHeaderBytes;
  const char* end = p + used();
  while (p < end) {
    const char* record = p;
    const uint64_t key_len = *GetVarint(&p, end);
    const uint64_t value_len = *GetVarint(&p, end);
    if (key_len == key.size() && std::memcmp(p, key.data(), key_len) == 0) {
      const size_t size = (p - record) + key_len + value_len;
      return Found{static_cast<size_t>(record - start), size,
                   std::string_view(p + key_len, value_len)};
    }
    p += key_len + value_len;
  }
  return std::nullopt;
}

void EncodedBlock::Remove(const Found& found) {
  char* p = data();
  const size_t end = kBlockHeaderBytes + used();
  std::memmove(p + found.offset, p + found.offset + found.size,
               end - found.offset - found.size);
  std::memset(p + end - found.size, 0, found.size);
  PutFixed32(p + kCountAt, count() - 1);
  PutFixed32(p + kUsedAt, static_cast<uint32_t>(used() - found.size));
}

bool EncodedBlock::Append(std::string_view key, std::string_view value) {
  const size_t size = EncodedSize(key, value);
  if (size > room()) return false;
  char* q = data() + kBlockHeaderBytes + used();
  q = PutVarint(q, key.size());
  q = PutVarint(q, value.size());
  if (!key.empty()) std::memcpy(q, key.data(), key.size());
  if (!value.empty()) std::memcpy(q + key.size(), value.data(), value.size());
  PutFixed32(data() + kCountAt, count() + 1);
  PutFixed32(data() + kUsedAt, static_cast<uint32_t>(used() + size));
  return true;
}

void EncodedBlock::Seal() {
  PutFixed64(data() + kChecksumAt, BlockChecksum(data(), bytes_.size()));
}

absl::Status VerifyBlock(std::span<const std::byte> in, uint64_t bucket) {
  uint32_t count, used;
  RT_RETURN_IF_ERROR(Verify(in, bucket, &count, &used));
  return ForEachRecord(
      in, bucket, count, used,
      [](std::string_view, std::string_view) { return false; });
}

}  // namespace roundtable::internal
