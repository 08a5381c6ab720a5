#include "tools/roundtable/map_command.h"

#include <istream>
#include <ostream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "roundtable/mapping.h"

namespace roundtable::cli {

namespace {

std::string_view Trim(std::string_view text) {
  const auto first = text.find_first_not_of(" \t\r");
  if (first == std::string_view::npos) return {};
  const auto last = text.find_last_not_of(" \t\r");
  return text.substr(first, last - first + 1);
}

}  // namespace

std::optional<uint64_t> ParseUint64(std::string_view text) {
  text = Trim(text);
  unsigned base = 10;
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    base = 16;
    text.remove_prefix(2);
  }
  if (text.empty()) return std::nullopt;
  uint64_t value = 0;
  for (const char c : text) {
    unsigned digit;
    if (c >= '0' && c <= '9') {
      digit = c - '0';
    } else if (base == 16 && c >= 'a' && c <= 'f') {
      digit = c - 'a' + 10;
    } else if (base == 16 && c >= 'A' && c <= 'F') {
      digit = c - 'A' + 10;
    } else {
      return std::nullopt;
    }
    if (value > (UINT64_MAX - digit) / base) return std::nullopt;
    value = value * base + digit;
  }
  return value;
}

absl::Status RunMap(const MapOptions& options, std::istream& in,
                    std::ostream& out) {
  if (options.grow > 0 && options.shrink > 0) {
    return absl::InvalidArgumentError(
        "give at most one of --grow and --shrink");
  }
  auto made =
      mapping::MakeMapping(options.mapping, options.s0, options.buckets);
  if (!made.ok()) return made.status();
  mapping::BucketMapping& map = **made;

  if (options.shrink > map.num_buckets() - map.min_buckets()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--shrink=", options.shrink, " would go below ", map.min_buckets(),
        " buckets (at most ", map.num_buckets() - map.min_buckets(),
        " steps from ", map.num_buckets(), ")"));
  }
  if (options.grow > map.max_buckets() - map.num_buckets()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--grow=", options.grow, " would pass the maximum of ",
                     map.max_buckets(), " buckets"));
  }
  if (options.grow > 0 || options.shrink > 0) {
    const bool grow = options.grow > 0;
    for (uint64_t i = 0; i < (grow ? options.grow : options.shrink); ++i) {
      auto change = grow ? map.NewBucket() : map.FreeBucket();
      if (!change.ok()) return change.status();
      out << absl::StrJoin(change->Touched(), " ") << '\n';
    }
    return absl::OkStatus();
  }

  std::string line;
  for (uint64_t line_number = 1; std::getline(in, line); ++line_number) {
    if (Trim(line).empty()) continue;
    const std::optional<uint64_t> hash = ParseUint64(line);
    if (!hash) {
      return absl::InvalidArgumentError(absl::StrCat(
          "line ", line_number, ": '", line,
          "' is not an unsigned 64-bit number (decimal or 0x-prefixed hex)"));
    }
    out << map.FindBucket(*hash) << '\n';
  }
  if (in.bad()) return absl::UnavailableError("error reading standard input");
  return absl::OkStatus();
}

}  // namespace roundtable::cli
