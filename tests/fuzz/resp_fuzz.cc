// libFuzzer target: the server's protocol parser on arbitrary bytes.
//
// Each input is a client's byte stream, parsed request after request as the
// server does (RequestParser over what is left), with small limits so that
// the limit paths are reached. Properties checked besides crashes and
// sanitizer reports: a request consumes at least one byte and no more than
// it was given; an incomplete parse asks for more than it has; every
// argument lies inside the input or the request's own storage; a parse of
// the same bytes gives the same request (no hidden state); and feeding the
// stream in two pieces (the first incomplete) parses the same requests.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "tools/server/resp.h"

namespace {

using roundtable::server::Request;
using roundtable::server::RequestLimits;
using roundtable::server::RequestParser;

void Check(bool ok) {
  if (!ok) std::abort();
}

// The requests of `in` as argument lists, up to the first error or
// incomplete one; *rest is where that one starts.
std::vector<std::vector<std::string>> ParseAll(std::string_view in,
                                               const RequestLimits& limits,
                                               size_t* rest) {
  RequestParser parser(limits);
  Request request;
  std::vector<std::vector<std::string>> out;
  size_t at = 0;
  while (at < in.size()) {
    const std::string_view left = in.substr(at);
    const auto outcome = parser.Parse(left, &request);
    if (outcome != RequestParser::Outcome::kRequest) {
      if (outcome == RequestParser::Outcome::kIncomplete) {
        Check(parser.needed() > left.size());
      } else {
        Check(!parser.error().empty());
      }
      break;
    }
    Check(parser.consumed() >= 1 && parser.consumed() <= left.size());
    std::vector<std::string> args;
    for (std::string_view a : request.args()) {
      const bool inside = a.data() >= left.data() &&
                          a.data() + a.size() <= left.data() + left.size();
      // An inline request's arguments are the request's own strings.
      Check(inside || left[0] != '*');
      args.emplace_back(a);
    }
    // The same bytes again: the same request.
    Request again;
    Check(parser.Parse(left, &again) == RequestParser::Outcome::kRequest);
    Check(again.args().size() == args.size());
    out.push_back(std::move(args));
    at += parser.consumed();
  }
  *rest = at;
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  RequestLimits limits;
  limits.max_bulk_bytes = 1 << 10;
  limits.max_args = 64;
  limits.max_inline_bytes = 256;
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  size_t rest = 0;
  const auto all = ParseAll(in, limits, &rest);
  // What a server reading the stream in two pieces sees: the requests
  // whole in the first piece, then (from where it stopped) the others.
  const size_t cut = size / 2;
  size_t first_rest = 0;
  auto first = ParseAll(in.substr(0, cut), limits, &first_rest);
  size_t second_rest = 0;
  auto second = ParseAll(in.substr(first_rest), limits, &second_rest);
  first.insert(first.end(), second.begin(), second.end());
  Check(first == all);
  return 0;
}
