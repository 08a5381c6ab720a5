// The contract every BucketMapping keeps, run against every scheme: buckets
// in range, NewBucket names the new bucket m and every bucket a key can leave,
// keys move as the scheme's MoveRule promises, and FreeBucket restores the
// previous mapping exactly.
#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "roundtable/mapping.h"
#include "engine/mapping/jump_hash.h"
#include "gtest/gtest.h"

namespace roundtable::mapping {
namespace {

struct Case {
  std::string name;
  uint64_t s0;
  uint64_t m;
};

std::string CaseName(const testing::TestParamInfo<Case>& info) {
  std::string name = info.param.name;
  std::replace(name.begin(), name.end(), '-', '_');
  return name + "_s0_" + std::to_string(info.param.s0) + "_m_" +
         std::to_string(info.param.m);
}

class MappingContractTest : public testing::TestWithParam<Case> {
 protected:
  std::unique_ptr<BucketMapping> Make() const {
    auto made = MakeMapping(GetParam().name, GetParam().s0, GetParam().m);
    EXPECT_TRUE(made.ok()) << made.status();
    return *std::move(made);
  }

  std::vector<uint64_t> Hashes(size_t n) const {
    const uint64_t seed = std::hash<std::string>()(GetParam().name) ^
                          GetParam().m * 31 ^ GetParam().s0;
    std::mt19937_64 rng(seed);
    std::vector<uint64_t> hashes(n);
    for (auto& h : hashes) h = rng();
    return hashes;
  }

  static std::vector<uint64_t> Buckets(const BucketMapping& map,
                                       const std::vector<uint64_t>& hashes) {
    std::vector<uint64_t> out;
    out.reserve(hashes.size());
    for (const uint64_t h : hashes) out.push_back(map.FindBucket(h));
    return out;
  }
};

TEST_P(MappingContractTest, BucketsAreInRangeAndAllUsed) {
  auto map = Make();
  ASSERT_EQ(map->num_buckets(), GetParam().m);
  std::vector<uint64_t> count(map->num_buckets(), 0);
  const size_t n = 200 * map->num_buckets();
  for (const uint64_t b : Buckets(*map, Hashes(n))) {
    ASSERT_LT(b, map->num_buckets());
    ++count[b];
  }
  // Every scheme here spreads keys within a factor of 2 of the mean; with 200
  // keys a bucket expected, an empty or four-fold bucket means a bug.
  for (uint64_t b = 0; b < count.size(); ++b) {
    EXPECT_GT(count[b], 200 / 4) << "bucket " << b;
    EXPECT_LT(count[b], 200 * 4) << "bucket " << b;
  }
}

TEST_P(MappingContractTest, GrowMovesKeysAsPromisedAndShrinkRestores) {
  auto map = Make();
  const std::vector<uint64_t> hashes = Hashes(20000);
  std::vector<std::vector<uint64_t>> history = {Buckets(*map, hashes)};
  std::vector<BucketChange> changes;
  const int steps = 40;
  for (int step = 0; step < steps; ++step) {
    const uint64_t m = map->num_buckets();
    auto change = map->NewBucket();
    ASSERT_TRUE(change.ok()) << change.status();
    ASSERT_EQ(change->target, m);
    ASSERT_EQ(map->num_buckets(), m + 1);
    const std::vector<uint64_t> after = Buckets(*map, hashes);
    const std::vector<uint64_t>& before = history.back();
    std::map<uint64_t, size_t> position;  // bucket -> index in sources
    for (size_t i = 0; i < change->sources.size(); ++i) {
      position[change->sources[i]] = i;
    }
    size_t moved = 0;
    for (size_t i = 0; i < hashes.size(); ++i) {
      if (after[i] == before[i]) continue;
      ++moved;
      ASSERT_TRUE(position.count(before[i]))
          << "step " << step << ": key left bucket " << before[i]
          << ", which is not among the sources";
      switch (map->move_rule()) {
        case MoveRule::kNextInSequence: {
          const size_t next = position[before[i]] + 1;
          const uint64_t want = next < change->sources.size()
                                    ? change->sources[next]
                                    : change->target;
          ASSERT_EQ(after[i], want) << "step " << step;
          break;
        }
        case MoveRule::kOnlyToNewBucket:
          ASSERT_EQ(after[i], change->target) << "step " << step;
          break;
        case MoveRule::kAnywhere:
          break;
      }
    }
    if (map->move_rule() == MoveRule::kOnlyToNewBucket) {
      // The new bucket takes its fair share, 1/(m + 1) of the keys (linear
      // hashing's split takes half of one bucket, which Litwin's scheme makes
      // a larger share below a power of two).
      const double fair = static_cast<double>(hashes.size()) / (m + 1);
      EXPECT_GT(static_cast<double>(moved), fair / 3) << "step " << step;
      EXPECT_LT(static_cast<double>(moved), fair * 3) << "step " << step;
    }
    history.push_back(after);
    changes.push_back(*std::move(change));
  }
  for (int step = steps - 1; step >= 0; --step) {
    auto undo = map->FreeBucket();
    ASSERT_TRUE(undo.ok()) << undo.status();
    EXPECT_EQ(undo->Touched(), changes[step].Touched()) << "step " << step;
    ASSERT_EQ(Buckets(*map, hashes), history[step]) << "step " << step;
  }
  EXPECT_EQ(map->num_buckets(), GetParam().m);
}

TEST_P(MappingContractTest, ShrinkStopsAtTheMinimum) {
  auto map = Make();
  while (map->num_buckets() > map->min_buckets()) {
    const uint64_t m = map->num_buckets();
    auto change = map->FreeBucket();
    ASSERT_TRUE(change.ok());
    ASSERT_EQ(change->target, m - 1);
    for (const uint64_t b : change->sources) ASSERT_LT(b, m - 1);
  }
  EXPECT_EQ(map->FreeBucket().status().code(),
            absl::StatusCode::kFailedPrecondition);
  for (const uint64_t b : Buckets(*map, Hashes(1000))) {
    ASSERT_LT(b, map->num_buckets());
  }
}

std::vector<Case> Cases() {
  std::vector<Case> cases;
  for (const std::string& name : MappingNames()) {
    for (const auto& [s0, m] :
         std::vector<std::pair<uint64_t, uint64_t>>{{1, 1},
                                                    {1, 5},
                                                    {3, 3},
                                                    {3, 32},
                                                    {4, 100},
                                                    {5, 123},
                                                    {32, 32},
                                                    {32, 200},
                                                    {64, 300}}) {
      cases.push_back({name, s0, m});
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(AllSchemes, MappingContractTest,
                         testing::ValuesIn(Cases()), CaseName);

TEST(MakeMappingTest, RejectsUnknownNamesAndBadShapes) {
  EXPECT_EQ(MakeMapping("ring", 1, 10).status().code(),
            absl::StatusCode::kInvalidArgument);
  for (const std::string& name : MappingNames()) {
    EXPECT_EQ(MakeMapping(name, 1, 0).status().code(),
              absl::StatusCode::kInvalidArgument)
        << name;
    auto made = MakeMapping(name, 4, 10);
    ASSERT_TRUE(made.ok()) << name;
    EXPECT_EQ((*made)->name(), name);
  }
  EXPECT_EQ(MakeMapping("round", 0, 10).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(MakeMapping("linear-slack", 11, 10).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(MakeMappingTest, ChangesTooLongToListAreRefusedAndChangeNothing) {
  for (const std::string name : {"jump", "modulo"}) {
    auto made = MakeMapping(name, 1, kMaxListedBuckets + 2);
    ASSERT_TRUE(made.ok());
    BucketMapping& map = **made;
    EXPECT_EQ(map.NewBucket().status().code(),
              absl::StatusCode::kResourceExhausted)
        << name;
    EXPECT_EQ(map.FreeBucket().status().code(),
              absl::StatusCode::kResourceExhausted)
        << name;
    EXPECT_EQ(map.num_buckets(), kMaxListedBuckets + 2) << name;
  }
}

TEST(JumpHashTest, MovesAboutOneOverMPlusOneToTheNewBucket) {
  std::mt19937_64 rng(42);
  std::vector<uint64_t> keys(200000);
  for (auto& k : keys) k = rng();
  for (const uint64_t m : {1, 2, 10, 99, 1000}) {
    size_t moved = 0;
    for (const uint64_t k : keys) {
      const uint64_t a = JumpConsistentHash(k, m);
      const uint64_t b = JumpConsistentHash(k, m + 1);
      if (a != b) {
        ASSERT_EQ(b, m);
        ++moved;
      }
    }
    const double expected = static_cast<double>(keys.size()) / (m + 1);
    EXPECT_NEAR(static_cast<double>(moved), expected,
                6 * std::sqrt(expected) + 1)
        << "m = " << m;
  }
}

TEST(JumpHashTest, HandlesVeryLargeBucketCounts) {
  std::mt19937_64 rng(43);
  for (int i = 0; i < 1000; ++i) {
    const uint64_t k = rng();
    ASSERT_LT(JumpConsistentHash(k, JumpMapping::kMaxBuckets),
              JumpMapping::kMaxBuckets);
    ASSERT_EQ(JumpConsistentHash(k, 1), 0u);
  }
}

}  // namespace
}  // namespace roundtable::mapping
