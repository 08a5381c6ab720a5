// SpaceMap: the value file's space, against a model of which units are
// used, reserved and waiting, through Stage and Load.
#include "engine/internal/space_map.h"

#include <map>
#include <memory>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "io/memory_device.h"

namespace roundtable::internal {
namespace {

// Writes the staged blocks to the file, as a checkpoint would.
void Persist(SpaceMap& map, io::BlockDevice& file) {
  map.Stage();
  DeferredDevice& d = map.device();
  ASSERT_TRUE(file.Resize(d.num_blocks()).ok());
  d.Freeze();
  for (const auto& [block, bytes] : d.frozen()) {
    ASSERT_TRUE(file.Write(block, bytes.span()).ok());
  }
  d.ReleaseFrozen();
}

TEST(SpaceMapTest, ReservesTheSmallestRunThatFitsElseAtTheEnd) {
  auto file = io::NewMemoryDevice(512);
  SpaceMap map(file.get());
  ASSERT_TRUE(map.Load(0).ok());
  const Extent a = map.Reserve(4), b = map.Reserve(2), c = map.Reserve(8);
  EXPECT_EQ(a, (Extent{0, 4}));
  EXPECT_EQ(b, (Extent{4, 2}));
  EXPECT_EQ(c, (Extent{6, 8}));
  for (const Extent& e : {a, b, c}) ASSERT_TRUE(map.Claim(e).ok());
  EXPECT_EQ(map.used_units(), 14u);
  map.set_generation(5);
  ASSERT_TRUE(map.Release(a).ok());
  ASSERT_TRUE(map.Release(b).ok());
  // Released, not yet reusable: a new extent goes to the end.
  EXPECT_EQ(map.Reserve(1), (Extent{14, 1}));
  map.Unreserve({14, 1});
  map.Reclaim(4);
  EXPECT_EQ(map.Reserve(1).first, 14u);
  map.Unreserve({14, 1});
  map.Reclaim(5);
  // [0, 6) is free now, merged: a 5-unit extent takes its start...
  EXPECT_EQ(map.Reserve(5), (Extent{0, 5}));
  // ...a 1-unit one the smallest run that fits ([5, 6), not [14, ...)).
  EXPECT_EQ(map.Reserve(1), (Extent{5, 1}));
  // A run that reaches the end is extended rather than skipped.
  map.Unreserve({5, 1});
  map.Unreserve({0, 5});
  ASSERT_TRUE(map.Release(c).ok());
  map.Reclaim(5);
  EXPECT_EQ(map.Reserve(20), (Extent{0, 20}));
  EXPECT_EQ(map.units(), 20u);
}

TEST(SpaceMapTest, RefusesWhatNoTableCouldDo) {
  auto file = io::NewMemoryDevice(512);
  SpaceMap map(file.get());
  ASSERT_TRUE(map.Load(0).ok());
  const Extent a = map.Reserve(3);
  ASSERT_TRUE(map.Claim(a).ok());
  EXPECT_TRUE(absl::IsDataLoss(map.Claim(a)));            // used
  EXPECT_TRUE(absl::IsDataLoss(map.Claim({1, 1})));       // inside a used one
  EXPECT_TRUE(absl::IsDataLoss(map.Release({3, 1})));     // not used
  EXPECT_TRUE(absl::IsDataLoss(map.Release({0, 0})));     // empty
  EXPECT_TRUE(absl::IsDataLoss(map.Claim({1ull << 62, 4})));  // far past
  ASSERT_TRUE(map.Release(a).ok());
  EXPECT_TRUE(absl::IsDataLoss(map.Release(a)));          // twice
  EXPECT_TRUE(absl::IsDataLoss(map.Claim(a)));            // waiting
  // A replayed write's extent past the end grows the map to it.
  ASSERT_TRUE(map.Claim({10, 2}).ok());
  EXPECT_EQ(map.units(), 12u);
  EXPECT_EQ(map.free_units(), 12u - 2u);
}

// Random reserves, claims, releases and checkpoints against a model; at
// every checkpoint the map persists, and a map loaded from its file has
// the same used units and the same free space.
TEST(SpaceMapTest, MatchesAModelThroughStageAndLoad) {
  for (const uint32_t bs : {512u, 4096u}) {
    auto file = io::NewMemoryDevice(bs);
    auto map = std::make_unique<SpaceMap>(file.get());
    ASSERT_TRUE(map->Load(0).ok());
    std::mt19937_64 rng(bs);
    std::map<uint64_t, uint64_t> used;  // first -> units
    uint64_t generation = 1;
    for (int step = 0; step < 20000; ++step) {
      const int op = static_cast<int>(rng() % 100);
      if (op < 45 || used.empty()) {
        // Units up to a few bitmap blocks' worth now and then.
        const uint64_t units =
            rng() % 20 == 0 ? 1 + rng() % (3 * SpaceMap::UnitsPerBlock(bs))
                            : 1 + rng() % 40;
        const Extent e = map->Reserve(units);
        ASSERT_EQ(e.units, units);
        for (const auto& [first, n] : used) {
          ASSERT_TRUE(e.end() <= first || first + n <= e.first)
              << "step " << step << ": [" << e.first << ", " << e.end()
              << ") overlaps [" << first << ", " << first + n << ")";
        }
        if (rng() % 10 == 0) {
          map->Unreserve(e);
        } else {
          ASSERT_TRUE(map->Claim(e).ok()) << step;
          used[e.first] = e.units;
        }
      } else if (op < 90) {
        auto it = used.begin();
        std::advance(it, rng() % used.size());
        ASSERT_TRUE(map->Release({it->first, it->second}).ok()) << step;
        used.erase(it);
      } else {
        // A checkpoint: staged, then durable.
        Persist(*map, *file);
        map->set_generation(++generation);
        map->Reclaim(generation - 1);
        uint64_t units = 0;
        for (const auto& [first, n] : used) {
          units += n;
          for (uint64_t u = first; u < first + n; ++u) {
            ASSERT_TRUE(map->used(u)) << u;
          }
        }
        ASSERT_EQ(map->used_units(), units);
        auto loaded = std::make_unique<SpaceMap>(file.get());
        ASSERT_TRUE(loaded->Load(map->units()).ok());
        ASSERT_EQ(loaded->used_units(), units);
        ASSERT_EQ(loaded->free_units(), map->free_units());
        for (uint64_t u = 0; u < map->units(); ++u) {
          ASSERT_EQ(loaded->used(u), map->used(u)) << u;
        }
        // Now and then the loaded map takes over, as after a reopen.
        if (rng() % 4 == 0) {
          map = std::move(loaded);
          map->set_generation(++generation);
        }
      }
      ASSERT_EQ(map->used_units() + map->free_units(), map->units());
    }
  }
}

TEST(SpaceMapTest, ADamagedBlockIsDataLoss) {
  auto file = io::NewMemoryDevice(512);
  SpaceMap map(file.get());
  ASSERT_TRUE(map.Load(0).ok());
  ASSERT_TRUE(map.Claim(map.Reserve(5000)).ok());
  Persist(map, *file);
  ASSERT_EQ(file->num_blocks(), 2u);
  io::AlignedBuffer block(512);
  ASSERT_TRUE(file->Read(1, block.span()).ok());
  block.data()[100] ^= std::byte{1};
  ASSERT_TRUE(file->Write(1, block.span()).ok());
  SpaceMap loaded(file.get());
  const absl::Status s = loaded.Load(5000);
  EXPECT_TRUE(absl::IsDataLoss(s)) << s;
  EXPECT_NE(s.message().find("block 1"), std::string::npos) << s;
  // Too few blocks for the units the superblock gives.
  SpaceMap short_map(file.get());
  EXPECT_TRUE(absl::IsDataLoss(short_map.Load(50000)));
}

}  // namespace
}  // namespace roundtable::internal
