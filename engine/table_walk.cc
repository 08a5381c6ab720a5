// The walks over the records: the iterator, bucket by bucket, and Scan, in
// the order of the keys' hashes from a cursor (a hash, which means the same
// however the table grows and shrinks; a bucket is an arc of hashes).
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "engine/internal/table_impl.h"
#include "io/base/status_macros.h"
#include "roundtable/table.h"

namespace roundtable {

using internal::Record;

absl::Status Table::Impl::BucketRecords(uint64_t b, std::vector<Record>* out,
                                        bool* past_end, bool* damaged,
                                        size_t* stored) {
  ReaderMutexLock lock(&mu_);
  RT_RETURN_IF_ERROR(CheckOpen());
  *past_end = b >= table_.num_buckets();
  out->clear();
  if (*past_end) return absl::OkStatus();
  return CollectBucket(b, out, damaged, stored);
}

absl::Status Table::Impl::CollectBucket(uint64_t b, std::vector<Record>* out,
                                        bool* damaged, size_t* stored) {
  io::AlignedBuffer buffer(layout_.block_size);
  absl::Status loaded = store_.Load(b, buffer.span());
  if (damaged != nullptr) *damaged = absl::IsDataLoss(loaded);
  if (loaded.ok()) {
    internal::EncodedBlock(buffer.span())
        .ForEach([&](std::string_view k, std::string_view v) {
          out->push_back(Record(k, v));
        });
  } else if (damaged == nullptr || !*damaged) {
    return loaded;
  }
  if (const internal::Stash::List* list = table_.stash().ListOf(b)) {
    for (const internal::Stash::Entry& e : *list) out->push_back(e.record);
  }
  if (stored != nullptr) *stored = out->size();
  // A buffered put replaces the stored record of its key; a buffered
  // delete removes it.
  if (const internal::Stash::List* list = buffer_.ListOf(b)) {
    absl::flat_hash_set<std::string_view> buffered;
    for (const internal::Stash::Entry& e : *list) {
      buffered.insert(e.record.key());
    }
    std::erase_if(*out,
                  [&](const Record& r) { return buffered.contains(r.key()); });
    for (const internal::Stash::Entry& e : *list) {
      if (!internal::IsTombstone(e.record.value())) out->push_back(e.record);
    }
  }
  return absl::OkStatus();
}

namespace {

class TableIterator final : public Iterator {
 public:
  explicit TableIterator(Table::Impl* impl) : impl_(impl) {
    Load();
    Settle();
  }

  bool Valid() const override { return pos_ < records_.size(); }
  void Next() override {
    if (++pos_ >= records_.size()) {
      ++bucket_;
      Load();
    }
    Settle();
  }
  std::string_view key() const override { return records_[pos_].key(); }
  std::string_view value() const override {
    return resolved_ ? std::string_view(value_) : records_[pos_].value();
  }
  absl::Status status() const override { return status_; }

 private:
  // Moves to the first non-empty bucket from bucket_ on.
  void Load() {
    pos_ = 0;
    while (true) {
      bool past_end = false;
      status_ = impl_->BucketRecords(bucket_, &records_, &past_end);
      if (!status_.ok() || past_end) {
        records_.clear();
        return;
      }
      if (!records_.empty()) return;
      ++bucket_;
    }
  }
  // At a record whose value is out of line, reads it: as the key's value
  // is now (an extent may have been freed since its bucket was read), and
  // a record deleted since is passed over.
  void Settle() {
    resolved_ = false;
    while (Valid() && internal::IsReference(records_[pos_].value())) {
      const absl::Status s = impl_->Get(records_[pos_].key(), &value_);
      if (s.ok()) {
        resolved_ = true;
        return;
      }
      if (!absl::IsNotFound(s)) {
        status_ = s;
        records_.clear();
        return;
      }
      if (++pos_ >= records_.size()) {
        ++bucket_;
        Load();
      }
    }
  }

  Table::Impl* impl_;
  uint64_t bucket_ = 0;
  std::vector<Record> records_;
  size_t pos_ = 0;
  std::string value_;      // the value of a record stored out of line
  bool resolved_ = false;  // value_ is the current record's
  absl::Status status_;
};

}  // namespace

std::unique_ptr<Iterator> Table::NewIterator() {
  return std::make_unique<TableIterator>(impl_.get());
}

absl::StatusOr<uint64_t> Table::Impl::ScanArc(uint64_t from,
                                              std::vector<std::string>* keys) {
  ReaderMutexLock lock(&mu_);
  RT_RETURN_IF_ERROR(CheckOpen());
  // The bucket and its arc under one lock with its records: a distribute
  // between them would move records the arc no longer names.
  const mapping::RoundState& state = table_.mapping().state();
  std::vector<Record> records;
  RT_RETURN_IF_ERROR(
      CollectBucket(state.FindBucket(from), &records, nullptr, nullptr));
  for (const Record& r : records) {
    if (layout_.Hash(r.key()) >= from) keys->emplace_back(r.key());
  }
  return state.ArcEnd(from);
}

absl::StatusOr<uint64_t> Table::Scan(uint64_t cursor, size_t count,
                                     std::vector<std::string>* keys) {
  const size_t wanted = keys->size() + count;
  size_t buckets = 0;
  do {
    RT_ASSIGN_OR_RETURN(cursor, impl_->ScanArc(cursor, keys));
  } while (cursor != 0 && keys->size() < wanted && ++buckets < count);
  return cursor;
}

}  // namespace roundtable
