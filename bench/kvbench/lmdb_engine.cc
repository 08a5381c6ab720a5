// LMDB: a 1 TiB map (the file grows only as far as it is used), MDB_NORDAHEAD
// (its advice for random reads of a database larger than memory), MDB_NOTLS,
// and MDB_NOSYNC unless every write must be durable, in which case each
// write is a transaction committed with LMDB's default sync. It reads through
// the kernel's page cache and has no cache of its own to size. Gets reuse one
// read transaction per thread (mdb_txn_reset / mdb_txn_renew).
#include <atomic>
#include <memory>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "bench/kvbench/kv_engine.h"
#include "lmdb.h"

namespace roundtable::kvbench {
namespace {

absl::Status FromMdb(int rc, const char* what) {
  if (rc == 0) return absl::OkStatus();
  if (rc == MDB_NOTFOUND) return absl::NotFoundError(what);
  return absl::InternalError(absl::StrCat("lmdb ", what, ": ",
                                          mdb_strerror(rc)));
}

MDB_val Val(std::string_view s) {
  return MDB_val{s.size(), const_cast<char*>(s.data())};
}

std::atomic<uint64_t> next_generation{1};

class LmdbEngine : public KvEngine {
 public:
  LmdbEngine(MDB_env* env, MDB_dbi dbi)
      : env_(env), dbi_(dbi), generation_(next_generation++) {}
  ~LmdbEngine() override { Close().IgnoreError(); }

  absl::Status Get(std::string_view key, std::string* value) override {
    MDB_txn* txn = nullptr;
    absl::Status s = ReadTxn(&txn);
    if (!s.ok()) return s;
    MDB_val k = Val(key), v;
    const int rc = mdb_get(txn, dbi_, &k, &v);
    if (rc == 0) value->assign(static_cast<const char*>(v.mv_data), v.mv_size);
    mdb_txn_reset(txn);
    return FromMdb(rc, "get");
  }
  absl::Status Put(std::string_view key, std::string_view value) override {
    const KvRecord r{key, value};
    return PutBatch({&r, 1});
  }
  absl::Status PutBatch(std::span<const KvRecord> records) override {
    MDB_txn* txn = nullptr;
    int rc = mdb_txn_begin(env_, nullptr, 0, &txn);
    if (rc != 0) return FromMdb(rc, "txn_begin");
    for (const KvRecord& r : records) {
      MDB_val k = Val(r.key), v = Val(r.value);
      rc = mdb_put(txn, dbi_, &k, &v, 0);
      if (rc != 0) {
        mdb_txn_abort(txn);
        return FromMdb(rc, "put");
      }
    }
    return FromMdb(mdb_txn_commit(txn), "commit");
  }
  absl::Status Delete(std::string_view key) override {
    MDB_txn* txn = nullptr;
    int rc = mdb_txn_begin(env_, nullptr, 0, &txn);
    if (rc != 0) return FromMdb(rc, "txn_begin");
    MDB_val k = Val(key);
    rc = mdb_del(txn, dbi_, &k, nullptr);
    if (rc != 0 && rc != MDB_NOTFOUND) {
      mdb_txn_abort(txn);
      return FromMdb(rc, "del");
    }
    return FromMdb(mdb_txn_commit(txn), "commit");
  }
  absl::StatusOr<uint64_t> Scan() override {
    MDB_txn* txn = nullptr;
    int rc = mdb_txn_begin(env_, nullptr, MDB_RDONLY, &txn);
    if (rc != 0) return FromMdb(rc, "txn_begin");
    MDB_cursor* cursor = nullptr;
    rc = mdb_cursor_open(txn, dbi_, &cursor);
    uint64_t n = 0;
    MDB_val k, v;
    if (rc == 0) {
      for (rc = mdb_cursor_get(cursor, &k, &v, MDB_FIRST); rc == 0;
           rc = mdb_cursor_get(cursor, &k, &v, MDB_NEXT)) {
        ++n;
      }
      mdb_cursor_close(cursor);
    }
    mdb_txn_abort(txn);
    if (rc != MDB_NOTFOUND) return FromMdb(rc, "cursor");
    return n;
  }
  absl::Status Sync() override { return FromMdb(mdb_env_sync(env_, 1), "sync"); }
  absl::Status Close() override {
    if (env_ == nullptr) return absl::OkStatus();
    for (MDB_txn* txn : read_txns_) mdb_txn_abort(txn);
    read_txns_.clear();
    mdb_env_close(env_);
    env_ = nullptr;
    return absl::OkStatus();
  }

  std::vector<std::pair<std::string, double>> Stats() override {
    MDB_stat st;
    if (env_ == nullptr || mdb_env_stat(env_, &st) != 0) return {};
    return {{"depth", st.ms_depth},
            {"branch_pages", static_cast<double>(st.ms_branch_pages)},
            {"leaf_pages", static_cast<double>(st.ms_leaf_pages)},
            {"overflow_pages", static_cast<double>(st.ms_overflow_pages)}};
  }

 private:
  // This thread's read transaction, renewed; created on first use and
  // aborted by Close.
  absl::Status ReadTxn(MDB_txn** txn) {
    struct Slot {
      uint64_t generation = 0;
      MDB_txn* txn = nullptr;
    };
    thread_local Slot slot;
    if (slot.generation == generation_) {
      *txn = slot.txn;
      return FromMdb(mdb_txn_renew(slot.txn), "txn_renew");
    }
    const int rc = mdb_txn_begin(env_, nullptr, MDB_RDONLY, txn);
    if (rc != 0) return FromMdb(rc, "txn_begin");
    std::lock_guard<std::mutex> lock(mu_);
    read_txns_.push_back(*txn);
    slot = {generation_, *txn};
    return absl::OkStatus();
  }

  MDB_env* env_;
  MDB_dbi dbi_;
  const uint64_t generation_;
  std::mutex mu_;
  std::vector<MDB_txn*> read_txns_;
};

}  // namespace

std::vector<EngineInfo> LmdbEngines() {
  EngineInfo info;
  info.name = "lmdb";
  info.version = mdb_version(nullptr, nullptr, nullptr);
  info.library = "liblmdb";
  info.config =
      "map 1 TiB, MDB_NORDAHEAD, MDB_NOTLS, MDB_NOSYNC unless --sync; "
      "page cache only";
  info.open = [](const EngineOptions& o)
      -> absl::StatusOr<std::unique_ptr<KvEngine>> {
    MDB_env* env = nullptr;
    int rc = mdb_env_create(&env);
    if (rc != 0) return FromMdb(rc, "env_create");
    unsigned flags = MDB_NORDAHEAD | MDB_NOTLS;
    if (!o.sync) flags |= MDB_NOSYNC;
    rc = mdb_env_set_mapsize(env, size_t{1} << 40);
    if (rc == 0) rc = mdb_env_set_maxreaders(env, 256);
    if (rc == 0) rc = mdb_env_open(env, o.dir.c_str(), flags, 0644);
    MDB_txn* txn = nullptr;
    MDB_dbi dbi = 0;
    if (rc == 0) rc = mdb_txn_begin(env, nullptr, 0, &txn);
    if (rc == 0) {
      rc = mdb_dbi_open(txn, nullptr, 0, &dbi);
      if (rc == 0) {
        rc = mdb_txn_commit(txn);
      } else {
        mdb_txn_abort(txn);
      }
    }
    if (rc != 0) {
      mdb_env_close(env);
      return FromMdb(rc, "open");
    }
    return std::make_unique<LmdbEngine>(env, dbi);
  };
  return {info};
}

}  // namespace roundtable::kvbench
