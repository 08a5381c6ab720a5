// Lookup speed of every bucket mapping against the bucket count: the
// round-hashing paper's Figure 2.
//
// Workloads (one benchmark per scheme and bucket count m, m = 2^4 .. 2^30 at
// powers of two and at the 1.5x points between them):
//   BM_Mapping_Find/<scheme>/<m>   bucket of a pre-hashed 64-bit key
//   BM_Mapping_HashThenRound/<m>   XXH3 of an 8-byte key, then round-mapping
//   BM_Hash_Xxh3                   XXH3 of an 8-byte key alone
//   BM_Sum                         the loop with no mapping (the floor)
// Each iteration maps a batch of 4096 random hashes (L1-resident), so the
// figure is throughput: independent lookups overlap as they would in a batch
// of table operations. The counter time_per_lookup (seconds, printed with an
// SI prefix: 1.3n is 1.3 ns) is the figure to compare.
// Round-mapping runs with s0 = 64 and slack linear hashing with s0 = 128 (the
// paper's choices for equal balance), or s0 = m where m is smaller.
#include <xxhash.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "roundtable/mapping.h"
#include "engine/mapping/jump_hash.h"
#include "engine/mapping/linear_hashing.h"
#include "engine/mapping/round_mapping.h"

namespace roundtable::mapping {
namespace {

constexpr size_t kBatch = 4096;
constexpr uint64_t kRoundS0 = 64;
constexpr uint64_t kSlackS0 = 128;

const std::vector<uint64_t>& Hashes() {
  static const auto* hashes = [] {
    auto* v = new std::vector<uint64_t>(kBatch);
    std::mt19937_64 rng(0xF16E2);
    for (auto& h : *v) h = rng();
    return v;
  }();
  return *hashes;
}

void SetCounters(benchmark::State& state) {
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * kBatch);
  state.counters["time_per_lookup"] =
      benchmark::Counter(static_cast<double>(kBatch),
                         benchmark::Counter::kIsIterationInvariantRate |
                             benchmark::Counter::kInvert);
}

// Maps every hash of the batch with `find` and keeps the sum alive.
template <typename Find>
void RunBatches(benchmark::State& state, Find find) {
  const std::vector<uint64_t>& hashes = Hashes();
  for (auto _ : state) {
    uint64_t sum = 0;
    for (const uint64_t h : hashes) sum += find(h);
    benchmark::DoNotOptimize(sum);
  }
  SetCounters(state);
}

template <typename Map>
void FindWith(benchmark::State& state, const Map& map) {
  RunBatches(state, [&map](uint64_t h) { return map.FindBucket(h); });
}

void BM_Mapping_Find(benchmark::State& state, const std::string& scheme) {
  const uint64_t m = static_cast<uint64_t>(state.range(0));
  // Concrete final types, so the calls inline as they would in the engine.
  if (scheme == "round") {
    FindWith(state, *RoundMapping::Create(std::min(kRoundS0, m), m));
  } else if (scheme == "jump") {
    FindWith(state, *JumpMapping::Create(m));
  } else if (scheme == "linear-slack") {
    FindWith(state, *SlackLinearHashing::Create(std::min(kSlackS0, m), m));
  } else if (scheme == "linear-litwin") {
    FindWith(state, *LitwinLinearHashing::Create(m));
  } else if (scheme == "modulo") {
    FindWith(state, *ModuloMapping::Create(m));
  } else {
    state.SkipWithError("unknown scheme");
  }
}

uint64_t HashKey(uint64_t key) { return XXH3_64bits(&key, sizeof(key)); }

void BM_Mapping_HashThenRound(benchmark::State& state) {
  const uint64_t m = static_cast<uint64_t>(state.range(0));
  const RoundMapping map = *RoundMapping::Create(std::min(kRoundS0, m), m);
  RunBatches(state,
             [&map](uint64_t key) { return map.FindBucket(HashKey(key)); });
}

void BM_Hash_Xxh3(benchmark::State& state) { RunBatches(state, HashKey); }

void BM_Sum(benchmark::State& state) {
  RunBatches(state, [](uint64_t h) { return h; });
}

std::vector<int64_t> BucketCounts() {
  std::vector<int64_t> counts;
  for (int bits = 4; bits <= 30; ++bits) {
    counts.push_back(int64_t{1} << bits);
    if (bits < 30) counts.push_back((int64_t{3} << bits) / 2);
  }
  return counts;
}

void Register() {
  for (const std::string& scheme : MappingNames()) {
    auto* b = benchmark::RegisterBenchmark(
        ("BM_Mapping_Find/" + scheme).c_str(), BM_Mapping_Find, scheme);
    for (const int64_t m : BucketCounts()) b->Arg(m);
  }
  auto* b = benchmark::RegisterBenchmark("BM_Mapping_HashThenRound",
                                         BM_Mapping_HashThenRound);
  for (const int64_t m : BucketCounts()) b->Arg(m);
  benchmark::RegisterBenchmark("BM_Hash_Xxh3", BM_Hash_Xxh3);
  benchmark::RegisterBenchmark("BM_Sum", BM_Sum);
}

}  // namespace
}  // namespace roundtable::mapping

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  roundtable::mapping::Register();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
