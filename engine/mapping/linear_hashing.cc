#include "engine/mapping/linear_hashing.h"

#include <bit>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace roundtable::mapping {
namespace {

// The stream of hash outputs a key draws from at one level of slack linear
// hashing: splitmix64 seeded by the key and the level, so each level acts as
// an independent hash function of the key.
class LevelStream {
 public:
  LevelStream(uint64_t key, int level)
      : state_(key ^ (static_cast<uint64_t>(level) * 0xD1B54A32D192ED03ULL)) {}

  uint64_t Next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }

 private:
  uint64_t state_;
};

// The slot a key ends in when its group grows from `count` slots (the key at
// `slot`) to `end` slots, each growth from n to n + 1 moving it to slot n with
// probability 1/(n + 1). The key stays put until count c with probability
// count / c, so the next jump lands at floor(count / u) for u uniform in
// (0, 1]: the walk of jump consistent hash, started mid-way.
uint64_t ContinueJump(LevelStream& stream, uint64_t slot, uint64_t count,
                      uint64_t end) {
  const double limit = static_cast<double>(end);
  while (true) {
    const double u =
        static_cast<double>((stream.Next() >> 11) + 1) * 0x1.0p-53;
    const double next = std::floor(static_cast<double>(count) / u);
    if (next >= limit) return slot;
    slot = static_cast<uint64_t>(next);
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
  if (absl::Status s = CheckRoundShape("linear-slack", s0, m); !s.ok()) {
    return s;
  }
  return SlackLinearHashing(RoundState(s0, m));
}

uint64_t SlackLinearHashing::FindBucket(uint64_t hash) const {
  const uint64_t s0 = state_.s0();
  const int levels = state_.log2_groups();
  uint64_t group = 0;
  uint64_t slot = 0;
  for (int level = 0; level <= levels; ++level) {
    LevelStream stream(hash, level);
    // Level 0 starts from a uniform slot among the s0 initial buckets; later
    // levels start from the slot the full expansion left.
    if (level == 0) slot = MulHi64(stream.Next(), s0);
    const uint64_t end = level < levels ? 2 * s0 : state_.arcs_in_group(group);
    slot = ContinueJump(stream, slot, s0, end);
    if (level < levels) {
      group |= (slot & 1) << level;
      slot >>= 1;
    }
  }
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
  return StepRoundState(name(), /*grow=*/true, state_, &GroupChange);
}

absl::StatusOr<BucketChange> SlackLinearHashing::FreeBucket() {
  return StepRoundState(name(), /*grow=*/false, state_, &GroupChange);
}

}  // namespace roundtable::mapping
