// The in-RAM stash: the records whose block is full, in one list per bucket,
// with the number and encoded bytes of all of them.
//
// Beside the lists a bitmap holds one bit per bucket, set while the bucket
// has a list. Most buckets have none, so most lookups cost one bit test in
// an array of m / 8 bytes (4 KiB for a 130 MiB table, cache-resident)
// instead of a probe of the hash map of lists.
//
// Thread-safety: none; the table guards it with its own mutex.
#ifndef ROUNDTABLE_ENGINE_INTERNAL_STASH_H_
#define ROUNDTABLE_ENGINE_INTERNAL_STASH_H_

#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "engine/internal/block_format.h"

namespace roundtable::internal {

class Stash {
 public:
  using List = std::vector<Record>;

  // The record of `key` in bucket b's list, or null.
  Record* Find(uint64_t b, std::string_view key) {
    if (!HasList(b)) return nullptr;
    for (Record& r : lists_.find(b)->second) {
      if (r.key == key) return &r;
    }
    return nullptr;
  }

  // Bucket b's list, or null when it has none.
  const List* ListOf(uint64_t b) const {
    if (!HasList(b)) return nullptr;
    return &lists_.find(b)->second;
  }

  void Add(uint64_t b, Record record) {
    bytes_ += EncodedSize(record.key, record.value);
    ++records_;
    List& list = lists_[b];
    if (list.empty()) SetBit(b, true);
    list.push_back(std::move(record));
  }

  // Replaces the value of a record found by Find.
  void SetValue(Record* r, std::string_view value) {
    bytes_ -= EncodedSize(r->key, r->value);
    r->value.assign(value);
    bytes_ += EncodedSize(r->key, r->value);
  }

  // Removes the records of bucket b's list for which keep(record) is false,
  // after calling it; the order of the rest may change.
  template <typename Keep>
  void Filter(uint64_t b, Keep keep) {
    if (!HasList(b)) return;
    auto it = lists_.find(b);
    List& list = it->second;
    for (size_t i = 0; i < list.size();) {
      if (keep(list[i])) {
        ++i;
        continue;
      }
      bytes_ -= EncodedSize(list[i].key, list[i].value);
      --records_;
      list[i] = std::move(list.back());
      list.pop_back();
    }
    if (list.empty()) Erase(it);
  }

  // Removes bucket b's whole list and returns it.
  List Take(uint64_t b) {
    if (!HasList(b)) return {};
    auto it = lists_.find(b);
    List list = std::move(it->second);
    for (const Record& r : list) bytes_ -= EncodedSize(r.key, r.value);
    records_ -= list.size();
    Erase(it);
    return list;
  }

  // Calls fn(bucket, list) for every list, in no particular order.
  template <typename Fn>
  void ForEachList(Fn fn) const {
    for (const auto& [b, list] : lists_) fn(b, list);
  }

  uint64_t records() const { return records_; }
  uint64_t bytes() const { return bytes_; }

  // True when the bitmap agrees with the lists (for Table::Check).
  bool BitmapAgrees() const {
    uint64_t bits = 0;
    for (const uint64_t word : has_list_) bits += __builtin_popcountll(word);
    if (bits != lists_.size()) return false;
    for (const auto& [b, list] : lists_) {
      if (!HasList(b) || list.empty()) return false;
    }
    return true;
  }

 private:
  bool HasList(uint64_t b) const {
    const uint64_t word = b / 64;
    return word < has_list_.size() && (has_list_[word] >> (b % 64)) & 1;
  }
  void SetBit(uint64_t b, bool on) {
    const uint64_t word = b / 64;
    if (word >= has_list_.size()) has_list_.resize(word + 1);
    const uint64_t mask = uint64_t{1} << (b % 64);
    has_list_[word] = on ? has_list_[word] | mask : has_list_[word] & ~mask;
  }
  void Erase(absl::flat_hash_map<uint64_t, List>::iterator it) {
    SetBit(it->first, false);
    lists_.erase(it);
  }

  absl::flat_hash_map<uint64_t, List> lists_;
  std::vector<uint64_t> has_list_;  // bit b: bucket b has a list
  uint64_t records_ = 0;
  uint64_t bytes_ = 0;
};

}  // namespace roundtable::internal

#endif  // ROUNDTABLE_ENGINE_INTERNAL_STASH_H_
