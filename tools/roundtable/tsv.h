// The escaping roundtable's CLI uses for keys and values on the command line
// and in tab-separated text (load input, scan and get output), so that any
// bytes survive a round trip: backslash, tab, newline and carriage return are
// written \\ \t \n \r; any other byte below 0x20 or from 0x7f up is \xHH
// (two lowercase hex digits); everything else stands for itself.
#ifndef ROUNDTABLE_TOOLS_ROUNDTABLE_TSV_H_
#define ROUNDTABLE_TOOLS_ROUNDTABLE_TSV_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace roundtable::cli {

std::string Escape(std::string_view bytes);

// The inverse of Escape. InvalidArgument for a backslash followed by
// anything but \\, t, n, r or xHH.
absl::StatusOr<std::string> Unescape(std::string_view text);

}  // namespace roundtable::cli

#endif  // ROUNDTABLE_TOOLS_ROUNDTABLE_TSV_H_
