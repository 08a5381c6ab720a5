// The balance experiment's counting and summary, checked against the exact
// arc lengths derived in round-hashing-notes.md section 4.
#include "tools/roundtable/balance.h"

#include <numeric>

#include "engine/mapping/round_mapping.h"
#include "gtest/gtest.h"

namespace roundtable::cli {
namespace {

TEST(SummariseSizesTest, KnownDistribution) {
  // 100 buckets: 1 .. 100, mean 50.5.
  std::vector<uint64_t> sizes(100);
  std::iota(sizes.begin(), sizes.end(), uint64_t{1});
  const BalanceStats s = SummariseSizes(sizes);
  EXPECT_NEAR(s.min, 1 / 50.5, 1e-12);
  EXPECT_NEAR(s.max, 100 / 50.5, 1e-12);
  EXPECT_NEAR(s.p1, 1 / 50.5, 1e-12);
  EXPECT_NEAR(s.p99, 99 / 50.5, 1e-12);
  EXPECT_NEAR(s.p99_over_p1, 99.0, 1e-12);
  // Population sigma of 1..100 is sqrt((100^2 - 1) / 12).
  EXPECT_NEAR(s.sigma_over_mu, std::sqrt(9999.0 / 12) / 50.5, 1e-12);
}

TEST(CountEvenlySpacedTest, CountsEveryValueOnceWhateverTheThreads) {
  auto map = mapping::RoundMapping::Create(5, 123);
  ASSERT_TRUE(map.ok());
  const uint64_t values = 1000003;
  const std::vector<uint64_t> one = CountEvenlySpaced(*map, values, 1);
  EXPECT_EQ(std::accumulate(one.begin(), one.end(), uint64_t{0}), values);
  EXPECT_EQ(CountEvenlySpaced(*map, values, 2), one);
  EXPECT_EQ(CountEvenlySpaced(*map, values, 7), one);
}

TEST(CountEvenlySpacedTest, MatchesExactArcLengthsForRoundMapping) {
  // Notes section 4: round-mapping over 10^4 buckets, normalised sizes.
  struct Row {
    uint64_t s0;
    double sigma, min, max;
  };
  for (const Row& row : std::vector<Row>{{1, 0.29325, 0.61035, 1.22070},
                                         {8, 0.04465, 0.97656, 1.08507},
                                         {64, 0.00421, 0.98892, 1.00160}}) {
    auto map = mapping::RoundMapping::Create(row.s0, 10000);
    ASSERT_TRUE(map.ok());
    // 10^7 evenly spaced values: 1000 a bucket, so the +-1 rounding of each
    // arc costs at most 1e-3 of a normalised size.
    const BalanceStats s = SummariseSizes(CountEvenlySpaced(*map, 10000000, 2));
    EXPECT_NEAR(s.sigma_over_mu, row.sigma, 2e-3) << "s0 = " << row.s0;
    EXPECT_NEAR(s.min, row.min, 2e-3) << "s0 = " << row.s0;
    EXPECT_NEAR(s.max, row.max, 2e-3) << "s0 = " << row.s0;
  }
}

}  // namespace
}  // namespace roundtable::cli
