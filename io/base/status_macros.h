// Early-return helpers for absl::Status, which Abseil 20220623 does not ship.
//
//   RT_RETURN_IF_ERROR(device.Sync());
//   RT_ASSIGN_OR_RETURN(auto device, OpenBlockDevice(path, options));
//
// Thread-safety: macros over values.
#ifndef ROUNDTABLE_IO_BASE_STATUS_MACROS_H_
#define ROUNDTABLE_IO_BASE_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define RT_RETURN_IF_ERROR(expr)                                \
  do {                                                          \
    if (::absl::Status rt_status_ = (expr); !rt_status_.ok()) { \
      return rt_status_;                                        \
    }                                                           \
  } while (0)

#define RT_STATUS_CONCAT_INNER_(a, b) a##b
#define RT_STATUS_CONCAT_(a, b) RT_STATUS_CONCAT_INNER_(a, b)

#define RT_ASSIGN_OR_RETURN(lhs, expr)                                      \
  RT_ASSIGN_OR_RETURN_IMPL_(RT_STATUS_CONCAT_(rt_statusor_, __LINE__), lhs, \
                            expr)

#define RT_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, expr) \
  auto statusor = (expr);                              \
  if (!statusor.ok()) return statusor.status();        \
  lhs = *std::move(statusor)

#endif  // ROUNDTABLE_IO_BASE_STATUS_MACROS_H_
