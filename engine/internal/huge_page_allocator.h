// An allocator for the large arrays the writer fills and outgrows from
// time to time (a snapshot's list of live records): an array of 2 MiB or
// more lies in memory aligned to 2 MiB and advised for transparent huge
// pages, so that a larger one faults in a page every 2 MiB rather than
// every 4 KiB. On a VM a 4 KiB fault took about 8 us: a snapshot's list
// grown to 9 MB spent 20 ms of one write faulting it in.
//
// Smaller arrays come from the ordinary allocator. Where the kernel gives
// no huge pages (they are off, or memory is fragmented), the advice does
// nothing and the array is ordinary memory.
#ifndef ROUNDTABLE_ENGINE_INTERNAL_HUGE_PAGE_ALLOCATOR_H_
#define ROUNDTABLE_ENGINE_INTERNAL_HUGE_PAGE_ALLOCATOR_H_

#include <sys/mman.h>

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <new>

namespace roundtable::internal {

template <typename T>
struct HugePageAllocator {
  using value_type = T;
  static constexpr size_t kHugePage = size_t{2} << 20;

  HugePageAllocator() = default;
  template <typename U>
  HugePageAllocator(const HugePageAllocator<U>&) {}  // NOLINT: rebinding

  T* allocate(size_t n) {
    if (n > std::allocator_traits<std::allocator<T>>::max_size({})) {
      throw std::bad_array_new_length();
    }
    const size_t bytes = n * sizeof(T);
    if (bytes < kHugePage) return std::allocator<T>().allocate(n);
    const size_t whole = Whole(bytes);
    void* p = std::aligned_alloc(kHugePage, whole);
    if (p == nullptr) throw std::bad_alloc();
    madvise(p, whole, MADV_HUGEPAGE);  // advice: memory either way
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t n) {
    if (n * sizeof(T) < kHugePage) {
      std::allocator<T>().deallocate(p, n);
      return;
    }
    std::free(p);
  }

  template <typename U>
  bool operator==(const HugePageAllocator<U>&) const {
    return true;
  }

 private:
  static size_t Whole(size_t bytes) {
    return (bytes + kHugePage - 1) / kHugePage * kHugePage;
  }
};

}  // namespace roundtable::internal

#endif  // ROUNDTABLE_ENGINE_INTERNAL_HUGE_PAGE_ALLOCATOR_H_
