// A write-back cache of encoded bucket blocks, least recently used first out.
// Clean entries are copies of what is on the device; dirty ones are newer and
// reach the device when evicted or flushed. Capacity 0 disables it: every
// lookup misses and nothing is kept.
//
// Thread-safety: every method takes the cache's own mutex, so lookups from
// concurrent readers of the table are safe. Eviction hands dirty blocks to
// the caller's write function while holding the mutex.
#ifndef ROUNDTABLE_ENGINE_INTERNAL_BLOCK_CACHE_H_
#define ROUNDTABLE_ENGINE_INTERNAL_BLOCK_CACHE_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <list>
#include <span>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "io/block_device.h"

namespace roundtable::internal {

class BlockCache {
 public:
  // Writes one dirty block to the device (bucket, bytes); it may change the
  // bytes on the way (the table seals the checksum).
  using WriteFn = std::function<absl::Status(uint64_t, std::span<std::byte>)>;

  BlockCache(uint64_t capacity_bytes, uint32_t block_size, WriteFn write);

  bool enabled() const { return capacity_blocks_ > 0; }

  // Copies bucket b's bytes into `out` and returns true on a hit.
  bool Lookup(uint64_t b, std::span<std::byte> out);

  // On a hit calls fn(bytes) under the cache's mutex, with no copy, and
  // returns true. fn must not call back into the cache.
  template <typename Fn>
  bool Visit(uint64_t b, Fn fn) {
    if (!enabled()) {
      misses_.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    absl::MutexLock lock(&mu_);
    auto it = entries_.find(b);
    if (it == entries_.end()) {
      misses_.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    lru_.splice(lru_.begin(), lru_, it->second.lru);
    hits_.fetch_add(1, std::memory_order_relaxed);
    fn(std::span<const std::byte>(it->second.bytes.span()));
    return true;
  }

  // Keeps `bytes` as bucket b's block, clean (just read) or dirty (newer
  // than the device). Evicts the least recently used entries beyond the
  // capacity, writing dirty ones first; the first write error is returned
  // (the entry stays cached, dirty).
  absl::Status Insert(uint64_t b, std::span<const std::byte> bytes, bool dirty);

  // Writes every dirty block (in bucket order) and marks it clean.
  absl::Status Flush();

  // Forgets buckets >= first (released by a shrink), dirty or not.
  void DropFrom(uint64_t first);

  uint64_t hits() const { return hits_.load(); }
  uint64_t misses() const { return misses_.load(); }
  uint64_t dirty_blocks() const;

 private:
  struct Entry {
    io::AlignedBuffer bytes;
    bool dirty = false;
    std::list<uint64_t>::iterator lru;  // position in lru_
  };

  absl::Status EvictLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const uint64_t capacity_blocks_;
  const uint32_t block_size_;
  const WriteFn write_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<uint64_t, Entry> entries_ ABSL_GUARDED_BY(mu_);
  std::list<uint64_t> lru_ ABSL_GUARDED_BY(mu_);  // front: most recent
  uint64_t dirty_ ABSL_GUARDED_BY(mu_) = 0;
  std::atomic<uint64_t> hits_{0}, misses_{0};
};

}  // namespace roundtable::internal

#endif  // ROUNDTABLE_ENGINE_INTERNAL_BLOCK_CACHE_H_
