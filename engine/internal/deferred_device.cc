#include "engine/internal/deferred_device.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "io/base/status_macros.h"

namespace roundtable::internal {

DeferredDevice::DeferredDevice(io::BlockDevice* inner)
    : BlockDevice("deferred(" + inner->path() + ")", Storage::kLayer),
      inner_(inner),
      caps_(inner->capabilities()),
      size_(inner->num_blocks()),
      zero_from_(inner->num_blocks()) {
  caps_.read_only = false;
}

std::byte* DeferredDevice::Allocate() {
  if (lender_ != nullptr) {
    if (std::byte* slot = lender_->Lend()) return slot;
  }
  if (free_.empty()) {
    const size_t bs = std::min<size_t>(block_size(), kChunkBytes);
    chunks_.emplace_back(std::max(kChunkBytes, bs), kChunkBytes,
                         /*zeroed=*/false);
    AdviseHugePages(chunks_.back().data(), chunks_.back().size());
    for (size_t at = chunks_.back().size(); at >= bs; at -= bs) {
      free_.push_back(chunks_.back().data() + at - bs);
    }
  }
  std::byte* slot = free_.back();
  free_.pop_back();
  return slot;
}

void DeferredDevice::Freeze() {
  {
    MutexLock lock(&frozen_mu_);
    frozen_sealed_ = !seal_;
  }
  for (auto& [block, bytes] : held_) index_[block] = nullptr;
  // The maps trade places, each keeping its table: the next interval
  // holds about as many blocks as this one, and a table of tens of
  // thousands of entries allocated or freed on the writer's path took it
  // milliseconds (the allocator first merges every small block freed
  // since its last large request).
  std::swap(frozen_, held_);
  if (held_.bucket_count() / 8 * 7 < frozen_.size()) {
    held_.reserve(frozen_.size());
  }
  zero_from_ = size_;
  written_.clear();
}

void DeferredDevice::SealFrozen() {
  if (!seal_) return;
  // In batches, so that a read of a frozen block never waits long.
  constexpr size_t kBatch = 64;
  auto it = frozen_.begin();
  while (true) {
    MutexLock lock(&frozen_mu_);
    for (size_t n = 0; n < kBatch && it != frozen_.end(); ++n, ++it) {
      seal_(it->first, it->second.span());
    }
    if (it == frozen_.end()) {
      frozen_sealed_ = true;
      return;
    }
  }
}

void DeferredDevice::SealLeaving(std::span<const std::span<std::byte>> slots) {
  if (!leaving_seal_) return;
  constexpr size_t kBatch = 64;
  for (size_t i = 0; i < slots.size();) {
    MutexLock lock(&frozen_mu_);
    for (const size_t end = std::min(i + kBatch, slots.size()); i < end; ++i) {
      leaving_seal_(slots[i]);
    }
  }
  MutexLock lock(&frozen_mu_);
  leaving_sealed_ = true;
}

bool DeferredDevice::ReleaseFrozen(size_t n) {
  if (!releasing_) releasing_ = frozen_.begin();
  HeldMap::iterator& it = *releasing_;
  std::vector<Lender::Leaving>& leaving = leaving_;
  leaving.clear();
  // Erased one by one, which keeps the map's table (clear() would free
  // it) for the next Freeze.
  for (; leaving.size() < n && it != frozen_.end(); frozen_.erase(it++)) {
    leaving.push_back({it->first, it->second.data});
  }
  // In place now, and what reads see unless it was written again or cut
  // off since. Blocks spread over the table: each lookup of the index is
  // a miss, loaded some blocks ahead.
  constexpr size_t kAhead = 16;
  for (size_t i = 0; i < leaving.size(); ++i) {
    if (i + kAhead < leaving.size()) PrefetchHeld(leaving[i + kAhead].block);
    const uint64_t block = leaving[i].block;
    leaving[i].current = block < zero_from_ && block < size_ &&
                         Held(block) == nullptr &&
                         Detached(block) == nullptr && !Superseded(block);
  }
  Free(leaving);
  if (it != frozen_.end()) return false;
  releasing_.reset();
  superseded_.clear();
  return true;
}

void DeferredDevice::Free(std::span<const Lender::Leaving> leaving) {
  if (lender_ != nullptr) lender_->TakeBack(leaving);
  for (const Lender::Leaving& l : leaving) {
    if (lender_ == nullptr || !lender_->Owns(l.slot)) free_.push_back(l.slot);
  }
}

absl::Status DeferredDevice::DoRead(uint64_t block,
                                    std::span<std::byte> buffer) {
  const uint32_t bs = block_size();
  for (size_t i = 0; i < buffer.size() / bs; ++i) {
    const std::span<std::byte> out = buffer.subspan(i * bs, bs);
    if (const std::byte* held = Held(block + i)) {
      std::memcpy(out.data(), held, bs);
    } else if (const std::byte* detached = Detached(block + i)) {
      bool sealed;
      {
        MutexLock lock(&frozen_mu_);
        std::memcpy(out.data(), detached, bs);
        sealed = leaving_sealed_;
      }
      if (!sealed) leaving_seal_(out);
    } else if (CutOff(block + i) || block + i >= inner_->num_blocks()) {
      std::memset(out.data(), 0, bs);
    } else if (auto it = FrozenImage(block + i); it != frozen_.end()) {
      bool sealed;
      {
        MutexLock lock(&frozen_mu_);
        std::memcpy(out.data(), it->second.data, bs);
        sealed = frozen_sealed_;
      }
      if (!sealed) seal_(block + i, out);
    } else {
      RT_RETURN_IF_ERROR(inner_->Read(block + i, out));
    }
  }
  return absl::OkStatus();
}

bool DeferredDevice::AllInner(uint64_t block, uint64_t n) const {
  if (block + n > inner_->num_blocks()) return false;
  for (uint64_t b = block; b < block + n; ++b) {
    if (Held(b) != nullptr || FrozenImage(b) != frozen_.end() ||
        Detached(b) != nullptr || CutOff(b)) {
      return false;
    }
  }
  return true;
}

absl::Status DeferredDevice::DoReadBatch(
    std::span<const io::ReadRequest> requests) {
  std::vector<io::ReadRequest> inner;
  for (const io::ReadRequest& r : requests) {
    if (AllInner(r.block, r.buffer.size() / block_size())) {
      inner.push_back(r);
    } else {
      RT_RETURN_IF_ERROR(DoRead(r.block, r.buffer));
    }
  }
  if (inner.empty()) return absl::OkStatus();
  return inner_->ReadBatch(inner);
}

std::span<std::byte> DeferredDevice::Hold(uint64_t block) {
  std::byte* slot = Held(block);
  if (slot == nullptr) {
    slot = Allocate();
    Adopt(block, slot);
  }
  return {slot, block_size()};
}

void DeferredDevice::Adopt(uint64_t block, std::byte* slot) {
  held_.emplace(block, HeldBlock{slot, block_size()});
  if (block >= index_.size()) index_.resize(block + 1, nullptr);
  index_[block] = slot;
}

void DeferredDevice::Release(uint64_t block) {
  std::byte* slot = Held(block);
  if (slot == nullptr) return;
  index_[block] = nullptr;
  held_.erase(block);
  Free(block, slot, /*current=*/true);
}

void DeferredDevice::Detach(uint64_t block) {
  std::byte* slot = Held(block);
  index_[block] = nullptr;
  held_.erase(block);
  if (leaving_seal_ && detached_.empty()) {
    MutexLock lock(&frozen_mu_);
    leaving_sealed_ = false;
  }
  detached_.emplace(block, HeldBlock{slot, block_size()});
}

void DeferredDevice::FinishLeaving(bool written) {
  std::vector<Lender::Leaving> gone;
  for (const auto& [block, bytes] : detached_) {
    const bool anew = Held(block) != nullptr;
    if (!written && !anew) {
      Adopt(block, bytes.data);
      continue;
    }
    if (written && block >= zero_from_) {
      if (block >= written_.size()) written_.resize(block + 1, false);
      written_[block] = true;
    }
    if (written && !anew && frozen_.contains(block)) superseded_.insert(block);
    gone.push_back({block, bytes.data, /*current=*/written && !anew});
  }
  for (std::byte* slot : detached_cut_) gone.push_back({0, slot, false});
  detached_.clear();
  detached_cut_.clear();
  if (!gone.empty()) Free(gone);
}

absl::Status DeferredDevice::DoWrite(uint64_t block,
                                     std::span<const std::byte> buffer) {
  const uint32_t bs = block_size();
  for (size_t i = 0; i < buffer.size() / bs; ++i) {
    std::memcpy(Hold(block + i).data(), buffer.data() + i * bs, bs);
  }
  return absl::OkStatus();
}

absl::Status DeferredDevice::ExtendFromInner(uint64_t num_blocks) {
  if (zero_from_ != size_ || inner_->num_blocks() < num_blocks ||
      num_blocks < size_) {
    return absl::FailedPreconditionError(
        "extending a deferred device over blocks it does not read from its "
        "file");
  }
  size_ = zero_from_ = num_blocks;
  return absl::OkStatus();
}

absl::Status DeferredDevice::DoResize(uint64_t num_blocks) {
  if (num_blocks < size_) {
    for (auto it = held_.begin(); it != held_.end();) {
      if (it->first < num_blocks) {
        ++it;
        continue;
      }
      index_[it->first] = nullptr;
      Free(it->first, it->second.data, /*current=*/false);
      held_.erase(it++);
    }
  }
  if (num_blocks < size_) {
    for (auto it = detached_.begin(); it != detached_.end();) {
      if (it->first < num_blocks) {
        ++it;
        continue;
      }
      detached_cut_.push_back(it->second.data);
      detached_.erase(it++);
    }
  }
  size_ = num_blocks;
  zero_from_ = std::min(zero_from_, num_blocks);
  if (written_.size() > num_blocks) written_.resize(num_blocks);
  return absl::OkStatus();
}

}  // namespace roundtable::internal
