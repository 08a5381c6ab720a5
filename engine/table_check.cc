// Table::Check: every invariant of the round-table verified against the
// blocks and the in-memory lists (docs/table.md, "Checking a table").
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "engine/internal/table_impl.h"
#include "io/base/status_macros.h"

namespace roundtable {

using internal::EncodedSize;
using internal::Record;

absl::Status Table::Impl::Check(const CheckProgress& progress) {
  ReaderMutexLock lock(&mu_);
  return CheckLocked(progress);
}

absl::Status Table::Impl::CheckLocked(const CheckProgress& progress) {
  RT_RETURN_IF_ERROR(CheckOpen());
  const uint64_t m = table_.num_buckets();
  auto hash = [&](std::string_view k) { return layout_.Hash(k); };
  absl::flat_hash_map<std::string, uint64_t> seen;
  uint64_t records = 0, bytes = 0, stash_records = 0, stash_bytes = 0;
  auto fault = [](auto... parts) {
    return absl::DataLossError(absl::StrCat("check: ", parts...));
  };
  // Every reference, with its bucket: the stored records' and the
  // buffered puts' (a buffered put's stored record keeps its value until
  // the put reaches its block).
  std::vector<std::pair<internal::ValueRef, uint64_t>> refs;
  auto note_ref = [&](std::string_view value, uint64_t b) {
    if (internal::HasExtent(value)) {
      refs.push_back({internal::DecodeReference(value), b});
    }
  };
  auto note = [&](std::string_view key, std::string_view value, uint64_t b,
                  const char* where) -> absl::Status {
    note_ref(value, b);
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
    if (progress && b % 256 == 0) progress(b, m);
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
          // The filter kept for a block in memory must pass its tags, or
          // a lookup would miss the record.
          if (!store_.MayContain(b, tag)) {
            s = fault("the tag filter of bucket ", b,
                      "'s block rules out a tag of its records");
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
  uint64_t tombstones = 0;
  buffered_puts.ForEachList([&](uint64_t b, const internal::Stash::List& list) {
    for (const internal::Stash::Entry& e : list) {
      const Record& r = e.record;
      if (!stray.ok()) return;
      tombstones += internal::IsTombstone(r.value());
      if (table_.BucketOf(hash(r.key())) != b) {
        stray = fault("a buffered put in the list of bucket ", b,
                      " belongs to another bucket");
      } else if (!buffered.insert(r.key()).second) {
        stray = fault("a key is buffered twice (bucket ", b, ")");
      }
      note_ref(r.value(), b);
    }
  });
  RT_RETURN_IF_ERROR(stray);
  if (!buffered_puts.lists().Consistent(hash)) {
    return fault(
        "the write buffer's filters or key hashes disagree with its lists");
  }
  if (tombstones != buffer_.deletes()) {
    return fault("counted ", tombstones, " buffered deletes; the buffer says ",
                 buffer_.deletes());
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
  RT_RETURN_IF_ERROR(CheckValues(refs));
  const uint64_t least = layout_.NeededBuckets(bytes, records);
  // At least s0 buckets, and the floor Reserve set.
  const uint64_t needed = std::max({least, layout_.s0, table_.min_buckets()});
  if (m < std::max<uint64_t>(least, 1) || m > needed + 1) {
    return fault(m, " buckets for ", records, " records of ", bytes, " bytes (",
                 needed, " needed at 1 - epsilon)");
  }
  return absl::OkStatus();
}

}  // namespace roundtable

namespace roundtable {

// The references against the value file: each extent inside it and used
// in the space map, no two overlapping, the map's used units exactly
// theirs, the counts the table keeps, and every value's bytes.
absl::Status Table::Impl::CheckValues(
    std::vector<std::pair<internal::ValueRef, uint64_t>>& refs) {
  auto fault = [](auto... parts) {
    return absl::DataLossError(absl::StrCat("check: ", parts...));
  };
  const uint32_t unit = values_.unit();
  const internal::SpaceMap& map = values_.map();
  std::sort(refs.begin(), refs.end(), [](const auto& a, const auto& b) {
    return a.first.first < b.first.first;
  });
  uint64_t units = 0, bytes = 0, end = 0;
  for (const auto& [ref, b] : refs) {
    const internal::Extent e = ref.extent(unit);
    if (ref.length == 0 || ref.length > internal::kMaxValueBytes ||
        e.end() > map.units() || e.end() > values_.file().num_blocks()) {
      return fault("bucket ", b, " refers to units [", e.first, ", ", e.end(),
                   "), outside the value file of ", map.units(), " units");
    }
    if (e.first < end) {
      return fault("bucket ", b, " refers to units [", e.first, ", ", e.end(),
                   "), which another value's extent overlaps");
    }
    end = e.end();
    for (uint64_t u = e.first; u < e.end(); ++u) {
      if (!map.used(u)) {
        return fault("bucket ", b, " refers to unit ", u,
                     ", which the space map has free");
      }
    }
    units += e.units;
    bytes += ref.length;
    std::string value;
    RT_RETURN_IF_ERROR(values_.Read(ref, b, &value));
  }
  if (units != map.used_units()) {
    return fault("the space map has ", map.used_units(),
                 " units in use; the references take ", units);
  }
  if (refs.size() != values_.count() || bytes != values_.bytes()) {
    return fault("counted ", refs.size(), " out-of-line values of ", bytes,
                 " bytes; the table says ", values_.count(), " and ",
                 values_.bytes());
  }
  return absl::OkStatus();
}

}  // namespace roundtable
