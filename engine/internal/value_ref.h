// Out-of-line values (docs/format.md, "Out-of-line values"). A value too
// large to sit in its block beside its key lives in an extent of the value
// file, a run of whole units (one unit is the table's block size), and the
// record keeps a reference in its place: 32 bytes that start with an 8-byte
// mark and hold the extent's first unit, the value's length and its
// checksum. Every part of the engine below the table's top carries a
// reference as the record's stored value, like any other: the blocks, the
// stash, the write buffer, their copies and the log. A value a user writes
// that has the form of a reference (32 bytes starting with the mark) is
// stored out of line too, so a stored value of that form is always one.
//
// Thread-safety: value types and pure functions.
#ifndef ROUNDTABLE_ENGINE_INTERNAL_VALUE_REF_H_
#define ROUNDTABLE_ENGINE_INTERNAL_VALUE_REF_H_

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "engine/internal/coding.h"

namespace roundtable::internal {

inline constexpr size_t kReferenceBytes = 32;
// The largest value a table takes: 4 GiB - 1 bytes.
inline constexpr uint64_t kMaxValueBytes = (uint64_t{1} << 32) - 1;
inline constexpr char kReferenceMark[8] = {'\xff', 'R',    'T',    'X',
                                           '\0',   '\xa5', '\x5a', '\x01'};

// A run of `units` units of the value file from unit `first`.
struct Extent {
  uint64_t first = 0;
  uint64_t units = 0;
  uint64_t end() const { return first + units; }
  bool operator==(const Extent&) const = default;
};

struct ValueRef {
  uint64_t first = 0;     // the extent's first unit
  uint64_t length = 0;    // the value's bytes
  uint64_t checksum = 0;  // ValueChecksum of the value at `first`

  // The extent of a value of `length` bytes in units of `unit` bytes: at
  // least one unit.
  Extent extent(uint32_t unit) const {
    return {first, length == 0 ? 1 : (length + unit - 1) / unit};
  }
};

// Whether a stored value is a reference.
inline bool IsReference(std::string_view stored) {
  return stored.size() == kReferenceBytes &&
         std::memcmp(stored.data(), kReferenceMark, sizeof kReferenceMark) == 0;
}

inline std::string EncodeReference(const ValueRef& ref) {
  std::string out(kReferenceBytes, '\0');
  std::memcpy(out.data(), kReferenceMark, sizeof kReferenceMark);
  PutFixed64(out.data() + 8, ref.first);
  PutFixed64(out.data() + 16, ref.length);
  PutFixed64(out.data() + 24, ref.checksum);
  return out;
}

// A delete waiting in the write buffer (docs/format.md, "Write buffer
// copy") is kept there as a record whose stored value is the tombstone: a
// reference to unit 2^64 - 1 of no length, where no extent can lie, so no
// value a user writes is ever stored as it (a value of a reference's form
// is stored out of line, and its reference names a real extent).
inline constexpr uint64_t kTombstoneUnit = ~uint64_t{0};
inline std::string_view Tombstone() {
  static const std::string tombstone = EncodeReference({kTombstoneUnit, 0, 0});
  return tombstone;
}
inline bool IsTombstone(std::string_view stored) {
  return IsReference(stored) && GetFixed64(stored.data() + 8) == kTombstoneUnit;
}
// Whether a stored value names an extent of the value file: a reference,
// not the tombstone.
inline bool HasExtent(std::string_view stored) {
  return IsReference(stored) && !IsTombstone(stored);
}

// REQUIRES: IsReference(stored).
inline ValueRef DecodeReference(std::string_view stored) {
  return {GetFixed64(stored.data() + 8), GetFixed64(stored.data() + 16),
          GetFixed64(stored.data() + 24)};
}

// The checksum a reference keeps: XXH3-64 of the value's bytes, seeded
// with the extent's first unit (a reference to the right bytes at another
// place does not pass).
uint64_t ValueChecksum(std::string_view value, uint64_t first);

}  // namespace roundtable::internal

#endif  // ROUNDTABLE_ENGINE_INTERNAL_VALUE_REF_H_
