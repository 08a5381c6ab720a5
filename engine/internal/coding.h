// Little-endian fixed-width integers and LEB128 varints, the encodings of
// every on-disk structure (docs/format.md).
//
// Thread-safety: pure functions.
#ifndef ROUNDTABLE_ENGINE_INTERNAL_CODING_H_
#define ROUNDTABLE_ENGINE_INTERNAL_CODING_H_

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

namespace roundtable::internal {

inline void PutFixed32(char* p, uint32_t v) { std::memcpy(p, &v, 4); }
inline void PutFixed64(char* p, uint64_t v) { std::memcpy(p, &v, 8); }
inline uint32_t GetFixed32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
inline uint64_t GetFixed64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

// Bytes of the varint encoding of v.
inline size_t VarintLength(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

// Writes v at p and returns the byte after it.
inline char* PutVarint(char* p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = static_cast<char>(v | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<char>(v);
  return p;
}

// Reads a varint of at most 10 bytes from [*p, end); advances *p. nullopt if
// it runs past end or is too long.
inline std::optional<uint64_t> GetVarint(const char** p, const char* end) {
  uint64_t v = 0;
  for (int shift = 0; shift <= 63 && *p < end; shift += 7) {
    const auto byte = static_cast<unsigned char>(*(*p)++);
    v |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if (byte < 0x80) return v;
  }
  return std::nullopt;
}

}  // namespace roundtable::internal

#endif  // ROUNDTABLE_ENGINE_INTERNAL_CODING_H_
