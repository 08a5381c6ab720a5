// The first error of a write path, kept: after a failed write or sync the
// table refuses later writes with that error, since what it holds in memory
// and what its files hold may no longer agree (docs/durability.md).
//
// Thread-safety: none; its owner guards it (the table's writer lock).
#ifndef ROUNDTABLE_IO_BASE_FIRST_ERROR_H_
#define ROUNDTABLE_IO_BASE_FIRST_ERROR_H_

#include <utility>

#include "absl/status/status.h"

namespace roundtable {

class FirstError {
 public:
  // Keeps `s` if it is the first error, and returns it.
  absl::Status Note(absl::Status s) {
    if (!s.ok() && first_.ok()) first_ = s;
    return s;
  }
  // OK, or the first error noted.
  const absl::Status& status() const { return first_; }
  bool ok() const { return first_.ok(); }

 private:
  absl::Status first_;
};

}  // namespace roundtable

#endif  // ROUNDTABLE_IO_BASE_FIRST_ERROR_H_
