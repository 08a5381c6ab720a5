// A 256-bit filter of the 16-bit directory tags of one block (TagOf in
// block_format.h): each tag sets two bits, one chosen by each of its bytes.
// MayContain is false only for a tag that no added tag matches in both bits,
// so a lookup it rules out needs no look at the block; with the 30 records
// of a 4 KiB block of 100-byte values, about 4% of absent tags pass.
//
// Thread-safety: a value; callers synchronize.
#ifndef ROUNDTABLE_ENGINE_INTERNAL_TAG_FILTER_H_
#define ROUNDTABLE_ENGINE_INTERNAL_TAG_FILTER_H_

#include <array>
#include <cstdint>

namespace roundtable::internal {

class TagFilter {
 public:
  // Passes every tag (what a block nobody summarized must answer).
  static TagFilter All() {
    TagFilter f;
    f.words_.fill(~uint64_t{0});
    return f;
  }

  void Add(uint16_t tag) {
    Set(tag & 0xff);
    Set(tag >> 8);
  }
  bool MayContain(uint16_t tag) const {
    return Test(tag & 0xff) && Test(tag >> 8);
  }
  // Whether it passes every tag (All(), or a block full of tags).
  bool PassesAll() const {
    return (words_[0] & words_[1] & words_[2] & words_[3]) == ~uint64_t{0};
  }

 private:
  void Set(unsigned bit) { words_[bit >> 6] |= uint64_t{1} << (bit & 63); }
  bool Test(unsigned bit) const {
    return (words_[bit >> 6] >> (bit & 63)) & 1;
  }

  std::array<uint64_t, 4> words_{};
};

}  // namespace roundtable::internal

#endif  // ROUNDTABLE_ENGINE_INTERNAL_TAG_FILTER_H_
