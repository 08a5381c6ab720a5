#include "engine/internal/bucket_table.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "engine/internal/kill_points.h"
#include "io/base/status_macros.h"

namespace roundtable::internal {

BucketTable::BucketTable(const Superblock& sb, mapping::RoundMapping mapping,
                         BucketStore* store, io::BlockDevice* stash_file,
                         ValueStore* values, FirstError* error)
    : layout_(Layout::Of(sb)),
      mapping_(std::move(mapping)),
      store_(store),
      values_(values),
      error_(error),
      stash_(stash_file, sb.stash_epoch, sb.stash_blocks, "stash",
             "stash copy"),
      record_count_(sb.record_count),
      data_bytes_(sb.data_bytes),
      min_buckets_(sb.min_buckets) {}

LogicalLedger BucketTable::logical() const {
  LogicalLedger l = logical_;
  l.get_reads = get_reads_.load(std::memory_order_relaxed);
  l.stash_copy_writes = stash_.block_writes();
  return l;
}

absl::Status BucketTable::Put(std::string_view key, std::string_view value,
                              uint64_t h, Record* owned) {
  const size_t size = EncodedSize(key, value);
  bool grown = false;
  while (true) {
    const uint64_t b = mapping_.FindBucket(h);
    // A key in the stash is replaced there (its block stays full, nothing
    // to read); otherwise the key's block is read.
    Record* stashed = stash_.Find(b, key, h);
    std::optional<EncodedBlock> block;
    std::optional<EncodedBlock::Found> found;
    size_t old = 0;
    if (stashed != nullptr) {
      old = EncodedSize(stashed->key(), stashed->value());
    } else {
      // A block whose filter rules the key's tag out (a new key, mostly)
      // is not searched.
      const bool may_hold = store_->MayContain(b, TagOf(h));
      RT_ASSIGN_OR_RETURN(block, store_->Edit(b));
      ++logical_.put_reads;
      if (may_hold) found = block->Find(key, TagOf(h));
      if (found) old = found->size;
    }
    // As the paper does, make room first if the data would pass
    // (1 - epsilon) of the blocks' capacity: at most one new bucket per
    // Put, after which the key's bucket is found again.
    if (!grown && layout_.NeededBuckets(data_bytes_ - old + size,
                                        record_count_ + (old == 0 ? 1 : 0)) >
                      mapping_.num_buckets()) {
      RT_RETURN_IF_ERROR(error_->Note(Grow()));
      grown = true;
      continue;
    }
    if (stashed != nullptr) {
      data_bytes_ = data_bytes_ - old + size;
      RT_RETURN_IF_ERROR(ReleaseValue(stashed->value()));
      RT_RETURN_IF_ERROR(error_->Note(stash_.Replace(stashed, value)));
      if (size >= old) return absl::OkStatus();
      // A smaller record may now fit its block: keep the rule that a
      // stash list exists only where its block has no room for it.
      RT_ASSIGN_OR_RETURN(block, store_->Edit(b));
      ++logical_.put_reads;
      if (!block->Fits(size)) return absl::OkStatus();
      ++logical_.put_writes;
      return error_->Note(RefillFromStash(*block, b));
    }
    if (found) RT_RETURN_IF_ERROR(ReleaseValue(found->value));
    if (found && found->size == size) {
      // The same key with a value of the same length: written over the
      // old one where it lies. The block's room is unchanged, so its
      // stash list (if any) stays as it is.
      block->ReplaceValue(*found, value);
      ++logical_.put_writes;
      return absl::OkStatus();
    }
    if (found) {
      block->Remove(*found);
    } else {
      ++record_count_;
    }
    data_bytes_ = data_bytes_ - old + size;
    if (!block->Append(key, value, TagOf(h))) {
      RT_RETURN_IF_ERROR(error_->Note(AddToStash(
          b, h, owned != nullptr ? std::move(*owned) : Record(key, value))));
    }
    ++logical_.put_writes;
    return error_->Note(RefillFromStash(*block, b));
  }
}

absl::Status BucketTable::Delete(std::string_view key, uint64_t h) {
  const uint64_t b = mapping_.FindBucket(h);
  if (const Record* stashed = stash_.Find(b, key, h)) {
    RT_RETURN_IF_ERROR(ReleaseValue(stashed->value()));
    const absl::StatusOr<std::optional<size_t>> removed = stash_.Remove(b, key);
    RT_RETURN_IF_ERROR(error_->Note(removed.status()));
    if (*removed) {
      data_bytes_ -= **removed;
      --record_count_;
    }
    stash_.MaybeCompact();
    return absl::OkStatus();
  }
  bool fresh = false;
  RT_ASSIGN_OR_RETURN(EncodedBlock block, store_->Edit(b, &fresh));
  ++logical_.delete_reads;
  const auto found = block.Find(key, TagOf(h));
  if (!found) {
    // Nothing to write: an absent key leaves no held block behind.
    if (fresh) store_->Unhold(b);
    return absl::OkStatus();
  }
  RT_RETURN_IF_ERROR(ReleaseValue(found->value));
  data_bytes_ -= found->size;
  block.Remove(*found);
  --record_count_;
  ++logical_.delete_writes;
  return error_->Note(RefillFromStash(block, b));
}

absl::Status BucketTable::MaybeShrink() {
  while (mapping_.num_buckets() > std::max(layout_.s0, min_buckets_) &&
         needed_buckets() + 1 < mapping_.num_buckets()) {
    RT_RETURN_IF_ERROR(Shrink());
  }
  return absl::OkStatus();
}

absl::Status BucketTable::Reserve(uint64_t buckets, bool empty) {
  min_buckets_ = buckets;
  const uint64_t m = mapping_.num_buckets();
  if (buckets <= m) return absl::OkStatus();
  if (empty) {
    if (record_count_ != 0 || stash_.records() != 0 ||
        !store_->device().held().empty()) {
      return absl::InternalError("reserving as empty a table that is not");
    }
    RT_ASSIGN_OR_RETURN(mapping::RoundMapping grown,
                        mapping::RoundMapping::Create(layout_.s0, buckets));
    RT_RETURN_IF_ERROR(error_->Note(store_->AddEmpty(m, buckets)));
    mapping_ = std::move(grown);
    return absl::OkStatus();
  }
  while (mapping_.num_buckets() < buckets) {
    RT_RETURN_IF_ERROR(error_->Note(Grow()));
  }
  return absl::OkStatus();
}

absl::Status BucketTable::AddToStash(uint64_t b, uint64_t h, Record record) {
  RT_RETURN_IF_ERROR(stash_.Put(b, h, std::move(record)));
  KillPoint("stash: entry logged");
  stash_.MaybeCompact();
  return absl::OkStatus();
}

absl::Status BucketTable::RefillFromStash(EncodedBlock& block, uint64_t b) {
  RT_RETURN_IF_ERROR(stash_.MoveOut(
      b,
      [&](const Record& r) {
        return block.Append(r.key(), r.value(), TagOf(Hash(r.key())));
      },
      "stash: entry logged"));
  stash_.MaybeCompact();
  return absl::OkStatus();
}

absl::StatusOr<std::span<io::AlignedBuffer>> BucketTable::LoadBlocks(
    std::span<const uint64_t> buckets) {
  while (source_blocks_.size() < buckets.size()) {
    source_blocks_.emplace_back(layout_.block_size, 4096, /*zeroed=*/false);
  }
  std::span<io::AlignedBuffer> bytes =
      std::span<io::AlignedBuffer>(source_blocks_).first(buckets.size());
  // Made anew next (or, a shrink's target, dropped): not cached.
  RT_RETURN_IF_ERROR(store_->ReadBlocks(buckets, bytes, /*cache=*/false));
  return bytes;
}

absl::Status BucketTable::Grow() {
  const uint64_t m = mapping_.num_buckets();
  RT_RETURN_IF_ERROR(store_->Resize(m + 1));
  RT_ASSIGN_OR_RETURN(const mapping::BucketChange change, mapping_.NewBucket());
  KillPoint("grow: bucket added");
  RT_ASSIGN_OR_RETURN(auto bytes, LoadBlocks(change.sources));
  const std::vector<uint64_t> touched = change.Touched();
  RT_RETURN_IF_ERROR(Distribute(change.sources, bytes, touched));
  logical_.grow_reads += change.sources.size();
  logical_.grow_writes += touched.size();
  ++logical_.grows;
  return absl::OkStatus();
}

absl::Status BucketTable::Shrink() {
  RT_ASSIGN_OR_RETURN(const mapping::BucketChange change,
                      mapping_.FreeBucket());
  const std::vector<uint64_t> touched = change.Touched();
  RT_ASSIGN_OR_RETURN(auto bytes, LoadBlocks(touched));
  RT_RETURN_IF_ERROR(Distribute(touched, bytes, change.sources));
  KillPoint("shrink: blocks rebuilt");
  store_->DropCached(change.target);
  RT_RETURN_IF_ERROR(store_->Resize(mapping_.num_buckets()));
  logical_.shrink_reads += touched.size();
  logical_.shrink_writes += change.sources.size();
  ++logical_.shrinks;
  return absl::OkStatus();
}

absl::Status BucketTable::Distribute(std::span<const uint64_t> sources,
                                     std::span<io::AlignedBuffer> bytes,
                                     std::span<const uint64_t> rebuilt) {
  // Each rebuilt block is made where it is held (the sources were read
  // into `bytes` before): the edit is the write, as in BucketStore::Edit.
  auto& slot = rebuilt_index_;  // bucket -> index in blocks
  auto& blocks = rebuilt_blocks_;
  slot.clear();
  blocks.clear();
  for (size_t i = 0; i < rebuilt.size(); ++i) {
    blocks.push_back(store_->Rebuild(rebuilt[i]));
    slot[rebuilt[i]] = i;
  }
  // Their free bytes zeroed once their records are in, however this ends.
  absl::Cleanup zero_free = [&] {
    for (EncodedBlock& block : blocks) block.ZeroFree();
  };
  if (observer_ != nullptr) observer_->OnDistribute(mapping_, sources, rebuilt);
  // Records leaving the stash are logged as removals, records entering it
  // as puts; a record that stays in the stash needs no entry.
  auto& from_stash = taken_from_stash_;
  from_stash.clear();
  for (const uint64_t b : sources) {
    for (Stash::Entry& e : stash_.Take(b)) from_stash.push_back(std::move(e));
  }
  // Those that leave for a block are freed by the next distribute's clear,
  // unless a snapshot of the stash is being made (then kept until it is
  // done, as are its records that leave by any other way).
  absl::Cleanup retire = [&] { stash_.Retire(from_stash); };
  // `owned` is the stashed record itself, or null for a record of a block;
  // h is the key's hash.
  auto place = [&](std::string_view key, std::string_view value, uint64_t h,
                   Record* owned) -> absl::Status {
    const uint64_t b = mapping_.FindBucket(h);
    auto it = slot.find(b);
    if (it == slot.end()) {
      return absl::InternalError(
          absl::StrCat("distribute: a record moved to bucket ", b,
                       ", outside the touched buckets"));
    }
    if (blocks[it->second].Append(key, value, TagOf(h))) {
      if (owned != nullptr) RT_RETURN_IF_ERROR(stash_.LogRemoved(key));
      return absl::OkStatus();
    }
    if (owned != nullptr) {
      stash_.Restore(b, h, std::move(*owned));
      return absl::OkStatus();
    }
    return stash_.Put(b, h, Record(key, value));
  };
  // Block records first, so that stashed records fill what room is left.
  absl::Status s;
  for (io::AlignedBuffer& source : bytes) {
    EncodedBlock(source.span())
        .ForEach([&](std::string_view k, std::string_view v) {
          if (s.ok()) s = place(k, v, Hash(k), nullptr);
        });
    RT_RETURN_IF_ERROR(s);
  }
  for (Stash::Entry& e : from_stash) {
    Record& r = e.record;
    // place() reads the views before it may move r into the stash.
    RT_RETURN_IF_ERROR(place(r.key(), r.value(), e.hash, &r));
  }
  for (size_t i = 0; i < rebuilt.size(); ++i) {
    KillPoint("distribute: block rebuilt");
  }
  stash_.MaybeCompact();
  return absl::OkStatus();
}

}  // namespace roundtable::internal
