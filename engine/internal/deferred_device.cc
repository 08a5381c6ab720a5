#include "engine/internal/deferred_device.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "io/status_macros.h"

namespace roundtable::internal {

DeferredDevice::DeferredDevice(io::BlockDevice* inner)
    : BlockDevice("deferred(" + inner->path() + ")"),
      inner_(inner),
      size_(inner->num_blocks()),
      zero_from_(inner->num_blocks()) {}

void DeferredDevice::Clear() {
  for (auto& [block, bytes] : held_) {
    index_[block] = nullptr;
    spare_.push_back(std::move(bytes));
  }
  held_.clear();
  zero_from_ = size_;
}

absl::Status DeferredDevice::DoRead(uint64_t block,
                                    std::span<std::byte> buffer) {
  const uint32_t bs = block_size();
  for (size_t i = 0; i < buffer.size() / bs; ++i) {
    const std::span<std::byte> out = buffer.subspan(i * bs, bs);
    if (auto it = held_.find(block + i); it != held_.end()) {
      std::memcpy(out.data(), it->second.data(), bs);
    } else if (block + i >= zero_from_ || block + i >= inner_->num_blocks()) {
      std::memset(out.data(), 0, bs);
    } else {
      RT_RETURN_IF_ERROR(inner_->Read(block + i, out));
    }
  }
  return absl::OkStatus();
}

bool DeferredDevice::AllInner(uint64_t block, uint64_t n) const {
  if (block + n > zero_from_ || block + n > inner_->num_blocks()) return false;
  for (uint64_t b = block; b < block + n; ++b) {
    if (held_.contains(b)) return false;
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

absl::Status DeferredDevice::DoWrite(uint64_t block,
                                     std::span<const std::byte> buffer) {
  const uint32_t bs = block_size();
  for (size_t i = 0; i < buffer.size() / bs; ++i) {
    auto [it, added] = held_.try_emplace(block + i);
    if (added && !spare_.empty()) {
      it->second = std::move(spare_.back());
      spare_.pop_back();
    } else if (added) {
      it->second = io::AlignedBuffer(bs, 4096, /*zeroed=*/false);
    }
    if (added) {
      if (block + i >= index_.size()) index_.resize(block + i + 1, nullptr);
      index_[block + i] = it->second.data();
    }
    std::memcpy(it->second.data(), buffer.data() + i * bs, bs);
  }
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
      spare_.push_back(std::move(it->second));
      held_.erase(it++);
    }
  }
  size_ = num_blocks;
  zero_from_ = std::min(zero_from_, num_blocks);
  return absl::OkStatus();
}

}  // namespace roundtable::internal
