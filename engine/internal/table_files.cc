#include "engine/internal/table_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "engine/internal/block_format.h"
#include "engine/internal/superblock.h"
#include "io/base/status_macros.h"
#include "io/io_error.h"
#include "io/memory_device.h"

namespace roundtable::internal {
namespace {

// The LOCK file holds a process id and a newline, at most this long; a
// longer file is not one this code wrote, and is left as it is.
constexpr off_t kLockBytes = 32;

// The process id written in the LOCK file, or 0.
long LockHolder(int fd) {
  char text[kLockBytes + 1] = {};
  const ssize_t n = pread(fd, text, kLockBytes, 0);
  long pid = 0;
  if (n <= 0 ||
      !absl::SimpleAtoi(absl::StripAsciiWhitespace(absl::string_view(text, n)),
                        &pid)) {
    return 0;
  }
  return pid;
}

// F_OFD_SETLK of the whole file: true when taken, false when another open
// file holds a conflicting lock (*writer: whether that is a write lock).
absl::StatusOr<bool> TryLock(int fd, bool exclusive, const std::string& path,
                             bool* writer) {
  struct flock lock = {};
  lock.l_type = exclusive ? F_WRLCK : F_RDLCK;
  lock.l_whence = SEEK_SET;
  int rc;
  do {
    rc = fcntl(fd, F_OFD_SETLK, &lock);
  } while (rc != 0 && errno == EINTR);
  if (rc == 0) return true;
  if (errno != EAGAIN && errno != EACCES) {
    return io::FileError(errno, "lock", path);
  }
  struct flock probe = {};
  probe.l_type = F_WRLCK;
  probe.l_whence = SEEK_SET;
  *writer = fcntl(fd, F_OFD_GETLK, &probe) == 0 && probe.l_type == F_WRLCK;
  return false;
}

}  // namespace

std::string TablePath(std::string_view dir, std::string_view file) {
  std::string path(dir);
  path += '/';
  path += file;
  return path;
}

TableLock::TableLock(TableLock&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)) {}

TableLock& TableLock::operator=(TableLock&& other) noexcept {
  if (this != &other) {
    Release();
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

void TableLock::Release() {
  if (fd_ < 0) return;
  close(fd_);  // the lock goes with the last descriptor of its open file
  fd_ = -1;
}

absl::StatusOr<TableLock> TableLock::Acquire(const std::string& dir,
                                             bool exclusive) {
  const std::string path = TablePath(dir, kLockFile);
  // Never through a symbolic link; O_NONBLOCK keeps a FIFO from blocking.
  const int flags = (exclusive ? O_RDWR | O_CREAT : O_RDONLY) | O_CLOEXEC |
                    O_NOFOLLOW | O_NONBLOCK;
  int fd;
  do {
    fd = open(path.c_str(), flags, 0644);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0 && !exclusive && errno == ENOENT) {
    // A table no writer of this version opened: a reader makes the file
    // if it may, and otherwise no writer can be there either.
    do {
      fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0 && (errno == EROFS || errno == EACCES || errno == EPERM)) {
      return TableLock();
    }
  } else if (fd < 0 && !exclusive && (errno == EACCES || errno == EROFS)) {
    return TableLock();
  }
  if (fd < 0 && errno == ELOOP) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, " is a symbolic link, not the table's lock file"));
  }
  if (fd < 0) return io::FileError(errno, "open", path);
  TableLock held(fd);
  struct stat st;
  if (fstat(fd, &st) != 0) return io::FileError(errno, "fstat", path);
  if (!S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, " is not a regular file"));
  }
  bool writer = false;
  absl::StatusOr<bool> taken = TryLock(fd, exclusive, path, &writer);
  if (!taken.ok()) return taken.status();
  if (!*taken) {
    std::string who = "open read-only by another handle";
    if (writer) {
      who = "locked by a writer";
      if (const long pid = LockHolder(fd); pid > 0) {
        absl::StrAppend(&who, " (process ", pid,
                        pid == getpid() ? ", this one)" : ")");
      }
    }
    return absl::FailedPreconditionError(absl::StrCat(
        "table ", dir, " is ", who,
        exclusive ? "; a table takes one writer, or any number of readers"
                  : "; readers may open it once the writer closes it"));
  }
  if (exclusive && st.st_size <= kLockBytes) {
    const std::string pid = absl::StrCat(getpid(), "\n");
    if (ftruncate(fd, 0) != 0 || pwrite(fd, pid.data(), pid.size(), 0) !=
                                     static_cast<ssize_t>(pid.size())) {
      return io::FileError(errno, "write", path);
    }
  }
  return held;
}

bool FileExists(const std::string& dir, const char* file) {
  struct stat st;
  return lstat(TablePath(dir, file).c_str(), &st) == 0;
}

namespace {

// Unlinks dir/file (nothing it points to changes); OK when it is absent.
absl::Status Unlink(const std::string& dir, const char* file) {
  const std::string path = TablePath(dir, file);
  if (unlink(path.c_str()) != 0 && errno != ENOENT) {
    return io::FileError(errno, "unlink", path);
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status PrepareNewTable(const std::string& dir, uint64_t blocks,
                             uint32_t block_size) {
  if (FileExists(dir, kNewBlocksFile)) {
    RT_RETURN_IF_ERROR(Unlink(dir, kNewBlocksFile));
    for (const char* file : kDataFiles) RT_RETURN_IF_ERROR(Unlink(dir, file));
  } else {
    for (const char* file : kDataFiles) {
      if (FileExists(dir, file)) {
        return absl::FailedPreconditionError(absl::StrCat(
            dir, " holds a file named ", file,
            " but no table (no blocks file, and no creation cut short): "
            "remove it, or choose another directory"));
      }
    }
  }
  struct statvfs fs;
  const unsigned __int128 needed =
      static_cast<unsigned __int128>(blocks) * block_size;
  if (statvfs(dir.c_str(), &fs) == 0 &&
      static_cast<unsigned __int128>(fs.f_bavail) * fs.f_frsize < needed) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "creating ", dir, " takes ", blocks * block_size, " bytes of blocks (",
        blocks, " of ", block_size, " bytes); its file system has ",
        static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize, " free"));
  }
  return absl::OkStatus();
}

absl::Status PublishNewTable(const std::string& dir) {
  const std::string from = TablePath(dir, kNewBlocksFile);
  if (rename(from.c_str(), TablePath(dir, kBlocksFile).c_str()) != 0) {
    return io::FileError(errno, "rename", from);
  }
  const int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return io::FileError(errno, "open", dir);
  const int synced = fsync(fd);
  const int err = errno;
  close(fd);
  if (synced != 0) return io::FileError(err, "fsync", dir);
  return absl::OkStatus();
}

absl::Status DestroyTableFiles(const std::string& dir) {
  struct stat st;
  if (stat(dir.c_str(), &st) != 0) {
    if (errno == ENOENT) return absl::OkStatus();
    return io::FileError(errno, "stat", dir);
  }
  if (!S_ISDIR(st.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat(dir, " exists and is not a directory"));
  }
  absl::StatusOr<TableLock> lock = TableLock::Acquire(dir, /*exclusive=*/true);
  if (!lock.ok()) return lock.status();
  for (const char* file : kDataFiles) RT_RETURN_IF_ERROR(Unlink(dir, file));
  RT_RETURN_IF_ERROR(Unlink(dir, kNewBlocksFile));
  RT_RETURN_IF_ERROR(Unlink(dir, kLockFile));
  lock->Release();
  if (rmdir(dir.c_str()) != 0 && errno != ENOENT && errno != ENOTEMPTY) {
    return io::FileError(errno, "rmdir", dir);
  }
  return absl::OkStatus();
}

absl::StatusOr<TableFiles> OpenTableFiles(const std::string& dir,
                                          const Options& options,
                                          uint32_t block_size, bool exists,
                                          const FileOpener& open_file) {
  io::DeviceOptions dev;
  dev.backend = options.backend;
  dev.block_size = block_size;
  dev.direct_io = options.direct_io;
  dev.create_if_missing = !exists;
  dev.read_only = options.read_only;
  auto open = [&](const char* file, const io::DeviceOptions& o) {
    return open_file ? open_file(TablePath(dir, file), o)
                     : io::OpenBlockDevice(TablePath(dir, file), o);
  };
  // The log and the journal may be missing (a table never written since a
  // clean close may have had them removed), and the value file and its map
  // (a table of format version 7): a writer makes them anew, and to a
  // reader they are empty.
  auto open_or_empty = [&](const char* file, const io::DeviceOptions& o)
      -> absl::StatusOr<std::unique_ptr<io::BlockDevice>> {
    if (o.read_only && !FileExists(dir, file)) {
      return io::NewMemoryDevice(o.block_size);
    }
    io::DeviceOptions created = o;
    created.create_if_missing = true;
    return open(file, created);
  };
  TableFiles files;
  RT_ASSIGN_OR_RETURN(files.blocks,
                      open(exists ? kBlocksFile : kNewBlocksFile, dev));
  RT_ASSIGN_OR_RETURN(files.stash, open(kStashFile, dev));
  RT_ASSIGN_OR_RETURN(files.buffer, open(kBufferFile, dev));
  // The log takes a small append per write: through a mapping, that is a
  // copy into the page cache rather than a system call, and it survives a
  // crash of the process all the same. A backend named in the options (or
  // direct I/O) is used for every file.
  io::DeviceOptions wal = dev;
  if (wal.backend == io::Backend::kAuto && !wal.direct_io) {
    wal.backend = io::Backend::kMmap;
  }
  for (int i = 0; i < 2; ++i) {
    RT_ASSIGN_OR_RETURN(files.wal[i], open_or_empty(kWalFiles[i], wal));
  }
  RT_ASSIGN_OR_RETURN(files.journal, open_or_empty(kJournalFile, dev));
  RT_ASSIGN_OR_RETURN(files.values, open_or_empty(kValuesFile, dev));
  RT_ASSIGN_OR_RETURN(files.spacemap, open_or_empty(kSpaceMapFile, dev));
  RT_ASSIGN_OR_RETURN(files.blockmap, open_or_empty(kBlockMapFile, dev));
  return files;
}

absl::Status FormatNewBlocks(io::BlockDevice& file, uint64_t buckets) {
  return FormatBuckets(file, 0, buckets);
}

absl::Status FormatBuckets(io::BlockDevice& file, uint64_t first,
                           uint64_t end) {
  const uint32_t bs = file.block_size();
  if (file.num_blocks() < kHeaderBlocks + end) {
    RT_RETURN_IF_ERROR(file.Resize(kHeaderBlocks + end));
  }
  constexpr uint64_t kRun = 256;
  io::AlignedBuffer run(kRun * bs);
  for (uint64_t b = first; b < end; b += kRun) {
    const uint64_t n = std::min(kRun, end - b);
    for (uint64_t i = 0; i < n; ++i) {
      EncodedBlock block(run.span().subspan(i * bs, bs));
      block.Init(b + i);
      block.Seal();
    }
    RT_RETURN_IF_ERROR(
        file.Write(kHeaderBlocks + b, run.span().subspan(0, n * bs)));
  }
  return absl::OkStatus();
}

absl::Status CopyFilePrefix(const std::string& from, const std::string& to,
                            uint64_t bytes) {
  const int in = open(from.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) return io::FileError(errno, "open", from);
  const int out =
      open(to.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (out < 0) {
    const int err = errno;
    close(in);
    return io::FileError(err, "create", to);
  }
  absl::Status status;
  loff_t in_at = 0, out_at = 0;
  while (status.ok() && static_cast<uint64_t>(in_at) < bytes) {
    const ssize_t n = copy_file_range(in, &in_at, out, &out_at,
                                      bytes - static_cast<uint64_t>(in_at), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) status = io::FileError(errno, "copy_file_range", to);
    if (n == 0) {
      status = absl::DataLossError(
          absl::StrCat(from, " ended at byte ", in_at, " of ", bytes));
    }
  }
  // A file whose tail is a hole reads as zeros: the copy has its length.
  if (status.ok() && ftruncate(out, static_cast<off_t>(bytes)) != 0) {
    status = io::FileError(errno, "ftruncate", to);
  }
  if (status.ok() && fsync(out) != 0)
    status = io::FileError(errno, "fsync", to);
  close(in);
  close(out);
  return status;
}

std::string ParentDirectory(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

absl::Status SyncDirectory(const std::string& dir) {
  const int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return io::FileError(errno, "open", dir);
  absl::Status status;
  if (fsync(fd) != 0) status = io::FileError(errno, "fsync", dir);
  close(fd);
  return status;
}

}  // namespace roundtable::internal
