// The bytes of one bucket block (docs/format.md): a 32-byte header, then
// records packed from byte 32, then zeros. The header holds a magic number,
// the record count, the bucket number, the bytes of records and an XXH3-64
// checksum of the whole block taken with the checksum field zeroed.
//
// Record encoding: varint key length, varint value length, key, value.
//
// Thread-safety: BucketBlock is a value type; distinct objects are
// independent.
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

// The records of one bucket, decoded.
struct BucketBlock {
  uint64_t bucket = 0;
  std::vector<Record> records;
  size_t used_bytes = 0;  // sum of EncodedSize over records

  // The index of `key` in records, or -1.
  int Find(std::string_view key) const;
  void Add(Record r);
  void RemoveAt(size_t i);
};

// Encodes `block` into `out` (exactly block_size bytes, zero-filled past the
// records). REQUIRES: kBlockHeaderBytes + used_bytes <= out.size().
void EncodeBlock(const BucketBlock& block, std::span<std::byte> out);

// Decodes a block read from bucket `bucket`. DataLoss, naming the bucket,
// when the checksum, magic, bucket number or record framing is wrong.
absl::StatusOr<BucketBlock> DecodeBlock(std::span<const std::byte> in,
                                        uint64_t bucket);

// Looks `key` up in an encoded block without decoding the rest: the value,
// nullopt when absent, DataLoss as DecodeBlock.
absl::StatusOr<std::optional<std::string>> FindInBlock(
    std::span<const std::byte> in, uint64_t bucket, std::string_view key);

inline size_t EncodedSize(std::string_view key, std::string_view value) {
  return VarintLength(key.size()) + VarintLength(value.size()) + key.size() +
         value.size();
}

}  // namespace roundtable::internal

#endif  // ROUNDTABLE_ENGINE_INTERNAL_BLOCK_FORMAT_H_
