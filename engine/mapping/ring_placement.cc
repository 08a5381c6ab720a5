// The placements whose nodes own points on one hash ring (declared in
// engine/mapping/ring_placement.h; MakePlacement makes them).
#include "engine/mapping/ring_placement.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <numeric>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"

namespace roundtable::mapping {
namespace {

// The salt of the priority hash that orders keys in the load-aware schemes.
constexpr uint64_t kPrioritySalt = 0x5052494f52495459ULL;


// The j-th probe (or choice) of a key: the hash itself first, derived
// hashes Mix64(hash, j) after.
uint64_t Probe(uint64_t hash, uint64_t j) {
  return j == 0 ? hash : Mix64(hash, j);
}

// MixSalt(j) for j < count, computed once: a lookup then derives probe j
// as Mix64(hash ^ salts[j]), one mix instead of two.
std::vector<uint64_t> ProbeSalts(uint64_t count) {
  std::vector<uint64_t> salts(count);
  for (uint64_t j = 0; j < count; ++j) {
    salts[j] = MixSalt(j);
  }
  return salts;
}

// Sorted ring points with their owners (dense node indices) and a jump
// table that finds the successor of a hash in expected constant time: the
// top bits of the hash index the first point of their slice of the ring.
// A sentinel point 2^64 - 1 after the last lets a scan stop without a
// bounds check.
class RingIndex {
 public:
  size_t size() const { return owners_.size(); }
  uint64_t point(size_t i) const { return points_[i]; }
  uint32_t owner(size_t i) const { return owners_[i]; }

  // The index of the first point >= h, wrapping to 0 past the last.
  // REQUIRES: size() > 0.
  size_t Successor(uint64_t h) const {
    size_t i = jump_[h >> shift_];
    // A slice holds about two points: two steps without a branch, then a
    // loop that is rarely entered.
    i += points_[i] < h;
    i += points_[i] < h;
    while (points_[i] < h) ++i;
    return i == owners_.size() ? 0 : i;
  }

  // Adds `points` (point, owner), in any order.
  void Insert(std::vector<std::pair<uint64_t, uint32_t>> points) {
    std::sort(points.begin(), points.end());
    const size_t n = size();
    std::vector<uint64_t> merged_points;
    std::vector<uint32_t> merged_owners;
    merged_points.reserve(n + points.size() + 1);
    merged_owners.reserve(n + points.size());
    size_t a = 0, b = 0;
    while (a < n || b < points.size()) {
      if (b == points.size() || (a < n && points_[a] <= points[b].first)) {
        merged_points.push_back(points_[a]);
        merged_owners.push_back(owners_[a++]);
      } else {
        merged_points.push_back(points[b].first);
        merged_owners.push_back(points[b++].second);
      }
    }
    merged_points.push_back(kSentinel);
    points_ = std::move(merged_points);
    owners_ = std::move(merged_owners);
    Rebuild();
  }

  // Drops the points of `index`; the points of `last` become `index`'s.
  void Remove(uint32_t index, uint32_t last) {
    size_t out = 0;
    for (size_t i = 0; i < size(); ++i) {
      if (owners_[i] == index) continue;
      points_[out] = points_[i];
      owners_[out] = owners_[i] == last ? index : owners_[i];
      ++out;
    }
    points_.resize(out);
    points_.push_back(kSentinel);
    owners_.resize(out);
    Rebuild();
  }

  size_t MemoryBytes() const {
    return points_.capacity() * sizeof(uint64_t) +
           owners_.capacity() * sizeof(uint32_t) +
           jump_.capacity() * sizeof(uint32_t);
  }

 private:
  static constexpr uint64_t kSentinel = ~uint64_t{0};

  // One jump entry for every two points or so.
  void Rebuild() {
    const uint64_t slices =
        std::max<uint64_t>(2, std::bit_ceil<uint64_t>(size()) / 2);
    shift_ = 64 - std::countr_zero(slices);
    jump_.assign(slices, 0);
    size_t i = 0;
    for (uint64_t s = 0; s < slices; ++s) {
      const uint64_t start = s << shift_;
      while (i < size() && points_[i] < start) ++i;
      jump_[s] = static_cast<uint32_t>(i);
    }
  }

  std::vector<uint64_t> points_ = {kSentinel};
  std::vector<uint32_t> owners_;
  std::vector<uint32_t> jump_ = {0, 0};
  int shift_ = 63;
};

// ------------------------------------------------- schemes on one ring

// A scheme whose nodes own points on one ring: `PointsOf` says how many.
class RingPlacement : public Placement {
 public:
  size_t MemoryBytes() const override { return ring_.MemoryBytes(); }

 protected:
  explicit RingPlacement(uint64_t seed) : seed_(seed) {}
  virtual uint64_t PointsOf(uint32_t index) const = 0;

  absl::Status OnAdd(uint32_t first) override {
    uint64_t count = ring_.size();
    for (uint32_t i = first; i < ids_.size(); ++i) count += PointsOf(i);
    // Ring positions are 32-bit, and one more is the sentinel's.
    if (count >= std::numeric_limits<uint32_t>::max()) {
      return absl::ResourceExhaustedError(
          absl::StrCat(std::string(name()), ": ", count,
                       " ring points would pass 2^32 - 2"));
    }
    std::vector<std::pair<uint64_t, uint32_t>> points;
    points.reserve(count - ring_.size());
    for (uint32_t i = first; i < ids_.size(); ++i) {
      const uint64_t base = NodeBase(ids_[i], seed_);
      const uint64_t own = PointsOf(i);
      for (uint64_t j = 0; j < own; ++j) {
        points.emplace_back(Probe(base, j), i);
      }
    }
    ring_.Insert(std::move(points));
    return absl::OkStatus();
  }
  void OnRemove(uint32_t index, uint32_t last) override {
    ring_.Remove(index, last);
  }
  // The node owning the successor of `h`. REQUIRES: a node.
  uint32_t OwnerOf(uint64_t h) const { return ring_.owner(ring_.Successor(h)); }

  const uint64_t seed_;
  RingIndex ring_;
};

// Ring consistent hashing with virtual nodes (the ketama layout): a node of
// weight w owns round(V w) points, at least one.
class VnodeRing final : public RingPlacement {
 public:
  VnodeRing(uint64_t vnodes, uint64_t seed)
      : RingPlacement(seed), vnodes_(vnodes) {}
  std::string_view name() const override { return "ring"; }
  PlacementTraits traits() const override { return {.weights = true}; }
  std::string params() const override {
    return absl::StrCat("vnodes=", vnodes_);
  }
  NodeId Locate(uint64_t hash) const override {
    if (ids_.empty()) return kNoNode;
    return ids_[OwnerOf(hash)];
  }

 private:
  uint64_t PointsOf(uint32_t index) const override {
    return std::max<uint64_t>(
        1, std::llround(static_cast<double>(vnodes_) * weights_[index]));
  }
  const uint64_t vnodes_;
};

// Multi-probe consistent hashing (Appleton and O'Reilly): one point per
// node; a key probes the ring K times and takes the node whose point is
// nearest clockwise to any probe.
class MultiProbe final : public RingPlacement {
 public:
  MultiProbe(uint64_t probes, uint64_t seed)
      : RingPlacement(seed), probes_(probes), salts_(ProbeSalts(probes)) {}
  std::string_view name() const override { return "multiprobe"; }
  PlacementTraits traits() const override { return {}; }
  std::string params() const override {
    return absl::StrCat("probes=", probes_);
  }
  NodeId Locate(uint64_t hash) const override {
    if (ids_.empty()) return kNoNode;
    size_t best = ring_.Successor(hash);
    uint64_t best_distance = ring_.point(best) - hash;  // modulo 2^64
    for (uint64_t j = 1; j < probes_; ++j) {
      const uint64_t p = Mix64(hash ^ salts_[j]);
      const size_t s = ring_.Successor(p);
      const uint64_t distance = ring_.point(s) - p;
      // Selects, not branches: which probe is nearest is a coin toss.
      best = distance < best_distance ? s : best;
      best_distance = std::min(distance, best_distance);
    }
    return ids_[ring_.owner(best)];
  }

 private:
  uint64_t PointsOf(uint32_t) const override { return 1; }
  const uint64_t probes_;
  const std::vector<uint64_t> salts_;
};

// What the load-aware schemes share: one point per node, loads per node
// from the last Assign, keys placed in the order of their priority hash.
class LoadAwareRing : public RingPlacement {
 public:
  // The ring and the loads of the last Assign.
  size_t MemoryBytes() const override {
    return RingPlacement::MemoryBytes() + loads_.capacity() * sizeof(uint64_t);
  }

 protected:
  using RingPlacement::RingPlacement;
  uint64_t PointsOf(uint32_t) const override { return 1; }

  absl::Status OnAdd(uint32_t first) override {
    loads_.clear();
    return RingPlacement::OnAdd(first);
  }
  void OnRemove(uint32_t index, uint32_t last) override {
    loads_.clear();
    RingPlacement::OnRemove(index, last);
  }

  // The key indices in placing order.
  static std::vector<uint32_t> PlacingOrder(std::span<const uint64_t> hashes) {
    std::vector<std::pair<uint64_t, uint32_t>> keyed(hashes.size());
    for (size_t i = 0; i < hashes.size(); ++i) {
      keyed[i] = {Mix64(hashes[i], kPrioritySalt), static_cast<uint32_t>(i)};
    }
    std::sort(keyed.begin(), keyed.end());
    std::vector<uint32_t> order(hashes.size());
    for (size_t i = 0; i < keyed.size(); ++i) order[i] = keyed[i].second;
    return order;
  }

  uint64_t load(uint32_t index) const {
    return loads_.empty() ? 0 : loads_[index];
  }

  std::vector<uint64_t> loads_;  // by dense index; empty: no keys placed
};

// Consistent hashing with bounded loads (Mirrokni, Thorup and
// Zadimoghaddam): with m keys every node takes at most ceil(c m w / W) (w
// its weight, W the sum); a key goes to the first node clockwise from its
// hash that is not full.
class BoundedLoads final : public LoadAwareRing {
 public:
  BoundedLoads(double c, uint64_t seed) : LoadAwareRing(seed), c_(c) {}
  std::string_view name() const override { return "bounded"; }
  PlacementTraits traits() const override {
    return {.weights = true, .load_aware = true};
  }
  std::string params() const override { return absl::StrCat("c=", c_); }

  NodeId Locate(uint64_t hash) const override {
    if (ids_.empty()) return kNoNode;
    size_t r = ring_.Successor(hash);
    for (size_t t = 0; t < ring_.size(); ++t) {
      const uint32_t o = ring_.owner(r);
      if (loads_.empty() || loads_[o] < capacity_[o]) return ids_[o];
      r = r + 1 == ring_.size() ? 0 : r + 1;
    }
    return ids_[ring_.owner(ring_.Successor(hash))];  // every node full
  }

  void Assign(std::span<const uint64_t> hashes,
              std::span<NodeId> out) override {
    const size_t n = ids_.size();
    if (n == 0) {
      std::fill(out.begin(), out.end(), kNoNode);
      return;
    }
    capacity_.resize(n);
    const double total = total_weight();
    for (uint32_t i = 0; i < n; ++i) {
      capacity_[i] = Capacity(c_, hashes.size(), weights_[i], total);
    }
    loads_.assign(n, 0);
    // next[r]: a ring position at or after r (clockwise) that may not be
    // full; full positions point past themselves (union-find, path
    // halving). The capacities sum to at least c m > m, so a free one
    // always exists while keys remain.
    std::vector<uint32_t> next(ring_.size());
    std::iota(next.begin(), next.end(), 0);
    auto free_from = [&](uint32_t r) {
      while (next[r] != r) {
        next[r] = next[next[r]];
        r = next[r];
      }
      return r;
    };
    for (const uint32_t k : PlacingOrder(hashes)) {
      const uint32_t r =
          free_from(static_cast<uint32_t>(ring_.Successor(hashes[k])));
      const uint32_t o = ring_.owner(r);
      out[k] = ids_[o];
      if (++loads_[o] == capacity_[o]) {
        next[r] = r + 1 == ring_.size() ? 0 : r + 1;
      }
    }
  }

  // ceil(c m w / W): the most keys a node of weight w takes.
  static uint64_t Capacity(double c, uint64_t keys, double weight,
                           double total_weight) {
    return static_cast<uint64_t>(
        std::ceil(c * static_cast<double>(keys) * weight / total_weight));
  }

  size_t MemoryBytes() const override {
    return LoadAwareRing::MemoryBytes() +
           capacity_.capacity() * sizeof(uint64_t);
  }

 private:
  const double c_;
  std::vector<uint64_t> capacity_;
};

// The power of d choices on the ring (Byers, Considine and Mitzenmacher):
// one point per node; a key looks at the owners of d points of its own and
// joins the least loaded (relative to weight), the first on a tie.
class DChoice final : public LoadAwareRing {
 public:
  DChoice(uint64_t choices, uint64_t seed)
      : LoadAwareRing(seed), choices_(choices), salts_(ProbeSalts(choices)) {}
  std::string_view name() const override { return "dchoice"; }
  PlacementTraits traits() const override {
    return {.weights = true, .load_aware = true};
  }
  std::string params() const override {
    return absl::StrCat("choices=", choices_);
  }

  NodeId Locate(uint64_t hash) const override {
    if (ids_.empty()) return kNoNode;
    return ids_[Choose(hash)];
  }

  void Assign(std::span<const uint64_t> hashes,
              std::span<NodeId> out) override {
    if (ids_.empty()) {
      std::fill(out.begin(), out.end(), kNoNode);
      return;
    }
    loads_.assign(ids_.size(), 0);
    for (const uint32_t k : PlacingOrder(hashes)) {
      const uint32_t o = Choose(hashes[k]);
      ++loads_[o];
      out[k] = ids_[o];
    }
  }

 private:
  uint32_t Choose(uint64_t hash) const {
    uint32_t best = OwnerOf(hash);
    double best_load = static_cast<double>(load(best)) / weights_[best];
    for (uint64_t j = 1; j < choices_; ++j) {
      const uint32_t o = OwnerOf(Mix64(hash ^ salts_[j]));
      const double l = static_cast<double>(load(o)) / weights_[o];
      if (l < best_load) {
        best = o;
        best_load = l;
      }
    }
    return best;
  }
  const uint64_t choices_;
  const std::vector<uint64_t> salts_;
};

}  // namespace

std::unique_ptr<Placement> NewVnodeRing(uint64_t vnodes, uint64_t seed) {
  return std::make_unique<VnodeRing>(vnodes, seed);
}
std::unique_ptr<Placement> NewMultiProbe(uint64_t probes, uint64_t seed) {
  return std::make_unique<MultiProbe>(probes, seed);
}
std::unique_ptr<Placement> NewBoundedLoads(double c, uint64_t seed) {
  return std::make_unique<BoundedLoads>(c, seed);
}
std::unique_ptr<Placement> NewDChoice(uint64_t choices, uint64_t seed) {
  return std::make_unique<DChoice>(choices, seed);
}

uint64_t BoundedCapacity(double c, uint64_t keys, double weight,
                         double total_weight) {
  return BoundedLoads::Capacity(c, keys, weight, total_weight);
}

}  // namespace roundtable::mapping
