#include "engine/internal/space_map.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "engine/internal/block_format.h"
#include "engine/internal/coding.h"
#include "engine/internal/superblock.h"
#include "io/base/status_macros.h"

namespace roundtable::internal {
// A bitmap block is a map block (InitMapBlock) whose entries are the bits
// of its units, unit i of the block in bit i % 8 of byte 32 + i / 8.

SpaceMap::SpaceMap(io::BlockDevice* file) : device_(file) {}

absl::Status SpaceMap::Load(uint64_t units) {
  const uint32_t bs = device_.block_size();
  const uint64_t per = UnitsPerBlock(bs);
  const uint64_t blocks = BlocksFor(units, bs);
  if (device_.num_blocks() < blocks) {
    return absl::DataLossError(absl::StrCat(
        "space map: ", device_.num_blocks(), " blocks, ", blocks,
        " expected for ", units, " units of the value file"));
  }
  units_ = units;
  words_.assign((units + 63) / 64, 0);
  io::AlignedBuffer buffer(bs);
  for (uint64_t k = 0; k < blocks; ++k) {
    RT_RETURN_IF_ERROR(device_.Read(k, buffer.span()));
    const char* p = reinterpret_cast<const char*>(buffer.data());
    if (!IsMapBlock(buffer.span(), kSpaceMapMagic, k)) {
      return absl::DataLossError(
          absl::StrCat("space map: block ", k, " is damaged"));
    }
    const uint64_t first = k * per;
    const uint64_t n = std::min(per, units - first);
    for (uint64_t byte = 0; byte < per / 8; ++byte) {
      const auto bits = static_cast<uint8_t>(p[32 + byte]);
      for (uint64_t i = byte * 8; i < byte * 8 + 8; ++i) {
        if (!((bits >> (i % 8)) & 1)) continue;
        if (i >= n) {
          return absl::DataLossError(absl::StrCat(
              "space map: block ", k, " marks a unit past the value file's ",
              units));
        }
        words_[(first + i) / 64] |= uint64_t{1} << ((first + i) % 64);
        ++used_units_;
      }
    }
  }
  stored_blocks_ = blocks;
  // The free runs: every maximal run of unused units.
  for (uint64_t u = Next(0, false); u < units_;) {
    const uint64_t end = Next(u, true);
    AddFree(u, end - u);
    u = Next(end, false);
  }
  return absl::OkStatus();
}

Extent SpaceMap::Reserve(uint64_t units) {
  Extent e{0, units};
  auto fit = by_size_.lower_bound({units, 0});
  if (fit != by_size_.end()) {
    e.first = fit->second;
    const uint64_t run = fit->first;
    EraseFree(free_.find(e.first));
    if (run > units) AddFree(e.first + units, run - units);
  } else {
    // No run takes it: at the end, starting in the last run if it reaches
    // the end.
    e.first = units_;
    if (!free_.empty()) {
      auto last = std::prev(free_.end());
      if (last->first + last->second == units_) {
        e.first = last->first;
        EraseFree(last);
      }
    }
    GrowTo(e.end());
  }
  reserved_.emplace(e.first, units);
  reserved_units_ += units;
  return e;
}

void SpaceMap::Unreserve(const Extent& e) {
  if (reserved_.erase(e.first) == 0) return;
  reserved_units_ -= e.units;
  AddFree(e.first, e.units);
}

absl::Status SpaceMap::Claim(const Extent& e) {
  if (e.units == 0 || e.end() < e.first || e.end() > kMaxValueUnits) {
    return absl::DataLossError(absl::StrCat(
        "a value's extent, units [", e.first, ", ", e.first + e.units,
        "), is empty or past the most a value file has"));
  }
  if (auto r = reserved_.find(e.first);
      r != reserved_.end() && r->second == e.units) {
    reserved_.erase(r);
    reserved_units_ -= e.units;
  } else {
    if (e.end() > units_) {
      const uint64_t old = units_;
      GrowTo(e.end());
      // The units past the old end are free (the log's writes grew the
      // file), merged with a run that ended there.
      AddFree(old, units_ - old);
    }
    auto it = free_.upper_bound(e.first);
    if (it == free_.begin()) {
      return absl::DataLossError(absl::StrCat(
          "the extent of units [", e.first, ", ", e.end(), ") is not free"));
    }
    --it;
    const uint64_t run_first = it->first, run_end = it->first + it->second;
    if (e.end() > run_end) {
      return absl::DataLossError(absl::StrCat(
          "the extent of units [", e.first, ", ", e.end(), ") is not free"));
    }
    EraseFree(it);
    if (e.first > run_first) AddFree(run_first, e.first - run_first);
    if (run_end > e.end()) AddFree(e.end(), run_end - e.end());
  }
  SetRange(e.first, e.end(), true);
  used_units_ += e.units;
  return absl::OkStatus();
}

absl::Status SpaceMap::Release(const Extent& e) {
  if (e.units == 0 || e.end() < e.first || e.end() > units_ ||
      !All(e.first, e.end(), true)) {
    return absl::DataLossError(absl::StrCat(
        "a value's extent, units [", e.first, ", ", e.first + e.units,
        "), is not in use"));
  }
  SetRange(e.first, e.end(), false);
  used_units_ -= e.units;
  waiting_.push_back({generation_, e});
  return absl::OkStatus();
}

void SpaceMap::Reclaim(uint64_t durable) {
  size_t n = 0;
  while (n < waiting_.size() && waiting_[n].first <= durable) {
    AddFree(waiting_[n].second.first, waiting_[n].second.units);
    ++n;
  }
  waiting_.erase(waiting_.begin(), waiting_.begin() + n);
}

void SpaceMap::Stage() {
  const uint32_t bs = device_.block_size();
  const uint64_t per = UnitsPerBlock(bs);
  const uint64_t blocks = BlocksFor(units_, bs);
  if (stored_blocks_ < blocks) {
    // Growing a deferred device only changes the size it shows; the new
    // blocks are written whole below.
    device_.Resize(blocks).IgnoreError();
    for (uint64_t k = stored_blocks_; k < blocks; ++k) dirty_.insert(k);
    stored_blocks_ = blocks;
  }
  for (const uint64_t k : dirty_) {
    if (k >= blocks) continue;
    std::span<std::byte> out = device_.Hold(k);
    InitMapBlock(out, kSpaceMapMagic, k);
    char* p = reinterpret_cast<char*>(out.data());
    const uint64_t first = k * per;
    const uint64_t n = std::min(per, units_ - first);
    for (uint64_t i = 0; i < n; ++i) {
      if (used(first + i)) p[32 + i / 8] |= static_cast<char>(1 << (i % 8));
    }
    SealMapBlock(out);
  }
  dirty_.clear();
}

uint64_t SpaceMap::Next(uint64_t from, bool set) const {
  uint64_t u = from;
  while (u < units_) {
    const uint64_t word = words_[u / 64] ^ (set ? 0 : ~uint64_t{0});
    const uint64_t rest = word >> (u % 64);
    if (rest != 0) return std::min(units_, u + std::countr_zero(rest));
    u = (u / 64 + 1) * 64;
  }
  return units_;
}

bool SpaceMap::All(uint64_t first, uint64_t end, bool set) const {
  for (uint64_t u = first; u < end;) {
    const uint64_t word = words_[u / 64] ^ (set ? ~uint64_t{0} : 0);
    const uint64_t lo = u % 64;
    const uint64_t hi = std::min<uint64_t>(64, lo + (end - u));
    const uint64_t mask =
        (hi == 64 ? ~uint64_t{0} : (uint64_t{1} << hi) - 1) &
        ~((uint64_t{1} << lo) - 1);
    if (word & mask) return false;
    u += hi - lo;
  }
  return true;
}

void SpaceMap::SetRange(uint64_t first, uint64_t end, bool set) {
  const uint64_t per = UnitsPerBlock(device_.block_size());
  for (uint64_t k = first / per; k * per < end; ++k) dirty_.insert(k);
  for (uint64_t u = first; u < end;) {
    const uint64_t lo = u % 64;
    const uint64_t hi = std::min<uint64_t>(64, lo + (end - u));
    const uint64_t mask =
        (hi == 64 ? ~uint64_t{0} : (uint64_t{1} << hi) - 1) &
        ~((uint64_t{1} << lo) - 1);
    if (set) {
      words_[u / 64] |= mask;
    } else {
      words_[u / 64] &= ~mask;
    }
    u += hi - lo;
  }
}

void SpaceMap::GrowTo(uint64_t units) {
  if (units <= units_) return;
  units_ = units;
  words_.resize((units + 63) / 64, 0);
}

void SpaceMap::AddFree(uint64_t first, uint64_t units) {
  if (units == 0) return;
  auto next = free_.lower_bound(first);
  if (next != free_.end() && next->first == first + units) {
    units += next->second;
    EraseFree(next);
  }
  auto prev = free_.lower_bound(first);
  if (prev != free_.begin()) {
    --prev;
    if (prev->first + prev->second == first) {
      first = prev->first;
      units += prev->second;
      EraseFree(prev);
    }
  }
  free_.emplace(first, units);
  by_size_.insert({units, first});
}

void SpaceMap::EraseFree(absl::btree_map<uint64_t, uint64_t>::iterator it) {
  by_size_.erase({it->second, it->first});
  free_.erase(it);
}

}  // namespace roundtable::internal
