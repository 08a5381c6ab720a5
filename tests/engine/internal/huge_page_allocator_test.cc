// HugePageAllocator: a vector on it keeps its elements as it grows from
// small (the ordinary allocator) to many huge pages, its large arrays are
// aligned to 2 MiB (where the kernel can map huge pages), and a copy, a
// move and a shrink keep the contents.
#include "engine/internal/huge_page_allocator.h"

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace roundtable::internal {
namespace {

using Big = std::vector<uint64_t, HugePageAllocator<uint64_t>>;

TEST(HugePageAllocatorTest, GrowsFromSmallToHugeKeepingEveryElement) {
  std::mt19937_64 rng(3);
  Big v;
  std::vector<uint64_t> model;
  bool saw_large = false;
  while (model.size() < 3 * kHugePageBytes / sizeof(uint64_t)) {
    const uint64_t x = rng();
    v.push_back(x);
    model.push_back(x);
    if (v.capacity() * sizeof(uint64_t) >= kHugePageBytes) {
      saw_large = true;
      ASSERT_EQ(reinterpret_cast<uintptr_t>(v.data()) % kHugePageBytes, 0u)
          << "capacity " << v.capacity();
    }
  }
  EXPECT_TRUE(saw_large);
  ASSERT_TRUE(std::equal(v.begin(), v.end(), model.begin(), model.end()));

  Big copy = v;
  ASSERT_TRUE(std::equal(copy.begin(), copy.end(), model.begin(), model.end()));
  Big moved = std::move(copy);
  ASSERT_TRUE(
      std::equal(moved.begin(), moved.end(), model.begin(), model.end()));
  moved.resize(100);
  moved.shrink_to_fit();
  ASSERT_TRUE(std::equal(moved.begin(), moved.end(), model.begin(),
                         model.begin() + 100));
}

TEST(HugePageAllocatorTest, ReservesExactlyAcrossTheThreshold) {
  for (const size_t n : {size_t{1}, kHugePageBytes / 8 - 1, kHugePageBytes / 8,
                         kHugePageBytes / 8 + 1, 5 * kHugePageBytes / 8 + 3}) {
    Big v;
    v.reserve(n);
    ASSERT_GE(v.capacity(), n);
    for (size_t i = 0; i < n; ++i) v.push_back(i * 7);
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(v[i], i * 7) << n << " " << i;
  }
}

}  // namespace
}  // namespace roundtable::internal
