// GNU dbm: the bucket cache given the memory budget (in buckets of the
// filesystem's block size), gdbm_sync after each write when every write
// must be durable, the rest at its defaults (reads through mmap). It is not thread-safe, so
// kvbench serialises its calls, and it has nothing to pre-size (extendible
// hashing).
#include <gdbm.h>

#include <cstdlib>
#include <memory>

#include "absl/strings/str_cat.h"
#include "bench/kvbench/kv_engine.h"

namespace roundtable::kvbench {
namespace {

absl::Status GdbmError(const char* what) {
  return absl::InternalError(
      absl::StrCat("gdbm ", what, ": ", gdbm_strerror(gdbm_errno)));
}

datum Datum(std::string_view s) {
  return datum{const_cast<char*>(s.data()), static_cast<int>(s.size())};
}

class GdbmEngine : public KvEngine {
 public:
  GdbmEngine(GDBM_FILE db, bool sync) : db_(db), sync_(sync) {}
  ~GdbmEngine() override { Close().IgnoreError(); }

  absl::Status Get(std::string_view key, std::string* value) override {
    const datum v = gdbm_fetch(db_, Datum(key));
    if (v.dptr == nullptr) {
      if (gdbm_errno == GDBM_ITEM_NOT_FOUND) {
        return absl::NotFoundError("gdbm: no item");
      }
      return GdbmError("fetch");
    }
    value->assign(v.dptr, v.dsize);
    std::free(v.dptr);
    return absl::OkStatus();
  }
  absl::Status Put(std::string_view key, std::string_view value) override {
    if (gdbm_store(db_, Datum(key), Datum(value), GDBM_REPLACE) != 0) {
      return GdbmError("store");
    }
    return AfterWrite();
  }
  absl::Status Delete(std::string_view key) override {
    if (gdbm_delete(db_, Datum(key)) == 0 ||
        gdbm_errno == GDBM_ITEM_NOT_FOUND) {
      return AfterWrite();
    }
    return GdbmError("delete");
  }
  absl::StatusOr<uint64_t> Scan() override {
    uint64_t n = 0;
    datum key = gdbm_firstkey(db_);
    while (key.dptr != nullptr) {
      const datum value = gdbm_fetch(db_, key);
      if (value.dptr == nullptr) {
        std::free(key.dptr);
        return GdbmError("fetch");
      }
      std::free(value.dptr);
      ++n;
      const datum next = gdbm_nextkey(db_, key);
      std::free(key.dptr);
      key = next;
    }
    if (gdbm_errno != GDBM_ITEM_NOT_FOUND && gdbm_errno != GDBM_NO_ERROR) {
      return GdbmError("nextkey");
    }
    return n;
  }
  absl::Status Sync() override {
    return gdbm_sync(db_) == 0 ? absl::OkStatus() : GdbmError("sync");
  }
  absl::Status Close() override {
    if (db_ == nullptr) return absl::OkStatus();
    const int rc = gdbm_close(db_);
    db_ = nullptr;
    return rc == 0 ? absl::OkStatus() : GdbmError("close");
  }
  bool thread_safe() const override { return false; }

 private:
  absl::Status AfterWrite() { return sync_ ? Sync() : absl::OkStatus(); }

  GDBM_FILE db_;
  const bool sync_;
};

}  // namespace

std::vector<EngineInfo> GdbmEngines() {
  EngineInfo info;
  info.name = "gdbm";
  info.version = absl::StrCat(gdbm_version_number[0], ".",
                              gdbm_version_number[1], ".",
                              gdbm_version_number[2]);
  info.library = "libgdbm";
  info.config = "cache = budget / block size buckets, gdbm_sync per write when --sync";
  info.open = [](const EngineOptions& o)
      -> absl::StatusOr<std::unique_ptr<KvEngine>> {
    const std::string path = o.dir + "/data.gdbm";
    GDBM_FILE db = gdbm_open(path.c_str(), 0, GDBM_WRCREAT, 0644, nullptr);
    if (db == nullptr) return GdbmError("open");
    int block_size = 0;
    if (gdbm_setopt(db, GDBM_GETBLOCKSIZE, &block_size, sizeof block_size) !=
            0 ||
        block_size <= 0) {
      block_size = 4096;
    }
    size_t buckets = std::max<size_t>(o.cache_bytes / block_size, 16);
    if (gdbm_setopt(db, GDBM_SETCACHESIZE, &buckets, sizeof buckets) != 0) {
      gdbm_close(db);
      return GdbmError("setopt cache size");
    }
    return std::make_unique<GdbmEngine>(db, o.sync);
  };
  return {info};
}

}  // namespace roundtable::kvbench
