#include "engine/internal/record_memory.h"

#include <array>
#include <cstdlib>
#include <new>
#include <utility>

namespace roundtable::internal {
namespace {

constexpr size_t kGranule = 16;
constexpr size_t kSizes = kMaxPooledBytes / kGranule;

// The bytes of a block of list `size`.
constexpr size_t BlockBytes(size_t size) { return (size + 1) * kGranule; }

// A thread's free blocks, one list per size, linked through their first
// bytes.
class Pool {
 public:
  ~Pool() {
    closed_ = true;
    for (Free*& head : heads_) {
      while (head != nullptr) std::free(std::exchange(head, head->next));
    }
  }
  char* Take(size_t size) {
    Free*& head = heads_[size];
    if (head == nullptr) return nullptr;
    kept_bytes_[size] -= BlockBytes(size);
    return reinterpret_cast<char*>(std::exchange(head, head->next));
  }
  // False when the block is the allocator's to take back: its list is
  // full, or the thread is ending (a record freed by a later destructor).
  bool Give(char* block, size_t size) {
    if (closed_ || kept_bytes_[size] + BlockBytes(size) > kPooledBytesPerSize) {
      return false;
    }
    kept_bytes_[size] += BlockBytes(size);
    heads_[size] = ::new (block) Free{heads_[size]};
    return true;
  }

 private:
  struct Free {
    Free* next;
  };
  std::array<Free*, kSizes> heads_{};
  std::array<size_t, kSizes> kept_bytes_{};  // by list
  bool closed_ = false;
};

thread_local Pool pool;

// The list of blocks of `bytes`: of BlockBytes(index) bytes.
size_t SizeIndex(size_t bytes) { return (bytes - 1) / kGranule; }

}  // namespace

char* AllocateRecordBytes(size_t bytes) {
  if (kRecordPooling && bytes <= kMaxPooledBytes) {
    const size_t size = SizeIndex(bytes);
    if (char* block = pool.Take(size)) return block;
    bytes = BlockBytes(size);
  }
  void* block = std::malloc(bytes);
  if (block == nullptr) throw std::bad_alloc();
  return static_cast<char*>(block);
}

void FreeRecordBytes(char* block, size_t bytes) {
  if (kRecordPooling && bytes <= kMaxPooledBytes &&
      pool.Give(block, SizeIndex(bytes))) {
    return;
  }
  std::free(block);
}

}  // namespace roundtable::internal
