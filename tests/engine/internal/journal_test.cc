// Checkpoint journals: written and read back exactly; after a crash while a
// new journal is written (power lost with its writes dropped, kept or torn
// at random) the reader finds the new journal whole, the previous one whole,
// or none, never a mixture, and a synced journal always whole; a flipped
// bit anywhere makes it no journal.
#include "engine/internal/journal.h"

#include <random>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "io/fault_injection_device.h"
#include "io/memory_device.h"

namespace roundtable::internal {
namespace {

struct Images {
  std::vector<io::AlignedBuffer> buffers;
  std::vector<JournalEntry> entries;
};

Images MakeImages(std::mt19937_64& rng, uint32_t bs, size_t n) {
  Images images;
  for (size_t i = 0; i < n; ++i) {
    images.buffers.emplace_back(bs);
    for (uint32_t j = 0; j < bs; ++j) {
      images.buffers.back().data()[j] = static_cast<std::byte>(rng());
    }
  }
  for (size_t i = 0; i < n; ++i) {
    images.entries.push_back({static_cast<uint32_t>(rng() % 2), rng() % 1000,
                              images.buffers[i].span()});
  }
  return images;
}

// True when `journal` holds exactly `sequence` and `images`.
bool Same(const Journal& journal, uint64_t sequence, const Images& images) {
  if (journal.sequence != sequence ||
      journal.images.size() != images.entries.size()) {
    return false;
  }
  for (size_t i = 0; i < images.entries.size(); ++i) {
    const JournalEntry& e = images.entries[i];
    const JournalImage& g = journal.images[i];
    if (g.file != e.file || g.block != e.block ||
        std::memcmp(g.bytes.data(), e.bytes.data(), e.bytes.size()) != 0) {
      return false;
    }
  }
  return true;
}

TEST(JournalTest, RoundTrips) {
  std::mt19937_64 rng(1);
  for (const size_t n : {0, 1, 7, 300}) {
    auto device = io::NewMemoryDevice(512);
    const Images images = MakeImages(rng, 512, n);
    ASSERT_TRUE(WriteJournal(*device, 40 + n, images.entries).ok());
    auto read = ReadJournal(*device);
    ASSERT_TRUE(read.ok()) << read.status();
    ASSERT_TRUE(read->has_value()) << n;
    EXPECT_TRUE(Same(**read, 40 + n, images)) << n;
  }
  auto empty = io::NewMemoryDevice(512);
  auto none = ReadJournal(*empty);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
}

TEST(JournalTest, ACrashWhileWritingLeavesOneWholeJournalOrNone) {
  int saw_old = 0, saw_new = 0, saw_none = 0;
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    SCOPED_TRACE(absl::StrCat("seed ", seed));
    std::mt19937_64 rng(seed);
    io::FaultInjectionDevice device(io::NewMemoryDevice(1024));
    const Images old_images = MakeImages(rng, 1024, 1 + rng() % 20);
    ASSERT_TRUE(WriteJournal(device, 1, old_images.entries).ok());
    const Images new_images = MakeImages(rng, 1024, 1 + rng() % 20);
    // The crash: the k-th write or the sync of the new journal fails, or
    // nothing does; then the power goes.
    const uint64_t writes = new_images.entries.size() + 1;
    const uint64_t k = 1 + rng() % (writes + 2);
    if (k <= writes) {
      device.FailNth(io::FaultInjectionDevice::Op::kWrite, k,
                     absl::UnavailableError("crash"));
    } else if (k == writes + 1) {
      device.FailNth(io::FaultInjectionDevice::Op::kSync, 1,
                     absl::UnavailableError("crash"));
    }
    const bool synced = k == writes + 2;
    EXPECT_EQ(WriteJournal(device, 2, new_images.entries).ok(), synced);
    io::FaultInjectionDevice::PowerLoss how;
    how.keep_random_subset = true;
    how.tear_one = rng() % 2;
    how.seed = rng();
    ASSERT_TRUE(device.LosePower(how).ok());
    auto read = ReadJournal(device);
    ASSERT_TRUE(read.ok()) << read.status();
    if (synced) ASSERT_TRUE(read->has_value() && (*read)->sequence == 2);
    if (!read->has_value()) {
      ++saw_none;
    } else if ((*read)->sequence == 1) {
      ASSERT_TRUE(Same(**read, 1, old_images));
      ++saw_old;
    } else {
      ASSERT_TRUE(Same(**read, 2, new_images));
      ++saw_new;
    }
  }
  // Each outcome happens for some seeds.
  EXPECT_GT(saw_none, 0);
  EXPECT_GT(saw_old, 0);
  EXPECT_GT(saw_new, 0);
}

TEST(JournalTest, AFlippedBitMakesItNoJournal) {
  std::mt19937_64 rng(9);
  io::FaultInjectionDevice device(io::NewMemoryDevice(512));
  const Images images = MakeImages(rng, 512, 3);
  ASSERT_TRUE(WriteJournal(device, 5, images.entries).ok());
  const uint64_t used_bits = (1 + 3) * 512 * 8;
  for (int trial = 0; trial < 200; ++trial) {
    const uint64_t bit = rng() % used_bits;
    // Bits of the descriptor block past its bytes are padding: skip them.
    if (bit / 8 < 512 && bit / 8 >= 16 + 20 * 3 + 8) continue;
    ASSERT_TRUE(device.FlipBit(bit / (512 * 8), bit % (512 * 8)).ok());
    auto read = ReadJournal(device);
    ASSERT_TRUE(read.ok());
    EXPECT_FALSE(read->has_value()) << "bit " << bit;
    ASSERT_TRUE(device.FlipBit(bit / (512 * 8), bit % (512 * 8)).ok());
  }
  auto read = ReadJournal(device);
  ASSERT_TRUE(read.ok() && read->has_value());
}

}  // namespace
}  // namespace roundtable::internal
