#include "engine/mapping/round_mapping.h"

#include <algorithm>
#include <bit>

#include "absl/strings/str_cat.h"

namespace roundtable::mapping {

RoundState::RoundState(uint64_t s0, uint64_t m) : s0_(s0), m_(m) {
  const uint64_t groups = std::bit_floor(m / s0);
  log2_groups_ = std::countr_zero(groups);
  s_ = m >> log2_groups_;
  k_ = m & (groups - 1);
}

uint64_t RoundState::FindArc(uint64_t h) const {
  const uint64_t g = GroupOf(h);
  // Groups before g hold s arcs each, plus one more for each converted one.
  return g * s_ + std::min(g, k_) + PositionOf(h, g);
}

uint64_t RoundState::BucketOfArc(uint64_t j) const {
  const uint64_t short_arcs = k_ * (s_ + 1);
  if (j < short_arcs) return BucketAt(j / (s_ + 1), j % (s_ + 1));
  j -= short_arcs;
  return BucketAt(k_ + j / s_, j % s_);
}

uint64_t RoundState::ArcEnd(uint64_t h) const {
  const int lg = log2_groups_;
  const uint64_t g = GroupOf(h);
  const uint64_t t = arcs_in_group(g);
  const uint64_t p = PositionOf(h, g);
  // Group g's hashes are g * 2^(64 - lg) + y, y < 2^(64 - lg), and y lies in
  // arc floor(y * 2^lg * t / 2^64); the next arc starts at the least y with
  // y * t >= (p + 1) * 2^(64 - lg).
  const unsigned __int128 width = static_cast<unsigned __int128>(1) << (64 - lg);
  const unsigned __int128 next = ((p + 1) * width + t - 1) / t;
  const unsigned __int128 end = g * width + next;
  return static_cast<uint64_t>(end);  // 2^64, the circle's end, is 0
}

absl::Status CheckRoundShape(std::string_view scheme, uint64_t s0, uint64_t m,
                             uint64_t max_buckets) {
  if (s0 == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(scheme), ": s0 must be at least 1"));
  }
  if (m < s0) {
    return absl::InvalidArgumentError(absl::StrCat(
        std::string(scheme), ": bucket count ", m, " is below s0 = ", s0));
  }
  if (m > max_buckets) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(scheme), ": bucket count ", m,
                     " exceeds the maximum ", max_buckets));
  }
  return absl::OkStatus();
}

absl::StatusOr<RoundMapping> RoundMapping::Create(uint64_t s0, uint64_t m) {
  if (absl::Status s = CheckRoundShape("round", s0, m, kMaxBuckets); !s.ok()) {
    return s;
  }
  return RoundMapping(RoundState(s0, m));
}

BucketChange RoundMapping::GroupChange(const RoundState& state) {
  BucketChange change;
  const uint64_t g = state.converted();
  change.sources.reserve(state.step());
  for (uint64_t p = 0; p < state.step(); ++p) {
    change.sources.push_back(state.BucketAt(g, p));
  }
  change.target = state.num_buckets();
  return change;
}

absl::StatusOr<BucketChange> StepRoundState(
    std::string_view scheme, bool grow, uint64_t max_buckets, RoundState& state,
    BucketChange (*change_of)(const RoundState&)) {
  const uint64_t m = state.num_buckets();
  if (grow) {
    if (m >= max_buckets) {
      return absl::ResourceExhaustedError(
          absl::StrCat(std::string(scheme), ": bucket count is at its maximum ",
                       max_buckets));
    }
    if (absl::Status s = CheckListable(scheme, state.step()); !s.ok()) {
      return s;
    }
    BucketChange change = change_of(state);
    state = RoundState(state.s0(), m + 1);
    return change;
  }
  if (m <= state.s0()) {
    return absl::FailedPreconditionError(
        absl::StrCat(std::string(scheme),
                     ": cannot release a bucket below s0 = ", state.s0()));
  }
  // The last NewBucket ran from m - 1; replaying its view gives the same
  // buckets, and the released one is its new bucket m - 1.
  const RoundState previous(state.s0(), m - 1);
  if (absl::Status s = CheckListable(scheme, previous.step()); !s.ok()) {
    return s;
  }
  state = previous;
  return change_of(state);
}

absl::StatusOr<BucketChange> RoundMapping::NewBucket() {
  return StepRoundState(name(), /*grow=*/true, kMaxBuckets, state_,
                        &GroupChange);
}

absl::StatusOr<BucketChange> RoundMapping::FreeBucket() {
  return StepRoundState(name(), /*grow=*/false, kMaxBuckets, state_,
                        &GroupChange);
}

}  // namespace roundtable::mapping
