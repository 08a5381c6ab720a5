// Runs kvbench's workloads on one engine and measures them. A Runner owns
// one engine's directory and its open handle for a sequence of benchmarks,
// as db_bench does: the fill workloads start from an empty directory, the
// others use what the earlier ones left.
//
// Thread-safety: a Runner is used from one thread; it starts the workload's
// threads itself.
#ifndef ROUNDTABLE_BENCH_KVBENCH_RUNNER_H_
#define ROUNDTABLE_BENCH_KVBENCH_RUNNER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "bench/kvbench/kv_engine.h"
#include "bench/kvbench/worker_pool.h"
#include "bench/kvbench/workload.h"

namespace roundtable::kvbench {

// Every workload, in the order of the default --benchmarks.
const std::vector<std::string>& BenchmarkNames();

struct RunConfig {
  uint64_t num = 1000000;  // records the fills write
  uint64_t reads = 0;      // operations of the read and mixed workloads; 0: num
  uint64_t sync_writes = 0;  // writes of fillsync; 0: num / 100
  size_t value_size = 100;
  int threads = 1;
  int batch = 1;  // records per write call of the fills and overwrite
  bool sync = false;  // every write durable (fillsync: always)
  uint64_t cache_bytes = 256 << 20;
  int read_write_percent = 50;  // readrandomwriterandom's share of reads
  double zipf_theta = 0.99;
  // growth stops inserting after this many seconds, short of num (0: never).
  uint64_t duration_seconds = 0;
  uint64_t seed = 301;
  uint64_t roundtable_s0 = 0;  // 0: SuggestedS0
  int64_t roundtable_write_buffer = -1;  // -1: one memory budget
  std::string db_dir = "/tmp/kvbench";
};

// One second of the growth workload.
struct GrowthSample {
  double seconds = 0;  // since the workload started, at the sample's end
  uint64_t ops = 0;    // inserts in this second
  uint64_t max_ns = 0;
  uint64_t records = 0;
  uint64_t bytes_on_disk = 0;
};

struct Result {
  std::string engine;
  std::string benchmark;
  int threads = 1;
  int batch = 1;
  size_t value_size = 0;
  uint64_t ops = 0;     // records read, written or deleted
  uint64_t found = 0;   // reads that found their key
  double seconds = 0;
  LatencyHistogram latency;  // per call (a batch is one call)
  uint64_t records = 0;       // in the engine afterwards
  uint64_t bytes_on_disk = 0;  // afterwards
  uint64_t user_bytes_written = 0;  // keys and values written
  ProcIo io;                        // the process's, during the workload
  std::optional<uint64_t> device_reads;  // the device's, during it
  // Bytes the device wrote during it and the engine's Settle (whoever
  // asked: other processes' writes count too).
  std::optional<uint64_t> device_write_bytes;
  uint64_t peak_rss_bytes = 0;           // during it
  std::vector<std::pair<std::string, double>> engine_stats;  // afterwards
  std::vector<GrowthSample> series;                          // growth only

  double ops_per_s() const { return seconds > 0 ? ops / seconds : 0; }
  double space_amplification() const;
  double write_amplification() const;  // 0 when nothing was written
  // The device's written bytes over the key and value bytes: -1 when
  // unknown, 0 when nothing was written.
  double device_write_amplification() const;
  double device_reads_per_op() const;  // -1 when unknown
  double read_bytes_per_op() const;
};

class Runner {
 public:
  // REQUIRES: `engine` outlives the Runner.
  Runner(const EngineInfo& engine, const RunConfig& config);
  ~Runner();

  // Runs one workload (a name from BenchmarkNames()). InvalidArgument for an
  // unknown name; the engine's first error otherwise (a missing key is not
  // an error). `progress` is called with a line now and then on long runs.
  absl::StatusOr<Result> Run(const std::string& benchmark,
                             const std::function<void(const std::string&)>&
                                 progress = nullptr);

  // Closes the engine and removes its directory.
  absl::Status Finish();

 private:
  absl::Status CloseEngine();
  absl::Status Reset(uint64_t expected_records, bool sync);
  absl::Status Reopen(uint64_t expected_records, bool sync);
  absl::Status Ensure(bool sync);
  // Runs `ops` calls of `op(thread, i)` over `threads` threads, thread t
  // taking i in [t * ops / T, (t + 1) * ops / T), timing each call; counts
  // the calls that returned OK in *found. The wall time from the moment all
  // threads are ready, or the first error other than NotFound (the threads
  // then stop).
  absl::StatusOr<double> Parallel(uint64_t ops, int threads,
                  const std::function<absl::Status(int, uint64_t)>& op,
                  LatencyHistogram* latency, uint64_t* found);
  absl::Status Call(const std::function<absl::Status()>& fn);
  absl::Status Fill(Result* r, bool sequential, uint64_t n, int threads);
  absl::Status Growth(Result* r,
                      const std::function<void(const std::string&)>& progress);

  const EngineInfo& info_;
  const RunConfig config_;
  const std::string dir_;
  const KeySpace keys_;
  const KeySpace delete_order_;
  const ValueSource values_;
  std::unique_ptr<KvEngine> engine_;
  std::mutex serial_;  // around every call of an engine not thread_safe()
  uint64_t records_ = 0;
  uint64_t expected_ = 0;
  bool open_sync_ = false;
  // The workloads' threads: this one and the pool's, the same for every
  // workload.
  WorkerPool pool_;
};

}  // namespace roundtable::kvbench

#endif  // ROUNDTABLE_BENCH_KVBENCH_RUNNER_H_
