// An array by bucket that grows with the table in chunks of 1,024
// elements, so that growing never moves what it holds.
//
// The table grows a bucket at a time; a vector by bucket doubled at half a
// million buckets would copy all it holds into tens of MB of fresh pages
// within one write (17 to 73 ms at 10^7 records, each new page faulted in
// by the copy). A new chunk is a few pages, and an element stays where it
// is for the array's life: a pointer to one stays valid as it grows.
// Reaching an element costs one load more (the chunk's address, from a
// table of 8 bytes a chunk that stays in the CPU's caches).
//
// Thread-safety: none; the owner guards it.
#ifndef ROUNDTABLE_ENGINE_INTERNAL_BUCKET_ARRAY_H_
#define ROUNDTABLE_ENGINE_INTERNAL_BUCKET_ARRAY_H_

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

namespace roundtable::internal {

template <typename T>
class BucketArray {
 public:
  static constexpr int kChunkBits = 10;
  static constexpr uint64_t kChunk = uint64_t{1} << kChunkBits;

  // New elements are copies of `fill`.
  explicit BucketArray(const T& fill = T()) : fill_(fill) {}

  BucketArray(BucketArray&&) noexcept = default;
  BucketArray& operator=(BucketArray&&) noexcept = default;

  // The elements addressable now: [0, size()), a whole number of chunks.
  // The kChunk elements of a chunk, from a multiple of kChunk on, lie
  // side by side.
  uint64_t size() const { return chunks_.size() << kChunkBits; }

  T& operator[](uint64_t i) {
    return chunks_[i >> kChunkBits][i & (kChunk - 1)];
  }
  const T& operator[](uint64_t i) const {
    return chunks_[i >> kChunkBits][i & (kChunk - 1)];
  }

  // Makes [0, n) addressable, adding chunks of copies of the fill.
  void Cover(uint64_t n) {
    while (size() < n) {
      auto chunk = std::make_unique<T[]>(kChunk);
      std::fill_n(chunk.get(), kChunk, fill_);
      chunks_.push_back(std::move(chunk));
    }
  }

  // The memory of the elements and the chunks' table.
  uint64_t memory_bytes() const {
    return size() * sizeof(T) + chunks_.capacity() * sizeof(chunks_[0]);
  }

 private:
  std::vector<std::unique_ptr<T[]>> chunks_;
  T fill_;
};

}  // namespace roundtable::internal

#endif  // ROUNDTABLE_ENGINE_INTERNAL_BUCKET_ARRAY_H_
