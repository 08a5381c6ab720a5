#include "engine/mapping/jump_hash.h"

#include <numeric>

#include "absl/strings/str_cat.h"

namespace roundtable::mapping {
namespace {

absl::Status CheckCount(std::string_view scheme, uint64_t m, uint64_t max) {
  if (m < 1 || m > max) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(scheme), ": bucket count ", m,
                     " is outside [1, ", max, "]"));
  }
  return absl::OkStatus();
}

// Grows or shrinks a stateless scheme's count by one: every bucket may give
// keys to the new bucket or take back the released one's.
absl::StatusOr<BucketChange> StepCount(std::string_view scheme, bool grow,
                                       uint64_t& m, uint64_t max) {
  if (grow) {
    if (m >= max) {
      return absl::ResourceExhaustedError(absl::StrCat(
          std::string(scheme), ": bucket count is at its maximum ", max));
    }
    if (absl::Status s = CheckListable(scheme, m); !s.ok()) return s;
    ++m;
    return AllBucketsChange(m - 1, m - 1);
  }
  if (m <= 1) {
    return absl::FailedPreconditionError(
        absl::StrCat(std::string(scheme), ": cannot release the last bucket"));
  }
  if (absl::Status s = CheckListable(scheme, m - 1); !s.ok()) return s;
  --m;
  return AllBucketsChange(m, m);
}

}  // namespace

BucketChange AllBucketsChange(uint64_t n, uint64_t target) {
  BucketChange change;
  change.sources.resize(n);
  std::iota(change.sources.begin(), change.sources.end(), uint64_t{0});
  change.target = target;
  return change;
}

absl::StatusOr<JumpMapping> JumpMapping::Create(uint64_t m) {
  if (absl::Status s = CheckCount("jump", m, kMaxBuckets); !s.ok()) return s;
  return JumpMapping(m);
}

absl::StatusOr<BucketChange> JumpMapping::NewBucket() {
  return StepCount(name(), /*grow=*/true, m_, kMaxBuckets);
}

absl::StatusOr<BucketChange> JumpMapping::FreeBucket() {
  return StepCount(name(), /*grow=*/false, m_, kMaxBuckets);
}

absl::StatusOr<ModuloMapping> ModuloMapping::Create(uint64_t m) {
  if (absl::Status s = CheckCount("modulo", m, kMaxBuckets); !s.ok()) return s;
  return ModuloMapping(m);
}

absl::StatusOr<BucketChange> ModuloMapping::NewBucket() {
  return StepCount(name(), /*grow=*/true, m_, kMaxBuckets);
}

absl::StatusOr<BucketChange> ModuloMapping::FreeBucket() {
  return StepCount(name(), /*grow=*/false, m_, kMaxBuckets);
}

}  // namespace roundtable::mapping
