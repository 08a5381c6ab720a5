// Placing keys on servers ("nodes"): one interface over round-hashing, jump
// hash, rendezvous, ring consistent hashing with virtual nodes, Maglev,
// consistent hashing with bounded loads, multi-probe consistent hashing and
// the power of d choices on the ring. Pure arithmetic, no I/O.
// docs/placement.md compares them with measured and published figures.
//
// Every scheme but round and jump is a function of (node set, key set): the
// node of a key does not depend on the order in which nodes were added and
// removed. (Round and jump number their nodes in the order they came, and
// only the newest may leave.) The load-aware schemes (bounded loads, d choices)
// place a whole key set in a canonical order (by a priority hash of each key),
// so their placement too depends only on the two sets; PlacedKeys tracks a key
// set under any sequence of changes and reports the keys each change moves.
//
// Thread-safety: const calls may run concurrently; AddNode, RemoveNode and
// Assign need external synchronisation against every other call.
#ifndef ROUNDTABLE_PLACEMENT_H_
#define ROUNDTABLE_PLACEMENT_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <numeric>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "roundtable/export.h"

namespace roundtable::mapping {

using NodeId = uint64_t;

// What Locate returns when there is no node to offer: no node at all, or
// round-hashing with fewer than s0 nodes.
inline constexpr NodeId kNoNode = ~uint64_t{0};

// A 64-bit bijective mixer (xorshift-multiply rounds): spreads the bits of
// node ids into ring points and derives a key's extra hashes.
inline uint64_t Mix64(uint64_t x) {
  x ^= x >> 31;
  x *= 0x7fb5d329728ea185ULL;
  x ^= x >> 27;
  x *= 0x81dadef4bc2dd44dULL;
  x ^= x >> 33;
  return x;
}

// The salt of derived hash i, and the i-th derived hash of `x` (probes,
// choices, priorities, node points): independent-looking for different i.
inline uint64_t MixSalt(uint64_t i) {
  return Mix64(i * 0x9e3779b97f4a7c15ULL + 0x632be59bd9b4e019ULL);
}
inline uint64_t Mix64(uint64_t x, uint64_t i) { return Mix64(x ^ MixSalt(i)); }

struct PlacementTraits {
  bool arbitrary_removal = true;  // false: only the newest node may leave
  bool weights = false;           // AddNode takes weights other than 1
  bool load_aware = false;        // a key's node depends on the other keys
};

// The parameters of every scheme; each scheme reads its own.
struct PlacementParams {
  uint64_t s0 = 8;              // round: slack, the fewest nodes it places on
  uint64_t vnodes = 100;        // ring: points per node of weight 1
  uint64_t table_size = 65537;  // maglev: M, a prime >= the node count
  uint64_t probes = 21;         // multiprobe: K >= 1
  double c = 1.25;              // bounded: capacity ceil(c m / n), c > 1
  uint64_t choices = 2;         // dchoice: d >= 1
  uint64_t seed = 0;            // where nodes land (ring points, tables)
};

class ROUNDTABLE_EXPORT Placement {
 public:
  virtual ~Placement() = default;

  // "round", "jump", "rendezvous", "ring", "maglev", "bounded",
  // "multiprobe", "dchoice".
  virtual std::string_view name() const = 0;
  virtual PlacementTraits traits() const = 0;
  // The parameters that shape this instance, as "vnodes=100".
  virtual std::string params() const = 0;

  // Adds `node` with `weight` (> 0; exactly 1 unless traits().weights).
  // AlreadyExists for a node present, InvalidArgument for a bad weight,
  // ResourceExhausted past the scheme's limit (Maglev: table_size nodes).
  absl::Status AddNode(NodeId node, double weight = 1.0);
  // Adds many nodes at once (weights empty: all 1), as fast as one: the
  // way to build a large cluster. All or nothing, with AddNode's errors.
  absl::Status AddNodes(std::span<const NodeId> nodes,
                        std::span<const double> weights = {});
  // Removes `node`. NotFound when absent; FailedPrecondition for a node
  // other than the newest when !traits().arbitrary_removal.
  absl::Status RemoveNode(NodeId node);

  size_t num_nodes() const { return ids_.size(); }
  // Nodes by dense index; the index of a node may change when another is
  // removed.
  std::span<const NodeId> nodes() const { return ids_; }
  std::span<const double> weights() const { return weights_; }

  // The node of a key with this 64-bit hash. Load-aware schemes answer
  // where a new key would go given the loads of the last Assign. kNoNode
  // when the scheme has no node to offer.
  virtual NodeId Locate(uint64_t hash) const = 0;

  // Places a whole key set: out[i] is the node of hashes[i]. The stateless
  // schemes call Locate for each; the load-aware ones place the keys one at
  // a time in the order of their priority hash and keep the resulting
  // loads. REQUIRES: out.size() == hashes.size().
  virtual void Assign(std::span<const uint64_t> hashes, std::span<NodeId> out);

  // Bytes the scheme keeps for its nodes: its ring, table or seeds and,
  // for the load-aware schemes, the loads of the last Assign. Not counted:
  // the keys, and the node list every scheme shares (id, weight and an
  // id-to-index map, about 40 bytes a node).
  virtual size_t MemoryBytes() const = 0;

 protected:
  // Dense index of `node`, or nullopt.
  std::optional<uint32_t> IndexOf(NodeId node) const;

  // Hooks for AddNodes and RemoveNode, called after the node lists
  // changed. OnAdd(first): the nodes at first .. num_nodes() - 1 joined; on
  // an error the scheme's own state must be as before the call.
  // OnRemove(index, last): the node at `index` left and, when index !=
  // last, the node that was at `last` now sits at `index`.
  virtual absl::Status OnAdd(uint32_t first) = 0;
  virtual void OnRemove(uint32_t index, uint32_t last) = 0;
  // Whether AddNode may take this weight: 1 only, unless traits().weights.
  absl::Status CheckWeight(double weight) const;
  // The sum of all weights, summed on each call (O(n)).
  double total_weight() const {
    return std::accumulate(weights_.begin(), weights_.end(), 0.0);
  }

  std::vector<NodeId> ids_;
  std::vector<double> weights_;

 private:
  absl::flat_hash_map<NodeId, uint32_t> index_;
};

// The scheme names MakePlacement accepts, in a stable order.
ROUNDTABLE_EXPORT std::vector<std::string> PlacementNames();

// Builds a scheme by name with no nodes. InvalidArgument for an unknown name
// or a bad parameter (s0 or probes or choices 0, c <= 1, a table_size that
// is not a prime, vnodes 0).
ROUNDTABLE_EXPORT absl::StatusOr<std::unique_ptr<Placement>> MakePlacement(
    std::string_view name, const PlacementParams& params);

// Whether n is prime, the smallest prime >= n, and Maglev's default table size
// for n nodes: the smallest prime >= max(65537, 100 n) (its authors' advice: M
// well above 100 n keeps each node's share within about 1% of the average).
ROUNDTABLE_EXPORT bool IsPrime(uint64_t n);
ROUNDTABLE_EXPORT uint64_t NextPrime(uint64_t n);
ROUNDTABLE_EXPORT uint64_t MaglevTableSizeFor(uint64_t nodes);

// Bounded loads' capacity: ceil(c * keys * weight / total_weight), the most
// keys a node of `weight` takes.
ROUNDTABLE_EXPORT uint64_t BoundedCapacity(double c, uint64_t keys,
                                           double weight, double total_weight);

// One key's move: key index (into PlacedKeys::hashes()), from, to.
struct Move {
  size_t key = 0;
  NodeId from = kNoNode;
  NodeId to = kNoNode;
};

// A key set placed by one scheme, kept placed under any sequence of key and
// node changes; each change returns the keys it moved. Every change
// re-places the whole set (O(keys) Locate calls, or one Assign): this is a
// simulator's and a test's tool, not a directory for a live cluster.
class ROUNDTABLE_EXPORT PlacedKeys {
 public:
  explicit PlacedKeys(Placement* placement) : placement_(placement) {}

  std::span<const uint64_t> hashes() const { return hashes_; }
  std::span<const NodeId> nodes() const { return nodes_; }
  // Keys per dense node index of the placement.
  std::vector<uint64_t> Loads() const;

  // Each returns the keys whose node changed; the key added or removed is
  // not itself a move. Key indices are those after the change (RemoveKey
  // keeps the order of the other keys). AddKey: AlreadyExists for a hash
  // present; RemoveKey: NotFound for one absent; the node calls fail as
  // the placement's do, with nothing changed.
  absl::StatusOr<std::vector<Move>> AddKey(uint64_t hash);
  absl::StatusOr<std::vector<Move>> RemoveKey(uint64_t hash);
  absl::StatusOr<std::vector<Move>> AddNode(NodeId node, double weight = 1.0);
  absl::StatusOr<std::vector<Move>> RemoveNode(NodeId node);

 private:
  // Re-places every key and lists the ones whose node differs from
  // before[i].
  std::vector<Move> Replace(const std::vector<NodeId>& before);

  Placement* placement_;
  std::vector<uint64_t> hashes_;
  std::vector<NodeId> nodes_;
};

}  // namespace roundtable::mapping

#endif  // ROUNDTABLE_PLACEMENT_H_
