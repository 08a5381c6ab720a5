// `roundtable map`: the bucket of each hash read from a stream, or the buckets
// touched by a run of grow or shrink steps. The command-line front end lives
// in main.cc; these functions take their input as arguments so that tests can
// call them directly.
//
// Thread-safety: each call is independent; the streams must not be shared
// with another thread during the call.
#ifndef ROUNDTABLE_TOOLS_ROUNDTABLE_MAP_COMMAND_H_
#define ROUNDTABLE_TOOLS_ROUNDTABLE_MAP_COMMAND_H_

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace roundtable::cli {

// Parses an unsigned 64-bit number written in decimal or as 0x-prefixed hex,
// with nothing else on the line but surrounding spaces, tabs and a carriage
// return. nullopt for
// anything else, including values above 2^64 - 1 and signs.
std::optional<uint64_t> ParseUint64(std::string_view text);

struct MapOptions {
  std::string mapping = "round";
  uint64_t s0 = 32;
  uint64_t buckets = 0;
  uint64_t grow = 0;    // NewBucket steps to print (0: map hashes instead)
  uint64_t shrink = 0;  // FreeBucket steps to print
};

// Maps every hash in `in` (one per line; blank lines are skipped) to its
// bucket, one per line on `out`. With grow or shrink set, prints one line per
// step instead: the touched buckets, space-separated, the new or released
// bucket last. InvalidArgument for bad options (checked before any output)
// or a bad input line (reported with its line number; earlier lines are
// already printed).
absl::Status RunMap(const MapOptions& options, std::istream& in,
                    std::ostream& out);

}  // namespace roundtable::cli

#endif  // ROUNDTABLE_TOOLS_ROUNDTABLE_MAP_COMMAND_H_
