// The factory over the backends: OpenBlockDevice and what it decides by
// (declared in io/block_device.h). It sits above every backend, which
// the interface itself does not know.
#include <liburing.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "io/block_device.h"
#include "io/memory_device.h"
#include "io/mmap_device.h"
#include "io/posix_device.h"
#include "io/uring_device.h"

namespace roundtable::io {

absl::StatusOr<Backend> ParseBackend(std::string_view name) {
  if (name == "auto") return Backend::kAuto;
  if (name == "uring" || name == "io_uring") return Backend::kUring;
  if (name == "posix") return Backend::kPosix;
  if (name == "memory") return Backend::kMemory;
  if (name == "mmap") return Backend::kMmap;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown backend '", std::string(name),
                   "'; expected auto, uring, posix, memory or mmap"));
}

bool UringAvailable(std::string* why) {
  const char* env = std::getenv("ROUNDTABLE_IO_URING");
  if (env != nullptr && std::string_view(env) == "off") {
    if (why) *why = "ROUNDTABLE_IO_URING=off";
    return false;
  }
  struct io_uring ring;
  const int rc = io_uring_queue_init(2, &ring, 0);
  if (rc < 0) {
    if (why) *why = absl::StrCat("io_uring_queue_init: ", std::strerror(-rc));
    return false;
  }
  io_uring_queue_exit(&ring);
  return true;
}

absl::StatusOr<std::unique_ptr<BlockDevice>> OpenBlockDevice(
    const std::string& path, const DeviceOptions& options) {
  const uint32_t bs = options.block_size;
  if (!IsValidBlockSize(bs)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "block size ", bs, " is not a power of two from 512 to 65536"));
  }
  if (options.queue_depth < 1 || options.queue_depth > 4096) {
    return absl::InvalidArgumentError(absl::StrCat(
        "queue depth ", options.queue_depth, " is outside [1, 4096]"));
  }
  switch (options.backend) {
    case Backend::kMemory:
      return NewMemoryDevice(bs);
    case Backend::kPosix:
      return OpenPosixDevice(path, options);
    case Backend::kMmap:
      return OpenMmapDevice(path, options);
    case Backend::kUring: {
      std::string why;
      if (!UringAvailable(&why)) {
        return absl::UnavailableError(
            absl::StrCat("io_uring is not available here (", why, ")"));
      }
      return OpenUringDevice(path, options);
    }
    case Backend::kAuto: {
      std::string why;
      if (UringAvailable(&why)) return OpenUringDevice(path, options);
      static std::once_flag notice;
      std::call_once(notice, [&why] {
        std::fprintf(stderr,
                     "roundtable: io_uring unavailable (%s); using POSIX I/O\n",
                     why.c_str());
      });
      return OpenPosixDevice(path, options);
    }
  }
  return absl::InvalidArgumentError("unknown backend");
}

}  // namespace roundtable::io
