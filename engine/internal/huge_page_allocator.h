// Transparent huge pages for the memory the engine keeps large: the
// advice that the block cache's arena and the held blocks' chunks take,
// and an allocator for the large arrays the writer fills and outgrows from
// time to time (a snapshot's list of live records). An array of 2 MiB or
// more from the allocator lies in memory aligned to 2 MiB and advised for
// huge pages, so that a larger one faults in a page every 2 MiB rather
// than every 4 KiB. On a VM a 4 KiB fault took about 8 us: a snapshot's
// list grown to 9 MB spent 20 ms of one write faulting it in. Smaller
// arrays come from the ordinary allocator.
#ifndef ROUNDTABLE_ENGINE_INTERNAL_HUGE_PAGE_ALLOCATOR_H_
#define ROUNDTABLE_ENGINE_INTERNAL_HUGE_PAGE_ALLOCATOR_H_

#include <sys/mman.h>

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <new>

namespace roundtable::internal {

// A transparent huge page on x86-64.
inline constexpr size_t kHugePageBytes = size_t{2} << 20;

// Advises [p, p + bytes) for transparent huge pages, where it spans one or
// more (p aligned to kHugePageBytes makes all of it eligible). Advice
// only: where the kernel gives none, the memory is ordinary.
inline void AdviseHugePages(void* p, size_t bytes) {
  if (bytes >= kHugePageBytes) madvise(p, bytes, MADV_HUGEPAGE);
}

template <typename T>
struct HugePageAllocator {
  using value_type = T;

  HugePageAllocator() = default;
  template <typename U>
  HugePageAllocator(const HugePageAllocator<U>&) {}  // NOLINT: rebinding

  T* allocate(size_t n) {
    if (n > std::allocator_traits<std::allocator<T>>::max_size({})) {
      throw std::bad_array_new_length();
    }
    const size_t bytes = n * sizeof(T);
    if (bytes < kHugePageBytes) return std::allocator<T>().allocate(n);
    const size_t whole = Whole(bytes);
    void* p = std::aligned_alloc(kHugePageBytes, whole);
    if (p == nullptr) throw std::bad_alloc();
    AdviseHugePages(p, whole);
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t n) {
    if (n * sizeof(T) < kHugePageBytes) {
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
    return (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  }
};

}  // namespace roundtable::internal

#endif  // ROUNDTABLE_ENGINE_INTERNAL_HUGE_PAGE_ALLOCATOR_H_
