#include "engine/mapping/linear_hashing.h"

#include <bit>

#include "absl/strings/str_cat.h"

namespace roundtable::mapping {
namespace {

// The stream of hash outputs a key draws from: the j-th output acts as the
// j-th hash function of the key. Seeded by a full 64-bit mix of the key, then
// stepped by a 64-bit linear congruential generator whose high bits are used
// (as jump consistent hash does).
//
// One stream serves every level in turn. The draws of level l depend only on
// the key and on the draws of levels before l, which always run to 2 * s0
// slots, so the sequence a level sees never changes as its group grows:
// that is what keeps a grow from moving keys anywhere but to the new bucket.
class KeyStream {
 public:
  explicit KeyStream(uint64_t key) : state_(Mix(key)) {}

  uint64_t Next() {
    state_ = state_ * 6364136223846793005ULL + 1442695040888963407ULL;
    return state_;
  }
  // The next output's top 53 bits as a double in (0, 1].
  double NextUnit() {
    return static_cast<double>((Next() >> 11) + 1) * 0x1.0p-53;
  }

 private:
  static uint64_t Mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  uint64_t state_;
};

// The slot a key ends in when its group grows from `count` slots (the key at
// `slot`) to `end` slots, each growth from n to n + 1 moving it to slot n with
// probability 1/(n + 1). The key stays put until count c with probability
// count / c, so its next jump lands at floor(count / u) for u uniform in
// (0, 1]: the walk of jump consistent hash, started mid-way. A level's walk
// jumps about ln 2 times on average.
uint64_t ContinueJump(KeyStream& stream, uint64_t slot, uint64_t count,
                      uint64_t end) {
  const double limit = static_cast<double>(end);
  while (true) {
    const double u = stream.NextUnit();
    // count / u >= end, tested without the division: only a jump needs its
    // landing slot, and the quotient then fits in 64 bits.
    if (static_cast<double>(count) >= limit * u) return slot;
    slot = static_cast<uint64_t>(static_cast<double>(count) / u);
    count = slot + 1;
  }
}

}  // namespace

absl::StatusOr<LitwinLinearHashing> LitwinLinearHashing::Create(uint64_t m) {
  if (m < 1 || m > kMaxBuckets) {
    return absl::InvalidArgumentError(absl::StrCat(
        "linear-litwin: bucket count ", m, " is outside [1, 2^62]"));
  }
  return LitwinLinearHashing(m);
}

void LitwinLinearHashing::SetBuckets(uint64_t m) {
  m_ = m;
  level_size_ = std::bit_floor(m);
  split_ = m - level_size_;
}

BucketChange LitwinLinearHashing::SplitChange() const {
  return BucketChange{{split_}, m_};
}

absl::StatusOr<BucketChange> LitwinLinearHashing::NewBucket() {
  if (m_ >= kMaxBuckets) {
    return absl::ResourceExhaustedError(
        "linear-litwin: bucket count is at its maximum 2^62");
  }
  BucketChange change = SplitChange();
  SetBuckets(m_ + 1);
  return change;
}

absl::StatusOr<BucketChange> LitwinLinearHashing::FreeBucket() {
  if (m_ <= 1) {
    return absl::FailedPreconditionError(
        "linear-litwin: cannot release the last bucket");
  }
  SetBuckets(m_ - 1);
  return SplitChange();
}

absl::StatusOr<SlackLinearHashing> SlackLinearHashing::Create(uint64_t s0,
                                                              uint64_t m) {
  if (absl::Status s = CheckRoundShape("linear-slack", s0, m, kMaxBuckets);
      !s.ok()) {
    return s;
  }
  return SlackLinearHashing(RoundState(s0, m));
}

uint64_t SlackLinearHashing::FindBucket(uint64_t hash) const {
  const uint64_t s0 = state_.s0();
  const int levels = state_.log2_groups();
  KeyStream stream(hash);
  // Level 0 starts from a uniform slot among the s0 initial buckets; each
  // later level starts from the slot the full expansion before it left.
  uint64_t slot = MulHi64(stream.Next(), s0);
  uint64_t group = 0;
  for (int level = 0; level < levels; ++level) {
    slot = ContinueJump(stream, slot, s0, 2 * s0);
    group |= (slot & 1) << level;
    slot >>= 1;
  }
  slot = ContinueJump(stream, slot, s0, state_.arcs_in_group(group));
  return group + (slot << levels);
}

BucketChange SlackLinearHashing::GroupChange(const RoundState& state) {
  BucketChange change;
  const uint64_t g = state.converted();
  change.sources.reserve(state.step());
  for (uint64_t i = 0; i < state.step(); ++i) {
    change.sources.push_back(g + (i << state.log2_groups()));
  }
  change.target = state.num_buckets();
  return change;
}

absl::StatusOr<BucketChange> SlackLinearHashing::NewBucket() {
  return StepRoundState(name(), /*grow=*/true, kMaxBuckets, state_,
                        &GroupChange);
}

absl::StatusOr<BucketChange> SlackLinearHashing::FreeBucket() {
  return StepRoundState(name(), /*grow=*/false, kMaxBuckets, state_,
                        &GroupChange);
}

}  // namespace roundtable::mapping
