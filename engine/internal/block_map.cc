#include "engine/internal/block_map.h"

#include <algorithm>
#include <bit>

#include "absl/strings/str_cat.h"
#include "engine/internal/block_format.h"
#include "engine/internal/coding.h"
#include "io/base/status_macros.h"

namespace roundtable::internal {
namespace {

// A map block (InitMapBlock) whose entries are the places of its buckets,
// 8 bytes each; zeros past the table's last bucket.
constexpr size_t kEntriesAt = kBlockHeaderBytes;

}  // namespace

void FreePlaces::clear() {
  words_.clear();
  count_ = 0;
  lowest_word_ = 0;
}

void FreePlaces::Insert(uint64_t place) {
  const size_t w = place / 64;
  if (w >= words_.size()) words_.resize(std::max(w + 1, 2 * words_.size()));
  words_[w] |= uint64_t{1} << (place % 64);
  ++count_;
  lowest_word_ = std::min(lowest_word_, w);
}

void FreePlaces::Erase(uint64_t place) {
  words_[place / 64] &= ~(uint64_t{1} << (place % 64));
  --count_;
}

uint64_t FreePlaces::TakeLowest() {
  while (words_[lowest_word_] == 0) ++lowest_word_;
  const uint64_t place =
      lowest_word_ * 64 + std::countr_zero(words_[lowest_word_]);
  Erase(place);
  return place;
}

BlockMap::BlockMap(io::BlockDevice* blocks, io::BlockDevice* file)
    : BlockDevice("placed(" + blocks->path() + ")", Storage::kLayer),
      blocks_(blocks),
      caps_(blocks->capabilities()),
      device_(file) {}

absl::Status BlockMap::Load(uint64_t buckets, bool stored) {
  const uint32_t bs = block_size();
  const uint64_t per = PerBlock(bs);
  const uint64_t map_blocks = BlocksFor(buckets, bs);
  const uint64_t file_blocks = blocks_->num_blocks();
  // Checked before anything is sized by the count: each bucket has a block
  // of its own in the block file, and an entry in the map.
  if (stored && (device_.num_blocks() < map_blocks ||
                 file_blocks < kHeaderBlocks ||
                 buckets > file_blocks - kHeaderBlocks)) {
    return absl::DataLossError(absl::StrCat(
        "block map: ", device_.num_blocks(), " map blocks and a block file of ",
        file_blocks, " blocks for ", buckets, " buckets (", map_blocks,
        " and ", kHeaderBlocks + buckets, " needed)"));
  }
  place_.assign(buckets, kNoPlace);
  free_.clear();
  waiting_.clear();
  ahead_.clear();
  ahead_list_.clear();
  dirty_.assign(map_blocks, !stored);
  if (!stored) {
    for (uint64_t b = 0; b < buckets; ++b) place_[b] = kHeaderBlocks + b;
    end_ = kHeaderBlocks + buckets;
    return device_.Resize(map_blocks);
  }
  std::vector<bool> used(file_blocks, false);
  end_ = kHeaderBlocks;
  io::AlignedBuffer buffer(bs);
  for (uint64_t k = 0; k < map_blocks; ++k) {
    RT_RETURN_IF_ERROR(device_.Read(k, buffer.span()));
    const char* p = reinterpret_cast<const char*>(buffer.data());
    if (!IsMapBlock(buffer.span(), kBlockMapMagic, k)) {
      return absl::DataLossError(
          absl::StrCat("block map: block ", k, " is damaged"));
    }
    for (uint64_t i = 0; i < per; ++i) {
      const uint64_t b = k * per + i;
      const uint64_t place = GetFixed64(p + kEntriesAt + 8 * i);
      if (b >= buckets) {
        if (place != 0) {
          return absl::DataLossError(
              absl::StrCat("block map: block ", k,
                           " places a bucket past the table's ", buckets));
        }
        continue;
      }
      if (place < kHeaderBlocks || place >= file_blocks || used[place]) {
        return absl::DataLossError(absl::StrCat(
            "block map: bucket ", b, " at block ", place,
            place < kHeaderBlocks || place >= file_blocks
                ? absl::StrCat(", outside the block file's ", file_blocks)
                : ", another bucket's too"));
      }
      used[place] = true;
      place_[b] = place;
      end_ = std::max(end_, place + 1);
    }
  }
  for (uint64_t place = kHeaderBlocks; place < end_; ++place) {
    if (!used[place]) free_.Insert(place);
  }
  return absl::OkStatus();
}

absl::Status BlockMap::Stage(const DeferredDevice::HeldMap& held,
                             uint64_t buckets, uint64_t sequence,
                             uint64_t durable) {
  // What no durable checkpoint refers to any more is free.
  auto reusable = [durable](const std::pair<uint64_t, uint64_t>& w) {
    return w.first <= durable;
  };
  for (const auto& w : waiting_) {
    if (reusable(w)) Free(w.second);
  }
  std::erase_if(waiting_, reusable);
  // Buckets given up: their places wait for this checkpoint.
  for (uint64_t b = buckets; b < place_.size(); ++b) {
    if (place_[b] != kNoPlace) waiting_.emplace_back(sequence, place_[b]);
  }
  const uint32_t bs = block_size();
  const uint64_t before = place_.size();
  place_.resize(buckets, kNoPlace);
  dirty_.resize(BlocksFor(buckets, bs), true);
  // The last map block's entries past the table are zeros.
  if (buckets != before && !dirty_.empty()) dirty_.back() = true;
  for (const auto& entry : held) {
    const uint64_t block = entry.first;
    if (block < kHeaderBlocks || block - kHeaderBlocks >= buckets) continue;
    const uint64_t b = block - kHeaderBlocks;
    LeavePlace(b, sequence);
    SetPlace(b, Allocate());
  }
  for (const uint64_t b : ahead_list_) ahead_[b] = false;
  ahead_list_.clear();
  // A bucket made since the last checkpoint is held until it.
  for (uint64_t b = before; b < buckets; ++b) {
    if (place_[b] == kNoPlace) {
      return absl::InternalError(
          absl::StrCat("bucket ", b, " is new and its block is not held"));
    }
  }
  // The map's changed blocks, for the checkpoint's journal.
  const uint64_t per = PerBlock(bs);
  RT_RETURN_IF_ERROR(device_.Resize(dirty_.size()));
  for (uint64_t k = 0; k < dirty_.size(); ++k) {
    if (!dirty_[k]) continue;
    dirty_[k] = false;
    const std::span<std::byte> out = device_.Hold(k);
    InitMapBlock(out, kBlockMapMagic, k);
    char* p = reinterpret_cast<char*>(out.data());
    const uint64_t n = std::min(per, buckets - k * per);
    for (uint64_t i = 0; i < n; ++i) {
      PutFixed64(p + kEntriesAt + 8 * i, place_[k * per + i]);
    }
    SealMapBlock(out);
  }
  return absl::OkStatus();
}

absl::Status BlockMap::PlaceAhead(std::span<io::WriteRequest> blocks,
                                  uint64_t sequence) {
  for (io::WriteRequest& r : blocks) {
    const uint64_t b = r.block;
    // A bucket made since the last checkpoint gets its first place here.
    if (b >= place_.size()) {
      place_.resize(b + 1, kNoPlace);
      dirty_.resize(BlocksFor(place_.size(), block_size()), true);
    }
    LeavePlace(b, sequence);
    if (b >= ahead_.size()) ahead_.resize(std::max(b + 1, 2 * ahead_.size()));
    if (!ahead_[b]) {
      ahead_[b] = true;
      ahead_list_.push_back(b);
    }
    SetPlace(b, Allocate());
    r.block = place_[b];
  }
  // The file grows ahead of the places, by an eighth (kGrowthBlocks at
  // least): a resize waits for the file system's journal, which a
  // checkpoint's sync of this file may hold for tens of milliseconds (the
  // next checkpoint cuts the file back to the places in use).
  if (blocks_->num_blocks() < end_) {
    return blocks_->Resize(end_ + std::max(end_ / 8, kGrowthBlocks));
  }
  return absl::OkStatus();
}

void BlockMap::LeavePlace(uint64_t bucket, uint64_t sequence) {
  const uint64_t place = place_[bucket];
  if (bucket < ahead_.size() && ahead_[bucket]) {
    Free(place);  // written ahead since the last Stage: in no checkpoint
  } else if (place != kNoPlace) {
    waiting_.emplace_back(sequence, place);
  }
}

uint64_t BlockMap::Allocate() {
  return free_.empty() ? end_++ : free_.TakeLowest();
}

void BlockMap::SetPlace(uint64_t bucket, uint64_t place) {
  place_[bucket] = place;
  dirty_[bucket / PerBlock(block_size())] = true;
}

void BlockMap::Free(uint64_t place) {
  free_.Insert(place);
  while (end_ > kHeaderBlocks && free_.contains(end_ - 1)) {
    free_.Erase(--end_);
  }
}

absl::StatusOr<uint64_t> BlockMap::Placed(uint64_t block) const {
  const uint64_t place = PlaceOf(block);
  if (place == kNoPlace) {
    return absl::InternalError(
        absl::StrCat("bucket ", block - kHeaderBlocks, " has no block yet"));
  }
  return place;
}

absl::Status BlockMap::DoRead(uint64_t block, std::span<std::byte> buffer) {
  // One block (a lookup's read): straight to its place.
  if (buffer.size() == block_size()) {
    RT_ASSIGN_OR_RETURN(const uint64_t place, Placed(block));
    return blocks_->Read(place, buffer);
  }
  const io::ReadRequest request{block, buffer};
  return DoReadBatch({&request, 1});
}

absl::Status BlockMap::DoReadBatch(std::span<const io::ReadRequest> requests) {
  const uint32_t bs = block_size();
  std::vector<io::ReadRequest> placed;
  for (const io::ReadRequest& r : requests) {
    for (size_t i = 0; i < r.buffer.size() / bs; ++i) {
      RT_ASSIGN_OR_RETURN(const uint64_t place, Placed(r.block + i));
      placed.push_back({place, r.buffer.subspan(i * bs, bs)});
    }
  }
  return blocks_->ReadBatch(placed);
}

absl::Status BlockMap::DoWrite(uint64_t block,
                               std::span<const std::byte> buffer) {
  const uint64_t n = buffer.size() / block_size();
  for (uint64_t i = 0; i < n; ++i) {
    if (block + i < kHeaderBlocks ||
        place_[block + i - kHeaderBlocks] != kNoPlace) {
      return absl::FailedPreconditionError(
          absl::StrCat("block ", block + i,
                       " has its place: it changes only through a checkpoint"));
    }
  }
  // One run at the end of the file, past anything free.
  const uint64_t first = end_;
  if (blocks_->num_blocks() < first + n) {
    RT_RETURN_IF_ERROR(blocks_->Resize(first + n));
  }
  RT_RETURN_IF_ERROR(blocks_->Write(first, buffer));
  end_ = first + n;
  for (uint64_t i = 0; i < n; ++i) {
    SetPlace(block + i - kHeaderBlocks, first + i);
  }
  return absl::OkStatus();
}

absl::Status BlockMap::DoResize(uint64_t num_blocks) {
  if (num_blocks < this->num_blocks()) {
    return absl::FailedPreconditionError(
        "the block map gives buckets up only at a checkpoint");
  }
  place_.resize(num_blocks - kHeaderBlocks, kNoPlace);
  dirty_.resize(BlocksFor(place_.size(), block_size()), true);
  return absl::OkStatus();
}

}  // namespace roundtable::internal
