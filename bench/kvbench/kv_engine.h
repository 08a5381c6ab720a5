// kvbench's view of a key-value engine: the few operations every workload
// needs, with one adapter per engine (bench/kvbench/*_engine.cc), each
// compiled in only where its library is installed.
//
// Thread-safety: when thread_safe() an engine takes Get, Put, Delete and
// PutBatch from several threads at once; otherwise kvbench serialises every
// call with one mutex. Scan, Sync and Close are called from one thread with
// nothing else running.
#ifndef ROUNDTABLE_BENCH_KVBENCH_KV_ENGINE_H_
#define ROUNDTABLE_BENCH_KVBENCH_KV_ENGINE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace roundtable::kvbench {

struct EngineOptions {
  std::string dir;  // the engine's own directory; exists and is empty or
                    // holds what the same engine left there
  // The memory the engine may use for its caches and buffers. Engines that
  // read through the kernel's page cache (LMDB, tkrzw) have no cache of
  // their own to size.
  uint64_t cache_bytes = 256 << 20;
  // Pre-size for this many records where the engine can (hash bucket
  // counts); 0: the engine's defaults, as the growth workload runs it.
  uint64_t expected_records = 0;
  // Every write is durable (survives power loss) before it returns.
  bool sync = false;
  // The workload's key and value sizes, for engines whose layout is chosen
  // by the record (roundtable's s0).
  size_t key_bytes = 16;
  size_t value_bytes = 100;
  // roundtable's s0; 0: SuggestedS0 for the records.
  uint64_t roundtable_s0 = 0;
  // roundtable's write buffer in bytes, on top of a cache of the budget;
  // -1: one memory budget (Options::memory_bytes) for both.
  int64_t roundtable_write_buffer = -1;
};

struct KvRecord {
  std::string_view key;
  std::string_view value;
};

class KvEngine {
 public:
  virtual ~KvEngine() = default;

  // OK and *value, or NotFound.
  virtual absl::Status Get(std::string_view key, std::string* value) = 0;
  virtual absl::Status Put(std::string_view key, std::string_view value) = 0;
  // An absent key is not an error.
  virtual absl::Status Delete(std::string_view key) = 0;
  // The records as one atomic write where the engine has one; by default
  // one Put each.
  virtual absl::Status PutBatch(std::span<const KvRecord> records);
  // Visits every record once; the number visited.
  virtual absl::StatusOr<uint64_t> Scan() = 0;
  // Makes every write so far durable.
  virtual absl::Status Sync() = 0;
  // Puts every write so far in the engine's files (beyond its log, where
  // the engine keeps them in memory for a while: roundtable's held blocks,
  // RocksDB's memtable) and makes it durable; by default Sync. kvbench
  // counts its writes with the workload's (not its time), so that no
  // engine's write amplification leaves out writes it merely deferred.
  virtual absl::Status Settle() { return Sync(); }
  virtual absl::Status Close() = 0;

  virtual bool thread_safe() const { return true; }
  // Engine-specific counters (a name and a number each).
  virtual std::vector<std::pair<std::string, double>> Stats() { return {}; }
};

struct EngineInfo {
  std::string name;     // as --engines spells it
  std::string version;  // of the library linked in
  std::string config;   // how the adapter configures it, in a line
  std::string library;  // the shared library's file name prefix ("librocksdb")
  std::function<absl::StatusOr<std::unique_ptr<KvEngine>>(
      const EngineOptions&)>
      open;
};

// Every engine compiled into this kvbench, roundtable first.
const std::vector<EngineInfo>& Engines();
// Every engine name kvbench knows, compiled in or not.
const std::vector<std::string>& KnownEngineNames();

// The adapters (each defined only when its library is present).
std::vector<EngineInfo> RoundtableEngines();
std::vector<EngineInfo> RocksdbEngines();
std::vector<EngineInfo> LeveldbEngines();
std::vector<EngineInfo> LmdbEngines();
std::vector<EngineInfo> TkrzwEngines();
std::vector<EngineInfo> KyotoCabinetEngines();
std::vector<EngineInfo> BdbEngines();
std::vector<EngineInfo> GdbmEngines();

}  // namespace roundtable::kvbench

#endif  // ROUNDTABLE_BENCH_KVBENCH_KV_ENGINE_H_
