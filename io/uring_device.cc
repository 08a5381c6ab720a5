#include "io/uring_device.h"

#include <liburing.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <deque>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "io/io_error.h"
#include "io/base/mutex.h"
#include "io/posix_device.h"
#include "io/base/status_macros.h"

namespace roundtable::io {
namespace {

// One transfer of a batch as the ring sees it: what is left to move.
struct Transfer {
  bool is_read;
  char* data;
  size_t remaining;
  uint64_t offset;
};

// The file device with its batches on a ring.
class UringDevice final : public FileDevice {
 public:
  UringDevice(const std::string& path, const DeviceOptions& options, int fd,
              uint64_t file_bytes)
      : FileDevice(path, options, fd, file_bytes, "uring",
                   /*parallel_batches=*/true),
        queue_depth_(options.queue_depth) {}

  ~UringDevice() override {
    if (ring_ready_) io_uring_queue_exit(&ring_);
  }

  absl::Status Init() {
    const int rc = io_uring_queue_init(queue_depth_, &ring_, 0);
    if (rc < 0) return FileError(-rc, "io_uring_queue_init", path());
    ring_ready_ = true;
    return absl::OkStatus();
  }

 protected:
  absl::Status DoReadBatch(std::span<const ReadRequest> requests) override {
    std::vector<Transfer> transfers;
    transfers.reserve(requests.size());
    for (const ReadRequest& r : requests) {
      transfers.push_back({true, reinterpret_cast<char*>(r.buffer.data()),
                           r.buffer.size(), r.block * block_size()});
    }
    return RunBatch(transfers);
  }

  // Buffered writes are copies into the page cache that ext4 does not
  // complete inline: the ring hands each one to a kernel worker thread,
  // which cost more than the copy (docs/io.md). They go to the file in one
  // pwritev per run of adjacent blocks instead; direct writes use the ring.
  absl::Status DoWriteBatch(std::span<const WriteRequest> requests) override {
    if (!capabilities().direct_io) return FileDevice::DoWriteBatch(requests);
    std::vector<Transfer> transfers;
    transfers.reserve(requests.size());
    for (const WriteRequest& r : requests) {
      transfers.push_back(
          {false,
           const_cast<char*>(reinterpret_cast<const char*>(r.buffer.data())),
           r.buffer.size(), r.block * block_size()});
    }
    return RunBatch(transfers);
  }

 private:
  // Keeps up to queue_depth transfers in flight until all are done or one
  // fails; after a failure it submits nothing new, waits for what is in
  // flight (the kernel may still be using the buffers) and returns the first
  // error.
  absl::Status RunBatch(std::vector<Transfer>& transfers) {
    MutexLock lock(&ring_mu_);
    if (!broken_.ok()) return broken_;
    std::deque<size_t> ready;
    for (size_t i = 0; i < transfers.size(); ++i) ready.push_back(i);
    size_t in_flight = 0;
    absl::Status first_error;
    while (in_flight > 0 || (first_error.ok() && !ready.empty())) {
      while (first_error.ok() && !ready.empty() && in_flight < queue_depth_) {
        struct io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
        if (sqe == nullptr) break;
        const size_t i = ready.front();
        ready.pop_front();
        Prepare(sqe, transfers[i]);
        io_uring_sqe_set_data64(sqe, i);
        ++in_flight;
      }
      int rc;
      do {
        rc = io_uring_submit_and_wait(&ring_, 1);
      } while (rc == -EINTR || rc == -EAGAIN);
      ledger().CountSubmission();
      if (rc < 0) {
        // The ring refused to submit or wait: which entries reached the
        // kernel is unknown, so the ring cannot be trusted with buffers
        // again. Every later batch fails with this error.
        broken_ = FileError(-rc, "io_uring_submit_and_wait", path());
        return broken_;
      }
      struct io_uring_cqe* cqe;
      unsigned head;
      unsigned seen = 0;
      io_uring_for_each_cqe(&ring_, head, cqe) {
        ++seen;
        --in_flight;
        const size_t i = static_cast<size_t>(io_uring_cqe_get_data64(cqe));
        Transfer& t = transfers[i];
        const int res = cqe->res;
        if (res == -EINTR || res == -EAGAIN) {
          ready.push_back(i);
        } else if (res < 0) {
          if (first_error.ok()) {
            first_error = IoError(-res, t.is_read ? "read" : "write", path(),
                                  t.offset, t.remaining);
          }
        } else if (res == 0) {
          if (first_error.ok()) {
            first_error =
                t.is_read
                    ? absl::OutOfRangeError(absl::StrCat(
                          "read ", path(), " offset ", t.offset, " length ",
                          t.remaining, ": end of file (the file shrank)"))
                    : IoError(EIO, "write", path(), t.offset, t.remaining);
          }
        } else if (static_cast<size_t>(res) < t.remaining) {
          // Short transfer: resubmit the rest.
          t.data += res;
          t.offset += res;
          t.remaining -= res;
          ready.push_back(i);
        } else {
          t.remaining = 0;
        }
      }
      io_uring_cq_advance(&ring_, seen);
    }
    return first_error;
  }

  // A registered file (IOSQE_FIXED_FILE) was measured and did not pay:
  // docs/io.md has the figures.
  void Prepare(struct io_uring_sqe* sqe, const Transfer& t) {
    if (t.is_read) {
      io_uring_prep_read(sqe, fd(), t.data, static_cast<unsigned>(t.remaining),
                         t.offset);
    } else {
      io_uring_prep_write(sqe, fd(), t.data, static_cast<unsigned>(t.remaining),
                          t.offset);
    }
  }

  const uint32_t queue_depth_;
  bool ring_ready_ = false;
  Mutex ring_mu_;
  struct io_uring ring_ ABSL_GUARDED_BY(ring_mu_);
  absl::Status broken_ ABSL_GUARDED_BY(ring_mu_);
};

}  // namespace

absl::StatusOr<std::unique_ptr<BlockDevice>> OpenUringDevice(
    const std::string& path, const DeviceOptions& options) {
  RT_ASSIGN_OR_RETURN(const auto opened, OpenDeviceFile(path, options));
  auto device =
      std::make_unique<UringDevice>(path, options, opened.first, opened.second);
  RT_RETURN_IF_ERROR(device->Init());
  return device;
}

}  // namespace roundtable::io
