#include "io/memory_device.h"

#include <atomic>
#include <cstring>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "io/base/mutex.h"

namespace roundtable::io {
namespace {

class MemoryDevice final : public BlockDevice {
 public:
  explicit MemoryDevice(uint32_t block_size) : BlockDevice("memory") {
    caps_.backend = "memory";
    caps_.block_size = block_size;
  }

  const Capabilities& capabilities() const override { return caps_; }
  uint64_t num_blocks() const override { return num_blocks_.load(); }

 protected:
  absl::Status DoRead(uint64_t block, std::span<std::byte> buffer) override {
    ReaderMutexLock lock(&mu_);
    std::memcpy(buffer.data(), bytes_.data() + block * caps_.block_size,
                buffer.size());
    return absl::OkStatus();
  }

  absl::Status DoWrite(uint64_t block,
                       std::span<const std::byte> buffer) override {
    MutexLock lock(&mu_);
    std::memcpy(bytes_.data() + block * caps_.block_size, buffer.data(),
                buffer.size());
    return absl::OkStatus();
  }

  absl::Status DoSync() override { return absl::OkStatus(); }

  absl::Status DoResize(uint64_t num_blocks) override {
    MutexLock lock(&mu_);
    bytes_.resize(num_blocks * caps_.block_size);
    num_blocks_ = num_blocks;
    return absl::OkStatus();
  }

 private:
  Capabilities caps_;
  std::atomic<uint64_t> num_blocks_{0};
  SharedMutex mu_;
  std::vector<std::byte> bytes_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

std::unique_ptr<BlockDevice> NewMemoryDevice(uint32_t block_size) {
  return std::make_unique<MemoryDevice>(block_size);
}

}  // namespace roundtable::io
