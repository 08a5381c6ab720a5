// A BlockDevice wrapper that injects faults, for the crash and corruption
// tests of everything above the io layer: fail the Nth read, write or sync;
// lose power (drop every write not covered by a completed Sync, or keep an
// arbitrary subset of them and tear one at 512-byte sector granularity); flip
// bits in a stored block.
//
// It remembers, for every block written since the last successful Sync, the
// block's durable content (what the last Sync left, or "absent" for a block
// past the durable size), so that a simulated power loss can put it back.
//
// Thread-safety: as BlockDevice; one mutex serialises every call, so batches
// run one transfer at a time.
#ifndef ROUNDTABLE_IO_FAULT_INJECTION_DEVICE_H_
#define ROUNDTABLE_IO_FAULT_INJECTION_DEVICE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "io/block_device.h"
#include "io/base/mutex.h"

namespace roundtable::io {

class FaultInjectionDevice final : public BlockDevice {
 public:
  // Takes `inner` over; its current contents and size count as durable.
  explicit FaultInjectionDevice(std::unique_ptr<BlockDevice> inner);

  enum class Op { kRead, kWrite, kSync };

  // The n-th operation of kind `op` from now (n = 1: the next one) fails with
  // `error` and transfers nothing; it fires once. Each request of a batch
  // counts as one operation; the requests before the failing one are carried
  // out, those after it are not. Replaces an earlier arming of the same kind.
  // REQUIRES: n >= 1, !error.ok().
  void FailNth(Op op, uint64_t n, absl::Status error);

  struct PowerLoss {
    // false: every unsynced write is dropped. true: each unsynced block that
    // exists now is kept or dropped by a coin toss drawn from `seed` (a block
    // truncated since its write goes back to its durable bytes).
    bool keep_random_subset = false;
    // Also tear one unsynced block that exists now (chosen from `seed`): each
    // 512-byte sector holds either its new or its durable bytes, at least one
    // of each. Needs a block size of 1024 or more.
    bool tear_one = false;
    uint64_t seed = 0;
  };
  // What a power loss did, block by block.
  struct PowerLossReport {
    std::vector<uint64_t> kept;     // unsynced blocks whose new bytes survived
    std::vector<uint64_t> dropped;  // unsynced blocks put back as durable
    std::optional<uint64_t> torn;   // the block torn, if any
    std::vector<bool> torn_sectors_new;  // for it: sector i holds new bytes
    uint64_t num_blocks = 0;             // the size after the power loss
  };
  // Simulates a power cut now: afterwards the device holds only what
  // survived, and that state counts as durable. The size returns to the
  // durable size, or to just past the highest kept block if that is larger.
  absl::StatusOr<PowerLossReport> LosePower(const PowerLoss& how);

  // Flips bit `bit` (0 = the lowest bit of the first byte) of the stored
  // block, as silent corruption of the medium would; not counted as a write.
  absl::Status FlipBit(uint64_t block, uint64_t bit);

  // Blocks written since the last successful Sync.
  std::vector<uint64_t> UnsyncedBlocks() const;

  const Capabilities& capabilities() const override { return caps_; }
  uint64_t num_blocks() const override { return inner_->num_blocks(); }
  BlockDevice& inner() { return *inner_; }

 protected:
  absl::Status DoRead(uint64_t block, std::span<std::byte> buffer) override;
  absl::Status DoWrite(uint64_t block,
                       std::span<const std::byte> buffer) override;
  absl::Status DoSync() override;
  absl::Status DoResize(uint64_t num_blocks) override;

 private:
  struct Armed {
    uint64_t remaining = 0;  // operations until it fires; 0: not armed
    absl::Status error;
  };
  // Counts one operation of kind `op`; the armed error when it fires.
  absl::Status Tick(Op op) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Saves the durable content of `block` before its first change since the
  // last Sync.
  absl::Status RememberDurable(uint64_t block)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::unique_ptr<BlockDevice> inner_;
  Capabilities caps_;
  mutable Mutex mu_;
  Armed armed_[3] ABSL_GUARDED_BY(mu_);
  uint64_t durable_blocks_ ABSL_GUARDED_BY(mu_);
  // Block -> its bytes at the last Sync; nullopt when it was past the end.
  std::map<uint64_t, std::optional<AlignedBuffer>> durable_
      ABSL_GUARDED_BY(mu_);
};

}  // namespace roundtable::io

#endif  // ROUNDTABLE_IO_FAULT_INJECTION_DEVICE_H_
