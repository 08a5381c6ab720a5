// Jump consistent hash (Lamping and Veach, 2014) and plain modulo, the two
// schemes that keep no per-bucket state: each lookup depends only on the hash
// and the bucket count.
//
// Thread-safety: as BucketMapping (const calls concurrent, mutators
// exclusive).
#ifndef ROUNDTABLE_ENGINE_MAPPING_JUMP_HASH_H_
#define ROUNDTABLE_ENGINE_MAPPING_JUMP_HASH_H_

#include <cstdint>
#include <string_view>

#include "absl/status/statusor.h"
#include "roundtable/mapping.h"

namespace roundtable::mapping {

// The bucket of `key` among `num_buckets` by jump consistent hash: a
// pseudo-random walk over the bucket numbers at which the key would move when
// buckets are added one at a time. Expected ln(num_buckets) iterations, each a
// 64-bit multiply and a double division. REQUIRES: num_buckets >= 1.
inline uint64_t JumpConsistentHash(uint64_t key, uint64_t num_buckets) {
  // The key sits in `bucket` for every count up to the next jump; a linear
  // congruential step draws each jump. The comparison stays in double so that
  // a far jump never overflows the integer conversion.
  const double limit = static_cast<double>(num_buckets);
  uint64_t bucket = 0;
  while (true) {
    key = key * 2862933555777941757ULL + 1;
    const double next = static_cast<double>(bucket + 1) *
                        (static_cast<double>(uint64_t{1} << 31) /
                         static_cast<double>((key >> 33) + 1));
    if (next >= limit) return bucket;
    bucket = static_cast<uint64_t>(next);
  }
}

// Every bucket 0 .. n - 1 as the sources of a change: the schemes whose new
// bucket draws keys from all buckets.
BucketChange AllBucketsChange(uint64_t n, uint64_t target);

class JumpMapping final : public BucketMapping {
 public:
  // Doubles keep the walk exact up to 2^52 buckets.
  static constexpr uint64_t kMaxBuckets = uint64_t{1} << 52;

  // InvalidArgument unless 1 <= m <= kMaxBuckets.
  static absl::StatusOr<JumpMapping> Create(uint64_t m);

  std::string_view name() const override { return "jump"; }
  MoveRule move_rule() const override { return MoveRule::kOnlyToNewBucket; }
  uint64_t num_buckets() const override { return m_; }
  uint64_t min_buckets() const override { return 1; }
  uint64_t max_buckets() const override { return kMaxBuckets; }

  uint64_t FindBucket(uint64_t hash) const override {
    return JumpConsistentHash(hash, m_);
  }
  // Every bucket may give about 1/(m + 1) of its keys to the new one, so the
  // sources are all m buckets.
  absl::StatusOr<BucketChange> NewBucket() override;
  absl::StatusOr<BucketChange> FreeBucket() override;

 private:
  explicit JumpMapping(uint64_t m) : m_(m) {}
  uint64_t m_;
};

// h mod m: the baseline. Adding a bucket moves about m/(m+1) of all keys.
class ModuloMapping final : public BucketMapping {
 public:
  static constexpr uint64_t kMaxBuckets = ~uint64_t{0};

  // InvalidArgument unless 1 <= m <= kMaxBuckets.
  static absl::StatusOr<ModuloMapping> Create(uint64_t m);

  std::string_view name() const override { return "modulo"; }
  MoveRule move_rule() const override { return MoveRule::kAnywhere; }
  uint64_t num_buckets() const override { return m_; }
  uint64_t min_buckets() const override { return 1; }
  uint64_t max_buckets() const override { return kMaxBuckets; }

  uint64_t FindBucket(uint64_t hash) const override { return hash % m_; }
  absl::StatusOr<BucketChange> NewBucket() override;
  absl::StatusOr<BucketChange> FreeBucket() override;

 private:
  explicit ModuloMapping(uint64_t m) : m_(m) {}
  uint64_t m_;
};

}  // namespace roundtable::mapping

#endif  // ROUNDTABLE_ENGINE_MAPPING_JUMP_HASH_H_
