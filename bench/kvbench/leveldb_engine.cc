// LevelDB with a bloom filter of 10 bits per key (its documentation's advice
// for random reads), the block cache given the memory budget, compression
// off, and the other options at their defaults.
#include <memory>

#include "absl/strings/str_cat.h"
#include "bench/kvbench/kv_engine.h"
#include "leveldb/cache.h"
#include "leveldb/db.h"
#include "leveldb/filter_policy.h"
#include "leveldb/write_batch.h"

namespace roundtable::kvbench {
namespace {

absl::Status FromLevel(const leveldb::Status& s) {
  if (s.ok()) return absl::OkStatus();
  if (s.IsNotFound()) return absl::NotFoundError(s.ToString());
  return absl::InternalError(absl::StrCat("leveldb: ", s.ToString()));
}

leveldb::Slice Slice(std::string_view s) {
  return leveldb::Slice(s.data(), s.size());
}

class LeveldbEngine : public KvEngine {
 public:
  LeveldbEngine(std::unique_ptr<leveldb::DB> db,
                std::unique_ptr<leveldb::Cache> cache,
                std::unique_ptr<const leveldb::FilterPolicy> filter, bool sync)
      : cache_(std::move(cache)), filter_(std::move(filter)),
        db_(std::move(db)) {
    write_.sync = sync;
  }

  absl::Status Get(std::string_view key, std::string* value) override {
    return FromLevel(db_->Get(leveldb::ReadOptions(), Slice(key), value));
  }
  absl::Status Put(std::string_view key, std::string_view value) override {
    return FromLevel(db_->Put(write_, Slice(key), Slice(value)));
  }
  absl::Status Delete(std::string_view key) override {
    return FromLevel(db_->Delete(write_, Slice(key)));
  }
  absl::Status PutBatch(std::span<const KvRecord> records) override {
    leveldb::WriteBatch batch;
    for (const KvRecord& r : records) batch.Put(Slice(r.key), Slice(r.value));
    return FromLevel(db_->Write(write_, &batch));
  }
  absl::StatusOr<uint64_t> Scan() override {
    std::unique_ptr<leveldb::Iterator> it(
        db_->NewIterator(leveldb::ReadOptions()));
    uint64_t n = 0;
    for (it->SeekToFirst(); it->Valid(); it->Next()) ++n;
    if (!it->status().ok()) return FromLevel(it->status());
    return n;
  }
  absl::Status Sync() override {
    // LevelDB syncs only as part of a write: an empty synced batch.
    leveldb::WriteOptions sync;
    sync.sync = true;
    leveldb::WriteBatch empty;
    return FromLevel(db_->Write(sync, &empty));
  }
  absl::Status Close() override {
    db_.reset();
    return absl::OkStatus();
  }

 private:
  // Declared before db_, which uses them until it is deleted.
  std::unique_ptr<leveldb::Cache> cache_;
  std::unique_ptr<const leveldb::FilterPolicy> filter_;
  std::unique_ptr<leveldb::DB> db_;
  leveldb::WriteOptions write_;
};

}  // namespace

std::vector<EngineInfo> LeveldbEngines() {
  EngineInfo info;
  info.name = "leveldb";
  info.version = absl::StrCat(leveldb::kMajorVersion, ".",
                              leveldb::kMinorVersion);
  info.library = "libleveldb";
  info.config = "bloom filter 10 bits/key, block cache = budget, no compression";
  info.open = [](const EngineOptions& o)
      -> absl::StatusOr<std::unique_ptr<KvEngine>> {
    std::unique_ptr<leveldb::Cache> cache(leveldb::NewLRUCache(o.cache_bytes));
    std::unique_ptr<const leveldb::FilterPolicy> filter(
        leveldb::NewBloomFilterPolicy(10));
    leveldb::Options options;
    options.create_if_missing = true;
    options.block_cache = cache.get();
    options.filter_policy = filter.get();
    options.compression = leveldb::kNoCompression;
    leveldb::DB* db = nullptr;
    leveldb::Status s = leveldb::DB::Open(options, o.dir, &db);
    if (!s.ok()) return FromLevel(s);
    return std::make_unique<LeveldbEngine>(std::unique_ptr<leveldb::DB>(db),
                                           std::move(cache), std::move(filter),
                                           o.sync);
  };
  return {info};
}

}  // namespace roundtable::kvbench
