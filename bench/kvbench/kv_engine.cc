#include "bench/kvbench/kv_engine.h"

namespace roundtable::kvbench {

absl::Status KvEngine::PutBatch(std::span<const KvRecord> records) {
  for (const KvRecord& r : records) {
    absl::Status s = Put(r.key, r.value);
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

const std::vector<EngineInfo>& Engines() {
  static const std::vector<EngineInfo> engines = [] {
    std::vector<EngineInfo> all;
    auto add = [&all](std::vector<EngineInfo> some) {
      for (EngineInfo& e : some) all.push_back(std::move(e));
    };
    add(RoundtableEngines());
#ifdef KVBENCH_HAVE_ROCKSDB
    add(RocksdbEngines());
#endif
#ifdef KVBENCH_HAVE_LEVELDB
    add(LeveldbEngines());
#endif
#ifdef KVBENCH_HAVE_LMDB
    add(LmdbEngines());
#endif
#ifdef KVBENCH_HAVE_TKRZW
    add(TkrzwEngines());
#endif
#ifdef KVBENCH_HAVE_KYOTOCABINET
    add(KyotoCabinetEngines());
#endif
#ifdef KVBENCH_HAVE_BDB
    add(BdbEngines());
#endif
#ifdef KVBENCH_HAVE_GDBM
    add(GdbmEngines());
#endif
    return all;
  }();
  return engines;
}

const std::vector<std::string>& KnownEngineNames() {
  static const std::vector<std::string> names = {
      "roundtable", "rocksdb", "rocksdb-point", "leveldb", "lmdb",
      "tkrzw",      "kyotocabinet", "bdb",     "gdbm"};
  return names;
}

}  // namespace roundtable::kvbench
