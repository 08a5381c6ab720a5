// Power loss: seeded random workloads (puts, deletes, batches, syncs,
// checkpoints; growth, shrinking and the stash) run on a table whose four
// files sit behind fault-injection devices. The power is cut at a random
// device operation (anywhere: in a log append, a distribute, a checkpoint's
// journal or in-place writes); every unsynced write is then dropped, or a
// random subset kept, with one block torn; then again inside the recovery
// that follows. The table must reopen to a state
// of the acknowledged history that holds every durable write: exactly the
// state after some prefix of the operations, at least up to the last one
// made durable. A failure prints its seed; RT_POWER_LOSS_SEED=s reruns that
// one seed, RT_POWER_LOSS_RUNS=n sets how many runs the long variant makes.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/internal/table_impl.h"
#include "gtest/gtest.h"
#include "io/fault_injection_device.h"

namespace roundtable {
namespace {

using Model = std::map<std::string, std::string>;

// The files of one table behind fault-injection devices that outlive it.
// Mutating device operations (writes, syncs, resizes) are counted; from
// operation `cut_at` on, every operation fails, as after a power cut.
class PowerRig {
 public:
  void Arm(uint64_t cut_at) { cut_at_ = cut_at; }
  // Cuts the power now.
  void Cut() { cut_at_ = 0; }
  // Each sync also sleeps this long, as a disk's would take.
  void SetSyncDelay(std::chrono::microseconds delay) { sync_delay_ = delay; }
  uint64_t mutations() const { return mutations_; }
  bool cut() const { return mutations_ >= cut_at_; }

  // Opens the table at `dir` with every file under this rig.
  absl::StatusOr<std::unique_ptr<Table>> Open(const Options& options,
                                              const std::string& dir) {
    return Table::Impl::Open(options, dir, Opener());
  }

  internal::FileOpener Opener() {
    return [this](const std::string& path, const io::DeviceOptions& options)
               -> absl::StatusOr<std::unique_ptr<io::BlockDevice>> {
      auto inner = io::OpenBlockDevice(path, options);
      if (!inner.ok()) return inner.status();
      devices_.push_back(
          std::make_unique<io::FaultInjectionDevice>(std::move(*inner)));
      return std::unique_ptr<io::BlockDevice>(
          new CutDevice(this, devices_.back().get()));
    };
  }

  // The power loss itself, on every file; then the devices are released.
  absl::Status LosePower(const io::FaultInjectionDevice::PowerLoss& how) {
    for (auto& device : devices_) {
      auto report = device->LosePower(how);
      if (!report.ok()) return report.status();
    }
    devices_.clear();
    return absl::OkStatus();
  }

 private:
  // Forwards to a rig's fault-injection device until the cut.
  class CutDevice final : public io::BlockDevice {
   public:
    CutDevice(PowerRig* rig, io::FaultInjectionDevice* inner)
        : BlockDevice(inner->path()), rig_(rig), inner_(inner) {}
    const io::Capabilities& capabilities() const override {
      return inner_->capabilities();
    }
    uint64_t num_blocks() const override { return inner_->num_blocks(); }

   protected:
    absl::Status DoRead(uint64_t block, std::span<std::byte> buffer) override {
      if (rig_->cut()) return Dead();
      return inner_->Read(block, buffer);
    }
    absl::Status DoWrite(uint64_t block,
                         std::span<const std::byte> buffer) override {
      if (rig_->Tick()) return Dead();
      return inner_->Write(block, buffer);
    }
    absl::Status DoSync() override {
      if (rig_->Tick()) return Dead();
      // The sync takes effect at its start; writes made while it lasts are
      // not covered.
      absl::Status s = inner_->Sync();
      std::this_thread::sleep_for(rig_->sync_delay_);
      return s;
    }
    absl::Status DoResize(uint64_t num_blocks) override {
      if (rig_->Tick()) return Dead();
      return inner_->Resize(num_blocks);
    }

   private:
    static absl::Status Dead() {
      return absl::UnavailableError("the power is off");
    }
    PowerRig* const rig_;
    io::FaultInjectionDevice* const inner_;
  };

  // Counts one mutation; true when the power is off for it.
  bool Tick() { return ++mutations_ >= cut_at_; }

  std::vector<std::unique_ptr<io::FaultInjectionDevice>> devices_;
  std::atomic<uint64_t> mutations_{0};
  std::atomic<uint64_t> cut_at_{UINT64_MAX};
  std::chrono::microseconds sync_delay_{0};
};

// A scratch directory in memory where there is one (fsync is then free).
std::string ScratchDir(uint64_t seed) {
  const std::string base =
      access("/dev/shm", W_OK) == 0 ? "/dev/shm" : testing::TempDir();
  return absl::StrCat(base, "/rt_power_", getpid(), "_", seed);
}

// What the runs exercised, summed over them.
struct Coverage {
  uint64_t runs = 0;
  uint64_t grows = 0, shrinks = 0, checkpoints = 0, stash_records = 0;
  uint64_t buffered_records = 0;  // puts in the write buffer at the cut
  uint64_t values = 0;            // values out of line at the cut
  uint64_t written_ahead = 0;     // blocks written ahead of a checkpoint
  uint64_t replayed = 0;          // runs that replayed log records
  uint64_t journal_applied = 0;   // runs that applied a journal
  uint64_t lost_unsynced = 0;     // runs that lost acknowledged writes
};

// One seeded run. `cut_at` 0: no cut (the counting pass); returns the
// number of device mutations the workload made.
class Run {
 public:
  explicit Run(uint64_t seed) : seed_(seed), dir_(ScratchDir(seed)) {
    std::mt19937_64 rng(seed);
    options_.block_size = rng() % 2 ? 512 : 1024;
    options_.s0 = uint64_t{1} << (rng() % 3);
    options_.epsilon = rng() % 2 ? 0.1 : 0.25;
    const uint64_t caches[] = {0, 4096, 64 * 1024};
    options_.block_cache_bytes = caches[rng() % 3];
    const uint64_t checkpoints[] = {2048, 8192, 64 * 1024};
    options_.checkpoint_bytes = checkpoints[rng() % 3];
    num_ops_ = 40 + rng() % 260;
    keys_ = rng() % 2 ? 24 : 120;
    max_value_ = options_.block_size == 512 ? 100 : 220;
    // No write buffer, one drained all the time, one drained now and then,
    // one never drained (its copy outlives every checkpoint).
    const uint64_t buffers[] = {0, 1024, 8192, 1 << 20};
    options_.write_buffer_bytes = buffers[rng() % 4];
    // Checkpoints every 16 KiB of values written, or only by the log and
    // the values freed.
    options_.value_checkpoint_bytes = rng() % 2 ? 16 * 1024 : 1 << 30;
  }

  // The workload with the power cut at mutation `cut_at` (0: never), on a
  // new table or (`fresh` false) on the one the last Verify recovered;
  // returns the mutations made.
  uint64_t Execute(uint64_t cut_at, Coverage* coverage, bool fresh) {
    if (fresh) {
      EXPECT_TRUE(DestroyTable(dir_).ok());
      history_.assign(1, Model());
    }
    PowerRig rig;
    if (cut_at > 0) rig.Arm(cut_at);
    Options o = options_;
    durable_ = 0;
    pending_.reset();
    std::mt19937_64 rng(seed_ * 7919 + (fresh ? 1 : 2));
    {
      auto table = rig.Open(o, dir_);
      if (table.ok()) {
        bool alive = true;
        for (uint64_t i = 0; i < num_ops_ && alive; ++i) {
          alive = Step(**table, i, rng);
        }
        if (coverage != nullptr) {
          const TableStats st = (*table)->GetStats();
          coverage->grows += st.logical.grows;
          coverage->shrinks += st.logical.shrinks;
          coverage->checkpoints += st.checkpoints;
          coverage->stash_records += st.stash_records;
          coverage->buffered_records += st.buffered_records;
          coverage->written_ahead += st.written_ahead;
          coverage->values += st.value_count;
        }
        // Close checkpoints: the cut may fall there too.
        if (alive) Durable((*table)->Close());
      } else {
        EXPECT_TRUE(rig.cut()) << table.status();
      }
    }
    const uint64_t made = rig.mutations();
    std::mt19937_64 loss_rng(seed_ * 31 + 7);
    io::FaultInjectionDevice::PowerLoss how;
    how.keep_random_subset = loss_rng() % 3 != 0;
    how.tear_one = how.keep_random_subset && loss_rng() % 2;
    how.seed = loss_rng();
    EXPECT_TRUE(rig.LosePower(how).ok());
    return made;
  }

  // Opens the crashed table with the power cut at its `cut_at`-th mutation:
  // inside the recovery (a journal laid over the files, the log replayed
  // and continued, a checkpoint), or right after it when the recovery makes
  // fewer. Every write unsynced at the cut is dropped, or a random subset
  // kept with one block torn; Verify then opens what is left.
  void CutDuringRecovery(uint64_t cut_at) {
    PowerRig rig;
    rig.Arm(cut_at);
    Options o = options_;
    {
      auto table = rig.Open(o, dir_);
      if (table.ok()) {
        rig.Cut();
        table->reset();
      } else {
        EXPECT_TRUE(rig.cut()) << table.status();
      }
    }
    std::mt19937_64 loss_rng(seed_ * 131 + cut_at);
    io::FaultInjectionDevice::PowerLoss how;
    how.keep_random_subset = loss_rng() % 3 != 0;
    how.tear_one = how.keep_random_subset && loss_rng() % 2;
    how.seed = loss_rng();
    EXPECT_TRUE(rig.LosePower(how).ok());
  }

  // Reopens after the power loss and compares with the history. Unless
  // `last`, the power is then cut again, right after the recovery (which
  // leaves the recovered writes held and the log continued), and the
  // recovered state becomes the history's start for the next Execute.
  void Verify(Coverage* coverage, bool last) {
    PowerRig rig;
    Options o = options_;
    auto table = rig.Open(o, dir_);
    ASSERT_TRUE(table.ok()) << (last ? "second recovery: " : "first recovery: ")
                            << table.status();
    const TableStats st = (*table)->GetStats();
    if (st.recovered_records > 0) ++coverage->replayed;
    if (st.recovered_journal) ++coverage->journal_applied;
    Model found;
    auto it = (*table)->NewIterator();
    for (; it->Valid(); it->Next()) {
      EXPECT_TRUE(found.emplace(it->key(), it->value()).second)
          << "key twice: " << it->key();
    }
    ASSERT_TRUE(it->status().ok()) << it->status();
    for (uint64_t k = 0; k < keys_; ++k) {
      const std::string key = Key(k);
      auto got = (*table)->Get(key);
      auto in = found.find(key);
      if (in == found.end()) {
        EXPECT_TRUE(absl::IsNotFound(got.status())) << key << got.status();
      } else {
        ASSERT_TRUE(got.ok()) << key << got.status();
        EXPECT_EQ(*got, in->second) << key;
      }
    }
    EXPECT_TRUE((*table)->Check().ok()) << (*table)->Check();
    // The state after some prefix of the acknowledged operations (or of
    // those and the one cut short), at least the durable ones.
    bool matched = false;
    for (size_t n = durable_; n < history_.size() && !matched; ++n) {
      matched = found == history_[n];
    }
    if (!matched && pending_) matched = found == *pending_;
    EXPECT_TRUE(matched) << "recovered " << found.size()
                         << " records, no acknowledged prefix from "
                         << durable_ << " to " << history_.size() - 1
                         << " operations matches";
    if (found != history_.back()) ++coverage->lost_unsynced;
    if (!last) {
      rig.Cut();
      table->reset();
      EXPECT_TRUE(rig.LosePower({}).ok());
      history_.assign(1, found);
      return;
    }
    // The recovered table takes writes again.
    EXPECT_TRUE((*table)->Put("after", "power").ok());
    EXPECT_TRUE((*table)->Close().ok());
    table->reset();
    EXPECT_TRUE(DestroyTable(dir_).ok());
  }

 private:
  std::string Key(uint64_t k) const { return absl::StrCat("k", k); }

  // One operation of the workload; false once the table refuses writes.
  bool Step(Table& table, uint64_t i, std::mt19937_64& rng) {
    // Deletes dominate the second half, so the table shrinks again.
    const bool shrinking = i > num_ops_ / 2;
    const int kind = static_cast<int>(rng() % 100);
    WriteOptions w;
    w.sync = rng() % 10 == 0;
    // One value in six out of line: just past the inline limit, or of a
    // few blocks; its first bytes random, so that no two are alike.
    auto value = [&] {
      if (rng() % 6 != 0) {
        return std::string(rng() % max_value_,
                           static_cast<char>('a' + rng() % 26));
      }
      const size_t sizes[] = {table.max_record_bytes(), 700, 3000, 9000};
      std::string v(sizes[rng() % 4], static_cast<char>('a' + rng() % 26));
      const uint64_t mark = rng();
      std::memcpy(v.data(), &mark, sizeof mark);
      return v;
    };
    if (kind < 4) return Durable(table.Sync());
    if (kind < 7) return Durable(table.Checkpoint());
    WriteBatch batch;
    Model next = history_.back();
    const int n = kind < 17 ? 2 + static_cast<int>(rng() % 6) : 1;
    for (int j = 0; j < n; ++j) {
      const std::string key = Key(rng() % keys_);
      if (rng() % 100 < (shrinking ? 70u : 20u)) {
        batch.Delete(key);
        next.erase(key);
      } else {
        const std::string v = value();
        batch.Put(key, v);
        next[key] = v;
      }
    }
    const absl::Status s = table.Write(batch, w);
    if (!s.ok()) {
      EXPECT_TRUE(absl::IsUnavailable(s)) << s;
      pending_ = std::move(next);
      return false;
    }
    history_.push_back(std::move(next));
    if (w.sync) durable_ = history_.size() - 1;
    return true;
  }

  // A sync, checkpoint or close: on success everything so far is durable;
  // the only failure expected is the power cut.
  bool Durable(const absl::Status& s) {
    if (s.ok()) durable_ = history_.size() - 1;
    EXPECT_TRUE(s.ok() || absl::IsUnavailable(s)) << s;
    return s.ok();
  }

  const uint64_t seed_;
  const std::string dir_;
  Options options_;
  uint64_t num_ops_ = 0;
  uint64_t keys_ = 0;
  uint64_t max_value_ = 0;
  std::vector<Model> history_;  // [n]: the state after n acknowledged writes
  size_t durable_ = 0;          // writes made durable by a sync
  std::optional<Model> pending_;  // the state had the cut write succeeded
};

uint64_t EnvOr(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::strtoull(v, nullptr, 10) : fallback;
}

// Runs seeds first .. first + count - 1 (or only RT_POWER_LOSS_SEED), each
// cut at a mutation drawn from those a whole run makes, and checks that the
// runs together reached every part of the write path.
void RunSeeds(uint64_t first, uint64_t count) {
  if (const uint64_t only = EnvOr("RT_POWER_LOSS_SEED", 0)) {
    first = only;
    count = 1;
  }
  Coverage coverage;
  for (uint64_t seed = first; seed < first + count; ++seed) {
    SCOPED_TRACE(absl::StrCat("seed ", seed,
                              " (rerun with RT_POWER_LOSS_SEED=", seed, ")"));
    Run run(seed);
    // A counting pass, with no cut, measures the run.
    const uint64_t total = run.Execute(0, nullptr, true);
    ASSERT_GT(total, 0u);
    std::mt19937_64 rng(seed);
    // A cut, a cut inside the recovery, recovery, a cut right after it;
    // more writes on the recovered table, a cut, recovery.
    run.Execute(1 + rng() % total, &coverage, true);
    run.CutDuringRecovery(1 + rng() % 96);
    run.Verify(&coverage, false);
    run.Execute(1 + rng() % total, &coverage, false);
    run.Verify(&coverage, true);
    ++coverage.runs;
    if (::testing::Test::HasFailure()) return;
  }
  std::printf(
      "%llu runs: %llu grows, %llu shrinks, %llu checkpoints, %llu stash "
      "records, %llu buffered puts and %llu values out of line at the cut, "
      "%llu blocks written ahead of a checkpoint; %llu replayed the log, "
      "%llu applied a journal, %llu lost unsynced writes\n",
      (unsigned long long)coverage.runs, (unsigned long long)coverage.grows,
      (unsigned long long)coverage.shrinks,
      (unsigned long long)coverage.checkpoints,
      (unsigned long long)coverage.stash_records,
      (unsigned long long)coverage.buffered_records,
      (unsigned long long)coverage.values,
      (unsigned long long)coverage.written_ahead,
      (unsigned long long)coverage.replayed,
      (unsigned long long)coverage.journal_applied,
      (unsigned long long)coverage.lost_unsynced);
  if (count < 100) return;
  EXPECT_GT(coverage.grows, 0u);
  EXPECT_GT(coverage.shrinks, 0u);
  EXPECT_GT(coverage.checkpoints, 0u);
  EXPECT_GT(coverage.stash_records, 0u);
  EXPECT_GT(coverage.buffered_records, 0u);
  EXPECT_GT(coverage.values, 0u);
  EXPECT_GT(coverage.written_ahead, 0u);
  EXPECT_GT(coverage.replayed, 0u);
  EXPECT_GT(coverage.journal_applied, 0u);
  EXPECT_GT(coverage.lost_unsynced, 0u);
}

#ifndef RT_POWER_LOSS_RUNS
#define RT_POWER_LOSS_RUNS 1000
#endif

TEST(TablePowerLossTest, EveryCutRecoversToADurablePrefix) {
  RunSeeds(1, EnvOr("RT_POWER_LOSS_RUNS", RT_POWER_LOSS_RUNS));
}

// Group commit under power loss: writers on four threads put their own keys,
// every third with sync, on files whose syncs take a millisecond, until the
// power is cut at a random moment and every unsynced write dropped. Every
// write acknowledged with sync is there, byte-exact, and the writers shared
// syncs: fewer log syncs than synced writes. (Also the concurrent-writer
// test the TSan build runs.)
TEST(TablePowerLossTest, ConcurrentSyncedWritersShareSyncsAndLoseNothing) {
  constexpr int kThreads = 4, kWrites = 400;
  auto value = [](int t, int i) {
    return std::string(20 + (t * 31 + i) % 80, static_cast<char>('a' + t));
  };
  uint64_t synced_writes = 0, log_syncs = 0;
  for (uint64_t round = 1; round <= 5; ++round) {
    SCOPED_TRACE(absl::StrCat("round ", round));
    const std::string dir = ScratchDir(1000000 + round);
    ASSERT_TRUE(DestroyTable(dir).ok());
    PowerRig rig;
    Options o;
    o.block_size = 1024;
    o.s0 = 4;
    o.checkpoint_bytes = 64 * 1024;
    std::vector<std::vector<bool>> synced(kThreads,
                                          std::vector<bool>(kWrites, false));
    {
      auto table = rig.Open(o, dir);
      ASSERT_TRUE(table.ok()) << table.status();
      const uint64_t syncs_before = (*table)->GetStats().physical_wal.syncs;
      rig.SetSyncDelay(std::chrono::microseconds(1000));
      std::vector<std::thread> threads;
      for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
          for (int i = 0; i < kWrites; ++i) {
            WriteOptions w;
            w.sync = i % 3 == 0;
            const absl::Status s =
                (*table)->Put(absl::StrCat("t", t, "-", i), value(t, i), w);
            if (!s.ok()) {
              EXPECT_TRUE(rig.cut()) << s;
              return;
            }
            synced[t][i] = w.sync;
          }
        });
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20 * round));
      rig.Cut();
      for (auto& thread : threads) thread.join();
      log_syncs += (*table)->GetStats().physical_wal.syncs - syncs_before;
    }
    ASSERT_TRUE(rig.LosePower({}).ok());
    auto table = Table::Open(Options{.block_size = 1024, .s0 = 4}, dir);
    ASSERT_TRUE(table.ok()) << table.status();
    for (int t = 0; t < kThreads; ++t) {
      for (int i = 0; i < kWrites; ++i) {
        if (!synced[t][i]) continue;
        ++synced_writes;
        auto got = (*table)->Get(absl::StrCat("t", t, "-", i));
        ASSERT_TRUE(got.ok()) << "t" << t << "-" << i << ": " << got.status();
        EXPECT_EQ(*got, value(t, i));
      }
    }
    EXPECT_TRUE((*table)->Check().ok());
    ASSERT_TRUE((*table)->Close().ok());
    ASSERT_TRUE(DestroyTable(dir).ok());
  }
  std::printf("%llu synced writes, %llu log syncs\n",
              (unsigned long long)synced_writes, (unsigned long long)log_syncs);
  EXPECT_GT(synced_writes, 0u);
  EXPECT_LT(log_syncs, synced_writes);
}

}  // namespace
}  // namespace roundtable
