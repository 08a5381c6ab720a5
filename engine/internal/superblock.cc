#include "engine/internal/superblock.h"

#include <xxhash.h>

#include <bit>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "engine/internal/block_format.h"
#include "engine/internal/coding.h"
#include "io/block_device.h"

namespace roundtable::internal {
namespace {

// Field offsets; the checksum covers bytes [0, kChecksumAt).
constexpr size_t kMagicAt = 0, kVersionAt = 4, kBlockSizeAt = 8,
                 kBlockRecordsAt = 12, kS0At = 16, kEpsilonAt = 24,
                 kSeedAt = 32, kBucketsAt = 40, kRecordsAt = 48,
                 kDataBytesAt = 56, kStashEpochAt = 64, kStashBlocksAt = 72,
                 kSequenceAt = 80, kWalSeqAt = 88, kBufferEpochAt = 96,
                 kBufferBlocksAt = 104, kValueUnitsAt = 112,
                 kValueCountAt = 120, kValueBytesAt = 128, kMinBucketsAt = 136,
                 kChecksumAt = 144;
// Version 8 ended at the value fields, version 7 before them: their
// checksum took the place of the fields that follow.
constexpr size_t kChecksumAt8 = 136, kChecksumAt7 = 112;

}  // namespace

void EncodeSuperblock(const Superblock& sb, std::span<std::byte> out) {
  char* p = reinterpret_cast<char*>(out.data());
  std::memset(p, 0, out.size());
  PutFixed32(p + kMagicAt, kSuperblockMagic);
  PutFixed32(p + kVersionAt, sb.format_version);
  PutFixed32(p + kBlockSizeAt, sb.block_size);
  PutFixed32(p + kBlockRecordsAt, sb.block_records);
  PutFixed64(p + kS0At, sb.s0);
  PutFixed64(p + kEpsilonAt, std::bit_cast<uint64_t>(sb.epsilon));
  PutFixed64(p + kSeedAt, sb.hash_seed);
  PutFixed64(p + kBucketsAt, sb.num_buckets);
  PutFixed64(p + kRecordsAt, sb.record_count);
  PutFixed64(p + kDataBytesAt, sb.data_bytes);
  PutFixed64(p + kStashEpochAt, sb.stash_epoch);
  PutFixed64(p + kStashBlocksAt, sb.stash_blocks);
  PutFixed64(p + kSequenceAt, sb.sequence);
  PutFixed64(p + kWalSeqAt, sb.wal_seq);
  PutFixed64(p + kBufferEpochAt, sb.buffer_epoch);
  PutFixed64(p + kBufferBlocksAt, sb.buffer_blocks);
  PutFixed64(p + kValueUnitsAt, sb.value_units);
  PutFixed64(p + kValueCountAt, sb.value_count);
  PutFixed64(p + kValueBytesAt, sb.value_bytes);
  PutFixed64(p + kMinBucketsAt, sb.min_buckets);
  PutFixed64(p + kChecksumAt, XXH3_64bits(p, kChecksumAt));
}

absl::StatusOr<Superblock> DecodeSuperblock(std::span<const std::byte> in) {
  const char* p = reinterpret_cast<const char*>(in.data());
  if (GetFixed32(p + kMagicAt) != kSuperblockMagic) {
    return absl::DataLossError("superblock: bad magic number");
  }
  Superblock sb;
  sb.format_version = GetFixed32(p + kVersionAt);
  const size_t checksum_at = sb.format_version == 7   ? kChecksumAt7
                             : sb.format_version == 8 ? kChecksumAt8
                                                      : kChecksumAt;
  if (GetFixed64(p + checksum_at) != XXH3_64bits(p, checksum_at)) {
    return absl::DataLossError("superblock: checksum mismatch");
  }
  sb.block_size = GetFixed32(p + kBlockSizeAt);
  sb.block_records = GetFixed32(p + kBlockRecordsAt);
  sb.s0 = GetFixed64(p + kS0At);
  sb.epsilon = std::bit_cast<double>(GetFixed64(p + kEpsilonAt));
  sb.hash_seed = GetFixed64(p + kSeedAt);
  sb.num_buckets = GetFixed64(p + kBucketsAt);
  sb.record_count = GetFixed64(p + kRecordsAt);
  sb.data_bytes = GetFixed64(p + kDataBytesAt);
  sb.stash_epoch = GetFixed64(p + kStashEpochAt);
  sb.stash_blocks = GetFixed64(p + kStashBlocksAt);
  sb.sequence = GetFixed64(p + kSequenceAt);
  sb.wal_seq = GetFixed64(p + kWalSeqAt);
  sb.buffer_epoch = GetFixed64(p + kBufferEpochAt);
  sb.buffer_blocks = GetFixed64(p + kBufferBlocksAt);
  if (sb.format_version < kOldestFormatVersion ||
      sb.format_version > kFormatVersion) {
    return sb;  // the caller refuses it
  }
  if (sb.format_version >= 8) {
    sb.value_units = GetFixed64(p + kValueUnitsAt);
    sb.value_count = GetFixed64(p + kValueCountAt);
    sb.value_bytes = GetFixed64(p + kValueBytesAt);
  }
  if (sb.format_version >= 9) sb.min_buckets = GetFixed64(p + kMinBucketsAt);
  // A copy whose checksum holds but whose fields no table could have (a
  // file from elsewhere) is no valid copy either: nothing below may size an
  // allocation or a loop by them.
  auto bad = [](const char* what) {
    return absl::DataLossError(
        absl::StrCat("superblock: ", what, " out of range"));
  };
  const uint32_t bs = sb.block_size;
  if (!io::IsValidBlockSize(bs)) return bad("block size");
  const uint64_t payload = bs - kBlockHeaderBytes;
  if (sb.s0 < 1 || sb.s0 > kMaxS0) return bad("s0");
  if (!(sb.epsilon > 0 && sb.epsilon <= 0.5)) return bad("epsilon");
  if (sb.block_records > payload / kMinRecordBytes) return bad("record limit");
  if (sb.num_buckets < sb.s0 || sb.num_buckets > kMaxBuckets) {
    return bad("bucket count");
  }
  if (sb.min_buckets > sb.num_buckets) return bad("reserved bucket count");
  if (sb.stash_blocks > kMaxBuckets || sb.buffer_blocks > kMaxBuckets) {
    return bad("copy blocks");
  }
  // Records fill at most the blocks' record space, and the stash at most
  // twice its copy's bytes (an entry is at least half its record's size).
  if (sb.data_bytes > sb.num_buckets * payload + 2 * sb.stash_blocks * bs) {
    return bad("data bytes");
  }
  if (sb.record_count > sb.data_bytes / kMinRecordBytes ||
      sb.data_bytes > sb.record_count * (payload / 4)) {
    return bad("record count");
  }
  // Each out-of-line value is a record, and takes at least one unit.
  if (sb.value_units > kMaxValueUnits) return bad("value file units");
  if (sb.value_count > sb.record_count + sb.buffer_blocks * bs ||
      sb.value_count > sb.value_units || sb.value_bytes > sb.value_units * bs) {
    return bad("out-of-line values");
  }
  return sb;
}

}  // namespace roundtable::internal
