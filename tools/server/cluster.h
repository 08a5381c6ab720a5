// The Redis Cluster protocol's view of a set of servers, each over its own
// table: 16384 hash slots, a key's slot the CRC16 of its hash tag (or of the
// whole key) modulo 16384, and a topology, given to every server at start
// in a file, that says which node serves which slots. No gossip and no
// replicas: the file is the configuration; changing it means restarting
// the nodes with the new one. docs/server.md, "Redis Cluster".
//
// The file, one node a line ('#' starts a comment):
//
//   NAME HOST:PORT SLOTS...
//
// where each of SLOTS is a slot or a range "first-last". A name of 40 hex
// digits is the node's id; any other name is hashed into one.
#ifndef ROUNDTABLE_TOOLS_SERVER_CLUSTER_H_
#define ROUNDTABLE_TOOLS_SERVER_CLUSTER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace roundtable::server {

inline constexpr uint32_t kClusterSlots = 16384;

// The CRC16 (XMODEM: polynomial 0x1021, initial 0) of `bytes`.
uint16_t Crc16(std::string_view bytes);

// The slot of `key`: of its hash tag when it has one (the bytes between
// the first '{' and the first '}' after it, when there are any), else of
// the whole key.
uint32_t KeySlot(std::string_view key);

struct ClusterNode {
  std::string name;
  std::string id;  // 40 hex digits
  std::string host;
  int port = 0;
  std::vector<std::pair<uint32_t, uint32_t>> ranges;  // inclusive, sorted
};

class ClusterTopology {
 public:
  // The topology in file `path`, seen by the node named `self`.
  // InvalidArgument naming the file and line for a malformed line, a slot
  // out of range or served twice, a name given twice, or no node `self`.
  static absl::StatusOr<ClusterTopology> Load(const std::string& path,
                                              std::string_view self);
  static absl::StatusOr<ClusterTopology> Parse(std::string_view text,
                                               std::string_view self,
                                               std::string_view origin);

  const std::vector<ClusterNode>& nodes() const { return nodes_; }
  const ClusterNode& self() const { return nodes_[self_]; }
  size_t self_index() const { return self_; }
  // The node serving `slot`, or null when none does.
  const ClusterNode* OwnerOf(uint32_t slot) const;
  uint32_t assigned_slots() const { return assigned_; }

 private:
  std::vector<ClusterNode> nodes_;
  size_t self_ = 0;
  std::vector<int32_t> owner_;  // per slot: index in nodes_, -1 for none
  uint32_t assigned_ = 0;
};

}  // namespace roundtable::server

#endif  // ROUNDTABLE_TOOLS_SERVER_CLUSTER_H_
