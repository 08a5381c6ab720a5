// RESP, the Redis serialization protocol, as the server speaks it: requests
// parsed off the front of a client's bytes (arrays of bulk strings, or
// inline commands as typed into a terminal), and replies encoded in RESP2 or
// RESP3 (docs/server.md). Plain functions and values: no shared state.
#ifndef ROUNDTABLE_TOOLS_SERVER_RESP_H_
#define ROUNDTABLE_TOOLS_SERVER_RESP_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace roundtable::server {

// What a request may be, each as Redis bounds it.
struct RequestLimits {
  // A bulk string's bytes (Redis's proto-max-bulk-len).
  uint64_t max_bulk_bytes = uint64_t{512} << 20;
  // Strings in one request (Redis refuses a multibulk count above this).
  uint64_t max_args = 1024 * 1024;
  // An inline request's line, and the digits of a count or a length.
  size_t max_inline_bytes = 64 << 10;
};

// One request: its arguments, the first being the command's name. Each
// argument is a view into the bytes parsed or into the request's own
// storage (an inline argument with escapes), valid until the next parse
// into the same Request and as long as those bytes are unchanged.
class Request {
 public:
  std::span<const std::string_view> args() const { return args_; }
  bool empty() const { return args_.empty(); }

 private:
  friend class RequestParser;
  std::vector<std::string_view> args_;
  std::deque<std::string> owned_;  // a deque: views into it stay put
};

// Parses requests off the front of a client's buffered bytes.
class RequestParser {
 public:
  enum class Outcome {
    kRequest,     // *request holds one (possibly empty: skip it)
    kIncomplete,  // the bytes end inside a request: read more
    kError,       // malformed: reply error(), then close the connection
  };

  explicit RequestParser(const RequestLimits& limits = {})
      : limits_(limits) {}

  // Parses the request at the front of `in`. On kRequest, consumed() is
  // its length in bytes; on kIncomplete, nothing of `in` is consumed and
  // needed() is a lower bound on the bytes `in` must hold for the request
  // to be whole; on kError, error() is the error reply's text.
  Outcome Parse(std::string_view in, Request* request);
  size_t consumed() const { return consumed_; }
  size_t needed() const { return needed_; }
  const std::string& error() const { return error_; }

 private:
  Outcome ParseArray(std::string_view in, Request* request);
  Outcome ParseInline(std::string_view in, Request* request);
  Outcome Fail(std::string message);
  // The line starting at `at` (its bytes before "\r\n"): false when `in`
  // does not hold its end yet.
  bool Line(std::string_view in, size_t at, std::string_view* line) const;

  const RequestLimits limits_;
  size_t consumed_ = 0;
  size_t needed_ = 0;
  std::string error_;
};

// Splits an inline request's line into arguments as Redis does: blanks
// separate them; "double quotes" take \n \r \t \b \a \\ \" and \xHH
// escapes, 'single quotes' take \'; a quote must be followed by a blank or
// the end. False for unbalanced quotes.
bool SplitInline(std::string_view line, std::deque<std::string>* out);

// Encodes replies into a buffer in RESP2 or RESP3 (`protocol` 2 or 3).
// RESP2 has no null of its own, no map, set, double or boolean: those go
// as Redis sends them to a RESP2 client (a null bulk string or array, a
// flat array of keys and values, an array, a bulk string, 1 or 0).
class ReplyWriter {
 public:
  ReplyWriter(std::string* out, int protocol)
      : out_(out), protocol_(protocol) {}
  int protocol() const { return protocol_; }
  std::string* out() const { return out_; }

  void Simple(std::string_view text);   // +text
  void Error(std::string_view text);    // -text ("ERR ...", "WRONGTYPE ...")
  void Integer(int64_t n);              // :n
  void Bulk(std::string_view bytes);    // $len bytes
  void Null();                          // RESP3 _, RESP2 $-1
  void NullArray();                     // RESP3 _, RESP2 *-1
  void Array(size_t n);                 // *n, then n replies
  void Map(size_t pairs);               // RESP3 %n, RESP2 *2n
  void Set(size_t n);                   // RESP3 ~n, RESP2 *n
  void Double(double d);                // RESP3 ,d, RESP2 a bulk string
  void Boolean(bool b);                 // RESP3 #t/#f, RESP2 :1/:0
  void Verbatim(std::string_view text); // RESP3 =len txt:text, RESP2 bulk

 private:
  void Header(char kind, uint64_t n);
  std::string* const out_;
  const int protocol_;
};

// A double as Redis prints one (INCRBYFLOAT's reply, RESP3 doubles): the
// shortest decimal that reads back as the same value, "inf" and "-inf".
std::string FormatDouble(double d);

}  // namespace roundtable::server

#endif  // ROUNDTABLE_TOOLS_SERVER_RESP_H_
