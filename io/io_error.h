// Converting an errno value into absl::Status at the edge of the io layer,
// with the operation, path, offset and length in the message. Only the
// backends see errno or a completion's result.
//
// Thread-safety: pure functions.
#ifndef ROUNDTABLE_IO_IO_ERROR_H_
#define ROUNDTABLE_IO_IO_ERROR_H_

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace roundtable::io {

// The status for errno `err` (ENOSPC is ResourceExhausted, ENOENT NotFound,
// EINVAL InvalidArgument, and so on) with a message such as
// "pread /data/t.rt offset 8192 length 4096: Input/output error".
inline absl::Status IoError(int err, const char* op, const std::string& path,
                            uint64_t offset, uint64_t length) {
  return absl::Status(
      absl::ErrnoToStatusCode(err),
      absl::StrCat(op, " ", path, " offset ", offset, " length ", length, ": ",
                   std::strerror(err)));
}

// The same for a call on the whole file (open, fsync, ftruncate).
inline absl::Status FileError(int err, const char* op,
                              const std::string& path) {
  return absl::Status(absl::ErrnoToStatusCode(err),
                      absl::StrCat(op, " ", path, ": ", std::strerror(err)));
}

}  // namespace roundtable::io

#endif  // ROUNDTABLE_IO_IO_ERROR_H_
