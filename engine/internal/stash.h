// The in-RAM stash: the records whose block is full, in one list per bucket,
// with the number and encoded bytes of all of them.
//
// The lists lie in an array by bucket (an empty one where the bucket has
// none), so that finding or adding to a bucket's list is one load where it
// is, with no hash to probe and nothing to rehash as the stash grows: a
// probe of a hash map of lists missed the CPU caches twice (its control
// bytes, then its slot), a tenth of a fill's time past the budget. An
// empty list takes 32 bytes, less than 1% of its bucket's block. The
// arrays grow in chunks (BucketArray), so a growing table never moves the
// lists it has: one array grown by a quarter moved 300,000 lists into
// fresh pages within one write, 15 to 40 ms of it, at 10^7 records.
//
// Beside the lists, a 16-bit filter per bucket has bit (hash >> 16) % 16 set
// for the hash of every key in the bucket's list, and is zero when there is
// no list. A lookup whose bit is clear (every lookup in a bucket without a
// list, and most others) costs one load from an array of 2 bytes per bucket
// (66 KiB for a 130 MiB table, cache-resident) and reads no list. Each list
// keeps its keys' hashes beside the records, so a probe compares hashes and
// reads a key only on a match.
//
// Thread-safety: none; the table guards it with its own mutex.
#ifndef ROUNDTABLE_ENGINE_INTERNAL_STASH_H_
#define ROUNDTABLE_ENGINE_INTERNAL_STASH_H_

#include <cstdint>
#include <string_view>

#include "absl/container/inlined_vector.h"
#include "engine/internal/block_format.h"
#include "engine/internal/bucket_array.h"

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
  // list grows), so the first entry lives in the array's element: adding
  // it allocates nothing, and a lookup reads nothing else.
  using List = absl::InlinedVector<Entry, 1>;

  // The record of `key` (whose hash is `hash`) in bucket b's list, or null.
  // The pointer is valid until the next change to the stash.
  Record* Find(uint64_t b, std::string_view key, uint64_t hash) {
    if (!(FilterOf(b) & FilterBit(hash))) return nullptr;
    for (Entry& e : lists_[b]) {
      if (e.hash == hash && e.record.key() == key) return &e.record;
    }
    return nullptr;
  }

  // Starts loading bucket b's filter, which the next Find there reads.
  void Prefetch(uint64_t b) const {
    if (b < filter_.size()) __builtin_prefetch(&filter_[b]);
  }
  // Starts loading bucket b's list (where a record added there goes).
  void PrefetchList(uint64_t b) const {
    if (b < filter_.size()) __builtin_prefetch(&lists_[b]);
  }
  // Starts loading the records of bucket b's list (reading the list).
  void PrefetchRecords(uint64_t b) const {
    if (const List* list = ListOf(b)) {
      for (const Entry& e : *list) e.record.Prefetch();
    }
  }

  // Bucket b's list, or null when it has none.
  const List* ListOf(uint64_t b) const {
    if (!HasList(b)) return nullptr;
    return &lists_[b];
  }

  // Adds a record whose key hashes to `hash`.
  void Add(uint64_t b, uint64_t hash, Record record) {
    bytes_ += EncodedSize(record.key(), record.value());
    ++records_;
    SetFilter(b, FilterOf(b) | FilterBit(hash));
    if (lists_[b].empty()) ++lists_count_;
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
    List& list = lists_[b];
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
      Erase(b);
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
    Taken taken = std::move(lists_[b]);
    for (const Entry& e : taken) {
      bytes_ -= EncodedSize(e.record.key(), e.record.value());
    }
    records_ -= taken.size();
    Erase(b);
    return taken;
  }

  // Calls fn(bucket, list) for every list, in the buckets' order.
  template <typename Fn>
  void ForEachList(Fn fn) const {
    // A chunk at a time (its elements lie side by side), the lists that
    // outgrew their one inline entry loading a few buckets ahead.
    constexpr uint64_t kChunk = BucketArray<List>::kChunk, kAhead = 8;
    for (uint64_t first = 0; first < filter_.size(); first += kChunk) {
      const uint16_t* filter = &filter_[first];
      const List* lists = &lists_[first];
      for (uint64_t i = 0; i < kChunk; ++i) {
        if (i + kAhead < kChunk && lists[i + kAhead].size() > 1) {
          __builtin_prefetch(lists[i + kAhead].data());
        }
        if (filter[i] != 0) fn(first + i, lists[i]);
      }
    }
  }

  uint64_t records() const { return records_; }
  uint64_t bytes() const { return bytes_; }
  // About the memory the records take: their encoded bytes (about their
  // heap blocks) and their entries.
  uint64_t memory_bytes() const {
    return bytes_ + records_ * sizeof(Entry);
  }
  // The memory of the filters and the lists' arrays, kept by bucket.
  uint64_t bucket_bytes() const {
    return filter_.memory_bytes() + lists_.memory_bytes();
  }

  // True when every stored hash is hash(key) and the filters are exactly
  // those of the lists (for Table::Check).
  template <typename HashFn>
  bool Consistent(HashFn hash) const {
    if (lists_.size() != filter_.size()) return false;
    uint64_t with_list = 0;
    for (uint64_t b = 0; b < filter_.size(); ++b) {
      const List& list = lists_[b];
      if (list.empty()) {
        if (filter_[b] != 0) return false;
        continue;
      }
      ++with_list;
      uint16_t filter = 0;
      for (const Entry& e : list) {
        if (e.hash != hash(e.record.key())) return false;
        filter |= FilterBit(e.hash);
      }
      if (FilterOf(b) != filter) return false;
    }
    return with_list == lists_count_;
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
  // The filters and the lists grow together.
  void SetFilter(uint64_t b, uint16_t filter) {
    if (b >= filter_.size()) {
      filter_.Cover(b + 1);
      lists_.Cover(b + 1);
    }
    filter_[b] = filter;
  }

  // Bucket b's list emptied, its memory (a list that had outgrown its one
  // inline entry) given back.
  void Erase(uint64_t b) {
    SetFilter(b, 0);
    lists_[b] = List();
    --lists_count_;
  }

  BucketArray<List> lists_;       // by bucket; empty where it has none
  BucketArray<uint16_t> filter_;  // by bucket; nonzero iff it has a list
  uint64_t lists_count_ = 0;      // buckets with a list
  uint64_t records_ = 0;
  uint64_t bytes_ = 0;
};

}  // namespace roundtable::internal

#endif  // ROUNDTABLE_ENGINE_INTERNAL_STASH_H_
