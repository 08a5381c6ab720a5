#include "tools/server/resp.h"

#include <charconv>
#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace roundtable::server {
namespace {

// A count or a length: decimal digits, a sign allowed, as Redis's string2ll
// takes them (no blanks, no "+", no leading zeros but "0" itself).
bool ParseInt(std::string_view s, int64_t* out) {
  if (s.empty() || s.size() > 20) return false;
  const bool negative = s[0] == '-';
  std::string_view digits = negative ? s.substr(1) : s;
  if (digits.empty() || (digits[0] == '0' && digits.size() > 1)) return false;
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(),
                                   v);
  if (ec != std::errc() || end != digits.data() + digits.size()) return false;
  if (!negative && v > uint64_t{INT64_MAX}) return false;
  if (negative && v > uint64_t{INT64_MAX} + 1) return false;
  *out = negative ? static_cast<int64_t>(0 - v) : static_cast<int64_t>(v);
  return true;
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool IsBlank(char c) {
  return c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == '\v' ||
         c == '\f' || c == '\0';
}

}  // namespace

bool RequestParser::Line(std::string_view in, size_t at,
                         std::string_view* line) const {
  const size_t end = in.find("\r\n", at);
  if (end == std::string_view::npos) return false;
  *line = in.substr(at, end - at);
  return true;
}

RequestParser::Outcome RequestParser::Fail(std::string message) {
  error_ = std::move(message);
  return Outcome::kError;
}

RequestParser::Outcome RequestParser::Parse(std::string_view in,
                                            Request* request) {
  request->args_.clear();
  request->owned_.clear();
  consumed_ = 0;
  needed_ = in.size() + 1;
  if (in.empty()) return Outcome::kIncomplete;
  return in[0] == '*' ? ParseArray(in, request) : ParseInline(in, request);
}

RequestParser::Outcome RequestParser::ParseArray(std::string_view in,
                                                 Request* request) {
  std::string_view line;
  if (!Line(in, 1, &line)) {
    if (in.size() > limits_.max_inline_bytes) {
      return Fail("ERR Protocol error: too big mbulk count string");
    }
    return Outcome::kIncomplete;
  }
  int64_t count = 0;
  if (!ParseInt(line, &count) ||
      count > static_cast<int64_t>(limits_.max_args)) {
    return Fail("ERR Protocol error: invalid multibulk length");
  }
  size_t at = 1 + line.size() + 2;
  // "*0" and "*-1" are requests of nothing: skipped.
  if (count <= 0) {
    consumed_ = at;
    return Outcome::kRequest;
  }
  request->args_.reserve(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    if (at >= in.size()) {
      needed_ = at + 1;
      return Outcome::kIncomplete;
    }
    if (in[at] != '$') {
      return Fail(absl::StrCat("ERR Protocol error: expected '$', got '",
                               absl::string_view(&in[at], 1), "'"));
    }
    if (!Line(in, at + 1, &line)) {
      if (in.size() - at > limits_.max_inline_bytes) {
        return Fail("ERR Protocol error: too big bulk count string");
      }
      needed_ = in.size() + 1;
      return Outcome::kIncomplete;
    }
    int64_t length = 0;
    if (!ParseInt(line, &length) || length < 0 ||
        static_cast<uint64_t>(length) > limits_.max_bulk_bytes) {
      return Fail("ERR Protocol error: invalid bulk length");
    }
    at += 1 + line.size() + 2;
    const size_t end = at + static_cast<size_t>(length);
    if (in.size() < end + 2) {
      needed_ = end + 2;
      return Outcome::kIncomplete;
    }
    if (in[end] != '\r' || in[end + 1] != '\n') {
      return Fail("ERR Protocol error: expected CRLF after a bulk string");
    }
    request->args_.push_back(in.substr(at, end - at));
    at = end + 2;
  }
  consumed_ = at;
  return Outcome::kRequest;
}

RequestParser::Outcome RequestParser::ParseInline(std::string_view in,
                                                  Request* request) {
  const size_t newline = in.find('\n');
  if (newline == std::string_view::npos) {
    if (in.size() > limits_.max_inline_bytes) {
      return Fail("ERR Protocol error: too big inline request");
    }
    return Outcome::kIncomplete;
  }
  if (newline > limits_.max_inline_bytes) {
    return Fail("ERR Protocol error: too big inline request");
  }
  std::string_view line = in.substr(0, newline);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (!SplitInline(line, &request->owned_)) {
    return Fail("ERR Protocol error: unbalanced quotes in request");
  }
  if (request->owned_.size() > limits_.max_args) {
    return Fail("ERR Protocol error: invalid multibulk length");
  }
  for (const std::string& arg : request->owned_) {
    request->args_.push_back(arg);
  }
  consumed_ = newline + 1;
  return Outcome::kRequest;
}

bool SplitInline(std::string_view line, std::deque<std::string>* out) {
  size_t i = 0;
  const size_t n = line.size();
  while (true) {
    while (i < n && IsBlank(line[i])) ++i;
    if (i == n) return true;
    std::string arg;
    bool in_double = false;
    bool in_single = false;
    while (true) {
      if (in_double) {
        if (i == n) return false;
        if (line[i] == '\\' && i + 3 < n && line[i + 1] == 'x' &&
            HexDigit(line[i + 2]) >= 0 && HexDigit(line[i + 3]) >= 0) {
          arg.push_back(static_cast<char>(HexDigit(line[i + 2]) * 16 +
                                          HexDigit(line[i + 3])));
          i += 4;
        } else if (line[i] == '\\' && i + 1 < n) {
          char c = line[i + 1];
          switch (c) {
            case 'n': c = '\n'; break;
            case 'r': c = '\r'; break;
            case 't': c = '\t'; break;
            case 'b': c = '\b'; break;
            case 'a': c = '\a'; break;
            default: break;
          }
          arg.push_back(c);
          i += 2;
        } else if (line[i] == '"') {
          // A closing quote must be followed by a blank or the end.
          if (i + 1 < n && !IsBlank(line[i + 1])) return false;
          ++i;
          break;
        } else {
          arg.push_back(line[i++]);
        }
      } else if (in_single) {
        if (i == n) return false;
        if (line[i] == '\\' && i + 1 < n && line[i + 1] == '\'') {
          arg.push_back('\'');
          i += 2;
        } else if (line[i] == '\'') {
          if (i + 1 < n && !IsBlank(line[i + 1])) return false;
          ++i;
          break;
        } else {
          arg.push_back(line[i++]);
        }
      } else {
        if (i == n || IsBlank(line[i])) break;
        if (line[i] == '"') {
          in_double = true;
        } else if (line[i] == '\'') {
          in_single = true;
        } else {
          arg.push_back(line[i]);
        }
        ++i;
      }
    }
    out->push_back(std::move(arg));
  }
}

void ReplyWriter::Header(char kind, uint64_t n) {
  char digits[24];
  auto [end, ec] = std::to_chars(digits, digits + sizeof digits, n);
  out_->push_back(kind);
  out_->append(digits, end);
  out_->append("\r\n");
}

void ReplyWriter::Simple(std::string_view text) {
  out_->push_back('+');
  out_->append(text);
  out_->append("\r\n");
}

void ReplyWriter::Error(std::string_view text) {
  out_->push_back('-');
  // An error is one line: any line break in it would end the reply.
  for (char c : text) out_->push_back(c == '\r' || c == '\n' ? ' ' : c);
  out_->append("\r\n");
}

void ReplyWriter::Integer(int64_t n) {
  char digits[24];
  auto [end, ec] = std::to_chars(digits, digits + sizeof digits, n);
  out_->push_back(':');
  out_->append(digits, end);
  out_->append("\r\n");
}

void ReplyWriter::Bulk(std::string_view bytes) {
  Header('$', bytes.size());
  out_->append(bytes);
  out_->append("\r\n");
}

void ReplyWriter::Null() {
  out_->append(protocol_ >= 3 ? "_\r\n" : "$-1\r\n");
}

void ReplyWriter::NullArray() {
  out_->append(protocol_ >= 3 ? "_\r\n" : "*-1\r\n");
}

void ReplyWriter::Array(size_t n) { Header('*', n); }

void ReplyWriter::Map(size_t pairs) {
  if (protocol_ >= 3) {
    Header('%', pairs);
  } else {
    Header('*', 2 * pairs);
  }
}

void ReplyWriter::Set(size_t n) { Header(protocol_ >= 3 ? '~' : '*', n); }

void ReplyWriter::Double(double d) {
  if (protocol_ < 3) {
    Bulk(FormatDouble(d));
    return;
  }
  out_->push_back(',');
  out_->append(std::isnan(d) ? "nan" : FormatDouble(d));
  out_->append("\r\n");
}

void ReplyWriter::Boolean(bool b) {
  if (protocol_ >= 3) {
    out_->append(b ? "#t\r\n" : "#f\r\n");
  } else {
    Integer(b ? 1 : 0);
  }
}

void ReplyWriter::Verbatim(std::string_view text) {
  if (protocol_ < 3) {
    Bulk(text);
    return;
  }
  Header('=', text.size() + 4);
  out_->append("txt:");
  out_->append(text);
  out_->append("\r\n");
}

std::string FormatDouble(double d) {
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  // The shortest fixed notation that reads back as the same double, as
  // Redis prints INCRBYFLOAT's result (no exponent).
  char buffer[512];
  auto [end, ec] =
      std::to_chars(buffer, buffer + sizeof buffer, d, std::chars_format::fixed);
  if (ec != std::errc()) return absl::StrCat(d);
  std::string s(buffer, end);
  if (s == "-0") s = "0";
  return s;
}

}  // namespace roundtable::server
