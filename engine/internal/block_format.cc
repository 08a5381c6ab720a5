#include "engine/internal/block_format.h"

#include <xxhash.h>

#include <cstring>

#include "absl/strings/str_cat.h"
#include "io/base/status_macros.h"

namespace roundtable::internal {
namespace {

// Header fields, by byte offset.
constexpr size_t kMagicAt = 0;
constexpr size_t kCountAt = 4;
constexpr size_t kBucketAt = 8;
constexpr size_t kUsedAt = 16;
constexpr size_t kCheckpointAt = 20;
constexpr size_t kChecksumAt = 24;

absl::Status Corrupt(uint64_t bucket, std::string_view what) {
  return absl::DataLossError(absl::StrCat("block of bucket ", bucket,
                                          " is corrupt: ", std::string(what)));
}

// Checks the header and checksum; on success sets *count and *bytes (of
// records).
absl::Status Verify(std::span<const std::byte> in, uint64_t bucket,
                    uint32_t* count, uint32_t* bytes) {
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
  *bytes = GetFixed32(p + kUsedAt);
  if (uint64_t{*count} * kSlotBytes + *bytes > in.size() - kBlockHeaderBytes) {
    return Corrupt(bucket, "directory and records exceed the block");
  }
  return absl::OkStatus();
}

// Checks that the records of a verified block tile [size - bytes, size)
// exactly, in directory order from the end of the block.
absl::Status CheckFraming(std::span<const std::byte> in, uint64_t bucket,
                          uint32_t count, uint32_t bytes) {
  const char* base = reinterpret_cast<const char*>(in.data());
  size_t end = in.size();  // where the next record must end
  for (uint32_t i = 0; i < count; ++i) {
    const size_t offset =
        GetFixed32(base + kBlockHeaderBytes + kSlotBytes * i) >> 16;
    const char* p = base + offset;
    const char* limit = base + end;
    if (offset >= end) return Corrupt(bucket, "slot offset");
    const auto key_len = GetVarint(&p, limit);
    const auto value_len = GetVarint(&p, limit);
    const uint64_t left = limit - p;
    if (!key_len || !value_len || *key_len > left ||
        *value_len != left - *key_len) {
      return Corrupt(bucket, "record framing");
    }
    end = offset;
  }
  if (end != in.size() - bytes) {
    return Corrupt(bucket, "record bytes do not add up");
  }
  return absl::OkStatus();
}

}  // namespace

uint64_t BlockChecksum(const char* data, size_t size) {
  const uint64_t header = XXH3_64bits(data, kChecksumAt);
  return XXH3_64bits_withSeed(data + kBlockHeaderBytes,
                              size - kBlockHeaderBytes, header);
}

TagFilter TagFilterOf(std::span<const std::byte> block) {
  const char* p = reinterpret_cast<const char*>(block.data());
  const uint32_t n =
      std::min<uint64_t>(GetFixed32(p + kCountAt),
                         (block.size() - kBlockHeaderBytes) / kSlotBytes);
  TagFilter filter;
  for (uint32_t i = 0; i < n; ++i) {
    filter.Add(static_cast<uint16_t>(
        GetFixed32(p + kBlockHeaderBytes + kSlotBytes * i)));
  }
  return filter;
}

void EncodedBlock::Init(uint64_t b) {
  InitHeader(b);
  ZeroFree();  // no records yet: all past the header
}

void EncodedBlock::InitHeader(uint64_t b) {
  std::memset(data(), 0, kBlockHeaderBytes);
  PutFixed32(data() + kMagicAt, kBlockMagic);
  PutFixed64(data() + kBucketAt, b);
}

void EncodedBlock::ZeroFree() {
  const size_t from = kBlockHeaderBytes + kSlotBytes * count();
  std::memset(data() + from, 0, bytes_.size() - record_bytes() - from);
}

uint64_t EncodedBlock::bucket() const { return GetFixed64(data() + kBucketAt); }
uint32_t EncodedBlock::checkpoint() const {
  return GetFixed32(data() + kCheckpointAt);
}
void EncodedBlock::set_checkpoint(uint64_t sequence) {
  PutFixed32(data() + kCheckpointAt, static_cast<uint32_t>(sequence));
}
uint32_t EncodedBlock::count() const { return GetFixed32(data() + kCountAt); }
size_t EncodedBlock::record_bytes() const {
  return GetFixed32(data() + kUsedAt);
}
size_t EncodedBlock::used() const {
  return record_bytes() + kSlotBytes * count();
}
size_t EncodedBlock::room() const {
  return bytes_.size() - kBlockHeaderBytes - used();
}

std::optional<EncodedBlock::Found> EncodedBlock::Find(std::string_view key,
                                                      uint16_t tag) const {
  const char* end = data() + bytes_.size();
  for (uint32_t i = 0, n = count(); i < n; ++i) {
    const uint32_t entry = GetFixed32(slot(i));
    if (static_cast<uint16_t>(entry) != tag) continue;
    const char* record = data() + (entry >> 16);
    const char* p = record;
    const uint64_t key_len = *GetVarint(&p, end);
    const uint64_t value_len = *GetVarint(&p, end);
    if (key_len == key.size() && std::memcmp(p, key.data(), key_len) == 0) {
      const size_t size = kSlotBytes + (p - record) + key_len + value_len;
      return Found{i, size, std::string_view(p + key_len, value_len)};
    }
  }
  return std::nullopt;
}

void EncodedBlock::Remove(const Found& found) {
  char* p = data();
  const uint32_t n = count();
  const size_t size = found.size - kSlotBytes;
  const size_t offset = GetFixed32(slot(found.slot)) >> 16;
  // Records after it in the directory lie below it: move them up by its size
  // and shift their slots down by one.
  const size_t low = bytes_.size() - record_bytes();
  std::memmove(p + low + size, p + low, offset - low);
  std::memset(p + low, 0, size);
  for (uint32_t i = found.slot; i + 1 < n; ++i) {
    const uint32_t entry = GetFixed32(slot(i + 1));
    PutFixed32(slot(i), entry + (static_cast<uint32_t>(size) << 16));
  }
  std::memset(slot(n - 1), 0, kSlotBytes);
  PutFixed32(p + kCountAt, n - 1);
  PutFixed32(p + kUsedAt, static_cast<uint32_t>(record_bytes() - size));
}

void EncodedBlock::ReplaceValue(const Found& found, std::string_view value) {
  std::memcpy(data() + (found.value.data() - data()), value.data(),
              value.size());
}

namespace {

// Starts loading, to be written, every cache line of [from, to).
void PrefetchLines(const char* from, const char* to) {
  constexpr uintptr_t kLine = 64;
  const uintptr_t last = reinterpret_cast<uintptr_t>(to - 1) & ~(kLine - 1);
  for (uintptr_t line = reinterpret_cast<uintptr_t>(from) & ~(kLine - 1);
       line <= last; line += kLine) {
    __builtin_prefetch(reinterpret_cast<const void*>(line), 1);
  }
}

}  // namespace

void EncodedBlock::PrefetchEdit(uint16_t tag, size_t size,
                                bool search) const {
  const uint32_t n = count();
  const char* end = data() + bytes_.size();
  if (search && kBlockHeaderBytes + kSlotBytes * size_t{n} <= bytes_.size()) {
    for (uint32_t i = 0; i < n; ++i) {
      const uint32_t entry = GetFixed32(slot(i));
      if (static_cast<uint16_t>(entry) != tag) continue;
      // Its length is in its first bytes, not loaded yet: as much as a
      // record of `size` (or three lines) from its start.
      const char* record = data() + (entry >> 16);
      const size_t span = size > kSlotBytes ? size - kSlotBytes : 3 * 64;
      PrefetchLines(record, std::min(end, record + span));
      return;
    }
  }
  PrefetchAppendAt(bytes_.data(), bytes_.size(), append_point(), size);
}

uint32_t EncodedBlock::append_point() const {
  return static_cast<uint32_t>(record_bytes()) | count() << 16;
}

void EncodedBlock::PrefetchAppendAt(const std::byte* block, size_t block_size,
                                    uint32_t point, size_t size) {
  const size_t record_bytes = point & 0xffff;
  const size_t count = point >> 16;
  if (size < kSlotBytes || kBlockHeaderBytes + kSlotBytes * count +
                                   record_bytes + size > block_size) {
    return;
  }
  const char* records =
      reinterpret_cast<const char*>(block) + block_size - record_bytes;
  PrefetchLines(records - (size - kSlotBytes), records);
  __builtin_prefetch(block + kBlockHeaderBytes + kSlotBytes * count, 1);
}

bool EncodedBlock::Append(std::string_view key, std::string_view value,
                          uint16_t tag) {
  if (!Fits(EncodedSize(key, value))) return false;
  const size_t size = RecordBytes(key, value);
  const uint32_t n = count();
  const size_t offset = bytes_.size() - record_bytes() - size;
  char* q = data() + offset;
  q = PutVarint(q, key.size());
  q = PutVarint(q, value.size());
  if (!key.empty()) std::memcpy(q, key.data(), key.size());
  if (!value.empty()) std::memcpy(q + key.size(), value.data(), value.size());
  PutFixed32(slot(n), static_cast<uint32_t>(offset << 16) | tag);
  if (appended_ != nullptr) appended_->Add(tag);
  PutFixed32(data() + kCountAt, n + 1);
  PutFixed32(data() + kUsedAt, static_cast<uint32_t>(record_bytes() + size));
  return true;
}

void EncodedBlock::Seal() {
  PutFixed64(data() + kChecksumAt, BlockChecksum(data(), bytes_.size()));
}

void InitMapBlock(std::span<std::byte> out, uint32_t magic, uint64_t k) {
  char* p = reinterpret_cast<char*>(out.data());
  std::memset(p, 0, out.size());
  PutFixed32(p + kMagicAt, magic);
  PutFixed64(p + kBucketAt, k);
}

void SealMapBlock(std::span<std::byte> out) {
  char* p = reinterpret_cast<char*>(out.data());
  PutFixed64(p + kChecksumAt, BlockChecksum(p, out.size()));
}

bool IsMapBlock(std::span<const std::byte> in, uint32_t magic, uint64_t k) {
  const char* p = reinterpret_cast<const char*>(in.data());
  return GetFixed32(p + kMagicAt) == magic &&
         GetFixed64(p + kChecksumAt) == BlockChecksum(p, in.size()) &&
         GetFixed64(p + kBucketAt) == k;
}

void CopyUnsealed(std::span<const std::byte> from, std::span<std::byte> to) {
  std::memcpy(to.data(), from.data(), kCheckpointAt);
  std::memset(to.data() + kCheckpointAt, 0, kBlockHeaderBytes - kCheckpointAt);
  std::memcpy(to.data() + kBlockHeaderBytes, from.data() + kBlockHeaderBytes,
              from.size() - kBlockHeaderBytes);
}

absl::Status VerifyBlock(std::span<const std::byte> in, uint64_t bucket) {
  uint32_t count = 0, bytes = 0;
  RT_RETURN_IF_ERROR(Verify(in, bucket, &count, &bytes));
  return CheckFraming(in, bucket, count, bytes);
}

}  // namespace roundtable::internal
