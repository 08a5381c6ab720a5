// RocksDB, two ways: "rocksdb" with the defaults (leveled LSM, 64 MiB
// memtable) and the block cache given the memory budget; "rocksdb-point"
// with OptimizeForPointLookup (a hash index in each block, a bloom filter of
// 10 bits per key, the same cache). Both: compression off and
// IncreaseParallelism(2) (two cores here), as RocksDB's tuning guide starts.
#include <memory>

#include "absl/strings/str_cat.h"
#include "bench/kvbench/kv_engine.h"
#include "rocksdb/cache.h"
#include "rocksdb/db.h"
#include "rocksdb/options.h"
#include "rocksdb/table.h"
#include "rocksdb/version.h"
#include "rocksdb/write_batch.h"

namespace roundtable::kvbench {
namespace {

absl::Status FromRocks(const rocksdb::Status& s) {
  if (s.ok()) return absl::OkStatus();
  if (s.IsNotFound()) return absl::NotFoundError(s.ToString());
  return absl::InternalError(absl::StrCat("rocksdb: ", s.ToString()));
}

class RocksdbEngine : public KvEngine {
 public:
  RocksdbEngine(std::unique_ptr<rocksdb::DB> db, bool sync)
      : db_(std::move(db)) {
    write_.sync = sync;
  }

  absl::Status Get(std::string_view key, std::string* value) override {
    return FromRocks(db_->Get(rocksdb::ReadOptions(), Slice(key), value));
  }
  absl::Status Put(std::string_view key, std::string_view value) override {
    return FromRocks(db_->Put(write_, Slice(key), Slice(value)));
  }
  absl::Status Delete(std::string_view key) override {
    return FromRocks(db_->Delete(write_, Slice(key)));
  }
  absl::Status PutBatch(std::span<const KvRecord> records) override {
    rocksdb::WriteBatch batch;
    for (const KvRecord& r : records) {
      rocksdb::Status s = batch.Put(Slice(r.key), Slice(r.value));
      if (!s.ok()) return FromRocks(s);
    }
    return FromRocks(db_->Write(write_, &batch));
  }
  absl::StatusOr<uint64_t> Scan() override {
    std::unique_ptr<rocksdb::Iterator> it(
        db_->NewIterator(rocksdb::ReadOptions()));
    uint64_t n = 0;
    for (it->SeekToFirst(); it->Valid(); it->Next()) ++n;
    if (!it->status().ok()) return FromRocks(it->status());
    return n;
  }
  absl::Status Sync() override { return FromRocks(db_->SyncWAL()); }
  // The memtable flushed to a table file.
  absl::Status Settle() override {
    absl::Status s = FromRocks(db_->Flush(rocksdb::FlushOptions()));
    return s.ok() ? Sync() : s;
  }
  absl::Status Close() override {
    absl::Status s = FromRocks(db_->Close());
    db_.reset();
    return s;
  }

  std::vector<std::pair<std::string, double>> Stats() override {
    std::vector<std::pair<std::string, double>> out;
    for (const char* p : {"rocksdb.estimate-num-keys",
                          "rocksdb.num-live-versions",
                          "rocksdb.total-sst-files-size"}) {
      uint64_t v = 0;
      if (db_ && db_->GetIntProperty(p, &v)) {
        out.emplace_back(p + 8, static_cast<double>(v));
      }
    }
    return out;
  }

 private:
  static rocksdb::Slice Slice(std::string_view s) {
    return rocksdb::Slice(s.data(), s.size());
  }

  std::unique_ptr<rocksdb::DB> db_;
  rocksdb::WriteOptions write_;
};

absl::StatusOr<std::unique_ptr<KvEngine>> OpenRocksdb(
    const EngineOptions& o, bool point_lookup) {
  rocksdb::Options options;
  options.create_if_missing = true;
  options.IncreaseParallelism(2);
  if (point_lookup) {
    options.OptimizeForPointLookup(o.cache_bytes >> 20);
  } else {
    rocksdb::BlockBasedTableOptions table;
    table.block_cache = rocksdb::NewLRUCache(o.cache_bytes);
    options.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
  }
  options.compression = rocksdb::kNoCompression;
  options.compression_per_level.clear();
  options.bottommost_compression = rocksdb::kNoCompression;
  rocksdb::DB* db = nullptr;
  rocksdb::Status s = rocksdb::DB::Open(options, o.dir, &db);
  if (!s.ok()) return FromRocks(s);
  return std::make_unique<RocksdbEngine>(std::unique_ptr<rocksdb::DB>(db),
                                         o.sync);
}

}  // namespace

std::vector<EngineInfo> RocksdbEngines() {
  const std::string version = absl::StrCat(ROCKSDB_MAJOR, ".", ROCKSDB_MINOR,
                                           ".", ROCKSDB_PATCH);
  EngineInfo plain{"rocksdb", version,
                   "defaults, block cache = budget, no compression, "
                   "IncreaseParallelism(2)",
                   "librocksdb",
                   [](const EngineOptions& o) { return OpenRocksdb(o, false); }};
  EngineInfo point{"rocksdb-point", version,
                   "OptimizeForPointLookup(budget): hash index, bloom filter "
                   "10 bits/key; no compression, IncreaseParallelism(2)",
                   "librocksdb",
                   [](const EngineOptions& o) { return OpenRocksdb(o, true); }};
  return {plain, point};
}

}  // namespace roundtable::kvbench
