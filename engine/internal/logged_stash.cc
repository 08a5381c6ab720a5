#include "engine/internal/logged_stash.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

namespace roundtable::internal {

LoggedStash::LoggedStash(io::BlockDevice* file, uint64_t epoch, uint64_t blocks,
                         std::string_view name, std::string_view what,
                         Copy copy)
    : device_(std::make_unique<DeferredDevice>(file)),
      copy_(device_.get(), epoch, blocks),
      kind_(copy),
      what_(what),
      rewritten_point_(std::string(name) + ": copy rewritten") {}

absl::Status LoggedStash::Load(const Layout& layout,
                               const mapping::RoundMapping& mapping) {
  RT_ASSIGN_OR_RETURN(
      auto live,
      StashLog::Load(*device_, copy_.epoch(), copy_.blocks(), what_));
  for (auto& [key, value] : live) {
    if (EncodedSize(key, value) > layout.max_record()) {
      return absl::DataLossError(absl::StrCat(
          what_, ": a record of ", EncodedSize(key, value),
          " bytes, past the limit of ", layout.max_record()));
    }
    const uint64_t h = layout.Hash(key);
    stash_.Add(mapping.FindBucket(h), h, Record(key, value));
  }
  return copy_.ResumeTail();
}

absl::Status LoggedStash::LogPut(const Record& r) {
  if (kind_ == Copy::kSnapshot) {
    due_ = true;
    return absl::OkStatus();
  }
  return copy_.AppendPut(r.key(), r.value());
}

absl::Status LoggedStash::LogRemove(std::string_view key) {
  if (kind_ == Copy::kSnapshot) {
    due_ = true;
    return absl::OkStatus();
  }
  return copy_.AppendRemove(key);
}

absl::Status LoggedStash::Put(uint64_t b, uint64_t h, Record record) {
  RT_RETURN_IF_ERROR(LogPut(record));
  stash_.Add(b, h, std::move(record));
  return absl::OkStatus();
}

absl::Status LoggedStash::Replace(Record* r, std::string_view value) {
  if (snapshotting_) {
    stash_.SetValue(r, value, &retired_.emplace_back());
  } else {
    stash_.SetValue(r, value);
  }
  return LogPut(*r);
}

void LoggedStash::Retire(std::span<Stash::Entry> taken) {
  if (!snapshotting_) return;
  for (Stash::Entry& e : taken) {
    if (e.record.key().data() != nullptr) KeepAside(e.record);
  }
}

absl::StatusOr<std::optional<size_t>> LoggedStash::Remove(
    uint64_t b, std::string_view key) {
  absl::Status s;
  std::optional<size_t> removed;
  stash_.Filter(b, [&](Record& r) {
    if (r.key() != key) return true;
    s = LogRemove(key);
    if (!s.ok()) return true;
    removed = EncodedSize(r.key(), r.value());
    KeepAside(r);
    return false;
  });
  RT_RETURN_IF_ERROR(s);
  return removed;
}

absl::Status LoggedStash::Flush() {
  if (kind_ == Copy::kLogged) return copy_.Flush();
  if (!due_) return absl::OkStatus();
  return Compact();
}

void LoggedStash::MaybeCompact() {
  if (kind_ == Copy::kSnapshot || due_) return;
  // An entry is its record's bytes and a kind byte; the encoded sizes
  // (with their 4-byte slots) and one byte a record overcount that a
  // little. The rewrite waits for the checkpoint: on the writer, a copy
  // of a few hundred thousand records took 40 to 200 ms inside a write.
  due_ = copy_.WantsRewrite(stash_.bytes() + stash_.records());
}

absl::StatusOr<const LoggedStash::Views*> LoggedStash::Snapshot() {
  LiveRecords(views_.records);
  RT_RETURN_IF_ERROR(copy_.Restart(views_.records));
  views_.epoch = copy_.epoch();
  // In the device's own slots, which the last checkpoint's blocks of this
  // file left free: no new memory for each checkpoint's copy.
  views_.blocks.clear();
  views_.blocks.reserve(copy_.blocks());
  for (uint64_t b = 0; b < copy_.blocks(); ++b) {
    views_.blocks.push_back(device_->Hold(b).data());
  }
  due_ = false;
  snapshotting_ = true;
  KillPoint(rewritten_point_);
  return &views_;
}

void LoggedStash::SnapshotDone(bool made) {
  if (!made) due_ = true;
  snapshotting_ = false;
  // Emptied, their memory kept for the next snapshot.
  views_.records.clear();
  views_.blocks.clear();
  retired_.clear();
  retired_.shrink_to_fit();
}

void LoggedStash::LiveRecords(StashLog::Live& live) const {
  live.clear();
  // Room for a stash that grows by half again: a list that outgrows its
  // memory is moved to fresh pages, which fault in on the writer's path.
  const size_t records = stash_.records();
  if (live.capacity() < records) live.reserve(records + records / 2);
  stash_.ForEachList([&](uint64_t, const Stash::List& list) {
    for (const Stash::Entry& e : list) {
      const Record& r = e.record;
      live.push_back({r.bytes(), r.key_size(), r.value_size()});
    }
  });
}

absl::Status LoggedStash::Compact() {
  StashLog::Live live;
  LiveRecords(live);
  RT_RETURN_IF_ERROR(copy_.Rewrite(live));
  due_ = false;
  KillPoint(rewritten_point_);
  return absl::OkStatus();
}

}  // namespace roundtable::internal
