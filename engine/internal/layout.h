// The layout of a table, fixed when it is created and stored in its
// superblock: block size, record limit, s0, epsilon and the keys' hash
// seed; and what follows from it: a key's hash, the record space of a block,
// the largest record a block takes, and how many buckets hold a given
// amount of data at (1 - epsilon) of their capacity.
//
// Thread-safety: a value type; its methods are const.
#ifndef ROUNDTABLE_ENGINE_INTERNAL_LAYOUT_H_
#define ROUNDTABLE_ENGINE_INTERNAL_LAYOUT_H_

// Key hashes are XXH3 compiled inline: for short keys the call into the
// shared library costs as much as the hash.
#ifndef XXH_INLINE_ALL
#define XXH_INLINE_ALL
#endif
#include <xxhash.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "engine/internal/block_format.h"
#include "engine/internal/superblock.h"
#include "engine/internal/value_ref.h"
#include "roundtable/options.h"

namespace roundtable::internal {

// Record space of one block of `block_size` bytes.
inline size_t Payload(uint32_t block_size) {
  return block_size - kBlockHeaderBytes;
}
// The largest encoded record a block of `block_size` bytes takes inline: a
// quarter of its record space (Table::max_record_bytes).
inline size_t MaxRecord(uint32_t block_size) { return Payload(block_size) / 4; }
// The smallest block size whose inline limit takes a record of `bytes`, or
// 0 when none does.
uint32_t BlockSizeFor(size_t bytes);

// InvalidArgument naming the field when Options' layout fields are out of
// range.
absl::Status CheckOptions(const Options& options);

struct Layout {
  uint32_t block_size = 0;
  uint32_t block_records = 0;  // most records per block; 0: no limit
  uint64_t s0 = 0;
  double epsilon = 0;
  uint64_t hash_seed = 0;

  // The layout fields of a Superblock.
  template <typename Fields>
  static Layout Of(const Fields& f) {
    return {f.block_size, f.block_records, f.s0, f.epsilon, f.hash_seed};
  }
  // The layout a new table takes from `options`: each field given, or its
  // default.
  static Layout ForCreation(const Options& options);
  // Stores the layout's fields in a Superblock or Options.
  template <typename Fields>
  void SetIn(Fields& f) const {
    f.block_size = block_size;
    f.block_records = block_records;
    f.s0 = s0;
    f.epsilon = epsilon;
    f.hash_seed = hash_seed;
  }

  uint64_t Hash(std::string_view key) const {
    return XXH3_64bits_withSeed(key.data(), key.size(), hash_seed);
  }
  size_t payload() const { return Payload(block_size); }
  size_t max_record() const { return MaxRecord(block_size); }

  // Blocks needed to hold `records` records of `bytes` bytes at
  // (1 - epsilon) of their record space and of their record limit. (Every
  // put asks: inline.)
  uint64_t NeededBuckets(uint64_t bytes, uint64_t records) const {
    auto needed = [&](uint64_t amount, double per_block) {
      return static_cast<uint64_t>(std::ceil(static_cast<double>(amount) /
                                             ((1.0 - epsilon) * per_block)));
    };
    const uint64_t by_bytes = needed(bytes, static_cast<double>(payload()));
    if (block_records == 0) return by_bytes;
    return std::max(by_bytes, needed(records, block_records));
  }

  // InvalidArgument, naming the sizes and a block size that would take
  // it, when the record of `key` and `value` is larger than max_record():
  // a stored record (a reference in place of a value out of line) that
  // no block takes.
  absl::Status CheckRecord(std::string_view key, std::string_view value) const;

  // Whether a put's record sits in its block as it is; else its value goes
  // out of line, a reference in its place (value_ref.h). Every put asks:
  // inline.
  bool FitsInline(std::string_view key, std::string_view value) const {
    return FitsInline(key.size(), value.size()) && !IsReference(value);
  }
  // The same by sizes alone (Table::Reserve's estimate).
  bool FitsInline(size_t key_bytes, size_t value_bytes) const {
    return EncodedSize(key_bytes, value_bytes) <= max_record();
  }
  // The longest key a block takes beside a reference: the bound on keys.
  size_t max_key() const;
  // InvalidArgument, naming the bound, unless a put whose value goes out of
  // line can be taken: its key at most max_key() bytes, its value at most
  // kMaxValueBytes.
  absl::Status CheckOutOfLine(std::string_view key,
                              std::string_view value) const;

  // InvalidArgument naming the first field that `given` sets to a value
  // other than this (the stored) layout's, of the table at `path`; fields
  // left unset take the stored value.
  absl::Status CheckGiven(const Options& given, const std::string& path) const;
};

}  // namespace roundtable::internal

#endif  // ROUNDTABLE_ENGINE_INTERNAL_LAYOUT_H_
