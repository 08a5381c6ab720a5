// kvbench's WorkerPool: every worker of a Run runs once and all at once,
// worker 0 on the caller's thread, and the others on the same threads from
// one Run to the next.
#include "bench/kvbench/worker_pool.h"

#include <atomic>
#include <latch>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace roundtable::kvbench {
namespace {

// The thread each worker of one Run of `workers` ran on, checking that
// all of them ran at the same time (each waits for the others).
std::vector<std::thread::id> RunOnce(WorkerPool& pool, int workers) {
  std::vector<std::thread::id> ran(workers);
  std::vector<int> calls(workers, 0);
  std::latch all(workers);
  pool.Run(workers, [&](int t) {
    ++calls[t];
    ran[t] = std::this_thread::get_id();
    all.arrive_and_wait();
  });
  for (int t = 0; t < workers; ++t) EXPECT_EQ(calls[t], 1) << "worker " << t;
  return ran;
}

TEST(WorkerPoolTest, OneWorkerRunsOnTheCaller) {
  WorkerPool pool;
  const std::vector<std::thread::id> ran = RunOnce(pool, 1);
  EXPECT_EQ(ran[0], std::this_thread::get_id());
  EXPECT_EQ(pool.threads(), 0);
}

TEST(WorkerPoolTest, WorkersKeepTheirThreadsAcrossRuns) {
  WorkerPool pool;
  const std::vector<std::thread::id> first = RunOnce(pool, 4);
  EXPECT_EQ(first[0], std::this_thread::get_id());
  EXPECT_EQ(std::set<std::thread::id>(first.begin(), first.end()).size(), 4u);
  EXPECT_EQ(pool.threads(), 3);
  for (int workers : {4, 2, 3, 1, 4}) {
    const std::vector<std::thread::id> again = RunOnce(pool, workers);
    for (int t = 0; t < workers; ++t) {
      EXPECT_EQ(again[t], first[t]) << workers << " workers, worker " << t;
    }
  }
  EXPECT_EQ(pool.threads(), 3);
  // A larger Run adds threads for the new workers only.
  const std::vector<std::thread::id> more = RunOnce(pool, 6);
  for (int t = 0; t < 4; ++t) EXPECT_EQ(more[t], first[t]);
  EXPECT_EQ(std::set<std::thread::id>(more.begin(), more.end()).size(), 6u);
  EXPECT_EQ(pool.threads(), 5);
}

TEST(WorkerPoolTest, ManyRunsOfChangingSizesRunExactlyTheirWorkers) {
  WorkerPool pool;
  std::atomic<int> total{0};
  int expected = 0;
  for (int run = 0; run < 2000; ++run) {
    const int workers = 1 + (run * 7) % 5;
    std::vector<std::atomic<int>> calls(workers);
    pool.Run(workers, [&](int t) {
      calls[t].fetch_add(1);
      total.fetch_add(1);
    });
    for (int t = 0; t < workers; ++t) ASSERT_EQ(calls[t].load(), 1);
    expected += workers;
    ASSERT_EQ(total.load(), expected) << "run " << run;
  }
}

}  // namespace
}  // namespace roundtable::kvbench
