#include "io/mmap_device.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <mutex>
#include <shared_mutex>

#include "absl/strings/str_cat.h"
#include "io/io_error.h"
#include "io/posix_device.h"
#include "io/status_macros.h"

namespace roundtable::io {
namespace {

class MmapDevice : public BlockDevice {
 public:
  MmapDevice(const std::string& path, uint32_t block_size, int fd)
      : BlockDevice(path), fd_(fd) {
    caps_.backend = "mmap";
    caps_.block_size = block_size;
    caps_.partial_writes = true;
  }
  ~MmapDevice() override {
    if (base_ != nullptr) munmap(base_, mapped_bytes_);
    close(fd_);
  }

  const Capabilities& capabilities() const override { return caps_; }
  uint64_t num_blocks() const override { return num_blocks_.load(); }

  // Maps the file's first `num_blocks` blocks (its size, rounded down).
  absl::Status Map(uint64_t num_blocks) {
    std::unique_lock<std::shared_mutex> lock(mu_);
    return RemapLocked(num_blocks);
  }

 protected:
  absl::Status DoRead(uint64_t block, std::span<std::byte> buffer) override {
    std::shared_lock<std::shared_mutex> lock(mu_);
    RT_RETURN_IF_ERROR(CheckMapped(block, buffer.size()));
    std::memcpy(buffer.data(), base_ + block * caps_.block_size,
                buffer.size());
    return absl::OkStatus();
  }
  absl::Status DoWrite(uint64_t block,
                       std::span<const std::byte> buffer) override {
    std::shared_lock<std::shared_mutex> lock(mu_);
    RT_RETURN_IF_ERROR(CheckMapped(block, buffer.size()));
    std::memcpy(base_ + block * caps_.block_size, buffer.data(),
                buffer.size());
    return absl::OkStatus();
  }
  absl::Status DoWriteChanged(uint64_t block, std::span<const std::byte> buffer,
                              size_t begin, size_t end) override {
    std::shared_lock<std::shared_mutex> lock(mu_);
    RT_RETURN_IF_ERROR(CheckMapped(block, buffer.size()));
    std::memcpy(base_ + block * caps_.block_size + begin,
                buffer.data() + begin, end - begin);
    return absl::OkStatus();
  }
  absl::Status DoSync() override {
    std::shared_lock<std::shared_mutex> lock(mu_);
    ledger().CountSubmission();
    if (mapped_bytes_ > 0 && msync(base_, mapped_bytes_, MS_SYNC) != 0) {
      return FileError(errno, "msync", path());
    }
    // The size, and anything msync left (it is fsync of the range here).
    if (fdatasync(fd_) != 0) return FileError(errno, "fdatasync", path());
    return absl::OkStatus();
  }
  // Stores into a shared mapping dirty the file's pages in the page cache,
  // which sync_file_range writes back as it does those of pwrite.
  absl::Status DoWriteBack() override {
    ledger().CountSubmission();
    StartWriteBack(fd_);
    return absl::OkStatus();
  }
  absl::Status DoResize(uint64_t num_blocks) override {
    std::unique_lock<std::shared_mutex> lock(mu_);
    const off_t bytes = static_cast<off_t>(num_blocks * caps_.block_size);
    if (ftruncate(fd_, bytes) != 0) return FileError(errno, "ftruncate", path());
    const off_t mapped = static_cast<off_t>(mapped_bytes_);
    if (bytes > mapped) {
      // The blocks added are reserved now, so that they cannot run out
      // later, when a store into the mapping would find no space and raise
      // SIGBUS; the blocks already mapped were reserved when they were
      // added. A filesystem without fallocate leaves the file sparse, as
      // ftruncate made it.
      const int rc = posix_fallocate(fd_, mapped, bytes - mapped);
      if (rc != 0 && rc != EOPNOTSUPP && rc != EINVAL) {
        return FileError(rc, "fallocate", path());
      }
    }
    RT_RETURN_IF_ERROR(RemapLocked(num_blocks));
    if (bytes > mapped) {
      // The new pages are faulted in writable now, in one call, rather
      // than one fault at a time by the stores that fill them. (Advice
      // only: a kernel without MADV_POPULATE_WRITE faults them later.)
      madvise(base_ + mapped, bytes - mapped, MADV_POPULATE_WRITE);
    }
    return absl::OkStatus();
  }

 private:
  absl::Status CheckMapped(uint64_t block, size_t size) const {
    if ((block + size / caps_.block_size) * caps_.block_size > mapped_bytes_) {
      return absl::OutOfRangeError(absl::StrCat(
          "mmap ", path(), " block ", block, ": past the mapped blocks"));
    }
    return absl::OkStatus();
  }

  absl::Status RemapLocked(uint64_t num_blocks) {
    const size_t bytes = num_blocks * caps_.block_size;
    if (bytes == mapped_bytes_) {
      num_blocks_ = num_blocks;
      return absl::OkStatus();
    }
    std::byte* base = nullptr;
    if (bytes > 0) {
      void* p = mapped_bytes_ > 0
                    ? mremap(base_, mapped_bytes_, bytes, MREMAP_MAYMOVE)
                    : mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED,
                           fd_, 0);
      if (p == MAP_FAILED) {
        return FileError(errno, mapped_bytes_ > 0 ? "mremap" : "mmap", path());
      }
      base = static_cast<std::byte*>(p);
    } else if (mapped_bytes_ > 0) {
      munmap(base_, mapped_bytes_);
    }
    base_ = base;
    mapped_bytes_ = bytes;
    num_blocks_ = num_blocks;
    return absl::OkStatus();
  }

  Capabilities caps_;
  const int fd_;
  std::shared_mutex mu_;  // exclusive: the mapping changes
  std::byte* base_ = nullptr;
  size_t mapped_bytes_ = 0;
  std::atomic<uint64_t> num_blocks_{0};
};

}  // namespace

absl::StatusOr<std::unique_ptr<BlockDevice>> OpenMmapDevice(
    const std::string& path, const DeviceOptions& options) {
  if (options.direct_io) {
    return absl::InvalidArgumentError(absl::StrCat(
        "mmap ", path, ": direct I/O does not go through a mapping"));
  }
  RT_ASSIGN_OR_RETURN(const auto opened, OpenDeviceFile(path, options));
  auto device =
      std::make_unique<MmapDevice>(path, options.block_size, opened.first);
  RT_RETURN_IF_ERROR(device->Map(opened.second / options.block_size));
  return device;
}

}  // namespace roundtable::io
