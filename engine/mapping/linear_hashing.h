// Linear hashing in two forms: the classic one of Litwin (split one bucket in
// two, constant-time lookup on the low bits of the hash) and the slack-s0 form
// the round-hashing paper compares against (Larson's partial expansions:
// groups of s0 .. 2s0 buckets, balance within 1 + 1/s0, lookup in O(log m)).
//
// Thread-safety: as BucketMapping (const calls concurrent, mutators
// exclusive).
#ifndef ROUNDTABLE_ENGINE_MAPPING_LINEAR_HASHING_H_
#define ROUNDTABLE_ENGINE_MAPPING_LINEAR_HASHING_H_

#include <bit>
#include <cstdint>
#include <string_view>

#include "absl/status/statusor.h"
#include "roundtable/mapping.h"
#include "engine/mapping/round_mapping.h"

namespace roundtable::mapping {

// Classic linear hashing. With L = floor(log2 m) and split pointer
// p = m - 2^L, a hash goes to h mod 2^L, or to h mod 2^(L+1) when the former
// is below p. Adding a bucket splits bucket p into p and p + 2^L = m.
class LitwinLinearHashing final : public BucketMapping {
 public:
  static constexpr uint64_t kMaxBuckets = uint64_t{1} << 62;

  // InvalidArgument unless 1 <= m <= kMaxBuckets.
  static absl::StatusOr<LitwinLinearHashing> Create(uint64_t m);

  std::string_view name() const override { return "linear-litwin"; }
  MoveRule move_rule() const override { return MoveRule::kOnlyToNewBucket; }
  uint64_t num_buckets() const override { return m_; }
  uint64_t min_buckets() const override { return 1; }
  uint64_t max_buckets() const override { return kMaxBuckets; }

  // Constant time: two masks and a select.
  uint64_t FindBucket(uint64_t hash) const override {
    const uint64_t low = hash & (level_size_ - 1);
    const uint64_t wide = hash & (2 * level_size_ - 1);
    return low < split_ ? wide : low;
  }
  // sources = {p}, target = m.
  absl::StatusOr<BucketChange> NewBucket() override;
  // sources = {p - 1} (p as it was before the last split), target = m - 1.
  absl::StatusOr<BucketChange> FreeBucket() override;

 private:
  explicit LitwinLinearHashing(uint64_t m) { SetBuckets(m); }
  void SetBuckets(uint64_t m);
  // {p} -> m for the current state: the split a NewBucket performs.
  BucketChange SplitChange() const;

  uint64_t m_ = 0;
  uint64_t level_size_ = 0;  // 2^L
  uint64_t split_ = 0;       // p = m - 2^L
};

// Linear hashing with slack s0, the form the round-hashing paper measures.
//
// Its shape is round-mapping's: m = s * G + k buckets in G groups, groups
// g < k holding s + 1 buckets and the others s, so the bucket sizes have the
// same two values. Bucket b belongs to group b mod G, as the bucket at slot i
// of group g is g + i * G. What differs is how a key finds its slot:
//
// - Adding a bucket to a group of n (a partial expansion) moves each of the
//   group's keys into the new slot n with probability 1/(n + 1), chosen by a
//   hash function of the key; nothing else moves. Over one level, slots grow
//   from s0 to 2s0; a jump-consistent-hash walk per level finds the last slot
//   the key jumped to.
// - When every group has 2s0 slots (a full expansion), group g splits into g
//   and g + G by the parity of the slot, and the slot halves. No key moves.
//
// A lookup replays one walk per level: O(log(m / s0)) steps, each a few hash
// outputs, against round-mapping's constant time.
class SlackLinearHashing final : public BucketMapping {
 public:
  static constexpr uint64_t kMaxBuckets = uint64_t{1} << 62;

  // InvalidArgument unless 1 <= s0 <= m <= kMaxBuckets.
  static absl::StatusOr<SlackLinearHashing> Create(uint64_t s0, uint64_t m);

  std::string_view name() const override { return "linear-slack"; }
  MoveRule move_rule() const override { return MoveRule::kOnlyToNewBucket; }
  uint64_t num_buckets() const override { return state_.num_buckets(); }
  uint64_t min_buckets() const override { return state_.s0(); }
  uint64_t max_buckets() const override { return kMaxBuckets; }

  uint64_t FindBucket(uint64_t hash) const override;
  // sources = the s buckets of group k in slot order, target = m.
  absl::StatusOr<BucketChange> NewBucket() override;
  absl::StatusOr<BucketChange> FreeBucket() override;

 private:
  explicit SlackLinearHashing(RoundState state) : state_(state) {}
  static BucketChange GroupChange(const RoundState& state);

  RoundState state_;  // (s0, m) -> (s, G, k), shared with round-mapping
};

}  // namespace roundtable::mapping

#endif  // ROUNDTABLE_ENGINE_MAPPING_LINEAR_HASHING_H_
