#include "io/posix_device.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>

#include "io/io_error.h"
#include "io/status_macros.h"

namespace roundtable::io {
namespace {

absl::Status PreadFully(int fd, const std::string& path, void* data,
                        size_t size, uint64_t offset, uint64_t& submissions) {
  auto* p = static_cast<char*>(data);
  size_t done = 0;
  while (done < size) {
    ++submissions;
    const ssize_t n =
        pread(fd, p + done, size - done, static_cast<off_t>(offset + done));
    if (n > 0) {
      done += static_cast<size_t>(n);
    } else if (n == 0) {
      return absl::OutOfRangeError(
          absl::StrCat("pread ", path, " offset ", offset + done, " length ",
                       size - done, ": end of file (the file shrank)"));
    } else if (errno != EINTR && errno != EAGAIN) {
      return IoError(errno, "pread", path, offset + done, size - done);
    }
  }
  return absl::OkStatus();
}

absl::Status PwriteFully(int fd, const std::string& path, const void* data,
                         size_t size, uint64_t offset, uint64_t& submissions) {
  const auto* p = static_cast<const char*>(data);
  size_t done = 0;
  while (done < size) {
    ++submissions;
    const ssize_t n =
        pwrite(fd, p + done, size - done, static_cast<off_t>(offset + done));
    if (n > 0) {
      done += static_cast<size_t>(n);
    } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
      return IoError(n == 0 ? EIO : errno, "pwrite", path, offset + done,
                     size - done);
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
  caps_.buffer_alignment =
      options.direct_io ? std::min<uint32_t>(options.block_size, 4096) : 1;
  num_blocks_ = file_bytes / options.block_size;
}

FileDevice::~FileDevice() { close(fd_); }

absl::Status FileDevice::DoRead(uint64_t block, std::span<std::byte> buffer) {
  uint64_t submissions = 0;
  absl::Status s = PreadFully(fd_, path(), buffer.data(), buffer.size(),
                              block * caps_.block_size, submissions);
  ledger().CountSubmission(submissions);
  return s;
}

absl::Status FileDevice::DoWrite(uint64_t block,
                                 std::span<const std::byte> buffer) {
  uint64_t submissions = 0;
  absl::Status s = PwriteFully(fd_, path(), buffer.data(), buffer.size(),
                               block * caps_.block_size, submissions);
  ledger().CountSubmission(submissions);
  return s;
}

absl::Status FileDevice::DoSync() {
  ledger().CountSubmission();
  if (fdatasync(fd_) != 0) return FileError(errno, "fdatasync", path());
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
  int flags = O_RDWR | O_CLOEXEC;
  if (options.create_if_missing) flags |= O_CREAT;
  if (options.direct_io) flags |= O_DIRECT;
  int fd;
  do {
    fd = open(path.c_str(), flags, 0644);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return FileError(errno, "open", path);
  struct stat st;
  if (fstat(fd, &st) != 0) {
    const int err = errno;
    close(fd);
    return FileError(err, "fstat", path);
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
