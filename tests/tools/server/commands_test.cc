#include "tools/server/commands.h"

#include <unistd.h>

#include <filesystem>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/tools/server/commands_fixture.h"
#include "roundtable/table.h"

namespace roundtable::server {
namespace {

using CommandsTest = CommandsFixture;

std::string Bulk(const std::string& s) {
  return "$" + std::to_string(s.size()) + "\r\n" + s + "\r\n";
}
std::string Int(int64_t n) { return ":" + std::to_string(n) + "\r\n"; }
const std::string kOk = "+OK\r\n";
const std::string kNil = "$-1\r\n";

TEST_F(CommandsTest, StringCommandsReplyAsRedis) {
  EXPECT_EQ(Run({"PING"}), "+PONG\r\n");
  EXPECT_EQ(Run({"ping", "hi"}), Bulk("hi"));
  EXPECT_EQ(Run({"GET", "k"}), kNil);
  EXPECT_EQ(Run({"SET", "k", "v"}), kOk);
  EXPECT_EQ(Run({"set", "k", "w", "NX"}), kNil);
  EXPECT_EQ(Run({"set", "k", "w", "XX", "GET"}), Bulk("v"));
  EXPECT_EQ(Run({"set", "n", "w", "XX"}), kNil);
  EXPECT_EQ(Run({"set", "k", "w", "NX", "XX"}), "-ERR syntax error\r\n");
  EXPECT_EQ(Run({"SETNX", "k", "x"}), Int(0));
  EXPECT_EQ(Run({"GETSET", "k", "x"}), Bulk("w"));
  EXPECT_EQ(Run({"STRLEN", "k"}), Int(1));
  EXPECT_EQ(Run({"APPEND", "k", "yz"}), Int(3));
  EXPECT_EQ(Run({"GETRANGE", "k", "1", "-1"}), Bulk("yz"));
  EXPECT_EQ(Run({"GETRANGE", "k", "-100", "100"}), Bulk("xyz"));
  EXPECT_EQ(Run({"GETRANGE", "k", "5", "9"}), Bulk(""));
  EXPECT_EQ(Run({"SETRANGE", "k", "5", "!"}), Int(6));
  EXPECT_EQ(Run({"GET", "k"}), Bulk(std::string("xyz\0\0!", 6)));
  EXPECT_EQ(Run({"SETRANGE", "none", "3", ""}), Int(0));
  EXPECT_EQ(Run({"EXISTS", "none"}), Int(0));
  EXPECT_EQ(Run({"SETRANGE", "k", "-1", "a"}), "-ERR offset is out of range\r\n");
  EXPECT_EQ(Run({"GETDEL", "k"}), Bulk(std::string("xyz\0\0!", 6)));
  EXPECT_EQ(Run({"GETDEL", "k"}), kNil);
  EXPECT_EQ(Run({"MSET", "a", "1", "b", "2"}), kOk);
  EXPECT_EQ(Run({"MSET", "a", "1", "b"}),
            "-ERR wrong number of arguments for 'mset' command\r\n");
  EXPECT_EQ(Run({"MGET", "a", "zz", "b"}),
            "*3\r\n" + Bulk("1") + kNil + Bulk("2"));
  EXPECT_EQ(Run({"MSETNX", "c", "3", "a", "9"}), Int(0));
  EXPECT_EQ(Run({"EXISTS", "c", "a", "a"}), Int(2));
  EXPECT_EQ(Run({"MSETNX", "c", "3", "d", "4"}), Int(1));
  EXPECT_EQ(Run({"DEL", "a", "a", "b", "zz"}), Int(2));
  EXPECT_EQ(Run({"UNLINK", "c"}), Int(1));
  EXPECT_EQ(Run({"DBSIZE"}), Int(1));
  EXPECT_EQ(Run({"TYPE", "d"}), "+string\r\n");
  EXPECT_EQ(Run({"TYPE", "a"}), "+none\r\n");
  EXPECT_EQ(Run({"TTL", "d"}), Int(-1));
  EXPECT_EQ(Run({"PTTL", "a"}), Int(-2));
  EXPECT_EQ(Run({"KEYS", "*"}), "*1\r\n" + Bulk("d"));
  EXPECT_EQ(Run({"RANDOMKEY"}), Bulk("d"));
  EXPECT_EQ(Run({"FLUSHDB"}), kOk);
  EXPECT_EQ(Run({"DBSIZE"}), Int(0));
  EXPECT_EQ(Run({"RANDOMKEY"}), kNil);
}

TEST_F(CommandsTest, CountersAreAtomicAndChecked) {
  EXPECT_EQ(Run({"INCR", "n"}), Int(1));
  EXPECT_EQ(Run({"INCRBY", "n", "41"}), Int(42));
  EXPECT_EQ(Run({"DECR", "n"}), Int(41));
  EXPECT_EQ(Run({"DECRBY", "n", "-9"}), Int(50));
  EXPECT_EQ(Run({"INCRBY", "n", "x"}),
            "-ERR value is not an integer or out of range\r\n");
  EXPECT_EQ(Run({"SET", "m", "9223372036854775807"}), kOk);
  EXPECT_EQ(Run({"INCR", "m"}),
            "-ERR increment or decrement would overflow\r\n");
  EXPECT_EQ(Run({"DECRBY", "n", "-9223372036854775808"}),
            "-ERR decrement would overflow\r\n");
  EXPECT_EQ(Run({"SET", "s", " 1"}), kOk);
  EXPECT_EQ(Run({"INCR", "s"}),
            "-ERR value is not an integer or out of range\r\n");
  EXPECT_EQ(Run({"SET", "f", "10.5"}), kOk);
  EXPECT_EQ(Run({"INCRBYFLOAT", "f", "0.1"}), Bulk("10.6"));
  EXPECT_EQ(Run({"INCRBYFLOAT", "f", "5.0e3"}), Bulk("5010.6"));
  EXPECT_EQ(Run({"INCRBYFLOAT", "f", "abc"}),
            "-ERR value is not a valid float\r\n");
  EXPECT_EQ(Run({"INCRBYFLOAT", "f", "inf"}),
            "-ERR increment would produce NaN or Infinity\r\n");
  EXPECT_EQ(Run({"GET", "f"}), Bulk("5010.6"));
}

TEST_F(CommandsTest, ExpiryIsRefusedClearly) {
  for (std::vector<std::string> args :
       {std::vector<std::string>{"SET", "k", "v", "EX", "10"},
        {"SET", "k", "v", "PX", "10"},
        {"EXPIRE", "k", "10"},
        {"PEXPIRE", "k", "10"}}) {
    EXPECT_EQ(Run(args).substr(0, 31), "-ERR expiry is not supported: r");
  }
  EXPECT_EQ(Run({"EXISTS", "k"}), Int(0));  // the refused SET wrote nothing
  EXPECT_EQ(Run({"SET", "k", "v", "KEEPTTL"}), kOk);
  EXPECT_EQ(Run({"PERSIST", "k"}), Int(0));
}

TEST_F(CommandsTest, ErrorsNameTheCommand) {
  EXPECT_EQ(Run({"GET"}), "-ERR wrong number of arguments for 'get' command\r\n");
  EXPECT_EQ(Run({"NOSUCH", "a", "b"}),
            "-ERR unknown command 'NOSUCH', with args beginning with: 'a' "
            "'b' \r\n");
  EXPECT_EQ(Run({"SELECT", "1"}), "-ERR DB index is out of range\r\n");
  EXPECT_EQ(Run({"SELECT", "0"}), kOk);
  EXPECT_EQ(Run({"CLIENT", "NOSUCH"}).substr(0, 24), "-ERR unknown subcommand ");
}

TEST_F(CommandsTest, HelloSwitchesToResp3) {
  EXPECT_EQ(Run({"HELLO", "4"}), "-NOPROTO unsupported protocol version\r\n");
  const std::string hello = Run({"HELLO", "3", "SETNAME", "me"});
  EXPECT_EQ(hello.substr(0, 4), "%7\r\n");
  EXPECT_NE(hello.find(Bulk("proto") + Int(3)), std::string::npos);
  EXPECT_EQ(Run({"GET", "none"}), "_\r\n");
  EXPECT_EQ(Run({"CLIENT", "GETNAME"}), Bulk("me"));
  EXPECT_EQ(Run({"CLIENT", "ID"}), Int(7));
  EXPECT_EQ(Run({"CONFIG", "GET", "appendf*"}),
            "%1\r\n" + Bulk("appendfsync") + Bulk("everysec"));
  EXPECT_EQ(Run({"HELLO", "2"}).substr(0, 5), "*14\r\n");
  EXPECT_EQ(Run({"GET", "none"}), kNil);
}

TEST_F(CommandsTest, PasswordGuardsEveryCommandButAuthHelloAndQuit) {
  config_.requirepass = "secret";
  EXPECT_EQ(Run({"GET", "k"}), "-NOAUTH Authentication required.\r\n");
  EXPECT_EQ(Run({"AUTH", "wrong"}),
            "-WRONGPASS invalid username-password pair or user is "
            "disabled.\r\n");
  EXPECT_EQ(Run({"AUTH", "someone", "secret"}).substr(0, 10), "-WRONGPASS");
  EXPECT_EQ(Run({"HELLO", "3"}).substr(0, 7), "-NOAUTH");
  EXPECT_EQ(Run({"HELLO", "3", "AUTH", "default", "secret"}).substr(0, 4),
            "%7\r\n");
  EXPECT_EQ(Run({"GET", "k"}), "_\r\n");
  session_.authenticated = false;
  EXPECT_EQ(Run({"AUTH", "secret"}), kOk);
  EXPECT_EQ(Run({"QUIT"}), kOk);
  EXPECT_TRUE(session_.close_after_reply);
}

TEST_F(CommandsTest, InfoAndCommandDescribeTheServer) {
  EXPECT_EQ(Run({"SET", "k", "v"}), kOk);
  const std::string info = Run({"INFO"});
  EXPECT_NE(info.find("redis_version:"), std::string::npos);
  EXPECT_NE(info.find("# Table\r\n"), std::string::npos);
  EXPECT_NE(info.find("db0:keys=1,"), std::string::npos);
  const std::string keyspace = Run({"INFO", "keyspace"});
  EXPECT_EQ(keyspace.find("# Server"), std::string::npos);
  EXPECT_NE(keyspace.find("# Keyspace"), std::string::npos);
  const std::string get = Run({"COMMAND", "INFO", "get", "nosuch"});
  EXPECT_EQ(get.substr(0, 4 + 5 + 9 + 4), "*2\r\n*10\r\n$3\r\nget\r\n:2\r\n");
  EXPECT_NE(get.find("*-1\r\n"), std::string::npos);
}

// A SCAN reply's cursor and keys: *2, the cursor as a bulk string, then an
// array of bulk strings.
std::pair<std::string, std::vector<std::string>> ParseScan(
    const std::string& reply) {
  size_t at = 0;
  auto line = [&] {
    const size_t end = reply.find("\r\n", at);
    std::string l = reply.substr(at, end - at);
    at = end + 2;
    return l;
  };
  auto bulk = [&] {
    const size_t n = std::stoul(line().substr(1));
    std::string b = reply.substr(at, n);
    at += n + 2;
    return b;
  };
  EXPECT_EQ(line(), "*2");
  std::string cursor = bulk();
  const size_t n = std::stoul(line().substr(1));
  std::vector<std::string> keys;
  for (size_t i = 0; i < n; ++i) keys.push_back(bulk());
  EXPECT_EQ(at, reply.size());
  return {cursor, keys};
}

TEST_F(CommandsTest, ScanWalksEveryKeyOnceWithMatchCountAndType) {
  std::set<std::string> all, ones;
  for (int i = 0; i < 500; ++i) {
    const std::string k = "key:" + std::to_string(i);
    ASSERT_EQ(Run({"SET", k, "v"}), kOk);
    all.insert(k);
    if (k.starts_with("key:1")) ones.insert(k);
  }
  auto walk = [&](std::vector<std::string> options) {
    std::vector<std::string> got;
    std::string cursor = "0";
    int steps = 0;
    do {
      std::vector<std::string> args = {"SCAN", cursor};
      args.insert(args.end(), options.begin(), options.end());
      auto [next, keys] = ParseScan(Run(args));
      got.insert(got.end(), keys.begin(), keys.end());
      cursor = next;
    } while (cursor != "0" && ++steps < 100000);
    return got;
  };
  std::vector<std::string> got = walk({});
  EXPECT_EQ(got.size(), all.size());
  EXPECT_EQ(std::set<std::string>(got.begin(), got.end()), all);
  got = walk({"MATCH", "key:1*", "COUNT", "3"});
  EXPECT_EQ(got.size(), ones.size());
  EXPECT_EQ(std::set<std::string>(got.begin(), got.end()), ones);
  got = walk({"count", "100000", "type", "STRING"});
  EXPECT_EQ(got.size(), all.size());
  EXPECT_TRUE(walk({"TYPE", "hash"}).empty());
  // Redis's errors.
  for (const std::string cursor : {"-1", "abc", "1x", "", " 1", "+1",
                                   "18446744073709551616"}) {
    EXPECT_EQ(Run({"SCAN", cursor}), "-ERR invalid cursor\r\n") << cursor;
  }
  EXPECT_EQ(Run({"SCAN", "0", "COUNT", "0"}), "-ERR syntax error\r\n");
  EXPECT_EQ(Run({"SCAN", "0", "COUNT", "x"}),
            "-ERR value is not an integer or out of range\r\n");
  EXPECT_EQ(Run({"SCAN", "0", "MATCH"}), "-ERR syntax error\r\n");
  EXPECT_EQ(Run({"SCAN", "0", "SORT", "x"}), "-ERR syntax error\r\n");
  EXPECT_EQ(Run({"SCAN"}),
            "-ERR wrong number of arguments for 'scan' command\r\n");
  // The largest cursor is a hash like any other.
  EXPECT_EQ(ParseScan(Run({"SCAN", "18446744073709551615"})).first, "0");
}

TEST(GlobTest, MatchesAsRedis) {
  struct Case {
    const char* pattern;
    const char* text;
    bool match;
  };
  for (const Case& c : std::vector<Case>{
           {"*", "", true},
           {"*", "abc", true},
           {"a*c", "abbbc", true},
           {"a*c", "abcd", false},
           {"h?llo", "hello", true},
           {"h?llo", "hllo", false},
           {"h[ae]llo", "hallo", true},
           {"h[ae]llo", "hillo", false},
           {"h[^e]llo", "hallo", true},
           {"h[^e]llo", "hello", false},
           {"h[a-b]llo", "hbllo", true},
           {"h[b-a]llo", "hallo", true},
           {"h\\*llo", "h*llo", true},
           {"h\\*llo", "hello", false},
           {"*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", false},
           {"user:*:name", "user:42:name", true},
       }) {
    EXPECT_EQ(Commands::GlobMatch(c.pattern, c.text), c.match)
        << c.pattern << " " << c.text;
  }
  EXPECT_TRUE(Commands::GlobMatch("APPEND*", "appendfsync", true));
}

// Random string commands against std::map: every reply as the model says,
// through reopens of the table.
TEST_F(CommandsTest, RandomCommandsMatchAMapModel) {
  std::mt19937 random(11);
  std::map<std::string, std::string> model;
  auto key = [&] { return "k" + std::to_string(random() % 50); };
  for (int i = 0; i < 5000; ++i) {
    const std::string k = key();
    auto it = model.find(k);
    const bool present = it != model.end();
    switch (random() % 8) {
      case 0: {
        const std::string v(random() % 300, static_cast<char>('a' + i % 26));
        ASSERT_EQ(Run({"SET", k, v}), kOk);
        model[k] = v;
        break;
      }
      case 1:
        ASSERT_EQ(Run({"GET", k}), present ? Bulk(it->second) : kNil);
        break;
      case 2:
        ASSERT_EQ(Run({"DEL", k}), Int(present));
        model.erase(k);
        break;
      case 3: {
        const std::string v = std::to_string(i);
        ASSERT_EQ(Run({"APPEND", k, v}),
                  Int((present ? it->second.size() : 0) + v.size()));
        model[k] += v;
        break;
      }
      case 4: {
        if (present && it->second.size() >= 18) break;  // near overflow
        int64_t n = 0;
        const bool numeric =
            !present || (!it->second.empty() &&
                         it->second.find_first_not_of("0123456789") ==
                             std::string::npos &&
                         (it->second[0] != '0' || it->second.size() == 1));
        if (present && numeric) n = std::stoll(it->second);
        const std::string reply = Run({"INCR", k});
        if (numeric) {
          ASSERT_EQ(reply, Int(n + 1)) << k;
          model[k] = std::to_string(n + 1);
        } else {
          ASSERT_EQ(reply[0], '-') << k << " " << it->second;
        }
        break;
      }
      case 5:
        ASSERT_EQ(Run({"STRLEN", k}),
                  Int(present ? it->second.size() : 0));
        break;
      case 6:
        ASSERT_EQ(Run({"SETNX", k, "n"}), Int(!present));
        if (!present) model[k] = "n";
        break;
      case 7:
        ASSERT_EQ(Run({"EXISTS", k}), Int(present));
        break;
    }
    if (i % 1000 == 999) {
      commands_.reset();
      ASSERT_TRUE(table_->Close().ok());
      table_ = *Table::Open(Options(), dir_);
      commands_ = std::make_unique<Commands>(table_.get(), &config_, Hooks());
      ASSERT_EQ(Run({"DBSIZE"}), Int(model.size()));
    }
  }
  std::string keys = Run({"KEYS", "k*"});
  EXPECT_EQ(keys.substr(0, keys.find("\r\n")), "*" + std::to_string(model.size()));
}

}  // namespace
}  // namespace roundtable::server
