// Threads that outlive a workload. Each workload's calls run on the same
// threads as the last one's, as an application's long-lived threads do:
// the caller's own thread is worker 0, and workers 1 and up are made once
// and kept until the pool ends. A thread made for each workload would
// take an allocator arena of its own (glibc), and memory that an engine
// freed in one arena is not reused by the next workload's thread: the
// process would then keep the peaks of several arenas at once.
#ifndef ROUNDTABLE_BENCH_KVBENCH_WORKER_POOL_H_
#define ROUNDTABLE_BENCH_KVBENCH_WORKER_POOL_H_

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace roundtable::kvbench {

class WorkerPool {
 public:
  WorkerPool() = default;
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;
  ~WorkerPool() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    start_.notify_all();
    for (std::thread& t : threads_) t.join();
  }

  // Runs fn(t) for every t in [0, workers) at once, fn(0) on the calling
  // thread and the others on the pool's threads; returns once all have.
  // One Run at a time.
  void Run(int workers, const std::function<void(int)>& fn) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      while (static_cast<int>(threads_.size()) + 1 < workers) {
        const int id = static_cast<int>(threads_.size()) + 1;
        threads_.emplace_back(
            [this, id, seen = generation_] { Serve(id, seen); });
      }
      job_ = &fn;
      active_ = workers;
      running_ = workers - 1;
      ++generation_;
    }
    start_.notify_all();
    fn(0);
    std::unique_lock<std::mutex> lock(mu_);
    done_.wait(lock, [this] { return running_ == 0; });
    job_ = nullptr;
  }

  // The threads made so far, the caller's not counted.
  int threads() const {
    std::lock_guard<std::mutex> lock(mu_);
    return static_cast<int>(threads_.size());
  }

 private:
  // Worker `id`'s loop; `seen` is the last Run it has looked at.
  void Serve(int id, uint64_t seen) {
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      start_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      // Not one of this Run's workers: nothing to wait for it.
      if (id >= active_) continue;
      const std::function<void(int)>* job = job_;
      lock.unlock();
      (*job)(id);
      lock.lock();
      if (--running_ == 0) done_.notify_all();
    }
  }

  mutable std::mutex mu_;
  std::condition_variable start_;     // a Run has begun, or the pool ends
  std::condition_variable done_;      // the last of a Run's workers is done
  std::vector<std::thread> threads_;  // workers 1, 2, ...
  const std::function<void(int)>* job_ = nullptr;
  int active_ = 0;           // workers of the current Run
  int running_ = 0;          // of those on the pool's threads, not yet done
  uint64_t generation_ = 0;  // Runs begun
  bool stop_ = false;
};

}  // namespace roundtable::kvbench

#endif  // ROUNDTABLE_BENCH_KVBENCH_WORKER_POOL_H_
