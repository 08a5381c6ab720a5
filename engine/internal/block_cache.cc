#include "engine/internal/block_cache.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "absl/container/fixed_array.h"
#include "engine/internal/huge_page_allocator.h"

namespace roundtable::internal {

BlockCache::BlockCache(uint64_t capacity_bytes, uint32_t block_size,
                       Summarize summarize)
    : capacity_blocks_(
          std::min<uint64_t>(capacity_bytes / block_size, kReferenced - 1)),
      block_size_(block_size),
      summarize_(summarize) {
  if (enabled()) {
    // The arena is reserved at once (the pages are touched only as slots
    // fill, so an idle cache costs address space, not memory).
    const size_t bytes = capacity_blocks_ * block_size_;
    arena_ = io::AlignedBuffer(bytes, kHugePageBytes, /*zeroed=*/false);
    // Random block lookups over a large arena miss the TLB on every access
    // with 4 KiB pages; transparent huge pages remove most of those walks.
    AdviseHugePages(arena_.data(), bytes);
    bucket_of_.assign(capacity_blocks_, kFree);
    if (summarize_ != nullptr) filter_.resize(capacity_blocks_);
    arena_base_ = arena_.data();
    arena_end_ = arena_.data() + bytes;
    free_.reserve(capacity_blocks_);
    for (uint64_t i = capacity_blocks_; i > 0; --i) {
      free_.push_back(static_cast<uint32_t>(i - 1));
    }
    usable_.store(capacity_blocks_, std::memory_order_relaxed);
  }
}

void BlockCache::SetUsableBlocks(uint64_t blocks) {
  if (!enabled()) return;
  blocks = std::clamp<uint64_t>(blocks, 1, capacity_blocks_);
  MutexLock lock(&mu_);
  const uint64_t usable = usable_blocks();
  if (blocks == usable) return;
  if (blocks > usable) {
    for (uint64_t slot = usable; slot < blocks; ++slot) {
      if (bucket_of_[slot] == kLent) {
        --lent_past_;
      } else {
        FreeSlot(static_cast<uint32_t>(slot));
      }
    }
    usable_.store(blocks, std::memory_order_relaxed);
    return;
  }
  // The slots past the new end: cached blocks evicted, free ones taken
  // off the free list; lent ones stay lent until they come back. Their
  // memory goes back to the system a run of slots at a time.
  std::erase_if(free_, [&](uint32_t slot) { return slot >= blocks; });
  uint64_t run = blocks;
  for (uint64_t slot = blocks; slot < usable; ++slot) {
    const uint64_t b = bucket_of_[slot];
    if (b == kLent) {
      ++lent_past_;
      Withhold(static_cast<uint32_t>(run), static_cast<uint32_t>(slot));
      run = slot + 1;
      continue;
    }
    if (b != kFree) slot_of_[b] = kNoSlot;
  }
  Withhold(static_cast<uint32_t>(run), static_cast<uint32_t>(usable));
  usable_.store(blocks, std::memory_order_relaxed);
  if (hand_ >= blocks) hand_ = 0;
}

void BlockCache::Withhold(uint32_t first, uint32_t last) {
  if (first >= last) return;
  for (uint32_t slot = first; slot < last; ++slot) bucket_of_[slot] = kWithheld;
  // The whole pages among them (blocks smaller than a page share theirs
  // with slots in use). Advice only: where it fails the memory stays,
  // unused.
  static const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t from =
      (reinterpret_cast<uintptr_t>(BytesOf(first)) + page - 1) & ~(page - 1);
  const uintptr_t to = reinterpret_cast<uintptr_t>(BytesOf(last)) & ~(page - 1);
  if (from < to) {
    madvise(reinterpret_cast<void*>(from), to - from, MADV_DONTNEED);
  }
}

bool BlockCache::Lookup(uint64_t b, std::span<std::byte> out) {
  return Visit(b, [&](std::span<const std::byte> bytes) {
    std::memcpy(out.data(), bytes.data(), block_size_);
  });
}

uint32_t BlockCache::TakeSlot() {
  if (!free_.empty()) {
    const uint32_t slot = free_.back();
    free_.pop_back();
    return slot;
  }
  const uint64_t usable = usable_blocks();
  if (LentInUse() >= usable) return kNoSlot;
  while (true) {
    const uint32_t slot = hand_;
    hand_ = static_cast<uint32_t>((hand_ + 1) % usable);
    if (bucket_of_[slot] == kLent) continue;
    if (uint32_t& entry = slot_of_[bucket_of_[slot]]; entry & kReferenced) {
      entry &= ~kReferenced;
      continue;
    }
    slot_of_[bucket_of_[slot]] = kNoSlot;
    bucket_of_[slot] = kFree;
    return slot;
  }
}

void BlockCache::Insert(uint64_t b, std::span<const std::byte> bytes) {
  if (!enabled()) return;
  const TagFilter filter = SummaryOf(bytes);
  MutexLock lock(&mu_);
  InsertLocked(b, bytes, filter);
}

uint32_t BlockCache::PlaceLocked(uint64_t b) {
  uint32_t slot = SlotOf(b);
  if (slot != kNoSlot) {
    Reference(b);
    return slot;
  }
  slot = TakeSlot();
  if (slot != kNoSlot) Assign(b, slot);
  return slot;
}

void BlockCache::Assign(uint64_t b, uint32_t slot) {
  bucket_of_[slot] = b;
  if (b >= slot_of_.size()) {
    slot_of_.resize(std::max<uint64_t>(b + 1, slot_of_.size() * 2), kNoSlot);
  }
  slot_of_[b] = slot | kReferenced;
}

void BlockCache::InsertLocked(uint64_t b, std::span<const std::byte> bytes,
                              const TagFilter& filter) {
  const uint32_t slot = PlaceLocked(b);
  if (slot == kNoSlot) return;
  std::memcpy(BytesOf(slot), bytes.data(), block_size_);
  if (summarize_ != nullptr) filter_[slot] = filter;
}

bool BlockCache::InsertIfRoom(uint64_t b, std::span<const std::byte> bytes) {
  if (!enabled()) return false;
  const TagFilter filter = SummaryOf(bytes);
  MutexLock lock(&mu_);
  if (free_.empty() && SlotOf(b) == kNoSlot) return false;
  InsertLocked(b, bytes, filter);
  return true;
}

void BlockCache::Drop(uint64_t b) {
  if (!enabled()) return;
  MutexLock lock(&mu_);
  const uint32_t slot = SlotOf(b);
  if (slot == kNoSlot) return;
  FreeSlot(slot);
  slot_of_[b] = kNoSlot;
}

std::byte* BlockCache::Lend() {
  if (!enabled()) return nullptr;
  MutexLock lock(&mu_);
  // Past the lendable slots, only free ones: they displace no clean block.
  if (LentInUse() >= lendable_slots() && free_.empty()) return nullptr;
  return LendLocked();
}

std::byte* BlockCache::LendToFill() {
  if (!enabled()) return nullptr;
  MutexLock lock(&mu_);
  return LendLocked();
}

std::byte* BlockCache::LendLocked() {
  const uint32_t slot = TakeSlot();
  if (slot == kNoSlot) return nullptr;
  bucket_of_[slot] = kLent;
  ++lent_;
  return BytesOf(slot);
}

std::byte* BlockCache::LendCached(uint64_t b) {
  if (!enabled()) return nullptr;
  MutexLock lock(&mu_);
  const uint32_t slot = SlotOf(b);
  if (slot == kNoSlot) return nullptr;
  slot_of_[b] = kNoSlot;
  bucket_of_[slot] = kLent;
  ++lent_;
  return BytesOf(slot);
}

void BlockCache::TakeBack(std::span<const Returning> blocks) {
  if (!enabled()) return;
  // A run's filters, made before its lock: each reads the block's
  // directory, a miss or two per block that readers need not wait for.
  constexpr size_t kRun = 256;
  absl::FixedArray<TagFilter, 1> filters(std::min(kRun, blocks.size()));
  for (size_t first = 0; first < blocks.size(); first += kRun) {
    const std::span<const Returning> run =
        blocks.subspan(first, std::min(kRun, blocks.size() - first));
    // The blocks lie all over memory, and so do their entries here: each
    // is loaded some blocks ahead of its turn.
    constexpr size_t kAhead = 8;
    if (summarize_ != nullptr) {
      for (size_t i = 0; i < run.size(); ++i) {
        if (i + kAhead < run.size() && run[i + kAhead].keep &&
            run[i + kAhead].filter == nullptr) {
          for (size_t line = 0; line < 256; line += 64) {
            __builtin_prefetch(run[i + kAhead].bytes + line);
          }
        }
        if (!run[i].keep) continue;
        filters[i] = run[i].filter != nullptr
                         ? *run[i].filter
                         : summarize_({run[i].bytes, block_size_});
      }
    }
    MutexLock lock(&mu_);
    for (size_t i = 0; i < run.size(); ++i) {
      if (i + kAhead < run.size()) {
        const Returning& next = run[i + kAhead];
        if (next.b < slot_of_.size()) __builtin_prefetch(&slot_of_[next.b], 1);
        if (Owns(next.bytes)) {
          __builtin_prefetch(&bucket_of_[SlotAt(next.bytes)], 1);
          if (summarize_ != nullptr) {
            __builtin_prefetch(&filter_[SlotAt(next.bytes)], 1);
          }
        }
      }
      const Returning& r = run[i];
      uint32_t slot;
      if (Owns(r.bytes)) {
        slot = SlotAt(r.bytes);
        --lent_;
        if (slot >= usable_blocks()) {
          // Withheld meanwhile: not cached, and an older copy is stale.
          --lent_past_;
          if (const uint32_t old = SlotOf(r.b); r.keep && old != kNoSlot) {
            FreeSlot(old);
            slot_of_[r.b] = kNoSlot;
          }
          Withhold(slot, slot + 1);
          continue;
        }
        if (!r.keep) {
          FreeSlot(slot);
          continue;
        }
        if (const uint32_t old = SlotOf(r.b); old != kNoSlot) FreeSlot(old);
        Assign(r.b, slot);
      } else {
        if (!r.keep || (free_.empty() && SlotOf(r.b) == kNoSlot)) continue;
        slot = PlaceLocked(r.b);
        if (slot == kNoSlot) continue;
        std::memcpy(BytesOf(slot), r.bytes, block_size_);
      }
      if (summarize_ != nullptr) filter_[slot] = filters[i];
    }
  }
}

}  // namespace roundtable::internal
