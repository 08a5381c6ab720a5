// Berkeley DB's hash access method, without an environment (no locking, so
// kvbench serialises its calls): the cache given the memory budget,
// set_h_nelem to the expected records where the workload says how many, and
// DB->sync after each write when every write must be durable.
#include <db.h>

#include <cstdlib>
#include <memory>

#include "absl/strings/str_cat.h"
#include "bench/kvbench/kv_engine.h"

namespace roundtable::kvbench {
namespace {

absl::Status FromDb(int rc, const char* what) {
  if (rc == 0) return absl::OkStatus();
  if (rc == DB_NOTFOUND) return absl::NotFoundError(what);
  return absl::InternalError(absl::StrCat("bdb ", what, ": ", db_strerror(rc)));
}

DBT Dbt(std::string_view s) {
  DBT d{};
  d.data = const_cast<char*>(s.data());
  d.size = static_cast<u_int32_t>(s.size());
  return d;
}

class BdbEngine : public KvEngine {
 public:
  BdbEngine(DB* db, bool sync) : db_(db), sync_(sync) {}
  ~BdbEngine() override {
    Close().IgnoreError();
    std::free(buffer_.data);
  }

  absl::Status Get(std::string_view key, std::string* value) override {
    DBT k = Dbt(key);
    buffer_.flags = DB_DBT_REALLOC;
    const int rc = db_->get(db_, nullptr, &k, &buffer_, 0);
    if (rc == 0) value->assign(static_cast<char*>(buffer_.data), buffer_.size);
    return FromDb(rc, "get");
  }
  absl::Status Put(std::string_view key, std::string_view value) override {
    DBT k = Dbt(key), v = Dbt(value);
    const int rc = db_->put(db_, nullptr, &k, &v, 0);
    return rc == 0 ? AfterWrite() : FromDb(rc, "put");
  }
  absl::Status Delete(std::string_view key) override {
    DBT k = Dbt(key);
    const int rc = db_->del(db_, nullptr, &k, 0);
    return rc == 0 || rc == DB_NOTFOUND ? AfterWrite() : FromDb(rc, "del");
  }
  absl::StatusOr<uint64_t> Scan() override {
    DBC* cursor = nullptr;
    int rc = db_->cursor(db_, nullptr, &cursor, 0);
    if (rc != 0) return FromDb(rc, "cursor");
    DBT k{}, v{};
    k.flags = DB_DBT_REALLOC;
    v.flags = DB_DBT_REALLOC;
    uint64_t n = 0;
    while ((rc = cursor->get(cursor, &k, &v, DB_NEXT)) == 0) ++n;
    cursor->close(cursor);
    std::free(k.data);
    std::free(v.data);
    if (rc != DB_NOTFOUND) return FromDb(rc, "cursor get");
    return n;
  }
  absl::Status Sync() override { return FromDb(db_->sync(db_, 0), "sync"); }
  absl::Status Close() override {
    if (db_ == nullptr) return absl::OkStatus();
    const int rc = db_->close(db_, 0);
    db_ = nullptr;
    return FromDb(rc, "close");
  }
  bool thread_safe() const override { return false; }

 private:
  absl::Status AfterWrite() { return sync_ ? Sync() : absl::OkStatus(); }

  DB* db_;
  const bool sync_;
  DBT buffer_{};  // Get's value, reallocated by the library as needed
};

}  // namespace

std::vector<EngineInfo> BdbEngines() {
  EngineInfo info;
  info.name = "bdb";
  info.version = db_version(nullptr, nullptr, nullptr);
  info.library = "libdb-";
  info.config =
      "DB_HASH without an environment, cache = budget, h_nelem = records "
      "(growth: unset), DB->sync per write when --sync";
  info.open = [](const EngineOptions& o)
      -> absl::StatusOr<std::unique_ptr<KvEngine>> {
    DB* db = nullptr;
    int rc = db_create(&db, nullptr, 0);
    if (rc != 0) return FromDb(rc, "db_create");
    rc = db->set_cachesize(db, static_cast<u_int32_t>(o.cache_bytes >> 30),
                           static_cast<u_int32_t>(o.cache_bytes & ((1u << 30) - 1)),
                           1);
    if (rc == 0 && o.expected_records > 0) {
      rc = db->set_h_nelem(db, static_cast<u_int32_t>(o.expected_records));
    }
    const std::string path = o.dir + "/data.db";
    if (rc == 0) {
      rc = db->open(db, nullptr, path.c_str(), nullptr, DB_HASH, DB_CREATE,
                    0644);
    }
    if (rc != 0) {
      db->close(db, 0);
      return FromDb(rc, "open");
    }
    return std::make_unique<BdbEngine>(db, o.sync);
  };
  return {info};
}

}  // namespace roundtable::kvbench
