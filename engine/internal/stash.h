// The in-RAM stash: the records whose block is full, in one list per bucket,
// with the number and encoded bytes of all of them.
//
// Beside the lists, a 16-bit filter per bucket has bit (hash >> 16) % 16 set
// for the hash of every key in the bucket's list, and is zero when there is
// no list. A lookup whose bit is clear (every lookup in a bucket without a
// list, and most others) costs one load from an array of 2 bytes per bucket
// (66 KiB for a 130 MiB table, cache-resident) instead of a probe of the hash
// map of lists. Each list keeps its keys' hashes beside the records, so a
// probe compares hashes and reads a key only on a match.
//
// Thread-safety: none; the table guards it with its own mutex.
#ifndef ROUNDTABLE_ENGINE_INTERNAL_STASH_H_
#define ROUNDTABLE_ENGINE_INTERNAL_STASH_H_

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "engine/internal/block_format.h"

namespace roundtable::internal {

class Stash {
 public:
  // A record with its key's hash, side by side: a probe compares hashes
  // and reads a key only on a match.
  struct Entry {
    uint64_t hash;
    Record record;
  };
  // A bucket's list. Most lists hold one record (the stash spreads over
  // many buckets, and the write buffer drains a bucket long before its
  // list grows), so the first entry lives in the hash map's slot: adding
  // it allocates no list, and a lookup reads no list apart from the slot.
  using List = absl::InlinedVector<Entry, 1>;

  // The record of `key` (whose hash is `hash`) in bucket b's list, or null.
  // The pointer is valid until the next change to the stash.
  Record* Find(uint64_t b, std::string_view key, uint64_t hash) {
    if (!(FilterOf(b) & FilterBit(hash))) return nullptr;
    for (Entry& e : lists_.find(b)->second) {
      if (e.hash == hash && e.record.key() == key) return &e.record;
    }
    return nullptr;
  }

  // Starts loading bucket b's filter, which the next Find there reads.
  void Prefetch(uint64_t b) const {
    if (b < filter_.size()) __builtin_prefetch(&filter_[b]);
  }
  // Starts loading where the hash map keeps (or would add) bucket b's list.
  void PrefetchList(uint64_t b) const { lists_.prefetch(b); }
  // Starts loading the records of bucket b's list (reading the list).
  void PrefetchRecords(uint64_t b) const {
    if (const List* list = ListOf(b)) {
      for (const Entry& e : *list) e.record.Prefetch();
    }
  }

  // Bucket b's list, or null when it has none.
  const List* ListOf(uint64_t b) const {
    if (!HasList(b)) return nullptr;
    return &lists_.find(b)->second;
  }

  // Adds a record whose key hashes to `hash`.
  void Add(uint64_t b, uint64_t hash, Record record) {
    bytes_ += EncodedSize(record.key(), record.value());
    ++records_;
    SetFilter(b, FilterOf(b) | FilterBit(hash));
    lists_[b].push_back(Entry{hash, std::move(record)});
  }

  // Replaces the value of a record found by Find. With `old`, the record
  // moves there and takes new bytes for its key and value, rather than
  // have its value changed where it lies.
  void SetValue(Record* r, std::string_view value, Record* old = nullptr) {
    bytes_ -= EncodedSize(r->key(), r->value());
    if (old != nullptr) {
      Record fresh(r->key(), value);
      *old = std::move(*r);
      *r = std::move(fresh);
    } else {
      r->set_value(value);
    }
    bytes_ += EncodedSize(r->key(), r->value());
  }

  // Removes the records of bucket b's list for which keep(record) is false,
  // after calling it (which may move the record out when it returns
  // false); the order of the rest may change.
  template <typename Keep>
  void Filter(uint64_t b, Keep keep) {
    if (!HasList(b)) return;
    auto it = lists_.find(b);
    List& list = it->second;
    for (size_t i = 0; i < list.size();) {
      const size_t size =
          EncodedSize(list[i].record.key(), list[i].record.value());
      if (keep(list[i].record)) {
        ++i;
        continue;
      }
      bytes_ -= size;
      --records_;
      if (i + 1 < list.size()) list[i] = std::move(list.back());
      list.pop_back();
    }
    if (list.empty()) {
      Erase(it);
      return;
    }
    uint16_t filter = 0;
    for (const Entry& e : list) filter |= FilterBit(e.hash);
    SetFilter(b, filter);
  }

  // A list taken out of the stash, each record with its key's hash.
  using Taken = List;

  // Removes bucket b's whole list and returns it, with the hashes stored
  // beside it (reading them costs no access to the keys).
  Taken Take(uint64_t b) {
    if (!HasList(b)) return {};
    auto it = lists_.find(b);
    Taken taken = std::move(it->second);
    for (const Entry& e : taken) {
      bytes_ -= EncodedSize(e.record.key(), e.record.value());
    }
    records_ -= taken.size();
    Erase(it);
    return taken;
  }

  // Calls fn(bucket, list) for every list, in no particular order.
  template <typename Fn>
  void ForEachList(Fn fn) const {
    for (const auto& [b, list] : lists_) fn(b, list);
  }

  uint64_t records() const { return records_; }
  uint64_t bytes() const { return bytes_; }
  // About the memory the records take: their encoded bytes (about their
  // heap blocks), their entries and the hash map's slots.
  uint64_t memory_bytes() const {
    return bytes_ + records_ * sizeof(Entry) +
           lists_.capacity() *
               (sizeof(std::pair<const uint64_t, List>) + 1);
  }
  // The memory of the filters, kept by bucket.
  uint64_t bucket_bytes() const {
    return filter_.capacity() * sizeof(uint16_t);
  }

  // True when every stored hash is hash(key) and the filters are exactly
  // those of the lists (for Table::Check).
  template <typename HashFn>
  bool Consistent(HashFn hash) const {
    uint64_t with_filter = 0;
    for (const uint16_t f : filter_) with_filter += f != 0;
    if (with_filter != lists_.size()) return false;
    for (const auto& [b, list] : lists_) {
      if (list.empty()) return false;
      uint16_t filter = 0;
      for (const Entry& e : list) {
        if (e.hash != hash(e.record.key())) return false;
        filter |= FilterBit(e.hash);
      }
      if (FilterOf(b) != filter) return false;
    }
    return true;
  }

 private:
  // Bits 16..19 of the hash: independent of the bucket (which the high bits
  // decide) and of the block tag (the low 16).
  static uint16_t FilterBit(uint64_t hash) {
    return static_cast<uint16_t>(1u << ((hash >> 16) & 15));
  }
  uint16_t FilterOf(uint64_t b) const {
    return b < filter_.size() ? filter_[b] : 0;
  }
  bool HasList(uint64_t b) const { return FilterOf(b) != 0; }
  void SetFilter(uint64_t b, uint16_t filter) {
    if (b >= filter_.size()) {
      filter_.resize(std::max<uint64_t>(b + 1, filter_.size() * 2));
    }
    filter_[b] = filter;
  }

  void Erase(absl::flat_hash_map<uint64_t, List>::iterator it) {
    SetFilter(it->first, 0);
    lists_.erase(it);
  }

  absl::flat_hash_map<uint64_t, List> lists_;
  std::vector<uint16_t> filter_;  // by bucket; nonzero iff it has a list
  uint64_t records_ = 0;
  uint64_t bytes_ = 0;
};

}  // namespace roundtable::internal

#endif  // ROUNDTABLE_ENGINE_INTERNAL_STASH_H_
