#include "roundtable/placement.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/mapping/jump_hash.h"
#include "engine/mapping/ring_placement.h"
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
    return NewVnodeRing(p.vnodes, p.seed);
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
    return NewBoundedLoads(p.c, p.seed);
  }
  if (name == "multiprobe") {
    if (p.probes == 0) return invalid("probes must be at least 1");
    return NewMultiProbe(p.probes, p.seed);
  }
  if (name == "dchoice") {
    if (p.choices == 0) return invalid("choices must be at least 1");
    return NewDChoice(p.choices, p.seed);
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown placement '", std::string(name), "'; expected one of ",
      absl::StrJoin(PlacementNames(), ", ")));
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
