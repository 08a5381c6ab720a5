#include "engine/internal/write_buffer.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "engine/internal/kill_points.h"
#include "io/base/status_macros.h"

namespace roundtable::internal {

WriteBuffer::WriteBuffer(uint64_t limit_bytes, uint64_t held_limit,
                         const Superblock& sb, io::BlockDevice* file,
                         BucketTable* table, BucketStore* store,
                         FirstError* error)
    : limit_(limit_bytes),
      held_limit_(held_limit),
      table_(table),
      store_(store),
      error_(error),
      buffer_(file, sb.buffer_epoch, sb.buffer_blocks, "buffer",
              "write buffer copy", LoggedStash::Copy::kSnapshot) {
  table_->set_observer(this);
}

absl::Status WriteBuffer::Put(std::string_view key, std::string_view value) {
  return Buffer(key, value);
}

absl::Status WriteBuffer::Delete(std::string_view key) {
  return Buffer(key, Tombstone());
}

absl::Status WriteBuffer::Buffer(std::string_view key,
                                 std::string_view stored) {
  const uint64_t h = table_->Hash(key);
  const uint64_t b = table_->BucketOf(h);
  Record* buffered = buffer_.Find(b, key, h);
  if (buffered != nullptr) {
    RT_RETURN_IF_ERROR(table_->ReleaseValue(buffered->value()));
    deletes_ -= IsTombstone(buffered->value());
  }
  const bool waits = limit_ > 0 && !EditsInPlace(b) &&
                     table_->FindStashed(b, key, h) == nullptr;
  if (buffered != nullptr && (waits || !IsTombstone(stored))) {
    // A key buffered already takes the new value or tombstone here.
    deletes_ += IsTombstone(stored);
    RT_RETURN_IF_ERROR(error_->Note(buffer_.Replace(buffered, stored)));
  } else if (waits) {
    deletes_ += IsTombstone(stored);
    RT_RETURN_IF_ERROR(error_->Note(buffer_.Put(b, h, Record(key, stored))));
  } else {
    // A delete that goes on to its block drops the key's buffered put.
    if (buffered != nullptr) {
      RT_RETURN_IF_ERROR(error_->Note(buffer_.Remove(b, key).status()));
    }
    return IsTombstone(stored) ? table_->Delete(key, h)
                               : table_->Put(key, stored, h);
  }
  // A tombstone adds nothing to its block: only puts fill it.
  if (!IsTombstone(stored) &&
      buffer_.ListOf(b)->size() * EncodedSize(key, stored) >=
          table_->layout().payload()) {
    RT_RETURN_IF_ERROR(DrainBucket(b));
  }
  return MaybeDrain();
}

absl::Status WriteBuffer::Load(const Layout& layout,
                              const mapping::RoundMapping& mapping) {
  RT_RETURN_IF_ERROR(buffer_.Load(layout, mapping));
  deletes_ = 0;
  buffer_.ForEachList([&](uint64_t, const Stash::List& list) {
    for (const Stash::Entry& e : list) {
      deletes_ += IsTombstone(e.record.value());
    }
  });
  return absl::OkStatus();
}

absl::Status WriteBuffer::Settle() {
  do {
    RT_RETURN_IF_ERROR(error_->Note(DrainRebuilt()));
    RT_RETURN_IF_ERROR(error_->Note(table_->MaybeShrink()));
  } while (!rebuilt_.empty() && rebuilt_drains_left_ > 0);
  return absl::OkStatus();
}

void WriteBuffer::OnDistribute(const mapping::RoundMapping& mapping,
                               std::span<const uint64_t> sources,
                               std::span<const uint64_t> rebuilt) {
  // Buffered puts of the sources follow their keys to their new buckets
  // (the copy stores no bucket, so nothing is logged). Their records load
  // meanwhile: the rebuilt blocks take them next (DrainRebuilt).
  for (const uint64_t b : sources) {
    for (Stash::Entry& e : buffer_.Take(b)) {
      e.record.Prefetch();
      buffer_.Restore(mapping.FindBucket(e.hash), e.hash, std::move(e.record));
    }
  }
  for (const uint64_t b : rebuilt) {
    if (buffer_.ListOf(b) != nullptr) rebuilt_.push_back(b);
  }
}

bool WriteBuffer::EditsInPlace(uint64_t b) {
  if (store_->Held(b)) return true;
  return table_->num_buckets() * store_->block_size() <= held_limit_ &&
         store_->Cached(b);
}

absl::Status WriteBuffer::MaybeDrain() {
  RT_RETURN_IF_ERROR(DrainRebuilt());
  while (memory_bytes() > limit_) RT_RETURN_IF_ERROR(DrainNext());
  return absl::OkStatus();
}

absl::Status WriteBuffer::DrainRebuilt() {
  while (!rebuilt_.empty() && rebuilt_drains_left_ > 0) {
    const uint64_t b = rebuilt_.back();
    rebuilt_.pop_back();
    if (b < table_->num_buckets() && buffer_.ListOf(b) != nullptr &&
        store_->InMemory(b)) {
      --rebuilt_drains_left_;
      ++distribute_drains_;
      RT_RETURN_IF_ERROR(DrainBucket(b));
    }
  }
  return absl::OkStatus();
}

absl::Status WriteBuffer::DrainNext() {
  const uint64_t b = NextBufferedBucket(drain_cursor_);
  if (preloaded_drains_ == 0) RT_RETURN_IF_ERROR(PreloadDrains(b));
  --preloaded_drains_;
  drain_cursor_ = b + 1;
  RT_RETURN_IF_ERROR(DrainBucket(b));
  // The next drain's records, far apart in the heap, load meanwhile.
  if (!buffer_.empty()) {
    buffer_.PrefetchRecords(NextBufferedBucket(drain_cursor_));
  }
  return absl::OkStatus();
}

absl::Status WriteBuffer::PreloadDrains(uint64_t first) {
  // The sweep's next buckets from `first` on, as far as one batch goes
  // (and a quarter of the cache, so that they are still cached when their
  // turn comes); a put to another bucket before them, or a distribute,
  // changes the order a little, which costs those buckets a read of their
  // own, as before.
  const uint64_t batch =
      std::min<uint64_t>(kPreloadedDrains, store_->cache_capacity_blocks() / 4);
  std::vector<uint64_t> next;
  uint64_t b = first;
  const uint64_t m = table_->num_buckets();
  for (uint64_t seen = 0; next.size() < batch && seen < m; ++seen) {
    if (buffer_.ListOf(b) != nullptr) next.push_back(b);
    b = (b + 1) % m;
  }
  preloaded_drains_ = std::max<uint64_t>(next.size(), 1);
  return error_->Note(store_->Preload(next));
}

uint64_t WriteBuffer::NextBufferedBucket(uint64_t from) const {
  const uint64_t m = table_->num_buckets();
  uint64_t b = from % m;
  while (buffer_.ListOf(b) == nullptr) b = (b + 1) % m;
  return b;
}

absl::Status WriteBuffer::DrainBucket(uint64_t b) {
  ++drains_;
  Stash::Taken taken = buffer_.Take(b);
  // While a snapshot of the buffer is being made, a record the stash
  // takes is copied there, and the drained ones are kept until it is done.
  const bool keep = buffer_.snapshotting();
  absl::Status s;
  for (const Stash::Entry& e : taken) {
    deletes_ -= IsTombstone(e.record.value());
  }
  for (Stash::Entry& e : taken) {
    Record& r = e.record;
    s = error_->Note(buffer_.LogRemoved(r.key()));
    if (s.ok()) {
      s = error_->Note(
          IsTombstone(r.value())
              ? table_->Delete(r.key(), e.hash)
              : table_->Put(r.key(), r.value(), e.hash, keep ? nullptr : &r));
    }
    if (!s.ok()) break;
    KillPoint("buffer: put drained");
  }
  buffer_.Retire(taken);
  return s;
}

}  // namespace roundtable::internal
