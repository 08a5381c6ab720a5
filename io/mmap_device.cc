#include "io/mmap_device.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <shared_mutex>
#include <thread>

#include "absl/strings/str_cat.h"
#include "io/base/status_macros.h"
#include "io/io_error.h"
#include "io/posix_device.h"

namespace roundtable::io {
namespace {

// The file device with its writes, where it can, through a shared mapping
// of the file's reserved blocks. Reads are pread (the page cache is the
// mapping's), so that no read ever touches the mapping: reading a hole of
// a full tmpfs through a mapping raises SIGBUS.
class MmapDevice final : public FileDevice {
 public:
  MmapDevice(const std::string& path, const DeviceOptions& options, int fd,
             uint64_t file_bytes)
      : FileDevice(path, options, fd, file_bytes, "mmap",
                   /*parallel_batches=*/false) {
    mutable_capabilities().partial_writes = true;
  }
  ~MmapDevice() override {
    {
      std::lock_guard<std::mutex> lock(advice_mu_);
      stopping_ = true;
    }
    advice_cv_.notify_one();
    if (advisor_.joinable()) advisor_.join();
    if (base_ != nullptr) munmap(base_, mapped_bytes_);
  }

  // Reserves the blocks the file has (a file made elsewhere may be sparse)
  // and maps them. A file system that cannot reserve them, or has no room
  // left, gets no mapping: every write is then a pwrite, which reports a
  // full disk as an error.
  absl::Status Init() {
    std::unique_lock<std::shared_mutex> lock(mu_);
    const uint64_t bytes = num_blocks() * block_size();
    if (bytes == 0 || !Reserve(0, bytes, FALLOC_FL_KEEP_SIZE).ok()) {
      return absl::OkStatus();
    }
    return RemapLocked(bytes);
  }

 protected:
  absl::Status DoWrite(uint64_t block,
                       std::span<const std::byte> buffer) override {
    return DoWriteChanged(block, buffer, 0, buffer.size());
  }
  absl::Status DoWriteChanged(uint64_t block, std::span<const std::byte> buffer,
                              size_t begin, size_t end) override {
    std::shared_lock<std::shared_mutex> lock(mu_);
    if ((block * block_size()) + buffer.size() <= mapped_bytes_) {
      std::memcpy(base_ + block * block_size() + begin, buffer.data() + begin,
                  end - begin);
      return absl::OkStatus();
    }
    return FileDevice::DoWrite(block, buffer);
  }
  absl::Status DoWriteBatch(std::span<const WriteRequest> requests) override {
    for (const WriteRequest& r : requests) {
      RT_RETURN_IF_ERROR(DoWrite(r.block, r.buffer));
    }
    return absl::OkStatus();
  }
  absl::Status DoSync() override {
    {
      std::shared_lock<std::shared_mutex> lock(mu_);
      if (mapped_bytes_ > 0 && msync(base_, mapped_bytes_, MS_SYNC) != 0) {
        return FileError(errno, "msync", path());
      }
    }
    // The size, the pwrites, and anything msync left (it is fsync of the
    // range here).
    return FileDevice::DoSync();
  }
  absl::Status DoResize(uint64_t num_blocks) override {
    std::unique_lock<std::shared_mutex> lock(mu_);
    const uint64_t bytes = num_blocks * block_size();
    const uint64_t old = this->num_blocks() * block_size();
    if (bytes < old) {
      // The mapping first, so that it never reaches past the end of the
      // file (a store there would raise SIGBUS).
      if (mapped_bytes_ > bytes) RT_RETURN_IF_ERROR(RemapLocked(bytes));
      return FileDevice::DoResize(num_blocks);
    }
    // The blocks added are reserved before the file grows to them, so a
    // store into the mapping can never find the disk full; when they cannot
    // be (no room: the resize fails, the size unchanged), or the file
    // system cannot reserve at all (they are written by pwrite), they are
    // not mapped.
    const absl::Status reserved = Reserve(old, bytes - old, 0);
    if (!reserved.ok() && !absl::IsUnimplemented(reserved)) return reserved;
    RT_RETURN_IF_ERROR(FileDevice::DoResize(num_blocks));
    if (!reserved.ok() || mapped_bytes_ != old) return absl::OkStatus();
    return RemapLocked(bytes);
  }
  // The advice runs on a thread of the device's own, started by the first
  // (faulting a window of pages in takes a fraction of a millisecond that
  // the caller need not wait): WillWrite's pages are faulted in writable in
  // one call, rather than one fault at a time by the stores that fill
  // them; DoneWith's leave the process's mapping, a dirty one staying dirty
  // in the page cache (a shared file mapping), so a later sync writes it.
  // Advice only: a store that reaches a page first faults it in itself,
  // and a kernel without MADV_POPULATE_WRITE faults them all that way.
  void DoWillWrite(uint64_t block, uint64_t n) override {
    Queue({block, n, MADV_POPULATE_WRITE});
  }
  void DoDoneWith(uint64_t block, uint64_t n) override {
    Queue({block, n, MADV_DONTNEED});
  }

 private:
  // fallocate of [offset, offset + bytes): Unimplemented where the file
  // system has no fallocate, else its error (ENOSPC: ResourceExhausted),
  // with the file's size as it was.
  absl::Status Reserve(uint64_t offset, uint64_t bytes, int mode) {
    if (bytes == 0) return absl::OkStatus();
    int rc;
    do {
      rc = fallocate(fd(), mode, static_cast<off_t>(offset),
                     static_cast<off_t>(bytes));
    } while (rc != 0 && errno == EINTR);
    if (rc == 0) return absl::OkStatus();
    const int err = errno;
    if (mode == 0) {
      // A partial allocation may have moved the end: put it back.
      if (ftruncate(fd(), static_cast<off_t>(offset)) != 0) {
        return FileError(errno, "ftruncate", path());
      }
    }
    if (err == EOPNOTSUPP || err == ENOSYS) {
      return absl::UnimplementedError(
          absl::StrCat("fallocate ", path(), ": not supported"));
    }
    return IoError(err, "fallocate", path(), offset, bytes);
  }

  struct Advice {
    uint64_t block;
    uint64_t n;
    int advice;
  };
  // At most this much advice waits for the thread: beyond it, advice
  // joins the last of its kind, which then spans both ranges and what
  // lies between (more pages faulted in or dropped than asked: advice).
  static constexpr size_t kMaxAdvice = 16;

  void Queue(const Advice& a) {
    {
      std::lock_guard<std::mutex> lock(advice_mu_);
      if (stopping_) return;
      if (!Join(a)) advice_.push_back(a);
      if (!advisor_.joinable()) advisor_ = std::thread([this] { Advise(); });
    }
    advice_cv_.notify_one();
  }
  // Whether `a` joined advice of its kind already waiting: the last, when
  // their ranges meet (a front-to-back writer's next window meets its
  // last), or when no more may wait. Called with advice_mu_ held.
  bool Join(const Advice& a) {
    for (auto it = advice_.rbegin(); it != advice_.rend(); ++it) {
      if (it->advice != a.advice) continue;
      const uint64_t begin = std::min(it->block, a.block);
      const uint64_t end = std::max(it->block + it->n, a.block + a.n);
      if (end - begin > it->n + a.n && advice_.size() < kMaxAdvice) {
        return false;  // apart, with room to wait on its own
      }
      it->block = begin;
      it->n = end - begin;
      return true;
    }
    return false;
  }
  // The thread: gives the advice in the order it came, until the device
  // closes (what is left then is dropped).
  void Advise() {
    std::unique_lock<std::mutex> lock(advice_mu_);
    while (true) {
      advice_cv_.wait(lock, [&] { return stopping_ || !advice_.empty(); });
      if (stopping_) return;
      const Advice a = advice_.front();
      advice_.pop_front();
      lock.unlock();
      Advise(a.block, a.n, a.advice);
      lock.lock();
    }
  }
  // madvise of the whole pages of blocks [block, block + n) that are
  // mapped.
  void Advise(uint64_t block, uint64_t n, int advice) {
    std::shared_lock<std::shared_mutex> lock(mu_);
    const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
    const uint64_t begin = (block * block_size() + page - 1) / page * page;
    const uint64_t end =
        std::min((block + n) * block_size(), mapped_bytes_) / page * page;
    if (begin >= end || madvise(base_ + begin, end - begin, advice) != 0) {
      return;
    }
    // Faulted in is not always written to cheaply: on some virtual
    // machines the first store of the process to each page faulted in
    // still takes microseconds (4 to 8 us on every page of the log, a
    // third of a small put's time, on the VM of docs/benchmarks.md), where
    // a prefetch of its lines costs nothing. A store here takes that cost
    // on this thread: one to each page, rewriting its first byte with
    // itself, atomically, so that a record the writer stores there
    // meanwhile is kept. Only where the pages are known to be in (the
    // advice succeeded), so that it never faults one in itself.
    if (advice == MADV_POPULATE_WRITE) {
      for (uint64_t at = begin; at < end; at += page) TouchForWrite(base_ + at);
    }
  }
  static void TouchForWrite(std::byte* p) {
#if defined(__x86_64__)
    // Outside the language's memory model on purpose: the writer's copy
    // into the same page is a plain store, and x86 orders a locked
    // read-modify-write of a byte against it whichever comes first.
    asm volatile("lock orb $0, %0" : "+m"(*p) : : "memory");
#else
    static_cast<void>(p);  // elsewhere the writer's first store does it
#endif
  }
  absl::Status RemapLocked(uint64_t bytes) {
    if (bytes == mapped_bytes_) return absl::OkStatus();
    std::byte* base = nullptr;
    if (bytes > 0) {
      void* p = mapped_bytes_ > 0
                    ? mremap(base_, mapped_bytes_, bytes, MREMAP_MAYMOVE)
                    : mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED,
                           fd(), 0);
      if (p == MAP_FAILED) {
        return FileError(errno, mapped_bytes_ > 0 ? "mremap" : "mmap", path());
      }
      base = static_cast<std::byte*>(p);
    } else if (mapped_bytes_ > 0) {
      munmap(base_, mapped_bytes_);
    }
    base_ = base;
    mapped_bytes_ = bytes;
    return absl::OkStatus();
  }

  // Exclusive: the mapping changes. The mapping covers [0, mapped_bytes_),
  // blocks the file system has reserved; 0 when there is none.
  std::shared_mutex mu_;
  std::byte* base_ = nullptr;
  uint64_t mapped_bytes_ = 0;

  std::mutex advice_mu_;
  std::condition_variable advice_cv_;
  std::deque<Advice> advice_;  // guarded by advice_mu_
  bool stopping_ = false;      // guarded by advice_mu_
  std::thread advisor_;        // started by the first advice
};

}  // namespace

absl::StatusOr<std::unique_ptr<BlockDevice>> OpenMmapDevice(
    const std::string& path, const DeviceOptions& options) {
  if (options.direct_io) {
    return absl::InvalidArgumentError(absl::StrCat(
        "mmap ", path, ": direct I/O does not go through a mapping"));
  }
  RT_ASSIGN_OR_RETURN(const auto opened, OpenDeviceFile(path, options));
  auto device = std::make_unique<MmapDevice>(path, options, opened.first,
                                             opened.second);
  // Read-only, it is the file device as it is: nothing is mapped.
  if (!options.read_only) RT_RETURN_IF_ERROR(device->Init());
  return device;
}

}  // namespace roundtable::io
