// The bytes of one bucket block (docs/format.md), a slotted page: a 32-byte
// header, a directory of 4-byte slots growing from byte 32, zeros, and the
// records packed against the end of the block. The header holds a magic
// number, the record count, the bucket number, the bytes of records and an
// XXH3-64 checksum. Slot i holds a 16-bit tag of record i's key hash and the
// record's offset; record 0 ends at the end of the block and record i + 1
// ends where record i starts. A lookup compares tags in the directory (the
// first cache lines of the block) and decodes only the records whose tag
// matches, so it touches a few cache lines instead of the whole block.
//
// Record encoding: varint key length, varint value length, key, value.
//
// Thread-safety: an EncodedBlock is a view; callers keep one writer per
// block.
#ifndef ROUNDTABLE_ENGINE_INTERNAL_BLOCK_FORMAT_H_
#define ROUNDTABLE_ENGINE_INTERNAL_BLOCK_FORMAT_H_

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/internal/coding.h"
#include "engine/internal/record_memory.h"
#include "engine/internal/tag_filter.h"

namespace roundtable::internal {

inline constexpr uint32_t kBlockMagic = 0x4b425452;  // "RTBK"
inline constexpr size_t kBlockHeaderBytes = 32;
inline constexpr size_t kSlotBytes = 4;

// The directory tag of a key whose 64-bit hash is `hash`: its low 16 bits,
// which do not depend on the bucket (a bucket's keys share their high bits).
inline uint16_t TagOf(uint64_t hash) { return static_cast<uint16_t>(hash); }

// A key and its value, both in one allocation (the key's bytes, then the
// value's): a record held in memory (the stash, the write buffer) costs one
// heap block (record_memory.h), and its struct 16 bytes.
class Record {
 public:
  Record() = default;
  Record(std::string_view key, std::string_view value)
      : data_(Allocate(key.size() + value.size())),
        key_size_(static_cast<uint32_t>(key.size())),
        value_size_(static_cast<uint32_t>(value.size())) {
    Copy(key, 0);
    Copy(value, key_size_);
  }
  Record(const Record& other) : Record(other.key(), other.value()) {}
  Record& operator=(const Record& other) {
    if (this != &other) *this = Record(other.key(), other.value());
    return *this;
  }
  // A moved-from record is empty.
  Record(Record&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)),
        key_size_(std::exchange(other.key_size_, 0)),
        value_size_(std::exchange(other.value_size_, 0)) {}
  Record& operator=(Record&& other) noexcept {
    if (this != &other) {
      Free();
      data_ = std::exchange(other.data_, nullptr);
      key_size_ = std::exchange(other.key_size_, 0);
      value_size_ = std::exchange(other.value_size_, 0);
    }
    return *this;
  }
  ~Record() { Free(); }

  std::string_view key() const { return {data_, key_size_}; }
  // The key's bytes, then the value's (null when both are empty).
  const char* bytes() const { return data_; }
  uint32_t key_size() const { return key_size_; }
  uint32_t value_size() const { return value_size_; }
  std::string_view value() const {
    return {data_ + key_size_, value_size_};
  }
  // Replaces the value (which may be a view of this record's own).
  void set_value(std::string_view value) {
    if (value.size() == value_size_) {
      if (!value.empty()) {
        std::memmove(data_ + key_size_, value.data(), value.size());
      }
      return;
    }
    *this = Record(key(), value);
  }

  // Starts loading the record's bytes (up to its first two cache lines).
  void Prefetch() const {
    const size_t size = size_t{key_size_} + value_size_;
    if (size == 0) return;
    __builtin_prefetch(data_);
    __builtin_prefetch(data_ + std::min<size_t>(64, size - 1));
  }

  bool operator==(const Record& other) const {
    return key() == other.key() && value() == other.value();
  }

 private:
  static char* Allocate(size_t bytes) {
    return bytes == 0 ? nullptr : AllocateRecordBytes(bytes);
  }
  void Free() {
    if (data_ != nullptr) {
      FreeRecordBytes(data_, size_t{key_size_} + value_size_);
    }
  }
  void Copy(std::string_view bytes, size_t at) {
    if (!bytes.empty()) std::memcpy(data_ + at, bytes.data(), bytes.size());
  }

  char* data_ = nullptr;
  uint32_t key_size_ = 0;
  uint32_t value_size_ = 0;
};

// The checksum of an encoded block of `size` bytes whose header (the first
// kBlockHeaderBytes) holds the checksum at bytes [24, 32): XXH3-64 of the
// bytes after the header, seeded with XXH3-64 of header bytes [0, 24).
uint64_t BlockChecksum(const char* data, size_t size);

// A map block (the space map's, the block map's: docs/format.md): the
// map's magic at byte 0, the block's number at byte 8, a checksum at byte
// 24 (as a bucket block's), its entries from byte kBlockHeaderBytes.
// InitMapBlock makes `out` map block `k` of `magic` with no entries (zeros
// elsewhere); SealMapBlock sets its checksum once its entries are in;
// IsMapBlock: whether `in` is map block `k` of `magic`, whole.
void InitMapBlock(std::span<std::byte> out, uint32_t magic, uint64_t k);
void SealMapBlock(std::span<std::byte> out);
bool IsMapBlock(std::span<const std::byte> in, uint32_t magic, uint64_t k);

// Bytes of a record's encoding: two varint lengths, key, value.
inline size_t RecordBytes(std::string_view key, std::string_view value);
// Bytes a record takes inside a block, its slot included (and in the stash
// accounting).
inline size_t EncodedSize(std::string_view key, std::string_view value);

// An encoded block edited in place: the Put and Delete paths and distribute
// work on the bytes directly, without decoding records into strings. The
// checksum is left stale by every edit until Seal().
class EncodedBlock {
 public:
  // Borrows `bytes` (one whole block), which must outlive this object and
  // hold a verified block or be passed to Init. `max_records`, when not 0,
  // is the most records the block takes (Options::block_records). Each
  // tag Append stores is added to `appended`, if given (the only edit
  // that brings a tag in: Remove and ReplaceValue bring none).
  explicit EncodedBlock(std::span<std::byte> bytes, uint32_t max_records = 0,
                        TagFilter* appended = nullptr)
      : bytes_(bytes), max_records_(max_records), appended_(appended) {}
  // A read-only view: only the const methods may be called.
  explicit EncodedBlock(std::span<const std::byte> bytes)
      : bytes_(const_cast<std::byte*>(bytes.data()), bytes.size()) {}

  // Makes the bytes an empty block of `bucket`.
  void Init(uint64_t bucket);
  // Init but for the bytes past the header, left as they were, for a
  // block filled at once: ZeroFree once its records are in zeroes what
  // they left free, so the records' bytes are written once.
  void InitHeader(uint64_t bucket);
  // Zeroes the bytes between the directory and the records.
  void ZeroFree();

  uint64_t bucket() const;
  // The low 32 bits of the sequence number of the checkpoint that stored
  // the block where it lies (0 for a block made with its table or by
  // Table::Reserve): of two images of one bucket, the newer.
  uint32_t checkpoint() const;
  void set_checkpoint(uint64_t sequence);
  uint32_t count() const;
  size_t used() const;  // bytes of records and their slots (EncodedSize)
  size_t room() const;  // bytes still free, for records and their slots
  // Whether a record of EncodedSize `size` fits: room for its bytes, and
  // fewer records than max_records.
  bool Fits(size_t size) const {
    return size <= room() && (max_records_ == 0 || count() < max_records_);
  }

  struct Found {
    uint32_t slot;  // index in the directory
    size_t size;    // EncodedSize of the record
    std::string_view value;
  };
  // `tag` is TagOf(hash of key).
  std::optional<Found> Find(std::string_view key, uint16_t tag) const;
  void Remove(const Found& found);
  // Writes `value` over the found record's value where it lies: no record
  // moves. REQUIRES: value.size() == found.value.size().
  void ReplaceValue(const Found& found, std::string_view value);
  // Starts loading, to be written, what an edit of the record whose key
  // has tag `tag` touches next (reading the header and directory, which
  // should be in cache by then): the first record with that tag, as Find
  // would read it and a Remove or ReplaceValue write it (as many lines as
  // a record of EncodedSize `size` takes, three without one); or, with
  // none and a `size`, every line where Append would store a record of
  // that EncodedSize, if it fits (its slot and its bytes). With `search`
  // false the directory is not searched (the caller knows no record has
  // the tag).
  void PrefetchEdit(uint16_t tag, size_t size, bool search = true) const;
  // Where the next record goes, in 32 bits (the bytes of records, and
  // above them the count): kept beside a block as a hint, it lets
  // PrefetchAppendAt find where an Append stores without the block's
  // header.
  uint32_t append_point() const;
  // Starts loading, to be written, every line where Append would store a
  // record of EncodedSize `size` into the block at `block` (`block_size`
  // bytes) if its append_point() were `point`: its slot and its bytes.
  // Nothing if it would not fit; a stale point costs a wasted load.
  static void PrefetchAppendAt(const std::byte* block, size_t block_size,
                               uint32_t point, size_t size);
  // Appends a record if it fits; false (and nothing changed) if not.
  bool Append(std::string_view key, std::string_view value, uint16_t tag);
  // Calls fn(key, value, tag) for every record, in directory order.
  template <typename Fn>
  void ForEachTagged(Fn fn) const;
  // Calls fn(key, value) for every record, in directory order.
  template <typename Fn>
  void ForEach(Fn fn) const {
    ForEachTagged(
        [&](std::string_view k, std::string_view v, uint16_t) { fn(k, v); });
  }

  // Writes the checksum; the bytes are then a valid block.
  void Seal();

 private:
  char* data() const { return reinterpret_cast<char*>(bytes_.data()); }
  char* slot(uint32_t i) const {
    return data() + kBlockHeaderBytes + kSlotBytes * i;
  }
  // Bytes of records alone, without their slots.
  size_t record_bytes() const;
  std::span<std::byte> bytes_;
  uint32_t max_records_ = 0;
  TagFilter* appended_ = nullptr;
};

// Starts loading the block's header and the start of its directory (the
// slots of its first 40 records: three cache lines), what a lookup or an
// edit of it reads first.
inline void PrefetchDirectory(const std::byte* block) {
  __builtin_prefetch(block, 1);
  __builtin_prefetch(block + 64, 1);
  __builtin_prefetch(block + 128, 1);
}

// The filter of the tags in `block`'s directory: every record's tag passes
// it. Reads no more slots than the block has room for, whatever its count
// says.
TagFilter TagFilterOf(std::span<const std::byte> block);

// Copies block `from` into `to` but for its checkpoint and checksum fields,
// left zero: exactly the bytes that a checkpoint's seal of `from` (its
// sequence stamped, then Seal) running meanwhile on another thread does
// not write (the copy is stamped and sealed again before it is stored).
void CopyUnsealed(std::span<const std::byte> from, std::span<std::byte> to);

// DataLoss, naming the bucket, unless `in` is a valid block of `bucket`
// (magic, checksum, bucket number, directory and record framing). The tags
// depend on the table's hash seed and are checked by Table::Check.
absl::Status VerifyBlock(std::span<const std::byte> in, uint64_t bucket);

template <typename Fn>
void EncodedBlock::ForEachTagged(Fn fn) const {
  const char* end = data() + bytes_.size();
  for (uint32_t i = 0, n = count(); i < n; ++i) {
    const uint32_t entry = GetFixed32(slot(i));
    const char* p = data() + (entry >> 16);
    const uint64_t key_len = *GetVarint(&p, end);
    const uint64_t value_len = *GetVarint(&p, end);
    fn(std::string_view(p, key_len), std::string_view(p + key_len, value_len),
       static_cast<uint16_t>(entry));
  }
}

inline size_t RecordBytes(size_t key_bytes, size_t value_bytes) {
  return VarintLength(key_bytes) + VarintLength(value_bytes) + key_bytes +
         value_bytes;
}
inline size_t RecordBytes(std::string_view key, std::string_view value) {
  return RecordBytes(key.size(), value.size());
}

inline size_t EncodedSize(size_t key_bytes, size_t value_bytes) {
  return kSlotBytes + RecordBytes(key_bytes, value_bytes);
}
inline size_t EncodedSize(std::string_view key, std::string_view value) {
  return EncodedSize(key.size(), value.size());
}

}  // namespace roundtable::internal

#endif  // ROUNDTABLE_ENGINE_INTERNAL_BLOCK_FORMAT_H_
