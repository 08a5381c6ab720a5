#include "engine/internal/block_cache.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstring>

#include "io/status_macros.h"

namespace roundtable::internal {

constexpr size_t kHugePage = size_t{2} << 20;

BlockCache::BlockCache(uint64_t capacity_bytes, uint32_t block_size,
                       WriteFn write)
    : capacity_blocks_(
          std::min<uint64_t>(capacity_bytes / block_size, kReferenced - 1)),
      block_size_(block_size),
      write_(std::move(write)) {
  if (enabled()) {
    // The arena is reserved at once (the pages are touched only as slots
    // fill, so an idle cache costs address space, not memory).
    const size_t bytes = capacity_blocks_ * block_size_;
    arena_ = io::AlignedBuffer(bytes, kHugePage, /*zeroed=*/false);
    // Random block lookups over a large arena miss the TLB on every access
    // with 4 KiB pages; transparent huge pages remove most of those walks.
    // (Advice only: where THP is off this changes nothing.)
    if (bytes >= kHugePage) madvise(arena_.data(), bytes, MADV_HUGEPAGE);
    slots_.resize(capacity_blocks_);
    free_.reserve(capacity_blocks_);
    for (uint64_t i = capacity_blocks_; i > 0; --i) {
      free_.push_back(static_cast<uint32_t>(i - 1));
    }
  }
}

bool BlockCache::Lookup(uint64_t b, std::span<std::byte> out) {
  return Visit(b, [&](std::span<const std::byte> bytes) {
    std::memcpy(out.data(), bytes.data(), block_size_);
  });
}

absl::StatusOr<uint32_t> BlockCache::TakeSlot() {
  if (!free_.empty()) {
    const uint32_t slot = free_.back();
    free_.pop_back();
    return slot;
  }
  while (true) {
    const uint32_t slot = hand_;
    hand_ = static_cast<uint32_t>((hand_ + 1) % capacity_blocks_);
    Slot& s = slots_[slot];
    if (uint32_t& entry = slot_of_[s.bucket]; entry & kReferenced) {
      entry &= ~kReferenced;
      continue;
    }
    if (s.dirty) {
      RT_RETURN_IF_ERROR(
          write_(s.bucket, std::span<std::byte>(BytesOf(slot), block_size_)));
      s.dirty = false;
      --dirty_;
    }
    slot_of_[s.bucket] = kNoSlot;
    s.bucket = kFree;
    return slot;
  }
}

absl::Status BlockCache::Insert(uint64_t b, std::span<const std::byte> bytes,
                                bool dirty) {
  if (!enabled()) return absl::OkStatus();
  MutexLock lock(&mu_);
  uint32_t slot = SlotOf(b);
  if (slot != kNoSlot) {
    // A clean copy (just read from the device) never overwrites a dirty
    // entry, whose bytes are newer.
    if (!dirty && slots_[slot].dirty) return absl::OkStatus();
    Reference(b);
  } else {
    RT_ASSIGN_OR_RETURN(slot, TakeSlot());
    slots_[slot].bucket = b;
    if (b >= slot_of_.size()) {
      slot_of_.resize(std::max<uint64_t>(b + 1, slot_of_.size() * 2), kNoSlot);
    }
    slot_of_[b] = slot | kReferenced;
  }
  Slot& s = slots_[slot];
  std::memcpy(BytesOf(slot), bytes.data(), block_size_);
  if (dirty && !s.dirty) ++dirty_;
  s.dirty = s.dirty || dirty;
  return absl::OkStatus();
}

absl::Status BlockCache::Flush() {
  MutexLock lock(&mu_);
  if (dirty_ == 0) return absl::OkStatus();
  std::vector<std::pair<uint64_t, uint32_t>> dirty;  // bucket, slot
  for (uint32_t i = 0; i < slots_.size(); ++i) {
    if (slots_[i].bucket != kFree && slots_[i].dirty) {
      dirty.emplace_back(slots_[i].bucket, i);
    }
  }
  std::sort(dirty.begin(), dirty.end());
  for (const auto& [b, slot] : dirty) {
    RT_RETURN_IF_ERROR(
        write_(b, std::span<std::byte>(BytesOf(slot), block_size_)));
    slots_[slot].dirty = false;
    --dirty_;
  }
  return absl::OkStatus();
}

void BlockCache::Drop(uint64_t b) {
  if (!enabled()) return;
  MutexLock lock(&mu_);
  const uint32_t slot = SlotOf(b);
  if (slot == kNoSlot) return;
  Slot& s = slots_[slot];
  if (s.dirty) --dirty_;
  s = Slot{};
  free_.push_back(slot);
  slot_of_[b] = kNoSlot;
}

uint64_t BlockCache::dirty_blocks() const {
  MutexLock lock(&mu_);
  return dirty_;
}

}  // namespace roundtable::internal
