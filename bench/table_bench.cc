// Table operations on a warm cache: the figures issue targets and
// docs/benchmarks.md quote.
//
// Workloads (one table of 10^6 records of 16-byte keys and 100-byte values,
// loaded once, with a block cache larger than the table):
//   BM_Table_GetHit      random Get of a present key
//   BM_Table_GetMiss     random Get of an absent key
//   BM_Table_Overwrite   random Put over a present key (same size)
//   BM_Table_Fill        Put of new keys into a fresh table, from empty
//   BM_Table_PutSync     Put of new keys, each with WriteOptions::sync, from
//                        1, 2 and 4 threads
//   BM_Table_Recovery    Open after a process died holding 10^6 records
// Counters: logical block reads and writes per operation (the paper's
// model), and cache hits and held-block hits per operation.
// RT_BENCH_CHECKPOINT_BYTES=n sets Options::checkpoint_bytes (default
// 32 MiB).
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <random>
#include <string>

#include "absl/strings/str_format.h"
#include "benchmark/benchmark.h"
#include "roundtable/table.h"

namespace roundtable {
namespace {

constexpr uint64_t kRecords = 1000000;
const std::string kValue(100, 'v');

// Key i: the 16 lowercase hex digits of a bijective mix of i, written in a
// few nanoseconds so that the loops time the table (a precomputed array of
// 2 * 10^6 keys would add a DRAM miss to every operation). Keys below
// kRecords are stored; the upper half is never stored (misses).
struct Key {
  explicit Key(uint64_t i) {
    uint64_t v = (i * 0x9E3779B97F4A7C15ULL) ^ 0x5bd1e995;
    for (int d = 15; d >= 0; --d, v >>= 4)
      bytes[d] = "0123456789abcdef"[v & 15];
  }
  operator std::string_view() const { return std::string_view(bytes, 16); }
  char bytes[16];
};

// RT_BENCH_CHECKPOINT_BYTES, when set, replaces Options::checkpoint_bytes.
Options BenchOptions() {
  Options o;
  o.block_cache_bytes = uint64_t{512} << 20;
  if (const char* v = std::getenv("RT_BENCH_CHECKPOINT_BYTES")) {
    o.checkpoint_bytes = std::strtoull(v, nullptr, 10);
  }
  return o;
}

std::string TempDir(const char* tag) {
  return absl::StrFormat("/tmp/rt_table_bench_%s_%d", tag, getpid());
}

// One loaded table shared by the read and overwrite benchmarks.
Table& Loaded() {
  static Table* table = [] {
    const std::string dir = TempDir("loaded");
    DestroyTable(dir).IgnoreError();
    auto t = Table::Open(BenchOptions(), dir);
    if (!t.ok()) std::abort();
    for (uint64_t i = 0; i < kRecords; ++i) {
      if (!(*t)->Put(Key(i), kValue).ok()) std::abort();
    }
    return t->release();
  }();
  return *table;
}

void Report(benchmark::State& state, const TableStats& before,
            const TableStats& after) {
  const double ops = static_cast<double>(state.iterations());
  const LogicalLedger& a = after.logical;
  const LogicalLedger& b = before.logical;
  const uint64_t reads = (a.get_reads + a.put_reads + a.delete_reads +
                          a.grow_reads + a.shrink_reads) -
                         (b.get_reads + b.put_reads + b.delete_reads +
                          b.grow_reads + b.shrink_reads);
  const uint64_t writes = (a.put_writes + a.delete_writes + a.grow_writes +
                           a.shrink_writes + a.stash_copy_writes) -
                          (b.put_writes + b.delete_writes + b.grow_writes +
                           b.shrink_writes + b.stash_copy_writes);
  state.counters["logical_reads_per_op"] = reads / ops;
  state.counters["logical_writes_per_op"] = writes / ops;
  state.counters["cache_hits_per_op"] =
      (after.cache_hits - before.cache_hits) / ops;
  state.counters["held_hits_per_op"] =
      (after.held_hits - before.held_hits) / ops;
  state.SetItemsProcessed(state.iterations());
}

// Random Gets of keys first .. first + kRecords - 1 of the loaded table.
void GetKeys(benchmark::State& state, uint64_t first, uint64_t seed) {
  Table& table = Loaded();
  std::mt19937_64 rng(seed);
  const TableStats before = table.GetStats();
  std::string value;
  uint64_t found = 0;
  for (auto _ : state) {
    found += table.Get(Key(first + rng() % kRecords), &value).ok();
    benchmark::DoNotOptimize(value);
  }
  Report(state, before, table.GetStats());
  state.counters["found_per_op"] = found / double(state.iterations());
}

void BM_Table_GetHit(benchmark::State& state) { GetKeys(state, 0, 1); }
void BM_Table_GetMiss(benchmark::State& state) { GetKeys(state, kRecords, 2); }

void BM_Table_Overwrite(benchmark::State& state) {
  Table& table = Loaded();
  std::mt19937_64 rng(3);
  const TableStats before = table.GetStats();
  for (auto _ : state) {
    if (!table.Put(Key(rng() % kRecords), kValue).ok()) std::abort();
  }
  Report(state, before, table.GetStats());
}

void BM_Table_Fill(benchmark::State& state) {
  const std::string dir = TempDir("fill");
  DestroyTable(dir).IgnoreError();
  auto table = Table::Open(BenchOptions(), dir);
  if (!table.ok()) std::abort();
  uint64_t i = 0;
  const TableStats before = (*table)->GetStats();
  for (auto _ : state) {
    if (!(*table)->Put(Key(i++), kValue).ok()) std::abort();
  }
  Report(state, before, (*table)->GetStats());
  table->reset();
  DestroyTable(dir).IgnoreError();
}

// Put of new keys with WriteOptions::sync: one log sync per Put with one
// thread, shared syncs (group commit) with more. Counter log_syncs_per_op:
// syncs of the log per Put.
std::unique_ptr<Table> g_sync_table;
void BM_Table_PutSync(benchmark::State& state) {
  const std::string dir = TempDir("sync");
  if (state.thread_index() == 0) {
    DestroyTable(dir).IgnoreError();
    auto table = Table::Open(BenchOptions(), dir);
    if (!table.ok()) std::abort();
    g_sync_table = std::move(*table);
  }
  WriteOptions sync;
  sync.sync = true;
  // Each thread its own keys.
  uint64_t i = static_cast<uint64_t>(state.thread_index()) << 40;
  // The loop starts on all threads at once, after thread 0 opened the table.
  uint64_t syncs = 0;
  if (state.thread_index() == 0) {
    syncs = g_sync_table->GetStats().physical_wal.syncs;
  }
  for (auto _ : state) {
    if (!g_sync_table->Put(Key(i++), kValue, sync).ok()) std::abort();
  }
  state.SetItemsProcessed(state.iterations());
  if (state.thread_index() == 0) {
    state.counters["log_syncs_per_op"] = benchmark::Counter(
        static_cast<double>(g_sync_table->GetStats().physical_wal.syncs -
                            syncs) /
            static_cast<double>(state.iterations() * state.threads()),
        benchmark::Counter::kDefaults);
    g_sync_table.reset();
    DestroyTable(dir).IgnoreError();
  }
}

// Recovery: a child process loads 10^6 records and dies without closing
// the table (as a crash of the process would leave it); the time is that
// of opening it again, which applies the journal if any and replays the
// log written since the last checkpoint.
void BM_Table_Recovery(benchmark::State& state) {
  const std::string dir = TempDir("recovery");
  for (auto _ : state) {
    state.PauseTiming();
    DestroyTable(dir).IgnoreError();
    const pid_t child = fork();
    if (child < 0) std::abort();
    if (child == 0) {
      auto t = Table::Open(BenchOptions(), dir);
      if (!t.ok()) _exit(2);
      for (uint64_t k = 0; k < kRecords; ++k) {
        if (!(*t)->Put(Key(k), kValue).ok()) _exit(3);
      }
      _exit(0);  // no Close: the log holds everything since the checkpoint
    }
    int status = 0;
    if (waitpid(child, &status, 0) != child || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0) {
      std::abort();
    }
    state.ResumeTiming();
    auto table = Table::Open(BenchOptions(), dir);
    if (!table.ok()) std::abort();
    state.PauseTiming();
    const TableStats stats = (*table)->GetStats();
    state.counters["records"] = stats.records;
    state.counters["replayed_records"] = stats.recovered_records;
    state.counters["recovery_ms"] = stats.recovery_ns / 1e6;
    table->reset();
    state.ResumeTiming();
  }
  DestroyTable(dir).IgnoreError();
}

BENCHMARK(BM_Table_GetHit);
BENCHMARK(BM_Table_GetMiss);
BENCHMARK(BM_Table_Overwrite);
BENCHMARK(BM_Table_Fill)->Iterations(1000000);
BENCHMARK(BM_Table_PutSync)->Iterations(2000)->Threads(1)->Threads(2)->Threads(4)->UseRealTime();
BENCHMARK(BM_Table_Recovery)->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace roundtable

BENCHMARK_MAIN();
