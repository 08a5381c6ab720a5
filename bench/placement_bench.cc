// Lookup speed of every placement scheme against the node count, in one run:
//
//   BM_Locate/<scheme>/<n>        the node of a pre-hashed 64-bit key
//   BM_LocateString/<scheme>/<n>  XXH3 of a 16-byte string key, then Locate
//
// n = 10 .. 10^6 at powers of ten. Parameters: round s0 = 8, ring 100 points
// a node, Maglev's table the smallest prime >= max(65537, 100 n), multi-probe
// 21 probes, bounded loads c = 1.25, 2 choices. The load-aware schemes
// (bounded, dchoice) first place 10 n keys (at most 10^7), and a lookup is
// then the node a new key would join. Each iteration looks up a batch of
// random hashes (4096; fewer for rendezvous, whose lookup visits every
// node); the counter time_per_lookup (seconds, with an SI prefix) is the
// figure to compare. Memory per node is reported as bytes_per_node.
#include <xxhash.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "benchmark/benchmark.h"
#include "roundtable/placement.h"

namespace roundtable::mapping {
namespace {

constexpr size_t kBatch = 4096;

// The scheme under test, built once for each (scheme, n) and kept until the
// next one: the largest take a few seconds and a gigabyte or two to build.
Placement& Built(const std::string& name, uint64_t n) {
  static std::unique_ptr<Placement> built;
  static std::string built_name;
  static uint64_t built_n = 0;
  if (!built || built_name != name || built_n != n) {
    built.reset();
    PlacementParams params;
    params.table_size = MaglevTableSizeFor(n);
    params.seed = 0xB5;
    built = *MakePlacement(name, params);
    std::vector<NodeId> ids(n);
    std::iota(ids.begin(), ids.end(), 0);
    if (!built->AddNodes(ids).ok()) std::abort();
    if (built->traits().load_aware) {
      std::vector<uint64_t> keys(std::min<uint64_t>(10 * n, 10'000'000));
      for (uint64_t i = 0; i < keys.size(); ++i) keys[i] = Mix64(i, 0x4B);
      std::vector<NodeId> out(keys.size());
      built->Assign(keys, out);
    }
    built_name = name;
    built_n = n;
  }
  return *built;
}

size_t BatchFor(const std::string& name, uint64_t n) {
  if (name != "rendezvous") return kBatch;
  return std::clamp<size_t>(4'000'000 / n, 16, kBatch);
}

void SetCounters(benchmark::State& state, size_t batch, const Placement& p) {
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * batch));
  state.counters["time_per_lookup"] =
      benchmark::Counter(static_cast<double>(batch),
                         benchmark::Counter::kIsIterationInvariantRate |
                             benchmark::Counter::kInvert);
  state.counters["bytes_per_node"] =
      static_cast<double>(p.MemoryBytes()) / static_cast<double>(p.num_nodes());
}

void BM_Locate(benchmark::State& state, const std::string& name) {
  const auto n = static_cast<uint64_t>(state.range(0));
  const Placement& p = Built(name, n);
  std::vector<uint64_t> hashes(BatchFor(name, n));
  std::mt19937_64 rng(0x10CA7E);
  for (auto& h : hashes) h = rng();
  for (auto _ : state) {
    uint64_t sum = 0;
    for (const uint64_t h : hashes) sum += p.Locate(h);
    benchmark::DoNotOptimize(sum);
  }
  SetCounters(state, hashes.size(), p);
}

void BM_LocateString(benchmark::State& state, const std::string& name) {
  const auto n = static_cast<uint64_t>(state.range(0));
  const Placement& p = Built(name, n);
  std::vector<std::string> keys(BatchFor(name, n));
  for (size_t i = 0; i < keys.size(); ++i) {
    keys[i] = absl::StrFormat("key%013d", i * 7919);
  }
  for (auto _ : state) {
    uint64_t sum = 0;
    for (const std::string& k : keys) {
      sum += p.Locate(XXH3_64bits_withSeed(k.data(), k.size(), 0x5EED));
    }
    benchmark::DoNotOptimize(sum);
  }
  SetCounters(state, keys.size(), p);
}

void Register() {
  for (const std::string& name : PlacementNames()) {
    for (auto [label, fn] : {std::pair{"BM_Locate/", &BM_Locate},
                             std::pair{"BM_LocateString/", &BM_LocateString}}) {
      auto* b = benchmark::RegisterBenchmark(
          (label + name).c_str(),
          [fn, name](benchmark::State& s) { fn(s, name); });
      for (int64_t n = 10; n <= 1'000'000; n *= 10) b->Arg(n);
    }
  }
}

}  // namespace
}  // namespace roundtable::mapping

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  roundtable::mapping::Register();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
