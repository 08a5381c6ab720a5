// A second, deliberately plain implementation of round-mapping's findBucket,
// written from round-hashing-notes.md section 1.2: a loop for G, 128-bit
// products and divisions for the arc. Tests compare the engine and the CLI
// against it.
#ifndef ROUNDTABLE_TESTS_ENGINE_MAPPING_REFERENCE_ROUND_MAPPING_H_
#define ROUNDTABLE_TESTS_ENGINE_MAPPING_REFERENCE_ROUND_MAPPING_H_

#include <cstdint>
#include <random>

namespace roundtable::testing_support {

// The bucket of hash h under round-mapping with slack s0 and m buckets.
// REQUIRES: 1 <= s0 <= m.
inline uint64_t ReferenceFindBucket(uint64_t s0, uint64_t m, uint64_t h) {
  using u128 = unsigned __int128;
  uint64_t groups = 1;
  while (groups <= m / s0 / 2) groups *= 2;
  const uint64_t s = m / groups;
  const uint64_t k = m % groups;
  const u128 two64 = static_cast<u128>(1) << 64;
  const u128 a = static_cast<u128>(h) * (s + 1) * groups / two64;
  uint64_t g, p;
  if (a < static_cast<u128>(k) * (s + 1)) {
    g = static_cast<uint64_t>(a / (s + 1));
    p = static_cast<uint64_t>(a % (s + 1));
  } else {
    const u128 idx = static_cast<u128>(h) * s * groups / two64;
    g = static_cast<uint64_t>(idx / s);
    p = static_cast<uint64_t>(idx % s);
  }
  if (p >= s0) return p * groups + g;
  if (g == 0) return p;
  return static_cast<uint64_t>((static_cast<u128>(s0 + p) * groups + g) >>
                               (__builtin_ctzll(g) + 1));
}

// A random 64-bit value with a log-uniform number of significant bits, so that
// small and huge values are both common.
inline uint64_t LogUniform(std::mt19937_64& rng) {
  const int bits = 1 + static_cast<int>(rng() % 64);
  return rng() >> (64 - bits);
}

}  // namespace roundtable::testing_support

#endif  // ROUNDTABLE_TESTS_ENGINE_MAPPING_REFERENCE_ROUND_MAPPING_H_
