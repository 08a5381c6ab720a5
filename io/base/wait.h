// Waiting for another thread to change a word: C++20's atomic wait, less
// its yields. libstdc++'s wait (GCC 12) pauses twelve times, then calls
// sched_yield four times before it sleeps, and each time it wakes without
// the change; on a busy machine a yield hands the CPU to whatever else is
// runnable there, for as long as that runs (28 ms at once was seen on the
// table's writer, waiting for the blocks it writes ahead). Here a waiter
// spins a few microseconds, then sleeps on a futex until woken.
#ifndef ROUNDTABLE_IO_BASE_WAIT_H_
#define ROUNDTABLE_IO_BASE_WAIT_H_

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <climits>

namespace roundtable {

// One turn of a spin loop: tells the CPU this thread is waiting.
inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Returns once `word` no longer holds `old` (read with acquire order).
inline void WaitWhileEqual(const std::atomic<int>& word, int old) {
  static_assert(sizeof(std::atomic<int>) == sizeof(int));
  for (int i = 0; i < 256; ++i) {
    if (word.load(std::memory_order_acquire) != old) return;
    CpuRelax();
  }
  while (word.load(std::memory_order_acquire) == old) {
    // Returns at once if the word changed since (EAGAIN), and may wake
    // spuriously: the loop looks again.
    syscall(SYS_futex, &word, FUTEX_WAIT_PRIVATE, old, nullptr, nullptr, 0);
  }
}

// Wakes every thread waiting on `word` (after the change, made with
// release order).
inline void WakeAll(std::atomic<int>& word) {
  syscall(SYS_futex, &word, FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
}

}  // namespace roundtable

#endif  // ROUNDTABLE_IO_BASE_WAIT_H_
