#include "bench/kvbench/runner.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <latch>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace roundtable::kvbench {
namespace {

using Clock = std::chrono::steady_clock;

uint64_t Nanos(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(b - a).count();
}

std::string_view KeyView(const std::array<char, kKeyBytes>& key) {
  return std::string_view(key.data(), key.size());
}

}  // namespace

const std::vector<std::string>& BenchmarkNames() {
  static const std::vector<std::string> names = {
      "fillseq",   "fillrandom",  "readrandom",
      "readzipf",  "readmissing", "overwrite",
      "readrandomwriterandom",    "readseq",
      "readcold",  "deleterandom", "growth",
      "fillsync"};
  return names;
}

double Result::space_amplification() const {
  const double user = static_cast<double>(records) * (kKeyBytes + value_size);
  return user > 0 ? bytes_on_disk / user : 0;
}

double Result::write_amplification() const {
  return user_bytes_written > 0
             ? static_cast<double>(io.write_bytes) / user_bytes_written
             : 0;
}

double Result::device_write_amplification() const {
  if (!device_write_bytes.has_value()) return -1;
  return user_bytes_written > 0
             ? static_cast<double>(*device_write_bytes) / user_bytes_written
             : 0;
}

double Result::device_reads_per_op() const {
  if (!device_reads.has_value() || ops == 0) return -1;
  return static_cast<double>(*device_reads) / ops;
}

double Result::read_bytes_per_op() const {
  return ops > 0 ? static_cast<double>(io.read_bytes) / ops : 0;
}

Runner::Runner(const EngineInfo& engine, const RunConfig& config)
    : info_(engine),
      config_(config),
      dir_(config.db_dir + "/" + engine.name),
      keys_(config.num, config.seed),
      delete_order_(config.num, config.seed + 1),
      values_(config.value_size, config.seed) {}

Runner::~Runner() { Finish().IgnoreError(); }

absl::Status Runner::Finish() {
  absl::Status s = CloseEngine();
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
  return s;
}

absl::Status Runner::CloseEngine() {
  if (!engine_) return absl::OkStatus();
  absl::Status s = engine_->Close();
  engine_.reset();
  return s;
}

absl::Status Runner::Reopen(uint64_t expected_records, bool sync) {
  absl::Status s = CloseEngine();
  if (!s.ok()) return s;
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec) {
    return absl::InternalError(
        absl::StrCat("creating ", dir_, ": ", ec.message()));
  }
  EngineOptions options;
  options.dir = dir_;
  options.cache_bytes = config_.cache_bytes;
  options.expected_records = expected_records;
  options.sync = sync;
  options.key_bytes = kKeyBytes;
  options.value_bytes = config_.value_size;
  options.roundtable_s0 = config_.roundtable_s0;
  options.roundtable_write_buffer = config_.roundtable_write_buffer;
  auto engine = info_.open(options);
  if (!engine.ok()) return engine.status();
  engine_ = std::move(*engine);
  expected_ = expected_records;
  open_sync_ = sync;
  return absl::OkStatus();
}

absl::Status Runner::Reset(uint64_t expected_records, bool sync) {
  absl::Status s = CloseEngine();
  if (!s.ok()) return s;
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
  records_ = 0;
  return Reopen(expected_records, sync);
}

absl::Status Runner::Ensure(bool sync) {
  if (engine_ && open_sync_ == sync) return absl::OkStatus();
  return Reopen(expected_ > 0 ? expected_ : config_.num, sync);
}

absl::Status Runner::Call(const std::function<absl::Status()>& fn) {
  if (engine_->thread_safe()) return fn();
  std::lock_guard<std::mutex> lock(serial_);
  return fn();
}

absl::StatusOr<double> Runner::Parallel(uint64_t ops, int threads,
                        const std::function<absl::Status(int, uint64_t)>& op,
                        LatencyHistogram* latency, uint64_t* found) {
  std::vector<LatencyHistogram> hists(threads);
  std::vector<uint64_t> hits(threads, 0);
  // Each thread's first and last clock reading: the wall time runs from the
  // first thread's start to the last thread's end.
  std::vector<Clock::time_point> starts(threads), ends(threads);
  std::atomic<bool> failed{false};
  absl::Status first_error;
  std::mutex error_mu;
  std::latch ready(threads);
  pool_.Run(threads, [&](int t) {
    ready.arrive_and_wait();
    starts[t] = Clock::now();
    Clock::time_point now = starts[t];
    const uint64_t end = ops * (t + 1) / threads;
    for (uint64_t i = ops * t / threads; i < end; ++i) {
      const Clock::time_point before = now;
      absl::Status s = op(t, i);
      now = Clock::now();
      hists[t].Add(Nanos(before, now));
      if (s.ok()) {
        ++hits[t];
      } else if (!absl::IsNotFound(s)) {
        std::lock_guard<std::mutex> lock(error_mu);
        if (first_error.ok()) first_error = s;
        failed = true;
      }
      if (failed.load(std::memory_order_relaxed)) break;
    }
    ends[t] = now;
  });
  const double seconds =
      Nanos(*std::min_element(starts.begin(), starts.end()),
            *std::max_element(ends.begin(), ends.end())) *
      1e-9;
  for (int t = 0; t < threads; ++t) {
    latency->Merge(hists[t]);
    *found += hits[t];
  }
  if (!first_error.ok()) return first_error;
  return seconds;
}

absl::Status Runner::Fill(Result* r, bool sequential, uint64_t n,
                          int threads) {
  const int batch = config_.batch;
  const uint64_t calls = (n + batch - 1) / batch;
  // Each thread's batch, reused from call to call.
  std::vector<std::vector<std::array<char, kKeyBytes>>> batch_keys(threads);
  std::vector<std::vector<KvRecord>> batch_records(threads);
  absl::StatusOr<double> seconds = Parallel(
      calls, threads,
      [&](int t, uint64_t call) {
        const uint64_t first = call * batch;
        const uint64_t last = std::min<uint64_t>(first + batch, n);
        if (batch == 1) {  // no allocation inside the timed call
          const uint64_t index = sequential ? first : keys_.Permute(first);
          const auto key = KeySpace::Key(index);
          return Call([&] {
            return engine_->Put(KeyView(key), values_.Value(index));
          });
        }
        std::vector<std::array<char, kKeyBytes>>& keys = batch_keys[t];
        std::vector<KvRecord>& records = batch_records[t];
        keys.resize(last - first);
        records.clear();
        for (uint64_t i = first; i < last; ++i) {
          const uint64_t index = sequential ? i : keys_.Permute(i);
          keys[i - first] = KeySpace::Key(index);
          records.push_back({KeyView(keys[i - first]), values_.Value(index)});
        }
        return Call([&] { return engine_->PutBatch(records); });
      },
      &r->latency, &r->found);
  if (!seconds.ok()) return seconds.status();
  r->seconds = *seconds;
  r->found = 0;
  r->ops = n;
  r->user_bytes_written = n * (kKeyBytes + config_.value_size);
  records_ = n;
  return absl::OkStatus();
}

absl::Status Runner::Growth(
    Result* r, const std::function<void(const std::string&)>& progress) {
  const uint64_t n = config_.num;
  const Clock::time_point start = Clock::now();
  Clock::time_point sample_start = start;
  GrowthSample sample;
  uint64_t last_report = 0;
  const uint64_t limit_ns = config_.duration_seconds * 1000000000;
  uint64_t i = 0;
  for (; i < n; ++i) {
    const uint64_t index = keys_.Permute(i);
    const auto key = KeySpace::Key(index);
    const Clock::time_point t0 = Clock::now();
    if (limit_ns > 0 && Nanos(start, t0) >= limit_ns) break;
    absl::Status s = engine_->Put(KeyView(key), values_.Value(index));
    const Clock::time_point t1 = Clock::now();
    if (!s.ok()) return s;
    const uint64_t ns = Nanos(t0, t1);
    r->latency.Add(ns);
    ++sample.ops;
    sample.max_ns = std::max(sample.max_ns, ns);
    if (Nanos(sample_start, t1) >= 1000000000) {
      sample.seconds = Nanos(start, t1) * 1e-9;
      sample.records = i + 1;
      sample.bytes_on_disk = BytesOnDisk(dir_);
      r->series.push_back(sample);
      sample = GrowthSample();
      sample_start = Clock::now();
      if (progress && r->series.back().seconds >= last_report + 10) {
        last_report = static_cast<uint64_t>(r->series.back().seconds);
        progress(absl::StrFormat("%s growth: %d of %d records, %.0f s",
                                 info_.name, i + 1, n,
                                 r->series.back().seconds));
      }
    }
  }
  r->seconds = Nanos(start, Clock::now()) * 1e-9;
  if (sample.ops > 0 || r->series.empty()) {  // the last, partial second
    sample.seconds = r->seconds;
    sample.records = i;
    sample.bytes_on_disk = BytesOnDisk(dir_);
    r->series.push_back(sample);
  }
  r->ops = i;
  r->user_bytes_written = i * (kKeyBytes + config_.value_size);
  records_ = i;
  if (i < n && progress) {
    progress(absl::StrFormat("%s growth: stopped by --duration at %d of %d "
                             "records",
                             info_.name, i, n));
  }
  return absl::OkStatus();
}

absl::StatusOr<Result> Runner::Run(
    const std::string& benchmark,
    const std::function<void(const std::string&)>& progress) {
  if (std::find(BenchmarkNames().begin(), BenchmarkNames().end(),
                benchmark) == BenchmarkNames().end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown benchmark \"", benchmark, "\""));
  }
  Result r;
  r.engine = info_.name;
  r.benchmark = benchmark;
  r.threads = config_.threads;
  r.batch = config_.batch;
  r.value_size = config_.value_size;
  const uint64_t reads = config_.reads > 0 ? config_.reads : config_.num;
  const int threads = config_.threads;

  // Set-up outside the measurement.
  absl::Status s;
  if (benchmark == "fillseq" || benchmark == "fillrandom") {
    s = Reset(config_.num, config_.sync);
  } else if (benchmark == "growth") {
    s = Reset(0, config_.sync);
  } else if (benchmark == "fillsync") {
    s = Reset(config_.num, true);
  } else if (benchmark == "readcold") {
    // Everything written and out of the page cache, the engine reopened
    // with empty caches.
    s = CloseEngine();
    if (s.ok()) s = DropPageCache(dir_);
    if (s.ok()) {
      s = Reopen(expected_ > 0 ? expected_ : config_.num, config_.sync);
    }
  } else {
    s = Ensure(config_.sync);
  }
  if (!s.ok()) return s;

  ResetPeakRss();
  const ProcIo io_before = ReadProcIo();
  const absl::StatusOr<DeviceCounters> device_before = ReadDeviceCounters(dir_);
  const uint64_t present = std::max<uint64_t>(records_, 1);

  // The parallel workloads' wall time, or their first error.
  absl::StatusOr<double> seconds = 0.0;
  {
    if (benchmark == "fillseq" || benchmark == "fillrandom") {
      s = Fill(&r, benchmark == "fillseq", config_.num, threads);
    } else if (benchmark == "fillsync") {
      const uint64_t n = config_.sync_writes > 0
                             ? config_.sync_writes
                             : std::max<uint64_t>(config_.num / 100, 1);
      s = Fill(&r, false, n, threads);
    } else if (benchmark == "growth") {
      s = Growth(&r, progress);
    } else if (benchmark == "readrandom" || benchmark == "readcold" ||
               benchmark == "readmissing" || benchmark == "readzipf") {
      const bool missing = benchmark == "readmissing";
      const bool zipf = benchmark == "readzipf";
      std::vector<std::mt19937_64> rngs;
      std::vector<std::unique_ptr<ZipfGenerator>> zipfs;
      std::vector<std::string> values(threads);
      for (int t = 0; t < threads; ++t) {
        rngs.emplace_back(config_.seed * 1000 + t);
        if (zipf) {
          zipfs.push_back(std::make_unique<ZipfGenerator>(
              present, config_.zipf_theta, config_.seed * 1000 + t));
        }
      }
      seconds = Parallel(
          reads, threads,
          [&](int t, uint64_t) {
            // The stored keys are those of the first records_ indices in
            // the fill order (all of [0, num) after a whole fill; a growth
            // cut short by --duration stored fewer).
            const uint64_t index = keys_.Permute(
                zipf ? zipfs[t]->Next() : rngs[t]() % present);
            const auto key = missing ? KeySpace::MissingKey(index)
                                     : KeySpace::Key(index);
            return Call([&] { return engine_->Get(KeyView(key), &values[t]); });
          },
          &r.latency, &r.found);
      r.ops = reads;
    } else if (benchmark == "overwrite" ||
               benchmark == "readrandomwriterandom") {
      const int read_percent =
          benchmark == "overwrite" ? 0 : config_.read_write_percent;
      const uint64_t ops = benchmark == "overwrite" ? config_.num : reads;
      std::vector<std::mt19937_64> rngs;
      std::vector<std::string> values(threads);
      std::vector<uint64_t> writes(threads, 0);
      for (int t = 0; t < threads; ++t) rngs.emplace_back(config_.seed * 7 + t);
      uint64_t ok = 0;
      seconds = Parallel(
          ops, threads,
          [&](int t, uint64_t) {
            const uint64_t index = keys_.Permute(rngs[t]() % present);
            const auto key = KeySpace::Key(index);
            if (static_cast<int>(rngs[t]() % 100) < read_percent) {
              return Call(
                  [&] { return engine_->Get(KeyView(key), &values[t]); });
            }
            ++writes[t];
            return Call([&] {
              return engine_->Put(KeyView(key), values_.Value(index + ops));
            });
          },
          &r.latency, &ok);
      uint64_t written = 0;
      for (uint64_t w : writes) written += w;
      r.found = ok - written;  // reads that found their key
      r.ops = ops;
      r.user_bytes_written = written * (kKeyBytes + config_.value_size);
    } else if (benchmark == "deleterandom") {
      const uint64_t n = records_;
      seconds = Parallel(
          n, threads,
          [&](int, uint64_t i) {
            const auto key = KeySpace::Key(delete_order_.Permute(i));
            return Call([&] { return engine_->Delete(KeyView(key)); });
          },
          &r.latency, &r.found);
      r.found = 0;
      r.ops = n;
      records_ = 0;
    } else if (benchmark == "readseq") {
      const Clock::time_point start = Clock::now();
      auto n = engine_->Scan();
      const Clock::time_point end = Clock::now();
      if (!n.ok()) return n.status();
      r.seconds = Nanos(start, end) * 1e-9;
      r.latency.Add(Nanos(start, end));
      r.ops = *n;
      r.found = *n;
    }
  }
  if (!s.ok()) return s;
  if (!seconds.ok()) return seconds.status();
  if (*seconds > 0) r.seconds = *seconds;

  r.peak_rss_bytes = PeakRssBytes();
  // What the engine has written once its writes are in its files and
  // synced (an engine with a large cache of its own, or blocks it holds
  // until a checkpoint, may otherwise not have written them yet): untimed,
  // but counted.
  s = engine_->Settle();
  if (!s.ok()) return s;
  const ProcIo io_after = ReadProcIo();
  r.io.read_bytes = io_after.read_bytes - io_before.read_bytes;
  r.io.write_bytes = io_after.write_bytes - io_before.write_bytes;
  r.io.read_syscalls = io_after.read_syscalls - io_before.read_syscalls;
  const absl::StatusOr<DeviceCounters> device_after = ReadDeviceCounters(dir_);
  if (device_before.ok() && device_after.ok()) {
    r.device_reads = device_after->reads - device_before->reads;
    r.device_write_bytes =
        device_after->written_bytes - device_before->written_bytes;
  }
  r.records = records_;
  r.bytes_on_disk = BytesOnDisk(dir_);
  r.engine_stats = engine_->Stats();
  return r;
}

}  // namespace roundtable::kvbench
