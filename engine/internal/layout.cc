#include "engine/internal/layout.h"

#include <unistd.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "io/block_device.h"

namespace roundtable::internal {

uint32_t BlockSizeFor(size_t bytes) {
  for (uint32_t bs = io::kMinBlockSize; bs <= io::kMaxBlockSize; bs *= 2) {
    if (MaxRecord(bs) >= bytes) return bs;
  }
  return 0;
}

absl::Status CheckOptions(const Options& o) {
  if (o.block_size && !io::IsValidBlockSize(*o.block_size)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "block size ", *o.block_size, " is not a power of two from ",
        io::kMinBlockSize, " to ", io::kMaxBlockSize));
  }
  if (o.s0 && (*o.s0 < 1 || *o.s0 > kMaxS0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("s0 = ", *o.s0, " is outside [1, 2^20]"));
  }
  if (o.epsilon && !(*o.epsilon > 0 && *o.epsilon <= 0.5)) {
    return absl::InvalidArgumentError(
        absl::StrCat("epsilon = ", *o.epsilon, " is outside (0, 0.5]"));
  }
  // The cache's arena is reserved at once: no larger than the machine.
  const uint64_t cache =
      o.memory_bytes != 0 ? o.memory_bytes : o.block_cache_bytes;
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0 &&
      cache / static_cast<uint64_t>(page) > static_cast<uint64_t>(pages)) {
    return absl::InvalidArgumentError(absl::StrCat(
        o.memory_bytes != 0 ? "memory_bytes " : "block_cache_bytes ", cache,
        " is more than the machine's memory (",
        static_cast<uint64_t>(pages) * static_cast<uint64_t>(page),
        " bytes)"));
  }
  return absl::OkStatus();
}

Layout Layout::ForCreation(const Options& o) {
  return {o.block_size.value_or(Options::kDefaultBlockSize),
          o.block_records.value_or(Options::kDefaultBlockRecords),
          o.s0.value_or(Options::kDefaultS0),
          o.epsilon.value_or(Options::kDefaultEpsilon),
          o.hash_seed.value_or(Options::kDefaultHashSeed)};
}

absl::Status Layout::CheckRecord(std::string_view key,
                                 std::string_view value) const {
  const size_t size = EncodedSize(key, value);
  if (size <= max_record()) return absl::OkStatus();
  const uint32_t fits = BlockSizeFor(size);
  return absl::InvalidArgumentError(absl::StrCat(
      "record of ", size, " bytes (key ", key.size(), ", value ", value.size(),
      ") exceeds the inline limit of ", max_record(), " bytes for ",
      block_size, "-byte blocks",
      fits ? absl::StrCat("; a block size of ", fits, " would take it")
           : std::string("; no block size takes it")));
}

size_t Layout::max_key() const {
  size_t key = max_record();
  while (key > 0 && EncodedSize(key, kReferenceBytes) > max_record()) --key;
  return key;
}

absl::Status Layout::CheckOutOfLine(std::string_view key,
                                    std::string_view value) const {
  if (key.size() > max_key()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "key of ", key.size(), " bytes exceeds the limit of ", max_key(),
        " bytes for ", block_size, "-byte blocks"));
  }
  if (value.size() > kMaxValueBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("value of ", value.size(), " bytes exceeds the limit of ",
                     kMaxValueBytes, " bytes"));
  }
  return absl::OkStatus();
}

absl::Status Layout::CheckGiven(const Options& given,
                                 const std::string& path) const {
  absl::Status status;
  auto check = [&](const char* what, auto stored, const auto& field) {
    if (status.ok() && field && *field != stored) {
      status = absl::InvalidArgumentError(
          absl::StrCat(path, " was created with ", what, " = ", stored,
                       ", not ", *field));
    }
  };
  check("block_size", block_size, given.block_size);
  check("block_records", block_records, given.block_records);
  check("s0", s0, given.s0);
  check("epsilon", epsilon, given.epsilon);
  check("hash_seed", hash_seed, given.hash_seed);
  return status;
}

}  // namespace roundtable::internal
