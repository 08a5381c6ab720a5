// Table::Check: every invariant of the round-table verified against the
// blocks and the in-memory lists (docs/table.md, "Checking a table").
#include <algorithm>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "engine/internal/table_impl.h"
#include "io/base/status_macros.h"

namespace roundtable {

using internal::EncodedSize;
using internal::Record;

absl::Status Table::Impl::Check() {
  ReaderMutexLock lock(&mu_);
  return CheckLocked();
}

absl::Status Table::Impl::CheckLocked() {
  RT_RETURN_IF_ERROR(CheckOpen());
  const uint64_t m = table_.num_buckets();
  auto hash = [&](std::string_view k) { return layout_.Hash(k); };
  absl::flat_hash_map<std::string, uint64_t> seen;
  uint64_t records = 0, bytes = 0, stash_records = 0, stash_bytes = 0;
  auto fault = [](auto... parts) {
    return absl::DataLossError(absl::StrCat("check: ", parts...));
  };
  auto note = [&](std::string_view key, std::string_view value, uint64_t b,
                  const char* where) -> absl::Status {
    const uint64_t home = table_.BucketOf(hash(key));
    if (home != b) {
      return fault("a record in the ", where, " of bucket ", b,
                   " belongs to bucket ", home);
    }
    if (!seen.emplace(key, b).second) {
      return fault("a key appears twice (bucket ", b, ")");
    }
    ++records;
    bytes += EncodedSize(key, value);
    return absl::OkStatus();
  };
  const internal::LoggedStash& stash = table_.stash();
  io::AlignedBuffer buffer(layout_.block_size);
  for (uint64_t b = 0; b < m; ++b) {
    RT_RETURN_IF_ERROR(store_.Load(b, buffer.span()));
    const internal::EncodedBlock block(buffer.span(), layout_.block_records);
    absl::Status s;
    block.ForEachTagged(
        [&](std::string_view k, std::string_view v, uint16_t tag) {
          if (!s.ok()) return;
          if (tag != internal::TagOf(hash(k))) {
            s = fault("a record of bucket ", b,
                      " has a directory tag that does not match its key");
            return;
          }
          s = note(k, v, b, "block");
        });
    RT_RETURN_IF_ERROR(s);
    const internal::Stash::List* list = stash.ListOf(b);
    if (list == nullptr) continue;
    for (const internal::Stash::Entry& e : *list) {
      const Record& r = e.record;
      RT_RETURN_IF_ERROR(note(r.key(), r.value(), b, "stash"));
      ++stash_records;
      stash_bytes += EncodedSize(r.key(), r.value());
      if (block.Fits(EncodedSize(r.key(), r.value()))) {
        return fault("bucket ", b,
                     " keeps a record in the stash that its block has "
                     "room for");
      }
    }
  }
  absl::Status stray;
  stash.ForEachList([&](uint64_t b, const internal::Stash::List&) {
    if (b >= m && stray.ok()) {
      stray = fault("stash list for missing bucket ", b);
    }
  });
  RT_RETURN_IF_ERROR(stray);
  if (!stash.lists().Consistent(hash)) {
    return fault("the stash's filters or key hashes disagree with its lists");
  }
  // Buffered puts: each in the list of its own bucket, no key twice.
  const internal::LoggedStash& buffered_puts = buffer_.records();
  absl::flat_hash_set<std::string_view> buffered;
  buffered_puts.ForEachList(
      [&](uint64_t b, const internal::Stash::List& list) {
        for (const internal::Stash::Entry& e : list) {
          const Record& r = e.record;
          if (!stray.ok()) return;
          if (table_.BucketOf(hash(r.key())) != b) {
            stray = fault("a buffered put in the list of bucket ", b,
                          " belongs to another bucket");
          } else if (!buffered.insert(r.key()).second) {
            stray = fault("a key is buffered twice (bucket ", b, ")");
          }
        }
      });
  RT_RETURN_IF_ERROR(stray);
  if (!buffered_puts.lists().Consistent(hash)) {
    return fault(
        "the write buffer's filters or key hashes disagree with its lists");
  }
  if (stash_records != stash.records() || stash_bytes != stash.bytes()) {
    return fault("counted ", stash_records, " stash records of ", stash_bytes,
                 " bytes; the stash says ", stash.records(), " and ",
                 stash.bytes());
  }
  if (records != table_.record_count() || bytes != table_.data_bytes()) {
    return fault("counted ", records, " records of ", bytes,
                 " bytes; the table says ", table_.record_count(), " and ",
                 table_.data_bytes());
  }
  const uint64_t least = layout_.NeededBuckets(bytes, records);
  const uint64_t needed = std::max<uint64_t>(least, layout_.s0);
  if (m < std::max<uint64_t>(least, 1) || m > needed + 1) {
    return fault(m, " buckets for ", records, " records of ", bytes,
                 " bytes (", needed, " needed at 1 - epsilon)");
  }
  return absl::OkStatus();
}

}  // namespace roundtable
