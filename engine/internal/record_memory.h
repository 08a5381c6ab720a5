// The heap blocks of the records held in memory (Record: the stash, the
// write buffer). A growing table past its memory adds a record to its
// write buffer for nearly every put and frees one for every record a drain
// applies, in no order the allocator can predict: its own free lists took
// about a tenth of the writer's time. Here a freed block of up to
// kMaxPooledBytes waits in the freeing thread's own list for its size
// (rounded up to 16 bytes), at most kPooledBytesPerSize of them, and the
// next record of that size on the thread takes it: an allocation and a
// free are a few instructions while puts and drains keep pace.
//
// Thread-safety: each thread has its own lists; a block may be freed on
// any thread. A thread's lists go back to the allocator when it ends.
#ifndef ROUNDTABLE_ENGINE_INTERNAL_RECORD_MEMORY_H_
#define ROUNDTABLE_ENGINE_INTERNAL_RECORD_MEMORY_H_

#include <cstddef>

namespace roundtable::internal {

// Under AddressSanitizer every block goes back to the allocator, which
// then finds a use after free.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kRecordPooling = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kRecordPooling = false;
#else
inline constexpr bool kRecordPooling = true;
#endif
#else
inline constexpr bool kRecordPooling = true;
#endif

inline constexpr size_t kMaxPooledBytes = 512;
inline constexpr size_t kPooledBytesPerSize = 64 << 10;

// A block of at least `bytes` bytes (> 0), aligned for any char data.
char* AllocateRecordBytes(size_t bytes);
// Gives back a block AllocateRecordBytes(bytes) returned.
void FreeRecordBytes(char* block, size_t bytes);

}  // namespace roundtable::internal

#endif  // ROUNDTABLE_ENGINE_INTERNAL_RECORD_MEMORY_H_
