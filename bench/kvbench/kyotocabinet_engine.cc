// Kyoto Cabinet's HashDB: tune_buckets twice the expected records where the
// workload says how many (its documentation: one to four times the
// records), else its default 1048583; tune_map (the memory-mapped region)
// given the memory budget; OAUTOSYNC when every write must be durable.
#include <memory>

#include "absl/strings/str_cat.h"
#include "bench/kvbench/kv_engine.h"
#include "kchashdb.h"

namespace roundtable::kvbench {
namespace {

class KyotoCabinetEngine : public KvEngine {
 public:
  explicit KyotoCabinetEngine(std::unique_ptr<kyotocabinet::HashDB> db)
      : db_(std::move(db)) {}

  absl::Status Get(std::string_view key, std::string* value) override {
    size_t size = 0;
    char* v = db_->get(key.data(), key.size(), &size);
    if (v == nullptr) {
      if (db_->error().code() == kyotocabinet::BasicDB::Error::NOREC) {
        return absl::NotFoundError("kyotocabinet: no record");
      }
      return Error("get");
    }
    value->assign(v, size);
    delete[] v;
    return absl::OkStatus();
  }
  absl::Status Put(std::string_view key, std::string_view value) override {
    return db_->set(key.data(), key.size(), value.data(), value.size())
               ? absl::OkStatus()
               : Error("set");
  }
  absl::Status Delete(std::string_view key) override {
    if (db_->remove(key.data(), key.size()) ||
        db_->error().code() == kyotocabinet::BasicDB::Error::NOREC) {
      return absl::OkStatus();
    }
    return Error("remove");
  }
  absl::StatusOr<uint64_t> Scan() override {
    std::unique_ptr<kyotocabinet::DB::Cursor> cursor(db_->cursor());
    uint64_t n = 0;
    std::string key, value;
    if (cursor->jump()) {
      while (cursor->get(&key, &value, true)) ++n;
    }
    if (db_->error().code() != kyotocabinet::BasicDB::Error::NOREC &&
        db_->error().code() != kyotocabinet::BasicDB::Error::SUCCESS) {
      return Error("cursor");
    }
    return n;
  }
  absl::Status Sync() override {
    return db_->synchronize(true) ? absl::OkStatus() : Error("synchronize");
  }
  absl::Status Close() override {
    return db_->close() ? absl::OkStatus() : Error("close");
  }

 private:
  absl::Status Error(const char* what) {
    return absl::InternalError(absl::StrCat("kyotocabinet ", what, ": ",
                                            db_->error().name(), ": ",
                                            db_->error().message()));
  }

  std::unique_ptr<kyotocabinet::HashDB> db_;
};

}  // namespace

std::vector<EngineInfo> KyotoCabinetEngines() {
  EngineInfo info;
  info.name = "kyotocabinet";
  info.version = kyotocabinet::VERSION;
  info.library = "libkyotocabinet";
  info.config =
      "HashDB, bnum = 2 x records (growth: default), map = budget, "
      "OAUTOSYNC when --sync";
  info.open = [](const EngineOptions& o)
      -> absl::StatusOr<std::unique_ptr<KvEngine>> {
    auto db = std::make_unique<kyotocabinet::HashDB>();
    if (o.expected_records > 0) db->tune_buckets(o.expected_records * 2);
    db->tune_map(static_cast<int64_t>(o.cache_bytes));
    uint32_t mode = kyotocabinet::HashDB::OWRITER |
                    kyotocabinet::HashDB::OCREATE;
    if (o.sync) mode |= kyotocabinet::HashDB::OAUTOSYNC;
    if (!db->open(o.dir + "/data.kch", mode)) {
      return absl::InternalError(absl::StrCat("kyotocabinet open: ",
                                              db->error().name(), ": ",
                                              db->error().message()));
    }
    return std::make_unique<KyotoCabinetEngine>(std::move(db));
  };
  return {info};
}

}  // namespace roundtable::kvbench
