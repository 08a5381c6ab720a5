// The interface shared by every scheme that maps a 64-bit hash to one of m
// buckets and can add or release a bucket: round-mapping, jump consistent
// hash, linear hashing (slack-s0 and Litwin) and plain modulo.
//
// Thread-safety: FindBucket and the accessors are const and safe to call from
// any number of threads at once; NewBucket and FreeBucket mutate and need
// external synchronisation against every other call.
#ifndef ROUNDTABLE_MAPPING_H_
#define ROUNDTABLE_MAPPING_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "roundtable/export.h"

namespace roundtable::mapping {

// What a NewBucket or FreeBucket changed: the buckets whose keys may move and
// the bucket that was added or released.
//
// NewBucket: `sources` are the buckets that may give keys away, in the order a
// distribute walks them (arc order for round-mapping); `target` is the new
// bucket, numbered m (the old bucket count). FreeBucket: `sources` are the
// buckets that take the released bucket's keys back and `target` is the
// released bucket, m - 1. A key never moves between two buckets that are both
// outside sources + target.
struct BucketChange {
  std::vector<uint64_t> sources;
  uint64_t target = 0;

  // sources followed by target: the form the CLI prints and the paper returns.
  std::vector<uint64_t> Touched() const {
    std::vector<uint64_t> all = sources;
    all.push_back(target);
    return all;
  }
};

// The most buckets a BucketChange lists. A step whose sources would be longer
// (a round-mapping step with s0 in the tens of millions, a jump-hash grow past
// that many buckets) fails with ResourceExhausted and changes nothing, rather
// than allocating without bound.
inline constexpr uint64_t kMaxListedBuckets = uint64_t{1} << 26;

// OK unless a change with `sources` buckets would pass kMaxListedBuckets;
// then ResourceExhausted naming the scheme.
ROUNDTABLE_EXPORT absl::Status CheckListable(std::string_view scheme,
                                             uint64_t sources);

// How keys move when a bucket is added, used by the tests and the docs to
// state each scheme's promise.
enum class MoveRule {
  // A key in sources[i] stays or moves to sources[i + 1] (target after the
  // last): round-mapping's arc shift.
  kNextInSequence,
  // A key stays or moves to the new bucket: jump hash and linear hashing.
  kOnlyToNewBucket,
  // Keys may move anywhere: modulo.
  kAnywhere,
};

class ROUNDTABLE_EXPORT BucketMapping {
 public:
  virtual ~BucketMapping() = default;

  // Short name used on command lines and in benchmark output ("round",
  // "jump", "linear-slack", "linear-litwin", "modulo").
  virtual std::string_view name() const = 0;
  virtual MoveRule move_rule() const = 0;

  // The current number of buckets m; buckets are numbered 0 .. m - 1.
  virtual uint64_t num_buckets() const = 0;
  // The smallest and largest bucket counts this scheme accepts.
  virtual uint64_t min_buckets() const = 0;
  virtual uint64_t max_buckets() const = 0;

  // The bucket of a 64-bit hash value, in [0, num_buckets()).
  virtual uint64_t FindBucket(uint64_t hash) const = 0;

  // Adds bucket m = num_buckets(). ResourceExhausted at max_buckets(), or
  // when the change would list more than kMaxListedBuckets buckets.
  virtual absl::StatusOr<BucketChange> NewBucket() = 0;
  // Releases bucket m - 1, exactly undoing the last NewBucket: afterwards
  // every hash maps where it did before that NewBucket. FailedPrecondition at
  // min_buckets().
  virtual absl::StatusOr<BucketChange> FreeBucket() = 0;
};

// The scheme names MakeMapping accepts, in a stable order.
ROUNDTABLE_EXPORT std::vector<std::string> MappingNames();

// Builds a scheme by name with m buckets. `s0` is the slack of round-mapping
// and slack-s0 linear hashing (their minimum bucket count); the other schemes
// ignore it. InvalidArgument for an unknown name or a bad (s0, m).
ROUNDTABLE_EXPORT absl::StatusOr<std::unique_ptr<BucketMapping>> MakeMapping(
    std::string_view name, uint64_t s0, uint64_t num_buckets);

}  // namespace roundtable::mapping

#endif  // ROUNDTABLE_MAPPING_H_
