#include "io/posix_device.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <vector>

#include "io/io_error.h"
#include "io/base/status_macros.h"

namespace roundtable::io {
namespace {

// pread or pwrite of exactly `size` bytes at `offset`: short transfers are
// resubmitted for the rest, EINTR and EAGAIN retried. `submissions` counts
// the system calls made. A read that meets the end of the file is OutOfRange
// (the file shrank under the device); a write that moves nothing is EIO.
absl::Status TransferFully(bool is_read, int fd, const std::string& path,
                           char* data, size_t size, uint64_t offset,
                           uint64_t& submissions) {
  const char* op = is_read ? "pread" : "pwrite";
  size_t done = 0;
  while (done < size) {
    ++submissions;
    const off_t at = static_cast<off_t>(offset + done);
    const ssize_t n = is_read ? pread(fd, data + done, size - done, at)
                              : pwrite(fd, data + done, size - done, at);
    if (n > 0) {
      done += static_cast<size_t>(n);
    } else if (n == 0 && is_read) {
      return absl::OutOfRangeError(
          absl::StrCat(op, " ", path, " offset ", offset + done, " length ",
                       size - done, ": end of file (the file shrank)"));
    } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
      return IoError(n == 0 ? EIO : errno, op, path, offset + done,
                     size - done);
    }
  }
  return absl::OkStatus();
}

// The most bytes one pwritev carries. A buffered write holds the file's
// inode lock while it copies into the page cache, so every other write to
// the file waits for the whole call: with IOV_MAX blocks a call (4 MiB), a
// checkpoint writing its blocks held each write of the blocks written
// ahead to the same file up for about 1.3 ms, and the table's writer,
// waiting for those, for tens of milliseconds (seen).
constexpr size_t kMaxWriteBytes = 256 << 10;

// pwritev of every byte of `iov` at `offset`, up to IOV_MAX buffers and
// kMaxWriteBytes (or the first buffer, if larger) a call: short writes are
// resubmitted from where they stopped (the vector is consumed), EINTR and
// EAGAIN retried.
absl::Status WriteVectorFully(int fd, const std::string& path,
                              std::span<struct iovec> iov, uint64_t offset,
                              uint64_t& submissions) {
  while (!iov.empty()) {
    size_t count = 1;
    for (size_t bytes = iov[0].iov_len;
         count < std::min<size_t>(iov.size(), IOV_MAX) &&
         bytes + iov[count].iov_len <= kMaxWriteBytes;
         ++count) {
      bytes += iov[count].iov_len;
    }
    ++submissions;
    const ssize_t n = pwritev(fd, iov.data(), static_cast<int>(count),
                              static_cast<off_t>(offset));
    if (n <= 0) {
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      size_t left = 0;
      for (const struct iovec& v : iov) left += v.iov_len;
      return IoError(n == 0 ? EIO : errno, "pwritev", path, offset, left);
    }
    offset += static_cast<uint64_t>(n);
    size_t done = static_cast<size_t>(n);
    while (done > 0 && done >= iov.front().iov_len) {
      done -= iov.front().iov_len;
      iov = iov.subspan(1);
    }
    if (done > 0) {
      iov.front().iov_base = static_cast<char*>(iov.front().iov_base) + done;
      iov.front().iov_len -= done;
    }
  }
  return absl::OkStatus();
}

}  // namespace

FileDevice::FileDevice(const std::string& path, const DeviceOptions& options,
                       int fd, uint64_t file_bytes, std::string backend,
                       bool parallel_batches)
    : BlockDevice(path), fd_(fd) {
  caps_.backend = std::move(backend);
  caps_.block_size = options.block_size;
  caps_.direct_io = options.direct_io;
  caps_.parallel_batches = parallel_batches;
  caps_.read_only = options.read_only;
  caps_.buffer_alignment =
      options.direct_io ? std::min<uint32_t>(options.block_size, 4096) : 1;
  num_blocks_ = file_bytes / options.block_size;
}

FileDevice::~FileDevice() { close(fd_); }

absl::Status FileDevice::DoRead(uint64_t block, std::span<std::byte> buffer) {
  uint64_t submissions = 0;
  absl::Status s = TransferFully(
      /*is_read=*/true, fd_, path(), reinterpret_cast<char*>(buffer.data()),
      buffer.size(), block * caps_.block_size, submissions);
  ledger().CountSubmission(submissions);
  return s;
}

absl::Status FileDevice::DoWrite(uint64_t block,
                                 std::span<const std::byte> buffer) {
  uint64_t submissions = 0;
  // pwrite only reads the buffer; the cast serves the shared loop.
  absl::Status s = TransferFully(
      /*is_read=*/false, fd_, path(),
      const_cast<char*>(reinterpret_cast<const char*>(buffer.data())),
      buffer.size(), block * caps_.block_size, submissions);
  ledger().CountSubmission(submissions);
  return s;
}

absl::Status FileDevice::DoWriteBatch(std::span<const WriteRequest> requests) {
  std::vector<const WriteRequest*> order;
  order.reserve(requests.size());
  for (const WriteRequest& r : requests) order.push_back(&r);
  std::sort(order.begin(), order.end(),
            [](const WriteRequest* a, const WriteRequest* b) {
              return a->block < b->block;
            });
  uint64_t submissions = 0;
  absl::Status s;
  std::vector<struct iovec> run;
  uint64_t run_start = 0;  // block
  uint64_t run_end = 0;    // block after the run
  auto flush = [&] {
    if (s.ok() && !run.empty()) {
      s = WriteVectorFully(fd_, path(), std::span<struct iovec>(run),
                           run_start * caps_.block_size, submissions);
    }
    run.clear();
  };
  for (const WriteRequest* r : order) {
    if (!run.empty() && r->block != run_end) flush();
    if (run.empty()) run_start = r->block;
    run.push_back({const_cast<std::byte*>(r->buffer.data()), r->buffer.size()});
    run_end = r->block + r->buffer.size() / caps_.block_size;
  }
  flush();
  ledger().CountSubmission(submissions);
  return s;
}

absl::Status FileDevice::DoSync() {
  ledger().CountSubmission();
  if (fdatasync(fd_) != 0) return FileError(errno, "fdatasync", path());
  return absl::OkStatus();
}

void StartWriteBack(int fd) {
  while (sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE) != 0 &&
         errno == EINTR) {
  }
}

absl::Status FileDevice::DoWriteBack() {
  ledger().CountSubmission();
  StartWriteBack(fd_);
  return absl::OkStatus();
}

absl::Status FileDevice::DoResize(uint64_t num_blocks) {
  if (ftruncate(fd_, static_cast<off_t>(num_blocks * caps_.block_size)) != 0) {
    return FileError(errno, "ftruncate", path());
  }
  num_blocks_ = num_blocks;
  return absl::OkStatus();
}

absl::StatusOr<std::pair<int, uint64_t>> OpenDeviceFile(
    const std::string& path, const DeviceOptions& options) {
  // A symbolic link in a file's place is never followed (a writer would
  // write through it to a file elsewhere); O_NONBLOCK, which regular files
  // ignore, keeps a FIFO there from blocking the open until it is refused.
  int flags = (options.read_only ? O_RDONLY : O_RDWR) | O_CLOEXEC |
              O_NOFOLLOW | O_NONBLOCK;
  if (options.create_if_missing && !options.read_only) flags |= O_CREAT;
  if (options.direct_io) flags |= O_DIRECT;
  int fd;
  do {
    fd = open(path.c_str(), flags, 0644);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0 && errno == ELOOP) {
    return absl::InvalidArgumentError(
        absl::StrCat("open ", path, ": a symbolic link, not a regular file"));
  }
  if (fd < 0 && errno == EISDIR) {
    return absl::InvalidArgumentError(
        absl::StrCat("open ", path, ": a directory, not a regular file"));
  }
  if (fd < 0) return FileError(errno, "open", path);
  struct stat st;
  if (fstat(fd, &st) != 0) {
    const int err = errno;
    close(fd);
    return FileError(err, "fstat", path);
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    return absl::InvalidArgumentError(
        absl::StrCat("open ", path, ": not a regular file"));
  }
  return std::make_pair(fd, static_cast<uint64_t>(st.st_size));
}

absl::StatusOr<std::unique_ptr<BlockDevice>> OpenPosixDevice(
    const std::string& path, const DeviceOptions& options) {
  RT_ASSIGN_OR_RETURN(const auto opened, OpenDeviceFile(path, options));
  return std::make_unique<FileDevice>(path, options, opened.first,
                                      opened.second, "posix",
                                      /*parallel_batches=*/false);
}

}  // namespace roundtable::io
