// WaitWhileEqual and WakeAll (io/base/wait.h): a waiter returns once the
// word changes, however the change and the wake-up interleave with its
// spin and its sleep; a change made before the wait is seen at once.
#include "io/base/wait.h"

#include <atomic>
#include <chrono>
#include <thread>

#include "gtest/gtest.h"

namespace roundtable {
namespace {

TEST(WaitTest, AChangedWordReturnsAtOnce) {
  std::atomic<int> word{1};
  WaitWhileEqual(word, 0);
  SUCCEED();
}

// Two threads hand a turn back and forth through one word, each waiting
// while the word says it is the other's turn: every hand-over must wake
// the waiter (a lost wake-up hangs the test) and be seen in order.
TEST(WaitTest, HandOversAreNeverLost) {
  std::atomic<int> turn{0};
  constexpr int kRounds = 20000;
  int seen_by_other = 0;
  std::thread other([&] {
    for (int i = 0; i < kRounds; ++i) {
      WaitWhileEqual(turn, 0);
      ++seen_by_other;
      turn.store(0, std::memory_order_release);
      WakeAll(turn);
    }
  });
  for (int i = 0; i < kRounds; ++i) {
    turn.store(1, std::memory_order_release);
    WakeAll(turn);
    WaitWhileEqual(turn, 1);
    ASSERT_EQ(seen_by_other, i + 1);
  }
  other.join();
  EXPECT_EQ(seen_by_other, kRounds);
}

// A waiter that has gone to sleep (the change comes long after its spin)
// is woken by WakeAll, every one of several.
TEST(WaitTest, SleepersAreWokenByWakeAll) {
  std::atomic<int> word{0};
  std::atomic<int> woken{0};
  std::thread waiters[3];
  for (std::thread& t : waiters) {
    t = std::thread([&] {
      WaitWhileEqual(word, 0);
      woken.fetch_add(1);
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(woken.load(), 0);
  word.store(1, std::memory_order_release);
  WakeAll(word);
  for (std::thread& t : waiters) t.join();
  EXPECT_EQ(woken.load(), 3);
}

}  // namespace
}  // namespace roundtable
