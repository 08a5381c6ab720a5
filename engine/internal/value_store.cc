#include "engine/internal/value_store.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/internal/kill_points.h"

#ifndef XXH_INLINE_ALL
#define XXH_INLINE_ALL
#endif
#include <xxhash.h>

namespace roundtable::internal {
namespace {

// The most bytes one request of an extent moves: a larger value takes a
// few requests (of one batch), never one per block.
constexpr uint64_t kMaxRequestBytes = uint64_t{16} << 20;
// The least the value file grows by at a time.
constexpr uint64_t kGrowthStepBytes = uint64_t{16} << 20;

template <typename Request, typename Byte>
void AddRequests(uint64_t first_unit, uint32_t unit, Byte* data,
                 uint64_t bytes, std::vector<Request>* out) {
  for (uint64_t off = 0; off < bytes; off += kMaxRequestBytes) {
    const uint64_t n = std::min(kMaxRequestBytes, bytes - off);
    out->push_back({first_unit + off / unit, {data + off, n}});
  }
}

}  // namespace

uint64_t ValueChecksum(std::string_view value, uint64_t first) {
  return XXH3_64bits_withSeed(value.data(), value.size(), first);
}

ValueStore::ValueStore(io::BlockDevice* values, io::BlockDevice* map,
                       const Superblock& sb)
    : values_(values),
      unit_(sb.block_size),
      map_(map),
      count_(sb.value_count),
      bytes_(sb.value_bytes) {
  map_.set_generation(sb.sequence + 1);
}

absl::StatusOr<Extent> ValueStore::Reserve(uint64_t length) {
  const Extent e = map_.Reserve(ValueRef{0, length, 0}.extent(unit_).units);
  const uint64_t have = values_->num_blocks();
  if (have < map_.units()) {
    // Grown a step ahead (a quarter of its size, at least 16 MiB), so that
    // appending values does not resize the file each time. The step is a
    // hole: it takes no disk space until values are written there.
    const uint64_t step =
        std::max<uint64_t>(have / 4, kGrowthStepBytes / unit_);
    const uint64_t size = std::max(map_.units(), have + step);
    if (absl::Status s = values_->Resize(size); !s.ok()) {
      map_.Unreserve(e);
      return s;
    }
  }
  return e;
}

absl::StatusOr<std::string> ValueStore::Write(const Extent& e,
                                              std::string_view value) {
  const uint64_t n = value.size();
  const auto* data = reinterpret_cast<const std::byte*>(value.data());
  if (values_->capabilities().buffer_alignment > 1) {
    // Direct I/O: through an aligned copy, a request's worth at a time.
    const uint64_t total = e.units * uint64_t{unit_};
    io::AlignedBuffer bounce(std::min(total, kMaxRequestBytes),
                             values_->capabilities().buffer_alignment);
    for (uint64_t off = 0; off < total; off += bounce.size()) {
      const uint64_t len = std::min<uint64_t>(bounce.size(), total - off);
      const uint64_t have = off < n ? std::min(len, n - off) : 0;
      std::memcpy(bounce.data(), data + off, have);
      std::memset(bounce.data() + have, 0, len - have);
      RT_RETURN_IF_ERROR(values_->Write(e.first + off / unit_,
                                        bounce.span().subspan(0, len)));
    }
  } else {
    // The whole units straight from the caller's bytes, the last part
    // unit through a zero-padded copy: one batch.
    std::vector<io::WriteRequest> requests;
    const uint64_t whole = n / unit_ * unit_;
    AddRequests(e.first, unit_, data, whole, &requests);
    io::AlignedBuffer tail;
    if (whole < n || n == 0) {
      tail = io::AlignedBuffer(unit_);
      std::memcpy(tail.data(), data + whole, n - whole);
      requests.push_back({e.first + whole / unit_, tail.span()});
    }
    RT_RETURN_IF_ERROR(values_->WriteBatch(requests));
  }
  written_.fetch_add(1, std::memory_order_release);
  KillPoint("value: written");
  return EncodeReference({e.first, n, ValueChecksum(value, e.first)});
}

absl::Status ValueStore::Claim(std::string_view stored) {
  if (!HasExtent(stored)) return absl::OkStatus();
  const ValueRef ref = DecodeReference(stored);
  if (ref.length == 0 || ref.length > kMaxValueBytes) {
    return absl::DataLossError(
        absl::StrCat("a reference to a value of ", ref.length, " bytes"));
  }
  const Extent e = ref.extent(unit_);
  RT_RETURN_IF_ERROR(map_.Claim(e));
  ++count_;
  bytes_ += ref.length;
  applied_bytes_ += e.units * unit_;
  return absl::OkStatus();
}

absl::Status ValueStore::Release(std::string_view stored) {
  if (!HasExtent(stored)) return absl::OkStatus();
  const ValueRef ref = DecodeReference(stored);
  const Extent e = ref.extent(unit_);
  RT_RETURN_IF_ERROR(map_.Release(e));
  freed_bytes_ += e.units * unit_;
  --count_;
  bytes_ -= ref.length;
  return absl::OkStatus();
}

absl::Status ValueStore::Read(std::span<ReadTarget> targets) {
  const size_t alignment = values_->capabilities().buffer_alignment;
  std::vector<io::ReadRequest> requests;
  std::vector<io::AlignedBuffer> bounces(alignment > 1 ? targets.size() : 0);
  for (size_t i = 0; i < targets.size(); ++i) {
    ReadTarget& t = targets[i];
    const Extent e = t.ref.extent(unit_);
    if (t.ref.length > kMaxValueBytes || e.end() < e.first ||
        e.end() > values_->num_blocks()) {
      t.status = absl::DataLossError(absl::StrCat(
          "bucket ", t.bucket, ": an out-of-line value's extent, units [",
          e.first, ", ", e.end(), "), is outside the value file of ",
          values_->num_blocks()));
      continue;
    }
    const uint64_t total = e.units * uint64_t{unit_};
    if (alignment > 1) {
      bounces[i] = io::AlignedBuffer(total, alignment, /*zeroed=*/false);
      AddRequests(e.first, unit_, bounces[i].data(), total, &requests);
    } else {
      t.out->resize(total);
      AddRequests(e.first, unit_, reinterpret_cast<std::byte*>(t.out->data()),
                  total, &requests);
    }
  }
  const absl::Status batch = values_->ReadBatch(requests);
  for (size_t i = 0; i < targets.size(); ++i) {
    ReadTarget& t = targets[i];
    if (!t.status.ok()) continue;
    if (!batch.ok()) {
      t.status = batch;
      continue;
    }
    if (alignment > 1) {
      t.out->assign(reinterpret_cast<const char*>(bounces[i].data()),
                    t.ref.length);
    } else {
      t.out->resize(t.ref.length);
    }
    if (ValueChecksum(*t.out, t.ref.first) != t.ref.checksum) {
      t.out->clear();
      t.status = absl::DataLossError(absl::StrCat(
          "bucket ", t.bucket, ": the out-of-line value at unit ",
          t.ref.first, " (", t.ref.length, " bytes) is damaged"));
    }
  }
  return batch;
}

absl::StatusOr<bool> ValueStore::Holds(const ValueRef& ref) {
  std::string bytes;
  ReadTarget t{ref, 0, &bytes, {}};
  RT_RETURN_IF_ERROR(Read({&t, 1}));
  return t.status.ok();
}

absl::Status ValueStore::SyncWritten() {
  MutexLock lock(&sync_mu_);
  const uint64_t written = written_.load(std::memory_order_acquire);
  if (written == synced_) return absl::OkStatus();
  RT_RETURN_IF_ERROR(values_->Sync());
  synced_ = written;
  return absl::OkStatus();
}

}  // namespace roundtable::internal
