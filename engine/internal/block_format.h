// The bytes of one bucket block (docs/format.md): a 32-byte header, then
// records packed from byte 32, then zeros. EncodedBlock reads and edits them
// in place. The header holds a magic number,
// the record count, the bucket number, the bytes of records and an XXH3-64
// checksum of the whole block taken with the checksum field zeroed.
//
// Record encoding: varint key length, varint value length, key, value.
//
// Thread-safety: an EncodedBlock is a view; callers keep one writer per
// block.
#ifndef ROUNDTABLE_ENGINE_INTERNAL_BLOCK_FORMAT_H_
#define ROUNDTABLE_ENGINE_INTERNAL_BLOCK_FORMAT_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/internal/coding.h"

namespace roundtable::internal {

inline constexpr uint32_t kBlockMagic = 0x4b425452;  // "RTBK"
inline constexpr size_t kBlockHeaderBytes = 32;

struct Record {
  std::string key;
  std::string value;
  bool operator==(const Record&) const = default;
};

// The checksum of an encoded block of `size` bytes whose header (the first
// kBlockHeaderBytes) holds the checksum at bytes [24, 32): XXH3-64 of the
// bytes after the header, seeded with XXH3-64 of header bytes [0, 24).
uint64_t BlockChecksum(const char* data, size_t size);

// Bytes a record takes inside a block (and in the stash accounting).
inline size_t EncodedSize(std::string_view key, std::string_view value);

// An encoded block edited in place: the Put and Delete paths and distribute
// work on the bytes directly, without decoding records into strings. The
// checksum is left stale by every edit until Seal().
class EncodedBlock {
 public:
  // Borrows `bytes` (one whole block), which must outlive this object and
  // hold a verified block or be passed to Init.
  explicit EncodedBlock(std::span<std::byte> bytes) : bytes_(bytes) {}
  // A read-only view: only the const methods may be called.
  explicit EncodedBlock(std::span<const std::byte> bytes)
      : bytes_(const_cast<std::byte*>(bytes.data()), bytes.size()) {}

  // Makes the bytes an empty block of `bucket`.
  void Init(uint64_t bucket);

  uint64_t bucket() const;
  uint32_t count() const;
  size_t used() const;  // bytes of records
  size_t room() const;  // record bytes still free

  struct Found {
    size_t offset;  // of the record, from the start of the block
    size_t size;    // its encoded size
    std::string_view value;
  };
  std::optional<Found> Find(std::string_view key) const;
  void Remove(const Found& found);
  // Appends a record if it fits; false (and nothing changed) if not.
  bool Append(std::string_view key, std::string_view value);
  // Calls fn(key, value) for every record, in block order.
  template <typename Fn>
  void ForEach(Fn fn) const;

  // Writes the checksum; the bytes are then a valid block.
  void Seal();

 private:
  char* data() const { return reinterpret_cast<char*>(bytes_.data()); }
  std::span<std::byte> bytes_;
};

// DataLoss, naming the bucket, unless `in` is a valid block of `bucket`
// (magic, checksum, bucket number, record framing).
absl::Status VerifyBlock(std::span<const std::byte> in, uint64_t bucket);

template <typename Fn>
void EncodedBlock::ForEach(Fn fn) const {
  const char* p = data() + kBlockHeaderBytes;
  const char* end = p + used();
  while (p < end) {
    const uint64_t key_len = *GetVarint(&p, end);
    const uint64_t value_len = *GetVarint(&p, end);
    fn(std::string_view(p, key_len), std::string_view(p + key_len, value_len));
    p += key_len + value_len;
  }
}

inline size_t EncodedSize(std::string_view key, std::string_view value) {
  return VarintLength(key.size()) + VarintLength(value.size()) + key.size() +
         value.size();
}

}  // namespace roundtable::internal

#endif  // ROUNDTABLE_ENGINE_INTERNAL_BLOCK_FORMAT_H_
