// tkrzw's HashDBM (memory-mapped file, in-place updates): num_buckets twice
// the expected records where the workload says how many (its documentation:
// more buckets than records), the bucket array cached in memory. When the
// workload gives no size (growth), it starts at its default 1048583 buckets
// and, as its documentation advises, is rebuilt whenever ShouldBeRebuilt
// says so (checked every 65536 writes). Durable writes call
// Synchronize(hard) after each write: it has no per-write sync of its own.
#include <atomic>
#include <memory>

#include "absl/strings/str_cat.h"
#include "bench/kvbench/kv_engine.h"
#include "tkrzw_dbm_hash.h"
#include "tkrzw_lib_common.h"

namespace roundtable::kvbench {
namespace {

absl::Status FromTk(const tkrzw::Status& s) {
  if (s == tkrzw::Status::SUCCESS) return absl::OkStatus();
  if (s == tkrzw::Status::NOT_FOUND_ERROR) {
    return absl::NotFoundError(s.GetMessage());
  }
  return absl::InternalError(absl::StrCat("tkrzw: ", tkrzw::ToString(s)));
}

class TkrzwEngine : public KvEngine {
 public:
  TkrzwEngine(std::unique_ptr<tkrzw::HashDBM> dbm, bool sync, bool rebuild)
      : dbm_(std::move(dbm)), sync_(sync), rebuild_(rebuild) {}

  absl::Status Get(std::string_view key, std::string* value) override {
    return FromTk(dbm_->Get(key, value));
  }
  absl::Status Put(std::string_view key, std::string_view value) override {
    absl::Status s = FromTk(dbm_->Set(key, value));
    return s.ok() ? AfterWrite() : s;
  }
  absl::Status Delete(std::string_view key) override {
    const tkrzw::Status s = dbm_->Remove(key);
    if (s != tkrzw::Status::SUCCESS && s != tkrzw::Status::NOT_FOUND_ERROR) {
      return FromTk(s);
    }
    return AfterWrite();
  }
  absl::StatusOr<uint64_t> Scan() override {
    auto it = dbm_->MakeIterator();
    uint64_t n = 0;
    std::string key, value;
    tkrzw::Status s = it->First();
    while (s == tkrzw::Status::SUCCESS) {
      s = it->Get(&key, &value);
      if (s != tkrzw::Status::SUCCESS) break;
      ++n;
      s = it->Next();
    }
    if (s != tkrzw::Status::NOT_FOUND_ERROR) return FromTk(s);
    return n;
  }
  absl::Status Sync() override { return FromTk(dbm_->Synchronize(true)); }
  absl::Status Close() override { return FromTk(dbm_->Close()); }

  std::vector<std::pair<std::string, double>> Stats() override {
    return {{"num_buckets", static_cast<double>(dbm_->CountBuckets())},
            {"rebuilds", static_cast<double>(rebuilds_.load())}};
  }

 private:
  absl::Status AfterWrite() {
    if (sync_) return FromTk(dbm_->Synchronize(true));
    if (rebuild_ && (++writes_ & 0xffff) == 0) {
      bool tobe = false;
      absl::Status s = FromTk(dbm_->ShouldBeRebuilt(&tobe));
      if (s.ok() && tobe) {
        ++rebuilds_;
        s = FromTk(dbm_->Rebuild());
      }
      return s;
    }
    return absl::OkStatus();
  }

  std::unique_ptr<tkrzw::HashDBM> dbm_;
  const bool sync_;
  const bool rebuild_;
  std::atomic<uint64_t> writes_{0};
  std::atomic<uint64_t> rebuilds_{0};
};

}  // namespace

std::vector<EngineInfo> TkrzwEngines() {
  EngineInfo info;
  info.name = "tkrzw";
  info.version = tkrzw::PACKAGE_VERSION;
  info.library = "libtkrzw";
  info.config =
      "HashDBM (mmap), num_buckets = 2 x records (growth: default, "
      "Rebuild when ShouldBeRebuilt), cache_buckets; page cache only";
  info.open = [](const EngineOptions& o)
      -> absl::StatusOr<std::unique_ptr<KvEngine>> {
    auto dbm = std::make_unique<tkrzw::HashDBM>();
    tkrzw::HashDBM::TuningParameters params;
    if (o.expected_records > 0) {
      params.num_buckets = static_cast<int64_t>(o.expected_records * 2);
    }
    params.cache_buckets = 1;
    const tkrzw::Status s = dbm->OpenAdvanced(
        o.dir + "/data.tkh", true, tkrzw::File::OPEN_DEFAULT, params);
    if (s != tkrzw::Status::SUCCESS) return FromTk(s);
    return std::make_unique<TkrzwEngine>(std::move(dbm), o.sync,
                                         o.expected_records == 0);
  };
  return {info};
}

}  // namespace roundtable::kvbench
