#include "engine/internal/bucket_store.h"

#include <algorithm>
#include <cstring>
#include <system_error>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "engine/internal/kill_points.h"
#include "engine/internal/table_files.h"
#include "io/base/status_macros.h"
#include "io/base/wait.h"

namespace roundtable::internal {

BucketStore::BucketStore(io::BlockDevice* file, io::BlockDevice* map_file,
                         uint32_t block_size, uint32_t block_records,
                         uint64_t cache_bytes)
    : block_size_(block_size),
      block_records_(block_records),
      places_(std::make_unique<BlockMap>(file, map_file)),
      blocks_(std::make_unique<DeferredDevice>(places_.get())),
      cache_(cache_bytes, block_size, &TagFilterOf),
      work_(block_size) {
  // Bucket blocks are sealed (stamped with the checkpoint's sequence,
  // their checksums set) only when a checkpoint's thread stores them, and
  // a read of one frozen meanwhile seals its copy. The header blocks
  // (superblock images) are whole as they are.
  blocks_->set_seal([this](uint64_t block, std::span<std::byte> bytes) {
    if (block < kHeaderBlocks) return;
    EncodedBlock sealed(bytes);
    sealed.set_checkpoint(sealing_);
    sealed.Seal();
  });
  // A block written ahead of the next checkpoint is stamped with that
  // checkpoint's sequence and sealed by the thread that writes it.
  blocks_->set_leaving_seal([this](std::span<std::byte> bytes) {
    EncodedBlock sealed(bytes);
    sealed.set_checkpoint(ahead_.sequence);
    sealed.Seal();
  });
  blocks_->set_lender(&lender_);
}

void BucketStore::CacheLender::TakeBack(std::span<const Leaving> leaving) {
  returning_.clear();
  for (const Leaving& l : leaving) {
    // Superblock images held from a replayed journal are not buckets'. A
    // block in one of the device's own slots (the cache had lent all it
    // lends) is cached as a copy only where a slot is free: a full cache
    // evicts nothing for it, as a checkpoint of a table past its cache
    // gives back tens of thousands of these at once, on the writer's path,
    // and copying them in would only evict each other's copies and every
    // clean block.
    const bool keep = l.current && l.block >= kHeaderBlocks;
    if (!keep && !cache_->Owns(l.slot)) continue;
    const uint64_t b = keep ? l.block - kHeaderBlocks : 0;
    // A held or frozen block's filter is kept as reads use it (or passes
    // every tag): the cache need not read the block to make it again,
    // tens of thousands of misses on the writer's path at a checkpoint.
    const TagFilter* filter = nullptr;
    if (keep && b < held_->size() && !(*held_)[b].filter.PassesAll()) {
      filter = &(*held_)[b].filter;
    }
    returning_.push_back({b, l.slot, keep, filter});
  }
  cache_->TakeBack(returning_);
}

bool BucketStore::FindIn(std::span<const std::byte> bytes, std::string_view key,
                         uint16_t tag, std::string* value) {
  const auto f = EncodedBlock(bytes).Find(key, tag);
  if (f) value->assign(f->value);
  return f.has_value();
}

absl::StatusOr<bool> BucketStore::FindOnDevice(uint64_t b, std::string_view key,
                                               uint16_t tag,
                                               std::string* value) {
  // Read where it will be cached: no copy (nor buffer) of its own.
  bool found = false;
  RT_ASSIGN_OR_RETURN(
      const size_t read,
      FillCache({&b, 1}, [&](size_t, std::span<const std::byte> bytes) {
        found = FindIn(bytes, key, tag, value);
      }));
  if (read == 1) return found;
  // Not zeroed: the read fills it, or it goes unread.
  io::AlignedBuffer buffer(block_size_, 4096, /*zeroed=*/false);
  RT_RETURN_IF_ERROR(LoadFromDevice(b, buffer.span()));
  return FindIn(buffer.span(), key, tag, value);
}

absl::Status BucketStore::Load(uint64_t b, std::span<std::byte> out) {
  // Cached blocks were verified when read, so they are not checked again.
  if (cache_.Lookup(b, out)) return absl::OkStatus();
  return LoadFromDevice(b, out);
}

absl::Status BucketStore::ReadBlocks(std::span<const uint64_t> buckets,
                                     std::span<io::AlignedBuffer> out,
                                     bool cache) {
  std::vector<uint64_t> missed;
  std::vector<io::ReadRequest> reads;
  for (size_t i = 0; i < buckets.size(); ++i) {
    if (cache_.Lookup(buckets[i], out[i].span())) continue;
    if (const std::byte* held = FindHeld(buckets[i])) {
      std::memcpy(out[i].data(), held, block_size_);
      continue;
    }
    if (const std::byte* frozen = FindFrozen(buckets[i])) {
      CopyUnsealed({frozen, block_size_}, out[i].span());
      continue;
    }
    missed.push_back(buckets[i]);
    reads.push_back({buckets[i] + kHeaderBlocks, out[i].span()});
  }
  RT_RETURN_IF_ERROR(blocks_->ReadBatch(reads));
  for (size_t r = 0; r < missed.size(); ++r) {
    RT_RETURN_IF_ERROR(VerifyBlock(reads[r].buffer, missed[r]));
    if (cache) cache_.Insert(missed[r], reads[r].buffer);
  }
  return absl::OkStatus();
}

absl::Status BucketStore::Preload(std::span<const uint64_t> buckets) {
  if (!cache_.enabled()) return absl::OkStatus();
  std::vector<uint64_t> missed;
  for (const uint64_t b : buckets) {
    if (!InMemory(b)) missed.push_back(b);
  }
  if (missed.size() < 2) return absl::OkStatus();
  // A hint: a small cache preloads as many as it lends slots for.
  return FillCache(missed, [](size_t, std::span<const std::byte>) {})
      .status();
}

absl::StatusOr<size_t> BucketStore::FillCache(
    std::span<const uint64_t> buckets,
    absl::FunctionRef<void(size_t, std::span<const std::byte>)> visit) {
  // Inline for one block: a Get's miss allocates nothing.
  absl::InlinedVector<io::ReadRequest, 1> reads;
  reads.reserve(buckets.size());
  for (const uint64_t b : buckets) {
    std::byte* slot = cache_.LendToFill();
    if (slot == nullptr) break;
    reads.push_back({b + kHeaderBlocks, {slot, block_size_}});
  }
  absl::Status s = blocks_->ReadBatch(reads);
  absl::InlinedVector<BlockCache::Returning, 1> back;
  back.reserve(reads.size());
  for (size_t r = 0; r < reads.size(); ++r) {
    if (s.ok()) s = VerifyBlock(reads[r].buffer, buckets[r]);
    // Visited while lent: once cached, another reader may evict it.
    if (s.ok()) visit(r, reads[r].buffer);
    // From the first failure on, the slots go back free.
    back.push_back({buckets[r], reads[r].buffer.data(), s.ok()});
  }
  cache_.TakeBack(back);
  RT_RETURN_IF_ERROR(s);
  return reads.size();
}

// A block held since the last checkpoint, or frozen by it, was made here
// and is sealed only at the checkpoint, so it is copied without a check,
// a frozen one without its checksum (and not cached: the
// held copy serves its reads); one from the device is verified and cached.
absl::Status BucketStore::LoadFromDevice(uint64_t b, std::span<std::byte> out) {
  if (const std::byte* held = FindHeld(b)) {
    std::memcpy(out.data(), held, out.size());
    return absl::OkStatus();
  }
  if (const std::byte* frozen = FindFrozen(b)) {
    CopyUnsealed({frozen, block_size_}, out);
    return absl::OkStatus();
  }
  RT_RETURN_IF_ERROR(blocks_->Read(b + kHeaderBlocks, out));
  RT_RETURN_IF_ERROR(VerifyBlock(out, b));
  cache_.Insert(b, out);
  return absl::OkStatus();
}

absl::StatusOr<EncodedBlock> BucketStore::Edit(uint64_t b, bool* fresh) {
  if (std::byte* held = FindHeld(b)) {
    return View({held, block_size_}, NoteEdited(b, Summary::kKept));
  }
  // A block held anew is summarized again at the end of the write: a
  // filter kept across holds would keep the tags of records long gone.
  TagFilter* appended = NoteEdited(b, Summary::kMake);
  if (fresh != nullptr) *fresh = true;
  const uint64_t block = b + kHeaderBlocks;
  if (std::byte* cached = cache_.LendCached(b)) {
    blocks_->Adopt(block, cached);
    return View({cached, block_size_}, appended);
  }
  if (const std::byte* frozen = FindFrozen(b)) {
    // Made here, so not verified; copied without the checksum, which the
    // checkpoint's thread may be setting, and which the next checkpoint
    // sets in the copy.
    const std::span<std::byte> slot = blocks_->Hold(block);
    CopyUnsealed({frozen, block_size_}, slot);
    return View(slot, appended);
  }
  // Read before holding: a held block would answer its own read.
  RT_RETURN_IF_ERROR(blocks_->Read(block, work_.span()));
  RT_RETURN_IF_ERROR(VerifyBlock(work_.span(), b));
  const std::span<std::byte> slot = blocks_->Hold(block);
  std::memcpy(slot.data(), work_.data(), block_size_);
  return View(slot, appended);
}

void BucketStore::Unhold(uint64_t b) {
  // Cached where it lies, or as a copy (CacheLender::TakeBack).
  blocks_->Release(b + kHeaderBlocks);
}

EncodedBlock BucketStore::Rebuild(uint64_t b) {
  TagFilter* appended = NoteEdited(b, Summary::kEmpty);
  cache_.Drop(b);
  EncodedBlock block = View(blocks_->Hold(b + kHeaderBlocks), appended);
  block.InitHeader(b);
  return block;
}

// A read runs while no write does, so it finds a filter that passes every
// tag of the block. (A write that fails midway leaves its blocks' filters
// passing every tag: slower reads, never a wrong one.) A block is listed
// once for all the edits of a write; its entry gathers the tags they
// append.
TagFilter* BucketStore::NoteEdited(uint64_t b, Summary summary) {
  if (b >= held_.size()) {
    held_.Cover(b + 1);
    edited_at_.Cover(b + 1);
    queued_.Cover(b + 1);
  }
  if (edited_at_[b] == 0) {
    // A kept filter that passes every tag summarizes nothing (a block
    // held since the table opened, or one a failed write left).
    const TagFilter& kept = held_[b].filter;
    if (summary == Summary::kKept && kept.PassesAll()) summary = Summary::kMake;
    edited_.push_back(
        {b, summary == Summary::kKept ? kept : TagFilter(), summary});
    edited_at_[b] = edited_.size();
  }
  Edited& e = edited_[edited_at_[b] - 1];
  // The block made anew, empty, in this write: its earlier tags are gone.
  if (summary == Summary::kEmpty) e = {b, TagFilter(), Summary::kEmpty};
  held_[b].filter = TagFilter::All();
  return &e.filter;
}

void BucketStore::RefreshFilters() {
  for (const Edited& e : edited_) {
    edited_at_[e.b] = 0;
    if (std::byte* held = blocks_->Held(e.b + kHeaderBlocks)) {
      const std::span<std::byte> bytes(held, block_size_);
      held_[e.b] = {e.summary == Summary::kMake ? TagFilterOf(bytes) : e.filter,
                    View(bytes).append_point()};
      if (!queued_[e.b]) {
        queued_[e.b] = true;
        held_order_.push_back(e.b);
      }
    }
  }
  edited_.clear();
}

absl::Status BucketStore::StagePlaces(uint64_t buckets, uint64_t sequence,
                                      uint64_t durable) {
  sealing_ = sequence;
  ahead_since_checkpoint_ = 0;
  return places_->Stage(blocks_->held(), buckets, sequence, durable);
}

absl::Status BucketStore::WriteAhead(uint64_t keep_bytes, size_t most,
                                     uint64_t buckets, uint64_t sequence,
                                     bool wait) {
  if (!wait && ahead_.state.load(std::memory_order_acquire) == Ahead::kBusy) {
    return absl::OkStatus();
  }
  RT_RETURN_IF_ERROR(FinishAhead());
  const uint64_t held = blocks_->held_bytes();
  if (held <= keep_bytes) return absl::OkStatus();
  std::vector<io::WriteRequest>& batch = ahead_.blocks;
  batch.clear();
  ahead_.slots.clear();
  ahead_.sequence = sequence;
  // Buckets passed over (no longer held, or frozen and held anew) count
  // too, so that a call looks at a bounded number.
  for (size_t looked = 0; looked < 4 * most && batch.size() < most &&
                          held > keep_bytes + batch.size() * block_size_ &&
                          !held_order_.empty();
       ++looked) {
    const uint64_t b = held_order_.front();
    held_order_.pop_front();
    queued_[b] = false;
    const uint64_t block = b + kHeaderBlocks;
    std::byte* bytes = blocks_->Held(block);
    if (b >= buckets || bytes == nullptr) continue;
    // Stamped and checksummed by the thread that writes it, as a
    // checkpoint's thread seals a frozen block.
    blocks_->Detach(block);
    batch.push_back({b, {bytes, block_size_}});
    ahead_.slots.push_back({bytes, block_size_});
  }
  if (batch.empty()) return absl::OkStatus();
  // From here on FinishAhead gives the blocks back: written, or (on
  // failure) held again, the table refusing writes.
  ahead_placed_ = true;
  ahead_.status = places_->PlaceAhead(batch, sequence);
  RT_RETURN_IF_ERROR(ahead_.status);
  // Adjacent places go in one write.
  std::sort(batch.begin(), batch.end(),
            [](const io::WriteRequest& a, const io::WriteRequest& b) {
              return a.block < b.block;
            });
  if (!ahead_.thread.joinable()) {
    try {
      ahead_.thread = std::thread([this] {
        io::BlockDevice& file = places_->file();
        while (true) {
          WaitWhileEqual(ahead_.state, Ahead::kIdle);
          if (ahead_.state.load(std::memory_order_acquire) == Ahead::kStop) {
            return;
          }
          blocks_->SealLeaving(ahead_.slots);
          ahead_.status = file.WriteBatch(ahead_.blocks);
          KillPoint("write-ahead: blocks written");
          ahead_.state.store(Ahead::kIdle, std::memory_order_release);
          WakeAll(ahead_.state);
        }
      });
    } catch (const std::system_error&) {
      // No thread: sealed and written here.
      blocks_->SealLeaving(ahead_.slots);
      ahead_.status = places_->file().WriteBatch(batch);
      return ahead_.status;
    }
  }
  ahead_.state.store(Ahead::kBusy, std::memory_order_release);
  WakeAll(ahead_.state);
  return absl::OkStatus();
}

absl::Status BucketStore::FinishAhead() {
  WaitWhileEqual(ahead_.state, Ahead::kBusy);
  if (!ahead_placed_) return absl::OkStatus();
  ahead_placed_ = false;
  const absl::Status s = ahead_.status;
  blocks_->FinishLeaving(s.ok());
  if (s.ok()) {
    written_ahead_ += ahead_.blocks.size();
    ahead_since_checkpoint_ += ahead_.blocks.size();
  }
  return s;
}

BucketStore::~BucketStore() {
  FinishAhead().IgnoreError();
  if (ahead_.thread.joinable()) {
    ahead_.state.store(Ahead::kStop, std::memory_order_release);
    WakeAll(ahead_.state);
    ahead_.thread.join();
  }
}

absl::Status BucketStore::AddEmpty(uint64_t from, uint64_t buckets) {
  RT_RETURN_IF_ERROR(FormatBuckets(blocks_->inner(), from, buckets));
  RT_RETURN_IF_ERROR(blocks_->ExtendFromInner(kHeaderBlocks + buckets));
  // Every block is known empty, the older ones too (the table holds no
  // record): as many as the cache holds are cached, so that the first
  // write to each reads nothing (nor waits in the write buffer).
  const uint64_t end = std::min<uint64_t>(buckets, cache_.capacity_blocks());
  for (uint64_t b = 0; b < end; ++b) {
    View(work_.span()).Init(b);
    cache_.Insert(b, work_.span());
  }
  return absl::OkStatus();
}

}  // namespace roundtable::internal
