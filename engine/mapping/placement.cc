#include "engine/mapping/placement.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <numeric>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/mapping/jump_hash.h"
#include "engine/mapping/round_mapping.h"

namespace roundtable::mapping {

// ---------------------------------------------------------------- Placement

std::optional<uint32_t> Placement::IndexOf(NodeId node) const {
  auto it = index_.find(node);
  if (it == index_.end()) return std::nullopt;
  return it->second;
}

absl::Status Placement::CheckWeight(double weight) const {
  if (!(weight > 0) || !std::isfinite(weight)) {
    return absl::InvalidArgumentError(
        absl::StrCat("node weight ", weight, " is not a positive number"));
  }
  if (weight != 1.0 && !traits().weights) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(name()), " takes no weights; node weight ",
                     weight, " is not 1"));
  }
  return absl::OkStatus();
}

absl::Status Placement::AddNode(NodeId node, double weight) {
  return AddNodes({&node, 1}, {&weight, 1});
}

absl::Status Placement::AddNodes(std::span<const NodeId> nodes,
                                 std::span<const double> weights) {
  if (!weights.empty() && weights.size() != nodes.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(nodes.size(), " nodes but ", weights.size(), " weights"));
  }
  if (ids_.size() + nodes.size() >= std::numeric_limits<uint32_t>::max()) {
    return absl::ResourceExhaustedError("2^32 - 2 nodes at most");
  }
  absl::flat_hash_set<NodeId> batch;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (!weights.empty()) {
      if (absl::Status s = CheckWeight(weights[i]); !s.ok()) return s;
    }
    if (nodes[i] == kNoNode) {
      return absl::InvalidArgumentError("node id 2^64 - 1 is reserved");
    }
    if (index_.contains(nodes[i]) || !batch.insert(nodes[i]).second) {
      return absl::AlreadyExistsError(absl::StrCat(
          std::string(name()), ": node ", nodes[i], " is already placed"));
    }
  }
  const auto first = static_cast<uint32_t>(ids_.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    index_[nodes[i]] = static_cast<uint32_t>(ids_.size());
    ids_.push_back(nodes[i]);
    weights_.push_back(weights.empty() ? 1.0 : weights[i]);
  }
  if (absl::Status s = OnAdd(first); !s.ok()) {
    for (size_t i = first; i < ids_.size(); ++i) index_.erase(ids_[i]);
    ids_.resize(first);
    weights_.resize(first);
    return s;
  }
  return absl::OkStatus();
}

absl::Status Placement::RemoveNode(NodeId node) {
  const std::optional<uint32_t> found = IndexOf(node);
  if (!found) {
    return absl::NotFoundError(
        absl::StrCat(std::string(name()), ": node ", node, " is not placed"));
  }
  const uint32_t index = *found;
  const auto last = static_cast<uint32_t>(ids_.size() - 1);
  if (!traits().arbitrary_removal && index != last) {
    return absl::FailedPreconditionError(
        absl::StrCat(std::string(name()), " removes only its newest node (",
                     ids_[last], "), not node ", node));
  }
  index_.erase(node);
  if (index != last) {
    ids_[index] = ids_[last];
    weights_[index] = weights_[last];
    index_[ids_[index]] = index;
  }
  ids_.pop_back();
  weights_.pop_back();
  OnRemove(index, last);
  return absl::OkStatus();
}

void Placement::Assign(std::span<const uint64_t> hashes,
                       std::span<NodeId> out) {
  for (size_t i = 0; i < hashes.size(); ++i) out[i] = Locate(hashes[i]);
}

namespace {

// The salt of the priority hash that orders keys in the load-aware schemes.
constexpr uint64_t kPrioritySalt = 0x5052494f52495459ULL;

// The base hash of a node: where everything about it on the ring starts.
uint64_t NodeBase(NodeId node, uint64_t seed) { return Mix64(node, seed); }

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

// ------------------------------------------------- round-hashing and jump

// The bucket schemes of the mapping layer, bucket b on the b-th node added.
// Only the newest node may leave (a bucket scheme releases its last bucket).
class RoundPlacement final : public Placement {
 public:
  explicit RoundPlacement(uint64_t s0) : s0_(s0) {}
  std::string_view name() const override { return "round"; }
  PlacementTraits traits() const override {
    return {.arbitrary_removal = false};
  }
  std::string params() const override { return absl::StrCat("s0=", s0_); }

  NodeId Locate(uint64_t hash) const override {
    if (!mapping_) return kNoNode;
    return ids_[mapping_->FindBucket(hash)];
  }
  size_t MemoryBytes() const override { return sizeof(RoundMapping); }

 private:
  absl::Status OnAdd(uint32_t first) override {
    const std::optional<RoundMapping> before = mapping_;
    for (uint64_t n = uint64_t{first} + 1; n <= ids_.size(); ++n) {
      if (n < s0_) continue;
      absl::Status s;
      if (!mapping_) {
        auto created = RoundMapping::Create(s0_, n);
        if (created.ok()) mapping_ = *std::move(created);
        s = created.status();
      } else {
        s = mapping_->NewBucket().status();
      }
      if (!s.ok()) {
        mapping_ = before;
        return s;
      }
    }
    return absl::OkStatus();
  }
  void OnRemove(uint32_t, uint32_t) override {
    if (!mapping_) return;
    if (ids_.size() < s0_) {
      mapping_.reset();
    } else {
      (void)mapping_->FreeBucket();  // cannot fail above min_buckets
    }
  }

  const uint64_t s0_;
  std::optional<RoundMapping> mapping_;
};

class JumpPlacement final : public Placement {
 public:
  std::string_view name() const override { return "jump"; }
  PlacementTraits traits() const override {
    return {.arbitrary_removal = false};
  }
  std::string params() const override { return ""; }
  NodeId Locate(uint64_t hash) const override {
    if (ids_.empty()) return kNoNode;
    return ids_[JumpConsistentHash(hash, ids_.size())];
  }
  size_t MemoryBytes() const override { return 0; }

 private:
  absl::Status OnAdd(uint32_t) override { return absl::OkStatus(); }
  void OnRemove(uint32_t, uint32_t) override {}
};

// ---------------------------------------------------------------- rendezvous

// Highest random weight: every node scores the key, the highest wins. With
// weights the score is w / -ln(u) for the node's uniform u (the weighted
// form that keeps each node's share proportional to its weight).
class RendezvousPlacement final : public Placement {
 public:
  explicit RendezvousPlacement(uint64_t seed) : seed_(seed) {}
  std::string_view name() const override { return "rendezvous"; }
  PlacementTraits traits() const override { return {.weights = true}; }
  std::string params() const override { return ""; }

  NodeId Locate(uint64_t hash) const override {
    if (ids_.empty()) return kNoNode;
    size_t best = 0;
    if (uniform_) {
      uint64_t best_score = 0;
      for (size_t i = 0; i < bases_.size(); ++i) {
        const uint64_t score = Mix64(hash ^ bases_[i]);
        if (score >= best_score) {
          best_score = score;
          best = i;
        }
      }
    } else {
      double best_score = std::numeric_limits<double>::infinity();
      for (size_t i = 0; i < bases_.size(); ++i) {
        // u in (0, 1); -ln(u) / w is the key's exponential clock at node i,
        // and the first clock to ring wins.
        const double u =
            (static_cast<double>(Mix64(hash ^ bases_[i]) >> 11) + 0.5) *
            0x1.0p-53;
        const double score = -std::log(u) / weights_[i];
        if (score < best_score) {
          best_score = score;
          best = i;
        }
      }
    }
    return ids_[best];
  }
  size_t MemoryBytes() const override {
    return bases_.capacity() * sizeof(uint64_t);
  }

 private:
  absl::Status OnAdd(uint32_t first) override {
    for (size_t i = first; i < ids_.size(); ++i) {
      bases_.push_back(NodeBase(ids_[i], seed_));
    }
    Refresh();
    return absl::OkStatus();
  }
  void OnRemove(uint32_t index, uint32_t last) override {
    bases_[index] = bases_[last];
    bases_.pop_back();
    Refresh();
  }
  void Refresh() {
    uniform_ = std::all_of(weights_.begin(), weights_.end(),
                           [](double w) { return w == 1.0; });
  }

  const uint64_t seed_;
  std::vector<uint64_t> bases_;
  bool uniform_ = true;
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

// ------------------------------------------------------------------ Maglev

// Maglev hashing (Eisenbud et al.): a lookup table of M (prime) entries
// filled by the nodes in turn, each taking the next free entry of its own
// permutation (offset + j * skip mod M). Nodes fill in the order of their
// ids, so the table depends only on the node set.
class Maglev final : public Placement {
 public:
  Maglev(uint64_t table_size, uint64_t seed)
      : table_size_(table_size), seed_(seed) {}
  std::string_view name() const override { return "maglev"; }
  PlacementTraits traits() const override { return {}; }
  std::string params() const override {
    return absl::StrCat("table_size=", table_size_);
  }
  NodeId Locate(uint64_t hash) const override {
    if (ids_.empty()) return kNoNode;
    return ids_[table_[MulHi64(hash, table_size_)]];
  }
  size_t MemoryBytes() const override {
    return table_.capacity() * sizeof(uint32_t);
  }

 private:
  absl::Status OnAdd(uint32_t) override {
    if (ids_.size() > table_size_) {
      return absl::ResourceExhaustedError(
          absl::StrCat("maglev: a table of ", table_size_, " entries takes ",
                       table_size_, " nodes at most"));
    }
    Fill();
    return absl::OkStatus();
  }
  void OnRemove(uint32_t, uint32_t) override { Fill(); }

  void Fill() {
    const uint64_t m = table_size_;
    const size_t n = ids_.size();
    table_.assign(n == 0 ? 0 : m, kEmpty);
    if (n == 0) return;
    std::vector<uint32_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(),
              [&](uint32_t a, uint32_t b) { return ids_[a] < ids_[b]; });
    std::vector<uint64_t> position(n), skip(n);
    for (size_t i = 0; i < n; ++i) {
      const uint64_t base = NodeBase(ids_[order[i]], seed_);
      position[i] = Mix64(base, 1) % m;
      skip[i] = m == 1 ? 0 : Mix64(base, 2) % (m - 1) + 1;
    }
    uint64_t filled = 0;
    while (true) {
      for (size_t i = 0; i < n; ++i) {
        while (table_[position[i]] != kEmpty) {
          position[i] += skip[i];
          if (position[i] >= m) position[i] -= m;
        }
        table_[position[i]] = order[i];
        if (++filled == m) return;
      }
    }
  }

  static constexpr uint32_t kEmpty = ~uint32_t{0};
  const uint64_t table_size_;
  const uint64_t seed_;
  std::vector<uint32_t> table_;  // dense node index per entry
};

}  // namespace

bool IsPrime(uint64_t n) {
  if (n < 2) return false;
  for (uint64_t d = 2; d <= n / d; ++d) {
    if (n % d == 0) return false;
  }
  return true;
}

uint64_t NextPrime(uint64_t n) {
  while (!IsPrime(n)) ++n;
  return n;
}

uint64_t MaglevTableSizeFor(uint64_t nodes) {
  return NextPrime(std::max<uint64_t>(65537, 100 * nodes));
}

std::vector<std::string> PlacementNames() {
  return {"round",  "jump",    "rendezvous", "ring",
          "maglev", "bounded", "multiprobe", "dchoice"};
}

absl::StatusOr<std::unique_ptr<Placement>> MakePlacement(
    std::string_view name, const PlacementParams& p) {
  auto invalid = [&](std::string_view what) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(name), ": ", std::string(what)));
  };
  if (name == "round") {
    if (p.s0 == 0) return invalid("s0 must be at least 1");
    return std::make_unique<RoundPlacement>(p.s0);
  }
  if (name == "jump") return std::make_unique<JumpPlacement>();
  if (name == "rendezvous") {
    return std::make_unique<RendezvousPlacement>(p.seed);
  }
  if (name == "ring") {
    if (p.vnodes == 0 || p.vnodes > (uint64_t{1} << 24)) {
      return invalid("vnodes must be in [1, 2^24]");
    }
    return std::make_unique<VnodeRing>(p.vnodes, p.seed);
  }
  if (name == "maglev") {
    if (!IsPrime(p.table_size) || p.table_size > (uint64_t{1} << 32) - 1) {
      return invalid(absl::StrCat("table_size ", p.table_size,
                                  " is not a prime below 2^32"));
    }
    return std::make_unique<Maglev>(p.table_size, p.seed);
  }
  if (name == "bounded") {
    if (!(p.c > 1) || !std::isfinite(p.c)) {
      return invalid(absl::StrCat("c = ", p.c, " must be above 1"));
    }
    return std::make_unique<BoundedLoads>(p.c, p.seed);
  }
  if (name == "multiprobe") {
    if (p.probes == 0) return invalid("probes must be at least 1");
    return std::make_unique<MultiProbe>(p.probes, p.seed);
  }
  if (name == "dchoice") {
    if (p.choices == 0) return invalid("choices must be at least 1");
    return std::make_unique<DChoice>(p.choices, p.seed);
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown placement '", std::string(name), "'; expected one of ",
      absl::StrJoin(PlacementNames(), ", ")));
}

uint64_t BoundedCapacity(double c, uint64_t keys, double weight,
                         double total_weight) {
  return BoundedLoads::Capacity(c, keys, weight, total_weight);
}

// --------------------------------------------------------------- PlacedKeys

std::vector<uint64_t> PlacedKeys::Loads() const {
  absl::flat_hash_map<NodeId, uint32_t> index;
  const std::span<const NodeId> ids = placement_->nodes();
  for (uint32_t i = 0; i < ids.size(); ++i) index[ids[i]] = i;
  std::vector<uint64_t> loads(ids.size(), 0);
  for (const NodeId node : nodes_) {
    if (auto it = index.find(node); it != index.end()) ++loads[it->second];
  }
  return loads;
}

std::vector<Move> PlacedKeys::Replace(const std::vector<NodeId>& before) {
  nodes_.resize(hashes_.size());
  placement_->Assign(hashes_, nodes_);
  std::vector<Move> moves;
  for (size_t i = 0; i < hashes_.size(); ++i) {
    if (before[i] != kNoNode && before[i] != nodes_[i]) {
      moves.push_back({i, before[i], nodes_[i]});
    }
  }
  return moves;
}

absl::StatusOr<std::vector<Move>> PlacedKeys::AddKey(uint64_t hash) {
  if (std::find(hashes_.begin(), hashes_.end(), hash) != hashes_.end()) {
    return absl::AlreadyExistsError(absl::StrCat("key hash ", hash));
  }
  std::vector<NodeId> before = nodes_;
  hashes_.push_back(hash);
  before.push_back(kNoNode);
  return Replace(before);
}

absl::StatusOr<std::vector<Move>> PlacedKeys::RemoveKey(uint64_t hash) {
  auto it = std::find(hashes_.begin(), hashes_.end(), hash);
  if (it == hashes_.end()) {
    return absl::NotFoundError(absl::StrCat("key hash ", hash));
  }
  const auto at = it - hashes_.begin();
  std::vector<NodeId> before = nodes_;
  before.erase(before.begin() + at);
  hashes_.erase(it);
  return Replace(before);
}

absl::StatusOr<std::vector<Move>> PlacedKeys::AddNode(NodeId node,
                                                      double weight) {
  if (absl::Status s = placement_->AddNode(node, weight); !s.ok()) return s;
  const std::vector<NodeId> before = nodes_;
  return Replace(before);
}

absl::StatusOr<std::vector<Move>> PlacedKeys::RemoveNode(NodeId node) {
  if (absl::Status s = placement_->RemoveNode(node); !s.ok()) return s;
  const std::vector<NodeId> before = nodes_;
  return Replace(before);
}

}  // namespace roundtable::mapping
