// The records' heap blocks: a freed block waits in its thread's list for
// the next record of its size, and every byte written stays as written.
#include "engine/internal/record_memory.h"

#include <cstring>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "engine/internal/block_format.h"
#include "gtest/gtest.h"

namespace roundtable::internal {
namespace {

TEST(RecordMemoryTest, AFreedBlockServesTheNextRecordOfItsSize) {
  if (!kRecordPooling) GTEST_SKIP() << "no lists under AddressSanitizer";
  char* a = AllocateRecordBytes(116);
  FreeRecordBytes(a, 116);
  // 113 to 128 bytes share a list.
  char* b = AllocateRecordBytes(120);
  EXPECT_EQ(a, b);
  FreeRecordBytes(b, 120);
  // Another size takes from its own.
  char* c = AllocateRecordBytes(40);
  EXPECT_NE(c, a);
  char* d = AllocateRecordBytes(128);
  EXPECT_EQ(d, a);
  FreeRecordBytes(c, 40);
  FreeRecordBytes(d, 128);
}

TEST(RecordMemoryTest, LargeBlocksAreNotKept) {
  char* a = AllocateRecordBytes(kMaxPooledBytes + 1);
  std::memset(a, 7, kMaxPooledBytes + 1);
  FreeRecordBytes(a, kMaxPooledBytes + 1);
  char* b = AllocateRecordBytes(kMaxPooledBytes);
  std::memset(b, 7, kMaxPooledBytes);
  FreeRecordBytes(b, kMaxPooledBytes);
}

TEST(RecordMemoryTest, AListKeepsABoundedNumberOfBlocks) {
  constexpr size_t kSize = 64;
  if (!kRecordPooling) GTEST_SKIP() << "no lists under AddressSanitizer";
  const size_t kept = kPooledBytesPerSize / kSize;
  // Whatever the list holds is taken first, to start from an empty one.
  std::vector<char*> taken;
  for (size_t i = 0; i < kept; ++i) taken.push_back(AllocateRecordBytes(kSize));
  std::vector<char*> blocks;
  for (size_t i = 0; i < 2 * kept; ++i) {
    blocks.push_back(AllocateRecordBytes(kSize));
  }
  for (char* p : blocks) FreeRecordBytes(p, kSize);
  // The last `kept` freed went back to the allocator; the list gives the
  // first `kept`, newest first, and then fresh blocks.
  for (size_t i = 0; i < kept; ++i) {
    ASSERT_EQ(AllocateRecordBytes(kSize), blocks[kept - 1 - i]) << i;
  }
  for (size_t i = 0; i < kept; ++i) FreeRecordBytes(blocks[i], kSize);
  for (char* p : taken) FreeRecordBytes(p, kSize);
}

// Records made and dropped at random on two threads, some freed on the
// other: each keeps its bytes, against a model.
TEST(RecordMemoryTest, RecordsKeepTheirBytesAcrossThreads) {
  auto churn = [](uint64_t seed, std::vector<Record>* handed_over) {
    std::mt19937_64 rng(seed);
    std::map<std::string, Record> live;
    std::map<std::string, std::string> model;
    for (int i = 0; i < 20000; ++i) {
      const std::string key = std::to_string(rng() % 500);
      if (rng() % 3 == 0) {
        if (auto it = live.find(key); it != live.end()) {
          if (rng() % 2 == 0) handed_over->push_back(std::move(it->second));
          live.erase(it);
          model.erase(key);
        }
        continue;
      }
      const std::string value(rng() % 600, static_cast<char>('a' + rng() % 26));
      live.insert_or_assign(key, Record(key, value));
      model[key] = value;
    }
    ASSERT_EQ(live.size(), model.size());
    for (const auto& [key, r] : live) {
      ASSERT_EQ(r.key(), key);
      ASSERT_EQ(r.value(), model[key]);
    }
  };
  std::vector<Record> from_a, from_b;
  std::thread a([&] { churn(1, &from_a); });
  churn(2, &from_b);
  a.join();
  // Records made on one thread, freed on the other.
  std::thread b([&] { from_a.clear(); });
  b.join();
  from_b.clear();
}

}  // namespace
}  // namespace roundtable::internal
