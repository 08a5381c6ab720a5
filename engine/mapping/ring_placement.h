// The placements whose nodes own points on one hash ring: consistent
// hashing with virtual nodes ("ring"), multi-probe ("multiprobe"), and the
// load-aware schemes, bounded loads ("bounded") and d choices ("dchoice").
// MakePlacement (placement.h) makes them with its checked parameters; the
// rest of the placement library reaches them only through it.
//
// Thread-safety: as Placement's.
#ifndef ROUNDTABLE_ENGINE_MAPPING_RING_PLACEMENT_H_
#define ROUNDTABLE_ENGINE_MAPPING_RING_PLACEMENT_H_

#include <cstdint>
#include <memory>

#include "roundtable/placement.h"

namespace roundtable::mapping {

// The base hash of a node: where everything about it on the ring starts
// (also the rendezvous and Maglev schemes' node hash).
inline uint64_t NodeBase(NodeId node, uint64_t seed) {
  return Mix64(node, seed);
}

std::unique_ptr<Placement> NewVnodeRing(uint64_t vnodes, uint64_t seed);
std::unique_ptr<Placement> NewMultiProbe(uint64_t probes, uint64_t seed);
std::unique_ptr<Placement> NewBoundedLoads(double c, uint64_t seed);
std::unique_ptr<Placement> NewDChoice(uint64_t choices, uint64_t seed);

}  // namespace roundtable::mapping

#endif  // ROUNDTABLE_ENGINE_MAPPING_RING_PLACEMENT_H_
