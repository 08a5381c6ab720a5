// BucketArray against a std::vector model: elements keep their values and
// their addresses as the array grows chunk by chunk, new ones are the fill,
// and the memory it reports covers what it holds.
#include "engine/internal/bucket_array.h"

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace roundtable::internal {
namespace {

constexpr uint64_t kChunk = BucketArray<int>::kChunk;

TEST(BucketArrayTest, GrowsByWholeChunksOfTheFill) {
  BucketArray<uint64_t> a(7);
  EXPECT_EQ(a.size(), 0u);
  a.Cover(1);
  EXPECT_EQ(a.size(), kChunk);
  a.Cover(kChunk);  // covered already
  EXPECT_EQ(a.size(), kChunk);
  a.Cover(kChunk + 1);
  EXPECT_EQ(a.size(), 2 * kChunk);
  a.Cover(5 * kChunk - 3);
  EXPECT_EQ(a.size(), 5 * kChunk);
  for (uint64_t i = 0; i < a.size(); ++i) ASSERT_EQ(a[i], 7u) << i;
  EXPECT_GE(a.memory_bytes(), a.size() * sizeof(uint64_t));
  EXPECT_LT(a.memory_bytes(), a.size() * sizeof(uint64_t) + 4096);
}

TEST(BucketArrayTest, KeepsValuesAndAddressesAsItGrows) {
  std::mt19937_64 rng(7);
  BucketArray<std::string> a;
  std::vector<std::string> model;
  std::vector<const std::string*> where;
  for (int round = 0; round < 200; ++round) {
    // Grow by one to a few chunks' worth, as a table's buckets do.
    const uint64_t n = model.size() + 1 + rng() % (kChunk / 2);
    a.Cover(n);
    ASSERT_GE(a.size(), n);
    ASSERT_EQ(a.size() % kChunk, 0u);
    while (model.size() < n) {
      ASSERT_EQ(a[model.size()], "") << model.size();
      where.push_back(&a[model.size()]);
      model.emplace_back();
    }
    for (int w = 0; w < 64; ++w) {
      const uint64_t i = rng() % n;
      model[i] = std::to_string(rng());
      a[i] = model[i];
    }
    for (uint64_t i = 0; i < model.size(); ++i) {
      ASSERT_EQ(&a[i], where[i]) << "element " << i << " moved";
      ASSERT_EQ(a[i], model[i]) << i;
    }
  }
  // Moving the array moves its chunks, not its elements.
  BucketArray<std::string> moved = std::move(a);
  for (uint64_t i = 0; i < model.size(); ++i) {
    ASSERT_EQ(&moved[i], where[i]);
    ASSERT_EQ(moved[i], model[i]);
  }
}

}  // namespace
}  // namespace roundtable::internal
