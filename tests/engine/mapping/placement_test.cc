// The placement library: the contract every scheme keeps (live nodes only,
// errors that change nothing, add-then-remove restores, independence from
// the order nodes came in where promised) and each scheme's defining
// property (bounded loads never past capacity, ring and multi-probe
// monotone, jump and round moving keys only to the new node or along the
// group, Maglev's even table, d choices among its candidates, weights).
#include "roundtable/placement.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "engine/mapping/round_mapping.h"
#include "gtest/gtest.h"

namespace roundtable::mapping {
namespace {

PlacementParams SmallParams() {
  PlacementParams p;
  p.s0 = 4;
  p.vnodes = 50;
  p.table_size = 1009;
  p.probes = 5;
  p.c = 1.25;
  p.choices = 2;
  p.seed = 7;
  return p;
}

std::unique_ptr<Placement> Make(std::string_view name,
                                const PlacementParams& p = SmallParams()) {
  auto made = MakePlacement(name, p);
  EXPECT_TRUE(made.ok()) << made.status();
  return *std::move(made);
}

std::vector<uint64_t> Hashes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint64_t> hashes(n);
  for (auto& h : hashes) h = rng();
  return hashes;
}

std::vector<NodeId> Place(Placement& p, const std::vector<uint64_t>& hashes) {
  std::vector<NodeId> out(hashes.size());
  p.Assign(hashes, out);
  return out;
}

void AddNodes(Placement& p, const std::vector<NodeId>& ids) {
  for (const NodeId id : ids) ASSERT_TRUE(p.AddNode(id).ok()) << id;
}

std::vector<NodeId> Ids(size_t n, NodeId first = 100) {
  std::vector<NodeId> ids(n);
  for (size_t i = 0; i < n; ++i) ids[i] = first + 3 * i;
  return ids;
}

std::map<NodeId, uint64_t> Loads(const std::vector<NodeId>& placed) {
  std::map<NodeId, uint64_t> loads;
  for (const NodeId n : placed) ++loads[n];
  return loads;
}

class PlacementContractTest : public testing::TestWithParam<std::string> {};

TEST_P(PlacementContractTest, NoNodeMeansNoPlace) {
  auto p = Make(GetParam());
  EXPECT_EQ(p->num_nodes(), 0u);
  EXPECT_EQ(p->Locate(12345), kNoNode);
  const std::vector<NodeId> placed = Place(*p, Hashes(10, 1));
  for (const NodeId n : placed) EXPECT_EQ(n, kNoNode);
}

TEST_P(PlacementContractTest, EveryKeyGoesToALiveNodeAndAllAreUsed) {
  for (const size_t n : {4, 5, 17, 64}) {
    auto p = Make(GetParam());
    const std::vector<NodeId> ids = Ids(n);
    AddNodes(*p, ids);
    const std::vector<uint64_t> hashes = Hashes(200 * n, n);
    const std::vector<NodeId> placed = Place(*p, hashes);
    const std::set<NodeId> live(ids.begin(), ids.end());
    for (const NodeId node : placed) ASSERT_TRUE(live.contains(node));
    EXPECT_EQ(Loads(placed).size(), n) << "n = " << n;
    if (!p->traits().load_aware) {
      for (size_t i = 0; i < 100; ++i) {
        EXPECT_EQ(p->Locate(hashes[i]), placed[i]);
      }
    }
  }
}

TEST_P(PlacementContractTest, AddingThenRemovingTheNewestRestores) {
  auto p = Make(GetParam());
  AddNodes(*p, Ids(9));
  const std::vector<uint64_t> hashes = Hashes(5000, 3);
  const std::vector<NodeId> before = Place(*p, hashes);
  ASSERT_TRUE(p->AddNode(999).ok());
  const std::vector<NodeId> grown = Place(*p, hashes);
  EXPECT_NE(grown, before);
  ASSERT_TRUE(p->RemoveNode(999).ok());
  EXPECT_EQ(Place(*p, hashes), before);
}

TEST_P(PlacementContractTest, BadCallsFailAndChangeNothing) {
  auto p = Make(GetParam());
  AddNodes(*p, Ids(6));
  const std::vector<uint64_t> hashes = Hashes(2000, 4);
  const std::vector<NodeId> before = Place(*p, hashes);
  EXPECT_EQ(p->AddNode(Ids(6)[2]).code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(p->RemoveNode(1).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(p->AddNode(1, 0.0).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(p->AddNode(1, -2.0).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(p->AddNode(1, std::nan("")).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(p->AddNode(kNoNode).code(), absl::StatusCode::kInvalidArgument);
  if (!p->traits().weights) {
    EXPECT_EQ(p->AddNode(1, 2.0).code(), absl::StatusCode::kInvalidArgument);
  }
  if (!p->traits().arbitrary_removal) {
    EXPECT_EQ(p->RemoveNode(Ids(6)[1]).code(),
              absl::StatusCode::kFailedPrecondition);
  }
  EXPECT_EQ(p->num_nodes(), 6u);
  EXPECT_EQ(Place(*p, hashes), before);
}

TEST_P(PlacementContractTest, AddingManyAtOnceIsAddingOneByOne) {
  auto one = Make(GetParam());
  auto many = Make(GetParam());
  const std::vector<NodeId> ids = Ids(20);
  AddNodes(*one, ids);
  ASSERT_TRUE(many->AddNodes(std::span(ids).first(5)).ok());
  ASSERT_TRUE(many->AddNodes(std::span(ids).subspan(5)).ok());
  const std::vector<uint64_t> hashes = Hashes(5000, 8);
  EXPECT_EQ(Place(*many, hashes), Place(*one, hashes));
  // All or nothing.
  const std::vector<NodeId> dup = {1, 2, 1};
  EXPECT_EQ(many->AddNodes(dup).code(), absl::StatusCode::kAlreadyExists);
  const std::vector<NodeId> clash = {1, ids[3]};
  EXPECT_EQ(many->AddNodes(clash).code(), absl::StatusCode::kAlreadyExists);
  const std::vector<double> weights = {1.0};
  EXPECT_EQ(many->AddNodes(clash, weights).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(many->num_nodes(), 20u);
  EXPECT_EQ(Place(*many, hashes), Place(*one, hashes));
}

// Where any node may leave, the placement depends on the node set only.
// (Round and jump number their nodes in the order they came.)
TEST(PlacementOrderTest, OrderOfNodesDoesNotMatterWhereRemovalIsFree) {
  int schemes = 0;
  for (const std::string& name : PlacementNames()) {
    auto a = Make(name);
    if (!a->traits().arbitrary_removal) continue;
    ++schemes;
    auto b = Make(name);
    std::vector<NodeId> ids = Ids(12);
    AddNodes(*a, ids);
    std::shuffle(ids.begin(), ids.end(), std::mt19937_64(5));
    AddNodes(*b, {5000, 5001});
    AddNodes(*b, ids);
    ASSERT_TRUE(b->RemoveNode(5000).ok());
    ASSERT_TRUE(b->RemoveNode(5001).ok());
    const std::vector<uint64_t> hashes = Hashes(5000, 6);
    EXPECT_EQ(Place(*a, hashes), Place(*b, hashes)) << name;
  }
  EXPECT_EQ(schemes, 6);
}

TEST_P(PlacementContractTest, MemoryIsReported) {
  auto p = Make(GetParam());
  AddNodes(*p, Ids(10));
  if (GetParam() != "jump") {
    EXPECT_GT(p->MemoryBytes(), 0u);
  }
  EXPECT_FALSE(std::string(p->name()).empty());
}

INSTANTIATE_TEST_SUITE_P(All, PlacementContractTest,
                         testing::ValuesIn(PlacementNames()),
                         [](const auto& info) { return info.param; });

TEST(MakePlacementTest, PrimesForMaglev) {
  EXPECT_FALSE(IsPrime(0));
  EXPECT_FALSE(IsPrime(1));
  EXPECT_TRUE(IsPrime(2));
  EXPECT_FALSE(IsPrime(65535));
  EXPECT_TRUE(IsPrime(65537));
  EXPECT_EQ(NextPrime(0), 2u);
  EXPECT_EQ(NextPrime(65536), 65537u);
  EXPECT_EQ(NextPrime(100000), 100003u);
  EXPECT_EQ(MaglevTableSizeFor(10), 65537u);
  EXPECT_EQ(MaglevTableSizeFor(1000), 100003u);
}

TEST(MakePlacementTest, RejectsBadParameters) {
  PlacementParams p;
  EXPECT_FALSE(MakePlacement("nope", p).ok());
  p.s0 = 0;
  EXPECT_FALSE(MakePlacement("round", p).ok());
  p = {};
  p.vnodes = 0;
  EXPECT_FALSE(MakePlacement("ring", p).ok());
  p = {};
  p.table_size = 65536;
  EXPECT_FALSE(MakePlacement("maglev", p).ok());
  p = {};
  for (const double c : {1.0, 0.5, std::nan("")}) {
    p.c = c;
    EXPECT_FALSE(MakePlacement("bounded", p).ok()) << c;
  }
  p = {};
  p.probes = 0;
  EXPECT_FALSE(MakePlacement("multiprobe", p).ok());
  p = {};
  p.choices = 0;
  EXPECT_FALSE(MakePlacement("dchoice", p).ok());
}

// Moves when one node joins, and the nodes involved.
struct Change {
  size_t moved = 0;
  size_t stray = 0;  // moved between two nodes that were both there before
};

Change Diff(const std::vector<NodeId>& before, const std::vector<NodeId>& after,
            NodeId joined_or_left) {
  Change c;
  for (size_t i = 0; i < before.size(); ++i) {
    if (before[i] == after[i]) continue;
    ++c.moved;
    if (before[i] != joined_or_left && after[i] != joined_or_left) ++c.stray;
  }
  return c;
}

TEST(PlacementMovesTest, MonotoneSchemesMoveKeysOnlyToANewNode) {
  for (const char* name : {"ring", "multiprobe", "rendezvous", "jump"}) {
    for (const size_t n : {1, 3, 10, 50}) {
      auto p = Make(name);
      AddNodes(*p, Ids(n));
      const std::vector<uint64_t> hashes = Hashes(20000, n);
      const std::vector<NodeId> before = Place(*p, hashes);
      ASSERT_TRUE(p->AddNode(7).ok());
      const std::vector<NodeId> after = Place(*p, hashes);
      const Change c = Diff(before, after, 7);
      EXPECT_EQ(c.stray, 0u) << name << " n = " << n;
      EXPECT_GT(c.moved, 0u) << name << " n = " << n;
      for (size_t i = 0; i < hashes.size(); ++i) {
        if (before[i] != after[i]) {
          ASSERT_EQ(after[i], 7u) << name;
        }
      }
    }
  }
}

TEST(PlacementMovesTest, RemovalMovesOnlyTheRemovedNodesKeys) {
  for (const char* name : {"ring", "multiprobe", "rendezvous"}) {
    auto p = Make(name);
    const std::vector<NodeId> ids = Ids(30);
    AddNodes(*p, ids);
    const std::vector<uint64_t> hashes = Hashes(20000, 9);
    for (const NodeId gone : {ids[0], ids[13], ids[29]}) {
      const std::vector<NodeId> before = Place(*p, hashes);
      ASSERT_TRUE(p->RemoveNode(gone).ok());
      const std::vector<NodeId> after = Place(*p, hashes);
      for (size_t i = 0; i < hashes.size(); ++i) {
        if (before[i] != gone) {
          ASSERT_EQ(after[i], before[i]) << name;
        } else {
          ASSERT_NE(after[i], gone) << name;
        }
      }
    }
  }
}

// Round-hashing as placement: node i holds bucket i; a grow moves a key
// from sources[j] to sources[j + 1] (the new node after the last) or not
// at all, exactly as the mapping layer says.
TEST(PlacementMovesTest, RoundMovesKeysOneArcAlongTheGroup) {
  for (const uint64_t s0 : {1, 4, 8}) {
    PlacementParams params = SmallParams();
    params.s0 = s0;
    auto p = Make("round", params);
    std::vector<NodeId> ids;
    const std::vector<uint64_t> hashes = Hashes(20000, s0);
    for (uint64_t n = 1; n <= 40; ++n) {
      std::vector<NodeId> before = Place(*p, hashes);
      const NodeId id = 1000 + n - 1;  // bucket n - 1
      ASSERT_TRUE(p->AddNode(id).ok());
      const std::vector<NodeId> after = Place(*p, hashes);
      if (n < s0) {
        for (const NodeId node : after) {
          ASSERT_EQ(node, kNoNode);
        }
        continue;
      }
      if (n == s0) continue;
      auto mapping = RoundMapping::Create(s0, n - 1);
      ASSERT_TRUE(mapping.ok());
      auto change = mapping->NewBucket();
      ASSERT_TRUE(change.ok());
      const std::vector<uint64_t> touched = change->Touched();
      for (size_t i = 0; i < hashes.size(); ++i) {
        if (before[i] == after[i]) continue;
        const auto from =
            std::find(touched.begin(), touched.end(), before[i] - 1000);
        ASSERT_NE(from, touched.end()) << "s0 " << s0 << " n " << n;
        ASSERT_NE(from + 1, touched.end());
        EXPECT_EQ(after[i] - 1000, *(from + 1));
      }
    }
  }
}

// Maglev fills its table by turns, so entries per node differ by one at
// most.
TEST(PlacementMovesTest, MaglevTableIsEven) {
  for (const size_t n : {1, 2, 7, 100, 1009}) {
    auto p = Make("maglev");
    AddNodes(*p, Ids(n));
    // One key per table entry: the hash at the start of entry e.
    std::vector<uint64_t> hashes(1009);
    for (uint64_t e = 0; e < hashes.size(); ++e) {
      hashes[e] =
          static_cast<uint64_t>(
              ((static_cast<unsigned __int128>(e) << 64) + 1008) / 1009) +
          1;
    }
    const auto loads = Loads(Place(*p, hashes));
    ASSERT_EQ(loads.size(), n);
    uint64_t lo = ~uint64_t{0}, hi = 0;
    for (const auto& [node, load] : loads) {
      lo = std::min(lo, load);
      hi = std::max(hi, load);
    }
    EXPECT_LE(hi - lo, 1u) << "n = " << n;
  }
  auto p = Make("maglev");
  AddNodes(*p, Ids(1009));
  EXPECT_EQ(p->AddNode(1).code(), absl::StatusCode::kResourceExhausted);
}

TEST(BoundedLoadsTest, NoNodeEverPassesItsCapacity) {
  for (const double c : {1.01, 1.1, 1.25, 2.0}) {
    for (const size_t n : {1, 2, 10, 97}) {
      for (const size_t m : {0, 1, 5, 100, 3000}) {
        PlacementParams params = SmallParams();
        params.c = c;
        auto p = Make("bounded", params);
        AddNodes(*p, Ids(n));
        const auto loads = Loads(Place(*p, Hashes(m, m + n)));
        uint64_t total = 0;
        for (const auto& [node, load] : loads) {
          EXPECT_LE(load, BoundedCapacity(c, m, 1, n))
              << "c " << c << " n " << n << " m " << m;
          total += load;
        }
        EXPECT_EQ(total, m);
      }
    }
  }
}

TEST(BoundedLoadsTest, WeightedCapacitiesHold) {
  PlacementParams params = SmallParams();
  params.c = 1.1;
  auto p = Make("bounded", params);
  const std::vector<double> weights = {1, 2, 0.5, 4, 1, 1};
  for (size_t i = 0; i < weights.size(); ++i) {
    ASSERT_TRUE(p->AddNode(i, weights[i]).ok());
  }
  const size_t m = 10000;
  const auto loads = Loads(Place(*p, Hashes(m, 2)));
  for (size_t i = 0; i < weights.size(); ++i) {
    EXPECT_LE(loads.at(i), BoundedCapacity(1.1, m, weights[i], 9.5)) << i;
  }
}

// Keys and nodes come and go in any order; the placement and loads are
// those of placing the final sets from scratch, and every change reports
// exactly the keys whose node changed.
TEST(BoundedLoadsTest, AnyOrderOfChangesEndsInTheSamePlacement) {
  std::mt19937_64 rng(11);
  auto live = Make("bounded");
  PlacedKeys keys(live.get());
  std::set<NodeId> nodes;
  std::set<uint64_t> key_set;
  for (int step = 0; step < 600; ++step) {
    const int what = static_cast<int>(rng() % 10);
    std::vector<NodeId> before(keys.nodes().begin(), keys.nodes().end());
    std::vector<uint64_t> hashes_before(keys.hashes().begin(),
                                        keys.hashes().end());
    absl::StatusOr<std::vector<Move>> moves;
    if (what < 6 || key_set.empty()) {
      const uint64_t h = rng() % 400;
      moves = keys.AddKey(h);
      if (key_set.contains(h)) {
        ASSERT_EQ(moves.status().code(), absl::StatusCode::kAlreadyExists);
        continue;
      }
      key_set.insert(h);
      before.push_back(kNoNode);
    } else if (what < 8) {
      const uint64_t h = *std::next(key_set.begin(), rng() % key_set.size());
      const auto at = std::find(hashes_before.begin(), hashes_before.end(), h) -
                      hashes_before.begin();
      moves = keys.RemoveKey(h);
      key_set.erase(h);
      before.erase(before.begin() + at);
    } else if (what < 9 || nodes.size() < 2) {
      const NodeId id = rng() % 40;
      moves = keys.AddNode(id);
      if (nodes.contains(id)) {
        ASSERT_EQ(moves.status().code(), absl::StatusCode::kAlreadyExists);
        continue;
      }
      nodes.insert(id);
    } else {
      const NodeId id = *std::next(nodes.begin(), rng() % nodes.size());
      moves = keys.RemoveNode(id);
      nodes.erase(id);
    }
    ASSERT_TRUE(moves.ok()) << moves.status();
    size_t changed = 0;
    for (size_t i = 0; i < before.size(); ++i) {
      if (before[i] != kNoNode && before[i] != keys.nodes()[i]) ++changed;
    }
    EXPECT_EQ(moves->size(), changed);
    for (const Move& m : *moves) {
      EXPECT_EQ(keys.nodes()[m.key], m.to);
      EXPECT_NE(m.from, m.to);
    }
  }
  ASSERT_EQ(keys.RemoveKey(100000).status().code(),
            absl::StatusCode::kNotFound);
  auto fresh = Make("bounded");
  for (const NodeId id : nodes) ASSERT_TRUE(fresh->AddNode(id).ok());
  const std::vector<uint64_t> hashes(keys.hashes().begin(),
                                     keys.hashes().end());
  EXPECT_EQ(Place(*fresh, hashes),
            std::vector<NodeId>(keys.nodes().begin(), keys.nodes().end()));
  const std::vector<uint64_t> loads = keys.Loads();
  for (const uint64_t load : loads) {
    EXPECT_LE(load, BoundedCapacity(1.25, hashes.size(), 1, nodes.size()));
  }
}

// Closer to 1, c forces more keys past their first node, and a change
// moves more of them (the paper's 1/epsilon^2 factor, in trend).
TEST(BoundedLoadsTest, TighterCapacityMovesMoreKeys) {
  const std::vector<uint64_t> hashes = Hashes(20000, 12);
  std::vector<size_t> moved;
  for (const double c : {2.0, 1.25, 1.05}) {
    PlacementParams params = SmallParams();
    params.c = c;
    auto p = Make("bounded", params);
    AddNodes(*p, Ids(50));
    const std::vector<NodeId> before = Place(*p, hashes);
    ASSERT_TRUE(p->AddNode(1).ok());
    moved.push_back(Diff(before, Place(*p, hashes), 1).moved);
  }
  EXPECT_LT(moved[0], moved[1]);
  EXPECT_LT(moved[1], moved[2]);
}

// With one probe (or one choice), multi-probe and d choices are the plain
// ring with one point per node.
TEST(PlacementSchemesTest, OneProbeAndOneChoiceAreTheOnePointRing) {
  PlacementParams params = SmallParams();
  params.vnodes = 1;
  params.probes = 1;
  params.choices = 1;
  auto ring = Make("ring", params);
  auto probe = Make("multiprobe", params);
  auto choice = Make("dchoice", params);
  for (Placement* p : {ring.get(), probe.get(), choice.get()}) {
    AddNodes(*p, Ids(40));
  }
  const std::vector<uint64_t> hashes = Hashes(10000, 13);
  const std::vector<NodeId> expected = Place(*ring, hashes);
  EXPECT_EQ(Place(*probe, hashes), expected);
  EXPECT_EQ(Place(*choice, hashes), expected);
}

uint64_t MaxLoad(const std::vector<NodeId>& placed) {
  uint64_t most = 0;
  for (const auto& [node, load] : Loads(placed)) most = std::max(most, load);
  return most;
}

// n keys on n nodes: two choices bring the fullest node far below one.
TEST(PlacementSchemesTest, TwoChoicesCutTheMaximumLoad) {
  const size_t n = 20000;
  const std::vector<uint64_t> hashes = Hashes(n, 14);
  uint64_t most[3] = {};
  for (const uint64_t d : {1, 2}) {
    PlacementParams params = SmallParams();
    params.choices = d;
    auto p = Make("dchoice", params);
    AddNodes(*p, Ids(n));
    most[d] = MaxLoad(Place(*p, hashes));
  }
  EXPECT_GE(most[1], 8u);
  EXPECT_LE(most[2], 6u);
}

TEST(PlacementSchemesTest, MultiProbeBalancesAsThePaperSays) {
  const size_t n = 100;
  const std::vector<uint64_t> hashes = Hashes(200000, 15);
  const double average = static_cast<double>(hashes.size()) / n;
  PlacementParams params = SmallParams();
  params.probes = 21;
  auto probe = Make("multiprobe", params);
  params.vnodes = 1;
  auto ring = Make("ring", params);
  AddNodes(*probe, Ids(n));
  AddNodes(*ring, Ids(n));
  EXPECT_LT(MaxLoad(Place(*probe, hashes)) / average, 1.2);
  EXPECT_GT(MaxLoad(Place(*ring, hashes)) / average, 2.0);
}

std::map<NodeId, uint64_t> WeightedLoads(std::string_view name,
                                         const PlacementParams& params,
                                         double weight_of_3) {
  auto p = Make(name, params);
  EXPECT_TRUE(p->traits().weights) << name;
  for (NodeId id = 0; id < 8; ++id) {
    EXPECT_TRUE(p->AddNode(id, id == 3 ? weight_of_3 : 1.0).ok()) << name;
  }
  return Loads(Place(*p, Hashes(100000, 16)));
}

// Rendezvous and the ring give a node of weight 3 three times the keys of
// one of weight 1.
TEST(PlacementSchemesTest, WeightsScaleShares) {
  PlacementParams params = SmallParams();
  params.vnodes = 2000;
  for (const char* name : {"rendezvous", "ring"}) {
    const auto loads = WeightedLoads(name, params, 3.0);
    const double others = (100000.0 - static_cast<double>(loads.at(3))) / 7;
    EXPECT_NEAR(static_cast<double>(loads.at(3)) / others, 3.0, 0.3) << name;
  }
}

// d choices compares load per weight: a heavier node wins more of the keys
// that have it among their candidates. It cannot win the others, so its
// share grows by less than its weight (with 8 nodes and 2 choices, about a
// fifth of the keys have it as a candidate at all).
TEST(PlacementSchemesTest, DChoiceWeighsLoads) {
  const PlacementParams params = SmallParams();
  const uint64_t light = WeightedLoads("dchoice", params, 1.0).at(3);
  const uint64_t heavy = WeightedLoads("dchoice", params, 3.0).at(3);
  EXPECT_GT(static_cast<double>(heavy), 1.1 * static_cast<double>(light));
}

TEST(PlacedKeysTest, ReportsJumpMovesToTheNewNodeOnly) {
  auto p = Make("jump");
  PlacedKeys keys(p.get());
  AddNodes(*p, Ids(5));
  for (const uint64_t h : Hashes(3000, 17)) ASSERT_TRUE(keys.AddKey(h).ok());
  auto moves = keys.AddNode(77);
  ASSERT_TRUE(moves.ok());
  EXPECT_NEAR(static_cast<double>(moves->size()) / 3000, 1.0 / 6, 0.03);
  for (const Move& m : *moves) EXPECT_EQ(m.to, 77u);
  EXPECT_EQ(keys.Loads().size(), 6u);
  EXPECT_EQ(keys.RemoveNode(Ids(5)[0]).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace roundtable::mapping
