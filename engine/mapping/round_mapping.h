// Round-mapping (Grossi and Versari, "Round-Hashing for Data Storage"): a
// consistent mapping of 64-bit hashes to m buckets that adds or releases one
// bucket at a time, moving keys only inside one group of s or s + 1 buckets,
// and finds a bucket in constant time with no division and no loop.
// docs/mapping.md explains it with the paper's Figure 1 example.
//
// Thread-safety: as BucketMapping (const calls concurrent, mutators
// exclusive).
#ifndef ROUNDTABLE_ENGINE_MAPPING_ROUND_MAPPING_H_
#define ROUNDTABLE_ENGINE_MAPPING_ROUND_MAPPING_H_

#include <bit>
#include <cstdint>
#include <string_view>

#include "absl/status/statusor.h"
#include "roundtable/mapping.h"

namespace roundtable::mapping {

// High 64 bits of the 128-bit product a * b.
inline uint64_t MulHi64(uint64_t a, uint64_t b) {
  return static_cast<uint64_t>((static_cast<unsigned __int128>(a) * b) >> 64);
}

// The state of round-mapping for slack s0 and m buckets, in the closed form of
// design.md section 2: m = s * G + k, where G is the largest power of two with
// s0 * G <= m, s = floor(m / G) lies in [s0, 2 * s0 - 1] and k = m mod G.
//
// The circle of hashes is cut into G equal groups; groups g < k hold s + 1
// short arcs and groups g >= k hold s long arcs. Every arc is one bucket.
class RoundState {
 public:
  // REQUIRES: 1 <= s0 <= m.
  RoundState(uint64_t s0, uint64_t m);

  uint64_t s0() const { return s0_; }
  uint64_t num_buckets() const { return m_; }
  uint64_t groups() const { return uint64_t{1} << log2_groups_; }
  int log2_groups() const { return log2_groups_; }
  uint64_t step() const { return s_; }       // s
  uint64_t converted() const { return k_; }  // k
  uint64_t arcs_in_group(uint64_t g) const { return g < k_ ? s_ + 1 : s_; }

  // The bucket number of arc position p in group g, p < arcs_in_group(g):
  //   p >= s0        -> p * G + g                    (native of this round)
  //   g == 0         -> p
  //   otherwise      -> ((s0 + p) * G + g) >> (ctz(g) + 1)
  //
  // All three cases are one expression, ((p + add) << (L - shift)) +
  // (g >> shift) with L = log2(G):
  //   native:        add = 0,  shift = 0          -> p * G + g
  //   older, g != 0: add = s0, shift = ctz(g) + 1 -> the formula above, as
  //                  the low ctz(g) + 1 bits of (s0 + p) * G are zero
  //   older, g == 0: add = 0,  shift = L          -> p
  // so the lookup has no branch for random hashes to mispredict (g == 0 has
  // probability 1/G and p >= s0 up to 1/2), and every intermediate value is
  // at most the bucket number: any m up to 2^64 - 1 works.
  uint64_t BucketAt(uint64_t g, uint64_t p) const {
    const int lg = log2_groups_;
    const uint64_t older = uint64_t{0} - (p < s0_);  // all ones or zero
    const uint64_t nonzero = g != 0;
    // g | G has the trailing zeros of g when g != 0, and lg when g == 0.
    const uint64_t shift =
        (std::countr_zero(g | (uint64_t{1} << lg)) + nonzero) & older;
    const uint64_t add = s0_ & older & (uint64_t{0} - nonzero);
    return ((p + add) << (lg - shift)) + (g >> shift);
  }

  // The group and arc position of a hash: g is the top log2(G) bits of h, and
  // p = floor(x * t / 2^64) where x is h shifted left by log2(G) (the position
  // inside the group as a 64-bit fraction) and t the group's arc count.
  uint64_t GroupOf(uint64_t h) const {
    // Two shifts so that G = 1 (shift by 64) needs no branch.
    return (h >> 1) >> (63 - log2_groups_);
  }
  uint64_t PositionOf(uint64_t h, uint64_t g) const {
    // s + 1 cannot overflow when k > 0: then G >= 2 and s < 2^63.
    return MulHi64(h << log2_groups_, s_ + (g < k_));
  }

  uint64_t FindBucket(uint64_t h) const {
    const uint64_t g = GroupOf(h);
    return BucketAt(g, PositionOf(h, g));
  }

  // The arc index j in [0, m) that h falls in, arcs numbered clockwise from 0.
  uint64_t FindArc(uint64_t h) const;
  // The bucket number carried by arc j, j < m.
  uint64_t BucketOfArc(uint64_t j) const;
  // The first hash past the arc that h falls in, or 0 when that arc ends
  // the circle: the hashes of h's bucket are [start, ArcEnd(h)), so a walk
  // that steps from arc end to arc end covers each hash exactly once however
  // m changes between its steps (Table::Scan).
  uint64_t ArcEnd(uint64_t h) const;

 private:
  uint64_t s0_;
  uint64_t m_;
  int log2_groups_;
  uint64_t s_;
  uint64_t k_;
};

// OK when 1 <= s0 <= m <= max_buckets, else InvalidArgument naming the scheme
// and the bad value.
absl::Status CheckRoundShape(std::string_view scheme, uint64_t s0, uint64_t m,
                             uint64_t max_buckets);

// One NewBucket or FreeBucket step over a RoundState, shared by the schemes of
// that shape (round-mapping and slack linear hashing). `change_of(state)`
// names the buckets of group state.converted() and the new bucket
// state.num_buckets(); a FreeBucket is the NewBucket that ran from m - 1.
absl::StatusOr<BucketChange> StepRoundState(
    std::string_view scheme, bool grow, uint64_t max_buckets, RoundState& state,
    BucketChange (*change_of)(const RoundState&));

// Round-mapping behind the BucketMapping interface. Any s0 >= 1 and any m from
// s0 up to 2^64 - 1; no intermediate value exceeds m, so nothing overflows.
class RoundMapping final : public BucketMapping {
 public:
  static constexpr uint64_t kMaxBuckets = ~uint64_t{0};

  // InvalidArgument unless 1 <= s0 <= m <= kMaxBuckets.
  static absl::StatusOr<RoundMapping> Create(uint64_t s0, uint64_t m);

  std::string_view name() const override { return "round"; }
  MoveRule move_rule() const override { return MoveRule::kNextInSequence; }
  uint64_t num_buckets() const override { return state_.num_buckets(); }
  uint64_t min_buckets() const override { return state_.s0(); }
  uint64_t max_buckets() const override { return kMaxBuckets; }
  const RoundState& state() const { return state_; }

  // Constant time: two shifts, one 64x64->128 multiply, a trailing-zero
  // count and a few selects.
  uint64_t FindBucket(uint64_t hash) const override {
    return state_.FindBucket(hash);
  }

  // The paper's newBucket(): converts group k from s long arcs into s + 1
  // short ones. sources are the group's s former buckets in arc order and
  // target is the new bucket m, the group's last arc; a key in sources[i]
  // stays or moves to sources[i + 1] (target after the last). O(s0) time.
  absl::StatusOr<BucketChange> NewBucket() override;
  // The paper's freeBucket(): the exact inverse. sources are the first s arcs
  // of the last converted group, target the released bucket m - 1; keys move
  // one arc back. O(s0) time.
  absl::StatusOr<BucketChange> FreeBucket() override;

 private:
  explicit RoundMapping(RoundState state) : state_(state) {}

  // The s buckets of group state.converted() under `state`, in arc order.
  static BucketChange GroupChange(const RoundState& state);

  RoundState state_;
};

}  // namespace roundtable::mapping

#endif  // ROUNDTABLE_ENGINE_MAPPING_ROUND_MAPPING_H_
