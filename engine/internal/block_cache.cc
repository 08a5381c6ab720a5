#include "engine/internal/block_cache.h"

#include <algorithm>
#include <cstring>

#include "io/status_macros.h"

namespace roundtable::internal {

BlockCache::BlockCache(uint64_t capacity_bytes, uint32_t block_size,
                       WriteFn write)
    : capacity_blocks_(capacity_bytes / block_size),
      block_size_(block_size),
      write_(std::move(write)) {}

bool BlockCache::Lookup(uint64_t b, std::span<std::byte> out) {
  return Visit(b, [&](std::span<const std::byte> bytes) {
    std::memcpy(out.data(), bytes.data(), block_size_);
  });
}

absl::Status BlockCache::Insert(uint64_t b, std::span<const std::byte> bytes,
                                bool dirty) {
  if (!enabled()) return absl::OkStatus();
  absl::MutexLock lock(&mu_);
  auto [it, added] = entries_.try_emplace(b);
  Entry& e = it->second;
  if (added) {
    e.bytes = io::AlignedBuffer(block_size_);
    lru_.push_front(b);
    e.lru = lru_.begin();
  } else {
    lru_.splice(lru_.begin(), lru_, e.lru);
  }
  // A clean copy (just read from the device) never overwrites a dirty
  // entry, whose bytes are newer.
  if (dirty || !e.dirty) std::memcpy(e.bytes.data(), bytes.data(), block_size_);
  if (dirty && !e.dirty) ++dirty_;
  e.dirty = e.dirty || dirty;
  return EvictLocked();
}

absl::Status BlockCache::EvictLocked() {
  while (entries_.size() > capacity_blocks_) {
    const uint64_t victim = lru_.back();
    auto it = entries_.find(victim);
    if (it->second.dirty) {
      RT_RETURN_IF_ERROR(write_(victim, it->second.bytes.span()));
      --dirty_;
    }
    lru_.pop_back();
    entries_.erase(it);
  }
  return absl::OkStatus();
}

absl::Status BlockCache::Flush() {
  absl::MutexLock lock(&mu_);
  if (dirty_ == 0) return absl::OkStatus();
  std::vector<uint64_t> dirty;
  for (const auto& [b, e] : entries_) {
    if (e.dirty) dirty.push_back(b);
  }
  std::sort(dirty.begin(), dirty.end());
  for (const uint64_t b : dirty) {
    Entry& e = entries_.at(b);
    RT_RETURN_IF_ERROR(write_(b, e.bytes.span()));
    e.dirty = false;
    --dirty_;
  }
  return absl::OkStatus();
}

void BlockCache::DropFrom(uint64_t first) {
  absl::MutexLock lock(&mu_);
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (it->first >= first) {
      if (it->second.dirty) --dirty_;
      lru_.erase(it->second.lru);
      entries_.erase(it++);
    } else {
      ++it;
    }
  }
}

uint64_t BlockCache::dirty_blocks() const {
  absl::MutexLock lock(&mu_);
  return dirty_;
}

}  // namespace roundtable::internal
