// Round-mapping against the paper's Figure 1, the worked examples and test
// vectors of round-hashing-notes.md, and two independent implementations: a
// literal simulation of the paper's newBucket text over an explicit list of
// arcs with exact rational lengths, and the notes' division-based formula.
#include "engine/mapping/round_mapping.h"

#include <cstdint>
#include <numeric>
#include <random>
#include <set>
#include <vector>

#include "gtest/gtest.h"
#include "tests/engine/mapping/reference_round_mapping.h"

namespace roundtable::mapping {
namespace {

using u128 = unsigned __int128;

RoundMapping Make(uint64_t s0, uint64_t m) {
  auto made = RoundMapping::Create(s0, m);
  EXPECT_TRUE(made.ok()) << made.status();
  return *std::move(made);
}

std::vector<uint64_t> Arcs(const RoundState& state) {
  std::vector<uint64_t> arcs;
  for (uint64_t j = 0; j < state.num_buckets(); ++j) {
    arcs.push_back(state.BucketOfArc(j));
  }
  return arcs;
}

// ---------------------------------------------------------------------------
// Vectors from the paper and the notes.

TEST(RoundMappingTest, FigureOneGrowSteps) {
  RoundMapping map = Make(3, 32);
  EXPECT_EQ(map.state().step(), 4u);
  EXPECT_EQ(map.state().groups(), 8u);
  EXPECT_EQ(map.state().converted(), 0u);
  const std::vector<std::vector<uint64_t>> expected = {
      {0, 1, 2, 24, 32}, {12, 16, 20, 25, 33}, {6, 8, 10, 26, 34}};
  for (const auto& want : expected) {
    auto change = map.NewBucket();
    ASSERT_TRUE(change.ok());
    EXPECT_EQ(change->Touched(), want);
  }
}

TEST(RoundMappingTest, FigureOneEndOfRoundFour) {
  // Arc 3 carries 24 and arc 4 carries 32 (the paper's "arc 4 has 24" is off
  // by one); arc 47 carries 47.
  const std::vector<uint64_t> want = {
      0,  1,  2,  24, 32, 40, 12, 16, 20, 25, 33, 41, 6,  8,  10, 26,
      34, 42, 13, 17, 21, 27, 35, 43, 3,  4,  5,  28, 36, 44, 14, 18,
      22, 29, 37, 45, 7,  9,  11, 30, 38, 46, 15, 19, 23, 31, 39, 47};
  EXPECT_EQ(Arcs(RoundState(3, 48)), want);
}

struct TableRow {
  uint64_t m, s, groups, k;
  std::vector<uint64_t> returned;  // newBucket() at m - 1, new bucket last
  std::vector<uint64_t> arcs;
};

// round-hashing-notes.md section 1.4 (s0 = 3, m = 3 .. 24).
const std::vector<TableRow>& SmallTable() {
  static const auto* rows = new std::vector<TableRow>{
      {3, 3, 1, 0, {}, {0, 1, 2}},
      {4, 4, 1, 0, {0, 1, 2, 3}, {0, 1, 2, 3}},
      {5, 5, 1, 0, {0, 1, 2, 3, 4}, {0, 1, 2, 3, 4}},
      {6, 3, 2, 0, {0, 1, 2, 3, 4, 5}, {0, 1, 2, 3, 4, 5}},
      {7, 3, 2, 1, {0, 1, 2, 6}, {0, 1, 2, 6, 3, 4, 5}},
      {8, 4, 2, 0, {3, 4, 5, 7}, {0, 1, 2, 6, 3, 4, 5, 7}},
      {9, 4, 2, 1, {0, 1, 2, 6, 8}, {0, 1, 2, 6, 8, 3, 4, 5, 7}},
      {10, 5, 2, 0, {3, 4, 5, 7, 9}, {0, 1, 2, 6, 8, 3, 4, 5, 7, 9}},
      {11, 5, 2, 1, {0, 1, 2, 6, 8, 10}, {0, 1, 2, 6, 8, 10, 3, 4, 5, 7, 9}},
      {12,
       3,
       4,
       0,
       {3, 4, 5, 7, 9, 11},
       {0, 1, 2, 6, 8, 10, 3, 4, 5, 7, 9, 11}},
      {13, 3, 4, 1, {0, 1, 2, 12}, {0, 1, 2, 12, 6, 8, 10, 3, 4, 5, 7, 9, 11}},
      {14,
       3,
       4,
       2,
       {6, 8, 10, 13},
       {0, 1, 2, 12, 6, 8, 10, 13, 3, 4, 5, 7, 9, 11}},
      {15,
       3,
       4,
       3,
       {3, 4, 5, 14},
       {0, 1, 2, 12, 6, 8, 10, 13, 3, 4, 5, 14, 7, 9, 11}},
      {16,
       4,
       4,
       0,
       {7, 9, 11, 15},
       {0, 1, 2, 12, 6, 8, 10, 13, 3, 4, 5, 14, 7, 9, 11, 15}},
      {17,
       4,
       4,
       1,
       {0, 1, 2, 12, 16},
       {0, 1, 2, 12, 16, 6, 8, 10, 13, 3, 4, 5, 14, 7, 9, 11, 15}},
      {18,
       4,
       4,
       2,
       {6, 8, 10, 13, 17},
       {0, 1, 2, 12, 16, 6, 8, 10, 13, 17, 3, 4, 5, 14, 7, 9, 11, 15}},
      {19,
       4,
       4,
       3,
       {3, 4, 5, 14, 18},
       {0, 1, 2, 12, 16, 6, 8, 10, 13, 17, 3, 4, 5, 14, 18, 7, 9, 11, 15}},
      {20, 5, 4, 0, {7, 9, 11, 15, 19}, {0, 1, 2, 12, 16, 6, 8, 10, 13, 17,
                                         3, 4, 5, 14, 18, 7, 9, 11, 15, 19}},
      {21, 5, 4, 1, {0, 1, 2, 12, 16, 20}, {0,  1,  2,  12, 16, 20, 6,
                                            8,  10, 13, 17, 3,  4,  5,
                                            14, 18, 7,  9,  11, 15, 19}},
      {22, 5, 4, 2, {6, 8, 10, 13, 17, 21}, {0,  1,  2,  12, 16, 20, 6, 8,
                                             10, 13, 17, 21, 3,  4,  5, 14,
                                             18, 7,  9,  11, 15, 19}},
      {23, 5, 4, 3, {3, 4, 5, 14, 18, 22}, {0,  1,  2,  12, 16, 20, 6, 8,
                                            10, 13, 17, 21, 3,  4,  5, 14,
                                            18, 22, 7,  9,  11, 15, 19}},
      {24, 3, 8, 0, {7, 9, 11, 15, 19, 23}, {0,  1,  2,  12, 16, 20, 6,  8,
                                             10, 13, 17, 21, 3,  4,  5,  14,
                                             18, 22, 7,  9,  11, 15, 19, 23}},
  };
  return *rows;
}

TEST(RoundMappingTest, WorkedExampleGrowingFromThree) {
  RoundMapping map = Make(3, 3);
  for (const TableRow& row : SmallTable()) {
    SCOPED_TRACE(testing::Message() << "m = " << row.m);
    if (!row.returned.empty()) {
      auto change = map.NewBucket();
      ASSERT_TRUE(change.ok());
      EXPECT_EQ(change->Touched(), row.returned);
    }
    const RoundState& state = map.state();
    EXPECT_EQ(state.num_buckets(), row.m);
    EXPECT_EQ(state.step(), row.s);
    EXPECT_EQ(state.groups(), row.groups);
    EXPECT_EQ(state.converted(), row.k);
    EXPECT_EQ(Arcs(state), row.arcs);
  }
}

TEST(RoundMappingTest, WorkedExampleShrinkingToThree) {
  RoundMapping map = Make(3, 24);
  const auto& rows = SmallTable();
  for (size_t i = rows.size() - 1; i > 0; --i) {
    SCOPED_TRACE(testing::Message() << "from m = " << rows[i].m);
    auto change = map.FreeBucket();
    ASSERT_TRUE(change.ok());
    EXPECT_EQ(change->Touched(), rows[i].returned);
    EXPECT_EQ(Arcs(map.state()), rows[i - 1].arcs);
  }
  EXPECT_EQ(map.FreeBucket().status().code(),
            absl::StatusCode::kFailedPrecondition);
}

struct FindVector {
  uint64_t s0, m, s, groups, k, hash, arc, bucket;
};

TEST(RoundMappingTest, SixtyFourBitFindVectors) {
  // round-hashing-notes.md section 1.5.
  const std::vector<FindVector> vectors = {
      {3, 35, 4, 8, 3, 0x0, 0, 0},
      {3, 35, 4, 8, 3, 0x8000000000000000, 19, 3},
      {3, 35, 4, 8, 3, 0xffffffffffffffff, 34, 31},
      {3, 35, 4, 8, 3, 0x5fffffffffffffff, 14, 34},
      {3, 35, 4, 8, 3, 0x6000000000000000, 15, 13},
      {3, 35, 4, 8, 3, 0x9e3779b97f4a7c15, 22, 28},
      {3, 48, 3, 16, 0, 0x8000000000000000, 24, 3},
      {3, 48, 3, 16, 0, 0xffffffffffffffff, 47, 47},
      {3, 48, 3, 16, 0, 0x9e3779b97f4a7c15, 29, 44},
      {64, 10000, 78, 128, 16, 0x8000000000000000, 5008, 64},
      {64, 10000, 78, 128, 16, 0xffffffffffffffff, 9999, 9983},
      {64, 10000, 78, 128, 16, 0x1fffffffffffffff, 1263, 9999},
      {64, 10000, 78, 128, 16, 0x2000000000000000, 1264, 256},
      {64, 10000, 78, 128, 16, 0x9e3779b97f4a7c15, 6186, 4647},
      {5, 123, 7, 16, 11, 0x8000000000000000, 64, 5},
      {5, 123, 7, 16, 11, 0xafffffffffffffff, 87, 122},
      {5, 123, 7, 16, 11, 0xb000000000000000, 88, 45},
      {5, 123, 7, 16, 11, 0x9e3779b97f4a7c15, 79, 121},
  };
  for (const FindVector& v : vectors) {
    SCOPED_TRACE(testing::Message() << "s0=" << v.s0 << " m=" << v.m << " h=0x"
                                    << std::hex << v.hash);
    const RoundMapping map = Make(v.s0, v.m);
    EXPECT_EQ(map.state().step(), v.s);
    EXPECT_EQ(map.state().groups(), v.groups);
    EXPECT_EQ(map.state().converted(), v.k);
    EXPECT_EQ(map.state().FindArc(v.hash), v.arc);
    EXPECT_EQ(map.FindBucket(v.hash), v.bucket);
    EXPECT_EQ(map.state().BucketOfArc(v.arc), v.bucket);
  }
}

TEST(RoundMappingTest, CreateRejectsBadShapes) {
  EXPECT_EQ(RoundMapping::Create(0, 10).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RoundMapping::Create(5, 4).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(RoundMapping::Create(7, 7).ok());
  EXPECT_TRUE(RoundMapping::Create(1, ~uint64_t{0}).ok());
  EXPECT_TRUE(RoundMapping::Create(~uint64_t{0}, ~uint64_t{0}).ok());
}

TEST(RoundMappingTest, GrowStopsAtTheMaximum) {
  RoundMapping map = Make(3, RoundMapping::kMaxBuckets - 1);
  ASSERT_TRUE(map.NewBucket().ok());
  EXPECT_EQ(map.NewBucket().status().code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(map.num_buckets(), RoundMapping::kMaxBuckets);
}

// ---------------------------------------------------------------------------
// Independent implementation 1: the paper's newBucket text, literally, on an
// explicit list of arcs with exact rational lengths.

struct Fraction {
  u128 num = 0;
  u128 den = 1;
};

u128 Gcd(u128 a, u128 b) {
  while (b != 0) {
    const u128 t = a % b;
    a = b;
    b = t;
  }
  return a;
}

Fraction Reduced(u128 num, u128 den) {
  const u128 g = Gcd(num, den);
  return {num / g, den / g};
}

class LiteralRoundMapping {
 public:
  explicit LiteralRoundMapping(uint64_t s0) : s0_(s0), s_(s0) {
    for (uint64_t b = 0; b < s0; ++b) arcs_.push_back({b, false, {1, s0}});
  }

  // "If all arcs are short, make them long; also, if s = 2s0 - 1 then set
  // s := s0, else s := s + 1. Starting from arc 0 and proceeding clockwise,
  // find the sequence of the s closest long arcs, and shrink each of them so
  // that it becomes short. A new short arc is allocated at the end of the
  // sequence, with bucket number m. Return the bucket numbers for the former
  // arcs."
  std::vector<uint64_t> NewBucket() {
    bool all_short = true;
    for (const Arc& a : arcs_) all_short = all_short && a.is_short;
    if (all_short) {
      for (Arc& a : arcs_) a.is_short = false;
      s_ = s_ == 2 * s0_ - 1 ? s0_ : s_ + 1;
    }
    size_t first = 0;
    while (arcs_[first].is_short) ++first;
    std::vector<uint64_t> former;
    u128 total_num = 0;
    const u128 den = arcs_[first].length.den;  // all long arcs share it
    for (size_t i = first; i < first + s_; ++i) {
      EXPECT_FALSE(arcs_[i].is_short);
      EXPECT_EQ(arcs_[i].length.den, den);
      former.push_back(arcs_[i].bucket);
      total_num += arcs_[i].length.num;
    }
    const Fraction short_length = Reduced(total_num, den * (s_ + 1));
    for (size_t i = first; i < first + s_; ++i) {
      arcs_[i].is_short = true;
      arcs_[i].length = short_length;
    }
    const uint64_t m = arcs_.size();
    arcs_.insert(arcs_.begin() + first + s_, Arc{m, true, short_length});
    return former;
  }

  std::vector<uint64_t> Buckets() const {
    std::vector<uint64_t> out;
    for (const Arc& a : arcs_) out.push_back(a.bucket);
    return out;
  }

  // The arc holding hash h, by exact comparison of h / 2^64 with the
  // cumulative arc boundaries.
  uint64_t FindArc(uint64_t h) const {
    u128 lcm = 1;
    for (const Arc& a : arcs_)
      lcm = lcm / Gcd(lcm, a.length.den) * a.length.den;
    u128 end = 0;  // boundary numerator over lcm
    for (size_t j = 0; j < arcs_.size(); ++j) {
      end += arcs_[j].length.num * (lcm / arcs_[j].length.den);
      // h / 2^64 < end / lcm  <=>  h * lcm < end * 2^64
      if (static_cast<u128>(h) * lcm < (end << 64)) return j;
    }
    ADD_FAILURE() << "arc lengths do not sum to 1";
    return 0;
  }

  uint64_t FindBucket(uint64_t h) const { return arcs_[FindArc(h)].bucket; }

 private:
  struct Arc {
    uint64_t bucket;
    bool is_short;
    Fraction length;
  };
  uint64_t s0_;
  uint64_t s_;
  std::vector<Arc> arcs_;
};

TEST(RoundMappingTest, AgreesWithLiteralSimulationOfThePaper) {
  std::mt19937_64 rng(20261130);
  for (uint64_t s0 = 1; s0 <= 8; ++s0) {
    LiteralRoundMapping literal(s0);
    RoundMapping map = Make(s0, s0);
    for (uint64_t m = s0; m <= s0 + 400; ++m) {
      SCOPED_TRACE(testing::Message() << "s0=" << s0 << " m=" << m);
      ASSERT_EQ(Arcs(map.state()), literal.Buckets());
      std::vector<uint64_t> hashes = {0, ~uint64_t{0}, uint64_t{1} << 63};
      for (int i = 0; i < 20; ++i) hashes.push_back(rng());
      for (const uint64_t h : hashes) {
        ASSERT_EQ(map.state().FindArc(h), literal.FindArc(h)) << h;
        ASSERT_EQ(map.FindBucket(h), literal.FindBucket(h)) << h;
      }
      const std::vector<uint64_t> former = literal.NewBucket();
      auto change = map.NewBucket();
      ASSERT_TRUE(change.ok());
      ASSERT_EQ(change->sources, former);
      ASSERT_EQ(change->target, m);
    }
  }
}

// ---------------------------------------------------------------------------
// Independent implementation 2: the notes' formula (reference_round_mapping.h).

TEST(RoundMappingTest, AgreesWithNotesFormulaOnRandomStates) {
  const uint64_t seed = 0x5eed0001;
  std::mt19937_64 rng(seed);
  for (int trial = 0; trial < 50000; ++trial) {
    uint64_t s0 = std::max<uint64_t>(1, testing_support::LogUniform(rng));
    uint64_t m = std::max<uint64_t>(1, testing_support::LogUniform(rng));
    if (s0 > m) std::swap(s0, m);
    const RoundMapping map = Make(s0, m);
    for (int i = 0; i < 8; ++i) {
      const uint64_t h = i == 0 ? ~uint64_t{0} : rng();
      const uint64_t b = map.FindBucket(h);
      ASSERT_EQ(b, testing_support::ReferenceFindBucket(s0, m, h))
          << "seed " << seed << " trial " << trial << " s0=" << s0 << " m=" << m
          << " h=" << h;
      ASSERT_LT(b, m);
    }
  }
}

// ---------------------------------------------------------------------------
// Properties over many (s0, m).

// The first hash of every arc, found by binary search on FindArc (which never
// decreases as h grows), so that arc lengths are measured rather than
// recomputed from the formula.
std::vector<u128> ArcStarts(const RoundState& state) {
  std::vector<u128> starts;
  for (uint64_t j = 0; j < state.num_buckets(); ++j) {
    u128 lo = j == 0 ? 0 : starts.back();
    u128 hi = static_cast<u128>(1) << 64;  // first h with FindArc(h) >= j
    while (lo < hi) {
      const u128 mid = lo + (hi - lo) / 2;
      if (state.FindArc(static_cast<uint64_t>(mid)) >= j) {
        hi = mid;
      } else {
        lo = mid + 1;
      }
    }
    starts.push_back(lo);
  }
  starts.push_back(static_cast<u128>(1) << 64);
  return starts;
}

class RoundPropertyTest
    : public testing::TestWithParam<std::pair<uint64_t, uint64_t>> {};

TEST_P(RoundPropertyTest, ArcsCarryAPermutationAndTwoLengths) {
  const auto [s0, m] = GetParam();
  const RoundState state(s0, m);
  std::vector<uint64_t> arcs = Arcs(state);
  std::vector<uint64_t> sorted = arcs;
  std::sort(sorted.begin(), sorted.end());
  std::vector<uint64_t> identity(m);
  std::iota(identity.begin(), identity.end(), uint64_t{0});
  ASSERT_EQ(sorted, identity);

  const std::vector<u128> starts = ArcStarts(state);
  const u128 two64 = static_cast<u128>(1) << 64;
  const u128 short_len = two64 / ((state.step() + 1) * state.groups());
  const u128 long_len = two64 / (state.step() * state.groups());
  std::set<bool> kinds;
  for (uint64_t j = 0; j < m; ++j) {
    const u128 len = starts[j + 1] - starts[j];
    // Integer boundaries: each length is within one of the exact value.
    const bool is_short = len <= short_len + 1 && len + 1 >= short_len;
    const bool is_long = len <= long_len + 1 && len + 1 >= long_len;
    ASSERT_TRUE(is_short || is_long) << "arc " << j;
    kinds.insert(is_short);
    // The arc's hashes all land in its bucket.
    ASSERT_EQ(state.FindBucket(static_cast<uint64_t>(starts[j])), arcs[j]);
    ASSERT_EQ(state.FindBucket(static_cast<uint64_t>(starts[j + 1] - 1)),
              arcs[j]);
  }
  // Short arcs exist exactly while a step is under way.
  EXPECT_EQ(kinds.count(true) == 1, state.converted() > 0);
  // The ratio of the two lengths is (s + 1) / s <= 1 + 1/s0.
  EXPECT_LE(static_cast<double>(long_len) / static_cast<double>(short_len),
            1.0 + 1.0 / static_cast<double>(s0) + 1e-12);
}

TEST_P(RoundPropertyTest, ArcEndIsTheNextArcsStart) {
  const auto [s0, m] = GetParam();
  const RoundState state(s0, m);
  const std::vector<u128> starts = ArcStarts(state);
  auto end_of = [&](uint64_t j) { return static_cast<uint64_t>(starts[j + 1]); };
  std::mt19937_64 rng(s0 * 7919 + m);
  for (uint64_t j = 0; j < m; ++j) {
    const uint64_t first = static_cast<uint64_t>(starts[j]);
    const uint64_t last = end_of(j) - 1;
    ASSERT_EQ(state.ArcEnd(first), end_of(j)) << "arc " << j;
    ASSERT_EQ(state.ArcEnd(last), end_of(j)) << "arc " << j;
    const uint64_t inside =
        first + static_cast<uint64_t>(rng() % (starts[j + 1] - starts[j]));
    ASSERT_EQ(state.ArcEnd(inside), end_of(j)) << "arc " << j;
  }
  // Stepping from arc end to arc end visits each arc once, then wraps to 0.
  uint64_t h = 0;
  for (uint64_t j = 0; j < m; ++j) {
    ASSERT_EQ(state.FindArc(h), j);
    h = state.ArcEnd(h);
    ASSERT_EQ(h == 0, j + 1 == m);
  }
}

TEST_P(RoundPropertyTest, GrowMovesKeysOneArcForwardAndShrinkUndoesIt) {
  const auto [s0, m] = GetParam();
  RoundMapping map = Make(s0, m);
  std::mt19937_64 rng(s0 * 1000003 + m);
  std::vector<uint64_t> hashes(4000);
  for (auto& h : hashes) h = rng();
  std::vector<uint64_t> before(hashes.size());
  for (size_t i = 0; i < hashes.size(); ++i)
    before[i] = map.FindBucket(hashes[i]);

  auto change = map.NewBucket();
  ASSERT_TRUE(change.ok());
  const std::vector<uint64_t> touched = change->Touched();
  ASSERT_EQ(change->target, m);
  ASSERT_EQ(change->sources.size(), RoundState(s0, m).step());
  size_t moved = 0;
  for (size_t i = 0; i < hashes.size(); ++i) {
    const uint64_t after = map.FindBucket(hashes[i]);
    if (after == before[i]) continue;
    ++moved;
    const auto pos = std::find(touched.begin(), touched.end(), before[i]);
    ASSERT_NE(pos, touched.end()) << "a key moved from an untouched bucket";
    ASSERT_NE(pos + 1, touched.end());
    ASSERT_EQ(after, *(pos + 1)) << "a key moved more than one arc";
  }
  // The moved measure is exactly 1 / (2G) of the circle.
  const double expected =
      static_cast<double>(hashes.size()) / (2.0 * RoundState(s0, m).groups());
  EXPECT_NEAR(static_cast<double>(moved), expected,
              5 * std::sqrt(expected) + 1);

  auto undo = map.FreeBucket();
  ASSERT_TRUE(undo.ok());
  EXPECT_EQ(undo->Touched(), touched);
  for (size_t i = 0; i < hashes.size(); ++i) {
    ASSERT_EQ(map.FindBucket(hashes[i]), before[i]);
  }
}

std::vector<std::pair<uint64_t, uint64_t>> PropertyShapes() {
  std::set<std::pair<uint64_t, uint64_t>> shapes;
  for (uint64_t s0 : {1, 2, 3, 4, 5, 7, 8, 12, 32, 64}) {
    for (uint64_t m = s0; m < s0 * 9; m += 1 + m / 5) shapes.insert({s0, m});
    shapes.insert({s0, s0 * 2});
    shapes.insert({s0, s0 * 2 - 1});
  }
  return {shapes.begin(), shapes.end()};
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, RoundPropertyTest, testing::ValuesIn(PropertyShapes()),
    [](const testing::TestParamInfo<std::pair<uint64_t, uint64_t>>& info) {
      return "s0_" + std::to_string(info.param.first) + "_m_" +
             std::to_string(info.param.second);
    });

TEST(RoundMappingTest, HugeBucketCountsStayInRange) {
  std::mt19937_64 rng(7);
  for (uint64_t s0 : {1ULL, 3ULL, 64ULL, 1ULL << 20, 3ULL << 61}) {
    for (uint64_t m :
         {uint64_t{1} << 40, (uint64_t{1} << 40) + 12345, uint64_t{1} << 62,
          uint64_t{1} << 63, (uint64_t{1} << 63) + 99, ~uint64_t{0} - 1,
          ~uint64_t{0}}) {
      if (m < s0) continue;
      RoundMapping map = Make(s0, m);
      for (int i = 0; i < 1000; ++i) {
        const uint64_t h = rng();
        ASSERT_LT(map.FindBucket(h), m);
        // The arc's last hash is h's bucket's, the next one another's.
        const uint64_t end = map.state().ArcEnd(h);
        ASSERT_TRUE(end == 0 || end > h);
        ASSERT_EQ(map.FindBucket(end - 1), map.FindBucket(h));
        ASSERT_NE(map.FindBucket(end), map.FindBucket(h));
        ASSERT_EQ(map.FindBucket(h),
                  testing_support::ReferenceFindBucket(s0, m, h));
      }
      if (RoundState(s0, m).step() > kMaxListedBuckets) {
        // Too many buckets to list: refused, and nothing changes.
        EXPECT_EQ(map.NewBucket().status().code(),
                  absl::StatusCode::kResourceExhausted);
        EXPECT_EQ(map.num_buckets(), m);
      } else if (m < RoundMapping::kMaxBuckets) {
        auto grown = map.NewBucket();
        ASSERT_TRUE(grown.ok());
        EXPECT_EQ(grown->target, m);
        auto shrunk = map.FreeBucket();
        ASSERT_TRUE(shrunk.ok());
        EXPECT_EQ(shrunk->Touched(), grown->Touched());
      }
    }
  }
}

}  // namespace
}  // namespace roundtable::mapping
