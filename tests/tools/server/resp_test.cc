#include "tools/server/resp.h"

#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace roundtable::server {
namespace {

using Outcome = RequestParser::Outcome;

std::vector<std::string> Args(const Request& r) {
  return std::vector<std::string>(r.args().begin(), r.args().end());
}

std::string Encode(const std::vector<std::string>& args) {
  std::string out = "*" + std::to_string(args.size()) + "\r\n";
  for (const std::string& a : args) {
    out += "$" + std::to_string(a.size()) + "\r\n" + a + "\r\n";
  }
  return out;
}

TEST(RespTest, ParsesAnArrayOfBulkStrings) {
  RequestParser parser;
  Request r;
  const std::string in = Encode({"SET", "key", "a\r\nvalue\0x"}) + "*1\r\n";
  ASSERT_EQ(parser.Parse(in, &r), Outcome::kRequest);
  EXPECT_EQ(Args(r), (std::vector<std::string>{"SET", "key", "a\r\nvalue\0x"}));
  EXPECT_EQ(parser.consumed(), in.size() - 4);
}

TEST(RespTest, BinaryBulkStringsKeepEveryByte) {
  std::string value;
  for (int i = 0; i < 256; ++i) value.push_back(static_cast<char>(i));
  RequestParser parser;
  Request r;
  const std::string in = Encode({"SET", value, value});
  ASSERT_EQ(parser.Parse(in, &r), Outcome::kRequest);
  EXPECT_EQ(Args(r)[1], value);
  EXPECT_EQ(Args(r)[2], value);
}

// Every request, cut at every byte, is incomplete until its last byte and
// then parses to exactly its arguments; needed() never asks for more than
// the whole request.
TEST(RespTest, EveryPrefixIsIncompleteAndTheWholeParses) {
  std::mt19937 random(7);
  for (int round = 0; round < 200; ++round) {
    std::vector<std::string> args(1 + random() % 5);
    for (std::string& a : args) {
      a.resize(random() % 40);
      for (char& ch : a) ch = static_cast<char>(random());
    }
    const std::string in = Encode(args);
    RequestParser parser;
    Request r;
    for (size_t cut = 0; cut < in.size(); ++cut) {
      ASSERT_EQ(parser.Parse(std::string_view(in).substr(0, cut), &r),
                Outcome::kIncomplete)
          << "round " << round << " cut " << cut;
      EXPECT_GT(parser.needed(), cut);
      EXPECT_LE(parser.needed(), in.size());
    }
    ASSERT_EQ(parser.Parse(in, &r), Outcome::kRequest);
    EXPECT_EQ(Args(r), args);
    EXPECT_EQ(parser.consumed(), in.size());
  }
}

TEST(RespTest, PipelinedRequestsParseOneAfterAnother) {
  const std::string in = Encode({"PING"}) + "GET x\r\n" + Encode({"ECHO", ""});
  RequestParser parser;
  Request r;
  std::string_view rest = in;
  std::vector<std::vector<std::string>> seen;
  while (!rest.empty()) {
    ASSERT_EQ(parser.Parse(rest, &r), Outcome::kRequest);
    seen.push_back(Args(r));
    rest.remove_prefix(parser.consumed());
  }
  EXPECT_EQ(seen, (std::vector<std::vector<std::string>>{
                      {"PING"}, {"GET", "x"}, {"ECHO", ""}}));
}

TEST(RespTest, EmptyRequestsAreSkipped) {
  RequestParser parser;
  Request r;
  for (std::string in : {"*0\r\n", "*-1\r\n", "\r\n", "   \n"}) {
    ASSERT_EQ(parser.Parse(in, &r), Outcome::kRequest) << in;
    EXPECT_TRUE(r.empty());
    EXPECT_EQ(parser.consumed(), in.size());
  }
}

TEST(RespTest, InlineRequestsSplitAsRedisDoes) {
  RequestParser parser;
  Request r;
  ASSERT_EQ(parser.Parse("set  \"a b\\x41\\n\" 'it\\'s'  plain\r\n", &r),
            Outcome::kRequest);
  EXPECT_EQ(Args(r),
            (std::vector<std::string>{"set", "a bA\n", "it's", "plain"}));
  ASSERT_EQ(parser.Parse("get \"\"\n", &r), Outcome::kRequest);
  EXPECT_EQ(Args(r), (std::vector<std::string>{"get", ""}));
  EXPECT_EQ(parser.Parse("get \"open", &r), Outcome::kIncomplete);
}

TEST(RespTest, MalformedInputIsAnError) {
  struct Case {
    std::string in;
    std::string error;
  };
  const std::vector<Case> cases = {
      {"*x\r\n", "ERR Protocol error: invalid multibulk length"},
      {"*1\r\n:3\r\n", "ERR Protocol error: expected '$', got ':'"},
      {"*1\r\n$-3\r\n", "ERR Protocol error: invalid bulk length"},
      {"*1\r\n$abc\r\n", "ERR Protocol error: invalid bulk length"},
      {"*1\r\n$3\r\nabcXY", "ERR Protocol error: expected CRLF after a bulk string"},
      {"*99999999999\r\n", "ERR Protocol error: invalid multibulk length"},
      {"*1\r\n$99999999999999999999999\r\n",
       "ERR Protocol error: invalid bulk length"},
      {"set \"a\"b\r\n", "ERR Protocol error: unbalanced quotes in request"},
      {"set 'a\r\n", "ERR Protocol error: unbalanced quotes in request"},
  };
  for (const Case& c : cases) {
    RequestParser parser;
    Request r;
    EXPECT_EQ(parser.Parse(c.in, &r), Outcome::kError) << c.in;
    EXPECT_EQ(parser.error(), c.error) << c.in;
  }
}

TEST(RespTest, LimitsAreEnforced) {
  RequestLimits limits;
  limits.max_bulk_bytes = 10;
  limits.max_args = 3;
  limits.max_inline_bytes = 32;
  RequestParser parser(limits);
  Request r;
  EXPECT_EQ(parser.Parse("*1\r\n$11\r\n", &r), Outcome::kError);
  EXPECT_EQ(parser.Parse("*1\r\n$10\r\n", &r), Outcome::kIncomplete);
  EXPECT_EQ(parser.needed(), 9u + 10 + 2);
  EXPECT_EQ(parser.Parse("*4\r\n", &r), Outcome::kError);
  EXPECT_EQ(parser.Parse("a b c d\r\n", &r), Outcome::kError);
  EXPECT_EQ(parser.Parse(std::string(40, 'a'), &r), Outcome::kError);
  EXPECT_EQ(parser.error(), "ERR Protocol error: too big inline request");
  EXPECT_EQ(parser.Parse("*" + std::string(40, '1'), &r), Outcome::kError);
}

TEST(RespTest, RepliesInResp2) {
  std::string out;
  ReplyWriter w(&out, 2);
  w.Simple("OK");
  w.Error("ERR bad\r\nthing");
  w.Integer(-42);
  w.Bulk("a\r\nb");
  w.Null();
  w.NullArray();
  w.Map(1);
  w.Set(2);
  w.Double(1.5);
  w.Boolean(true);
  w.Verbatim("text");
  EXPECT_EQ(out,
            "+OK\r\n-ERR bad  thing\r\n:-42\r\n$4\r\na\r\nb\r\n$-1\r\n*-1\r\n"
            "*2\r\n*2\r\n$3\r\n1.5\r\n:1\r\n$4\r\ntext\r\n");
}

TEST(RespTest, RepliesInResp3) {
  std::string out;
  ReplyWriter w(&out, 3);
  w.Null();
  w.NullArray();
  w.Map(2);
  w.Set(1);
  w.Double(-0.25);
  w.Boolean(false);
  w.Verbatim("text");
  EXPECT_EQ(out, "_\r\n_\r\n%2\r\n~1\r\n,-0.25\r\n#f\r\n=8\r\ntxt:text\r\n");
}

TEST(RespTest, DoublesPrintAsRedisPrintsThem) {
  EXPECT_EQ(FormatDouble(10.5 + 0.1), "10.6");
  EXPECT_EQ(FormatDouble(5200), "5200");
  EXPECT_EQ(FormatDouble(1e20), "100000000000000000000");
  EXPECT_EQ(FormatDouble(-0.0), "0");
  EXPECT_EQ(FormatDouble(3.0e-5), "0.00003");
  EXPECT_EQ(FormatDouble(1.0 / 0.0), "inf");
}

}  // namespace
}  // namespace roundtable::server
