// roundtable.placement: the placement schemes (roundtable/placement.h) for
// Python.
#ifndef XXH_INLINE_ALL
#define XXH_INLINE_ALL
#endif
#include "roundtable/placement.h"

#include <pybind11/stl.h>
#include <xxhash.h>

#include <cstdint>
#include <string>
#include <vector>

#include "engine/python/bindings.h"

namespace roundtable::python {
namespace {

uint64_t HashKey(py::handle key, uint64_t seed) {
  const std::string_view k = KeyOf(key);
  return XXH3_64bits_withSeed(k.data(), k.size(), seed);
}

}  // namespace

void DefinePlacement(py::module_& m) {
  py::module_ p = m.def_submodule(
      "placement", "Placing keys on servers: round-hashing and its peers.");
  p.def("names", &mapping::PlacementNames,
        "The placement schemes' names, in a stable order.");
  p.def("hash_key", &HashKey, py::arg("key"), py::arg("seed") = 0,
        "The 64-bit XXH3 hash of a key (bytes or str) that locate takes.");
  py::class_<mapping::Placement>(p, "Placement")
      .def(py::init([](const std::string& name, uint64_t s0, uint64_t vnodes,
                       uint64_t table_size, uint64_t probes, double c,
                       uint64_t choices, uint64_t seed) {
             mapping::PlacementParams params;
             params.s0 = s0;
             params.vnodes = vnodes;
             params.table_size = table_size;
             params.probes = probes;
             params.c = c;
             params.choices = choices;
             params.seed = seed;
             return ValueOr(mapping::MakePlacement(name, params));
           }),
           py::arg("name"), py::kw_only(), py::arg("s0") = 8,
           py::arg("vnodes") = 100, py::arg("table_size") = 65537,
           py::arg("probes") = 21, py::arg("c") = 1.25, py::arg("choices") = 2,
           py::arg("seed") = 0)
      .def_property_readonly(
          "name",
          [](const mapping::Placement& s) { return std::string(s.name()); })
      .def_property_readonly("params", &mapping::Placement::params)
      .def_property_readonly("nodes",
                             [](const mapping::Placement& s) {
                               return std::vector<uint64_t>(s.nodes().begin(),
                                                            s.nodes().end());
                             })
      .def("__len__", &mapping::Placement::num_nodes)
      .def(
          "add_node",
          [](mapping::Placement& s, uint64_t node, double weight) {
            Raise(s.AddNode(node, weight));
          },
          py::arg("node"), py::arg("weight") = 1.0)
      .def(
          "add_nodes",
          [](mapping::Placement& s, const std::vector<uint64_t>& nodes) {
            Raise(s.AddNodes(nodes));
          },
          py::arg("nodes"))
      .def(
          "remove_node",
          [](mapping::Placement& s, uint64_t node) {
            Raise(s.RemoveNode(node));
          },
          py::arg("node"))
      .def(
          "locate",
          [](const mapping::Placement& s, uint64_t hash) -> py::object {
            const mapping::NodeId n = s.Locate(hash);
            if (n == mapping::kNoNode) return py::none();
            return py::int_(n);
          },
          py::arg("hash"),
          "The node of a key with this 64-bit hash, or None when the scheme "
          "has no node to offer.")
      .def(
          "locate_key",
          [](const mapping::Placement& s, py::handle key) -> py::object {
            const mapping::NodeId n = s.Locate(HashKey(key, 0));
            if (n == mapping::kNoNode) return py::none();
            return py::int_(n);
          },
          py::arg("key"), "locate(hash_key(key)).");
}

}  // namespace roundtable::python
