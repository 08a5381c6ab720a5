#include "engine/internal/stash_log.h"

#include <cstring>
#include <optional>

#include "absl/strings/str_cat.h"
#include "engine/internal/block_format.h"
#include "engine/internal/coding.h"
#include "io/base/status_macros.h"

namespace roundtable::internal {
namespace {

// Header fields of a stash-log block, by byte offset (32 bytes, like a
// bucket block, checksum at 24).
constexpr size_t kMagicAt = 0, kCountAt = 4, kEpochAt = 8, kUsedAt = 16,
                 kChecksumAt = 24;
constexpr char kPut = 1, kRemove = 2;

size_t EntrySize(std::string_view key, std::string_view value) {
  return 1 + RecordBytes(key, value);
}

// Encodes an entry at p (EntrySize bytes).
void PutEntry(char* p, char op, std::string_view key, std::string_view value) {
  *p++ = op;
  p = PutVarint(p, key.size());
  p = PutVarint(p, value.size());
  // A remove has an empty value whose data() may be null: memcpy must not
  // see it.
  if (!key.empty()) std::memcpy(p, key.data(), key.size());
  if (!value.empty()) std::memcpy(p + key.size(), value.data(), value.size());
}

// Completes a block's header and checksum.
void SealLogBlock(char* p, uint32_t count, uint64_t epoch, uint32_t used,
                  size_t block_size) {
  PutFixed32(p + kMagicAt, kStashLogMagic);
  PutFixed32(p + kCountAt, count);
  PutFixed64(p + kEpochAt, epoch);
  PutFixed32(p + kUsedAt, used);
  PutFixed64(p + kChecksumAt, BlockChecksum(p, block_size));
}

}  // namespace

StashLog::StashLog(io::BlockDevice* device, uint64_t epoch, uint64_t blocks)
    : device_(device),
      epoch_(epoch),
      blocks_(blocks),
      tail_(device->block_size()) {}

absl::StatusOr<absl::flat_hash_map<std::string, std::string>> StashLog::Load(
    io::BlockDevice& device, uint64_t epoch, uint64_t blocks,
    std::string_view what, uint64_t* damaged) {
  absl::flat_hash_map<std::string, std::string> live;
  const uint32_t bs = device.block_size();
  if (blocks > device.num_blocks()) {
    if (damaged == nullptr) {
      return absl::DataLossError(
          absl::StrCat(std::string(what), ": ", device.num_blocks(),
                       " blocks on disk, ", blocks, " expected"));
    }
    *damaged += blocks - device.num_blocks();
    blocks = device.num_blocks();
  }
  io::AlignedBuffer buffer(bs);
  for (uint64_t b = 0; b < blocks; ++b) {
    absl::Status status = device.Read(b, buffer.span());
    if (status.ok()) status = ApplyBlock(buffer, b, epoch, what, &live);
    if (status.ok()) continue;
    if (damaged == nullptr) return status;
    ++*damaged;
  }
  return live;
}

absl::StatusOr<std::pair<uint64_t, uint64_t>> StashLog::Generation(
    io::BlockDevice& device) {
  io::AlignedBuffer buffer(device.block_size());
  std::optional<uint64_t> epoch;
  uint64_t blocks = 0;
  for (uint64_t b = 0; b < device.num_blocks(); ++b) {
    if (!device.Read(b, buffer.span()).ok()) continue;
    const char* p = reinterpret_cast<const char*>(buffer.data());
    if (GetFixed32(p + kMagicAt) != kStashLogMagic ||
        GetFixed64(p + kChecksumAt) != BlockChecksum(p, buffer.size())) {
      continue;
    }
    if (!epoch) epoch = GetFixed64(p + kEpochAt);
    if (GetFixed64(p + kEpochAt) == *epoch) blocks = b + 1;
  }
  return std::make_pair(epoch.value_or(0), blocks);
}

absl::Status StashLog::ApplyBlock(
    const io::AlignedBuffer& buffer, uint64_t b, uint64_t epoch,
    std::string_view what,
    absl::flat_hash_map<std::string, std::string>* live) {
  const char* p = reinterpret_cast<const char*>(buffer.data());
  const size_t bs = buffer.size();
  auto corrupt = [&](std::string_view why) {
    return absl::DataLossError(absl::StrCat(std::string(what), " block ", b,
                                            " is corrupt: ", std::string(why)));
  };
  if (GetFixed32(p + kMagicAt) != kStashLogMagic) return corrupt("bad magic");
  if (GetFixed64(p + kChecksumAt) != BlockChecksum(p, bs)) {
    return corrupt("checksum mismatch");
  }
  if (GetFixed64(p + kEpochAt) != epoch) return corrupt("older generation");
  const uint32_t count = GetFixed32(p + kCountAt);
  const uint32_t used = GetFixed32(p + kUsedAt);
  if (used > bs - kBlockHeaderBytes) return corrupt("entry bytes");
  const char* q = p + kBlockHeaderBytes;
  const char* end = q + used;
  for (uint32_t i = 0; i < count; ++i) {
    if (q >= end) return corrupt("entry framing");
    const char op = *q++;
    const auto klen = GetVarint(&q, end);
    const auto vlen = GetVarint(&q, end);
    const uint64_t left = static_cast<uint64_t>(end - q);
    if (!klen || !vlen || *klen > left || *vlen > left - *klen) {
      return corrupt("entry framing");
    }
    std::string key(q, *klen);
    q += *klen;
    if (op == kPut) {
      (*live)[std::move(key)] = std::string(q, *vlen);
    } else if (op == kRemove) {
      live->erase(key);
    } else {
      return corrupt("unknown entry kind");
    }
    q += *vlen;
  }
  return absl::OkStatus();
}

absl::Status StashLog::ResumeTail() {
  ClearTail();
  tail_dirty_ = false;
  if (blocks_ == 0) return absl::OkStatus();
  RT_RETURN_IF_ERROR(device_->Read(blocks_ - 1, tail_.span()));
  char* p = reinterpret_cast<char*>(tail_.data());
  tail_used_ = GetFixed32(p + kUsedAt);
  tail_count_ = GetFixed32(p + kCountAt);
  if (tail_used_ > tail_.size() - kBlockHeaderBytes) {
    const uint32_t used = tail_used_;
    std::memset(tail_.data(), 0, tail_.size());
    tail_used_ = tail_count_ = 0;
    return absl::DataLossError(absl::StrCat("copy's tail block ", blocks_ - 1,
                                            " holds ", used,
                                            " bytes of entries"));
  }
  std::memset(p + kBlockHeaderBytes + tail_used_, 0,
              tail_.size() - kBlockHeaderBytes - tail_used_);
  return absl::OkStatus();
}

void StashLog::ClearTail() {
  std::memset(tail_.data() + kBlockHeaderBytes, 0, tail_used_);
  tail_used_ = 0;
  tail_count_ = 0;
}

absl::Status StashLog::AppendPut(std::string_view key, std::string_view value) {
  return Append(kPut, key, value);
}

absl::Status StashLog::AppendRemove(std::string_view key) {
  return Append(kRemove, key, {});
}

absl::Status StashLog::Append(char op, std::string_view key,
                              std::string_view value) {
  // The tail is written when it fills and on Flush, not on every entry: a
  // burst of stash changes (a distribute moves dozens) costs one write per
  // block of entries.
  RT_RETURN_IF_ERROR(AddToTail(op, key, value, /*write_full_tail=*/true));
  tail_dirty_ = true;
  return absl::OkStatus();
}

absl::Status StashLog::Flush() {
  if (!tail_dirty_) return absl::OkStatus();
  return WriteTail();
}

absl::Status StashLog::AddToTail(char op, std::string_view key,
                                 std::string_view value, bool write_full_tail) {
  const size_t room = device_->block_size() - kBlockHeaderBytes;
  if (blocks_ == 0 || tail_used_ + EntrySize(key, value) > room) {
    if (write_full_tail && blocks_ > 0 && tail_dirty_) {
      RT_RETURN_IF_ERROR(WriteTail());
    }
    // Start a new tail block.
    ClearTail();
    ++blocks_;
    if (device_->num_blocks() < blocks_) {
      RT_RETURN_IF_ERROR(device_->Resize(blocks_));
    }
  }
  char* p =
      reinterpret_cast<char*>(tail_.data()) + kBlockHeaderBytes + tail_used_;
  tail_used_ += static_cast<uint32_t>(EntrySize(key, value));
  PutEntry(p, op, key, value);
  ++tail_count_;
  return absl::OkStatus();
}

absl::Status StashLog::WriteTail() {
  SealLogBlock(reinterpret_cast<char*>(tail_.data()), tail_count_, epoch_,
               tail_used_, tail_.size());
  ++block_writes_;
  RT_RETURN_IF_ERROR(device_->Write(blocks_ - 1, tail_.span()));
  tail_dirty_ = false;
  return absl::OkStatus();
}

namespace {

// The packing of `live` into blocks of `block_size` bytes, in order, each
// entry in the block it fits after the ones before it, or else the next:
// calls place(b, offset, record) with the entry's block and its offset in
// the block's entry area, and returns the number of blocks.
template <typename Place>
uint64_t Pack(const StashLog::Live& live, uint32_t block_size, Place place) {
  const size_t room = block_size - kBlockHeaderBytes;
  uint64_t blocks = 0;
  size_t used = room;
  for (const StashLog::LiveRecord& r : live) {
    const size_t size = EntrySize(r.key(), r.value());
    if (used + size > room) {
      ++blocks;
      used = 0;
    }
    place(blocks - 1, used, r);
    used += size;
  }
  return blocks;
}

// Encodes `live` as the blocks of a log of generation `epoch`, in order:
// block b's entries go into out(b) (block_size bytes, whatever they held
// before), and done(b) is called once its header and checksum are set.
template <typename Out, typename Done>
void EncodeBlocks(const StashLog::Live& live, uint64_t epoch,
                  uint32_t block_size, Out out, Done done) {
  char* block = nullptr;
  uint64_t current = 0;
  uint32_t count = 0, used = 0;
  auto finish = [&] {
    SealLogBlock(block, count, epoch, used, block_size);
    done(current);
  };
  Pack(live, block_size,
       [&](uint64_t b, size_t offset, const StashLog::LiveRecord& r) {
         if (block == nullptr || b != current) {
           if (block != nullptr) finish();
           current = b;
           block = reinterpret_cast<char*>(out(b));
           std::memset(block, 0, block_size);
           count = 0;
         }
         PutEntry(block + kBlockHeaderBytes + offset, kPut, r.key(),
                  r.value());
         ++count;
         used = static_cast<uint32_t>(offset + EntrySize(r.key(), r.value()));
       });
  if (block != nullptr) finish();
}

}  // namespace

absl::Status StashLog::Rewrite(const Live& live) {
  RT_RETURN_IF_ERROR(Restart(live));
  // Each block is encoded in the tail and written once, when it is full
  // or at the end; appends then go on in the last.
  absl::Status s;
  EncodeBlocks(
      live, epoch_, device_->block_size(),
      [&](uint64_t) { return tail_.data(); },
      [&](uint64_t b) {
        if (!s.ok()) return;
        s = device_->Write(b, tail_.span());
        ++block_writes_;
      });
  RT_RETURN_IF_ERROR(s);
  const char* p = reinterpret_cast<const char*>(tail_.data());
  tail_used_ = blocks_ > 0 ? GetFixed32(p + kUsedAt) : 0;
  tail_count_ = blocks_ > 0 ? GetFixed32(p + kCountAt) : 0;
  return absl::OkStatus();
}

absl::Status StashLog::Restart(const Live& live) {
  ++epoch_;
  ClearTail();
  tail_dirty_ = false;
  blocks_ = BlocksFor(live, device_->block_size());
  // Until Rewrite encodes the last block there, the tail counts as full.
  tail_used_ = blocks_ > 0 ? device_->block_size() - kBlockHeaderBytes : 0;
  std::memset(tail_.data(), 0, tail_.size());
  if (device_->num_blocks() != blocks_) {
    RT_RETURN_IF_ERROR(device_->Resize(blocks_));
  }
  return absl::OkStatus();
}

uint64_t StashLog::BlocksFor(const Live& live, uint32_t block_size) {
  return Pack(live, block_size,
              [](uint64_t, size_t, const LiveRecord&) {});
}

void StashLog::Encode(const Live& live, uint64_t epoch,
                      std::span<std::byte* const> blocks,
                      uint32_t block_size) {
  EncodeBlocks(
      live, epoch, block_size, [&](uint64_t b) { return blocks[b]; },
      [](uint64_t) {});
}

bool StashLog::WantsRewrite(uint64_t live_bytes) const {
  const uint64_t room = device_->block_size() - kBlockHeaderBytes;
  return blocks_ > 2 * (live_bytes / room + 1) + 4;
}

}  // namespace roundtable::internal
