#include "tools/roundtable/dump_file.h"

#ifndef XXH_INLINE_ALL
#define XXH_INLINE_ALL
#endif
#include <xxhash.h>

#include <bit>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "engine/internal/coding.h"

namespace roundtable::cli {
namespace {

using internal::GetFixed32;
using internal::GetFixed64;
using internal::PutFixed32;
using internal::PutFixed64;

constexpr char kMagic[8] = {'R', 'T', 'D', 'U', 'M', 'P', '\0', '\1'};
constexpr uint32_t kVersion = 1;
constexpr size_t kHeaderBytes = 56;
constexpr char kRecord = 1;
constexpr char kTrailer = 2;
constexpr size_t kTrailerBytes = 1 + 8 + 8 + 8;

uint64_t Hash(const char* p, size_t n, uint64_t seed) {
  return XXH3_64bits_withSeed(p, n, seed);
}

}  // namespace

DumpWriter::DumpWriter(std::ostream* out, const Options& layout) : out_(out) {
  char h[kHeaderBytes] = {};
  std::memcpy(h, kMagic, 8);
  PutFixed32(h + 8, kVersion);
  PutFixed32(h + 12, *layout.block_size);
  PutFixed32(h + 16, *layout.block_records);
  PutFixed64(h + 24, *layout.s0);
  PutFixed64(h + 32, std::bit_cast<uint64_t>(*layout.epsilon));
  PutFixed64(h + 40, *layout.hash_seed);
  PutFixed64(h + 48, Hash(h, 48, 0));
  out_->write(h, kHeaderBytes);
}

void DumpWriter::Add(std::string_view key, std::string_view value) {
  frame_.resize(1 + 2 * 10);
  char* p = frame_.data();
  *p++ = kRecord;
  p = internal::PutVarint(p, key.size());
  p = internal::PutVarint(p, value.size());
  const size_t prefix = static_cast<size_t>(p - frame_.data());
  frame_.resize(prefix);
  frame_.append(key);
  frame_.append(value);
  char sum[8];
  PutFixed64(sum, Hash(frame_.data(), frame_.size(), records_));
  frame_.append(sum, 8);
  out_->write(frame_.data(), static_cast<std::streamsize>(frame_.size()));
  ++records_;
  bytes_ += key.size() + value.size();
}

absl::Status DumpWriter::Finish() {
  char t[kTrailerBytes];
  t[0] = kTrailer;
  PutFixed64(t + 1, records_);
  PutFixed64(t + 9, bytes_);
  PutFixed64(t + 17, Hash(t, 17, records_));
  out_->write(t, kTrailerBytes);
  out_->flush();
  if (!*out_) return absl::UnavailableError("writing the dump failed");
  return absl::OkStatus();
}

absl::Status DumpReader::Read(char* p, size_t n, const char* what) {
  in_->read(p, static_cast<std::streamsize>(n));
  if (static_cast<size_t>(in_->gcount()) != n) {
    if (in_->bad()) return absl::UnavailableError("reading the dump failed");
    return absl::DataLossError(absl::StrCat("the dump ends inside ", what,
                                            " (record ", records_,
                                            "): it was cut short"));
  }
  return absl::OkStatus();
}

absl::StatusOr<Options> DumpReader::ReadHeader() {
  char h[kHeaderBytes];
  if (absl::Status s = Read(h, kHeaderBytes, "its header"); !s.ok()) {
    if (absl::IsDataLoss(s)) {
      return absl::DataLossError("not a roundtable dump (too short)");
    }
    return s;
  }
  if (std::memcmp(h, kMagic, 8) != 0) {
    return absl::DataLossError("not a roundtable dump (no RTDUMP header)");
  }
  if (GetFixed64(h + 48) != Hash(h, 48, 0)) {
    return absl::DataLossError("the dump's header fails its checksum");
  }
  if (GetFixed32(h + 8) != kVersion) {
    return absl::FailedPreconditionError(
        absl::StrCat("a dump of version ", GetFixed32(h + 8),
                     "; this build reads version ", kVersion));
  }
  Options o;
  o.block_size = GetFixed32(h + 12);
  o.block_records = GetFixed32(h + 16);
  o.s0 = GetFixed64(h + 24);
  o.epsilon = std::bit_cast<double>(GetFixed64(h + 32));
  o.hash_seed = GetFixed64(h + 40);
  return o;
}

absl::StatusOr<bool> DumpReader::Next(std::string* key, std::string* value) {
  char kind;
  if (absl::Status s = Read(&kind, 1, "a record"); !s.ok()) return s;
  if (kind == kTrailer) {
    char t[kTrailerBytes];
    t[0] = kind;
    if (absl::Status s = Read(t + 1, kTrailerBytes - 1, "its trailer");
        !s.ok()) {
      return s;
    }
    if (GetFixed64(t + 17) != Hash(t, 17, GetFixed64(t + 1)) ||
        GetFixed64(t + 1) != records_ || GetFixed64(t + 9) != bytes_) {
      return absl::DataLossError(absl::StrCat(
          "the dump's trailer fails its checksum or does not match its ",
          records_, " records"));
    }
    if (in_->peek() != std::char_traits<char>::eof()) {
      return absl::DataLossError("bytes follow the dump's trailer");
    }
    return false;
  }
  if (kind != kRecord) {
    return absl::DataLossError(
        absl::StrCat("record ", records_, " of the dump is damaged"));
  }
  // The frame as written, to check its checksum: kind, two varints.
  std::string frame(1, kind);
  uint64_t lengths[2];
  for (uint64_t& length : lengths) {
    length = 0;
    for (int shift = 0;; shift += 7) {
      char byte;
      if (absl::Status s = Read(&byte, 1, "a record"); !s.ok()) return s;
      frame.push_back(byte);
      if (shift > 63) {
        return absl::DataLossError(
            absl::StrCat("record ", records_, " of the dump is damaged"));
      }
      length |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) break;
    }
  }
  if (lengths[0] > (uint64_t{1} << 32) || lengths[1] > (uint64_t{1} << 32)) {
    return absl::DataLossError(
        absl::StrCat("record ", records_, " of the dump is damaged"));
  }
  key->resize(lengths[0]);
  value->resize(lengths[1]);
  char sum[8];
  if (absl::Status s = Read(key->data(), key->size(), "a record"); !s.ok()) {
    return s;
  }
  if (absl::Status s = Read(value->data(), value->size(), "a record");
      !s.ok()) {
    return s;
  }
  if (absl::Status s = Read(sum, 8, "a record"); !s.ok()) return s;
  // A state on the stack must be initialized: a reset with a seed keeps
  // the secret it finds when the state's stale seed is that seed.
  XXH3_state_t state;
  XXH3_INITSTATE(&state);
  XXH3_64bits_reset_withSeed(&state, records_);
  XXH3_64bits_update(&state, frame.data(), frame.size());
  XXH3_64bits_update(&state, key->data(), key->size());
  XXH3_64bits_update(&state, value->data(), value->size());
  if (XXH3_64bits_digest(&state) != GetFixed64(sum)) {
    return absl::DataLossError(
        absl::StrCat("record ", records_, " of the dump fails its checksum"));
  }
  ++records_;
  bytes_ += key->size() + value->size();
  return true;
}

}  // namespace roundtable::cli
