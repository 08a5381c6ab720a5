// The Redis Cluster pieces of the server: key slots (CRC16 and hash tags)
// against Redis's documented values, the topology file and its errors, and
// requests routed as a cluster node routes them (MOVED, CROSSSLOT,
// CLUSTERDOWN), with CLUSTER's replies.
#include "tools/server/cluster.h"

#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/tools/server/commands_fixture.h"
#include "roundtable/table.h"
#include "tools/server/commands.h"

namespace roundtable::server {
namespace {

TEST(KeySlotTest, MatchesRedis) {
  EXPECT_EQ(Crc16("123456789"), 0x31C3);  // CRC-16/XMODEM's check value
  EXPECT_EQ(KeySlot("foo"), 12182u);
  EXPECT_EQ(KeySlot("somekey"), 11058u);
  EXPECT_EQ(KeySlot("foo{hash_tag}"), 2515u);
  EXPECT_EQ(KeySlot("bar{hash_tag}"), 2515u);
  EXPECT_EQ(KeySlot("{user1000}.following"), KeySlot("user1000"));
  // An empty tag or an unclosed one: the whole key.
  EXPECT_EQ(KeySlot("{}x"), Crc16("{}x") % kClusterSlots);
  EXPECT_EQ(KeySlot("{x"), Crc16("{x") % kClusterSlots);
  EXPECT_EQ(KeySlot("a{b}{c}"), KeySlot("b"));
  EXPECT_EQ(KeySlot(""), 0u);
}

TEST(ClusterTopologyTest, ParsesNodesRangesAndComments) {
  auto t = ClusterTopology::Parse(
      "# three nodes\n"
      "a 127.0.0.1:7000 0-5000 5001\n"
      "\n"
      "b 127.0.0.1:7001 5002-16383   # the rest\n"
      "0123456789abcdef0123456789ABCDEF01234567 [::1]:7002\n",
      "b", "test");
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->nodes().size(), 3u);
  EXPECT_EQ(t->self().name, "b");
  EXPECT_EQ(t->self_index(), 1u);
  EXPECT_EQ(t->nodes()[0].ranges.size(), 2u);
  EXPECT_EQ(t->nodes()[2].id, "0123456789abcdef0123456789abcdef01234567");
  EXPECT_EQ(t->nodes()[2].host, "[::1]");
  EXPECT_EQ(t->nodes()[0].id.size(), 40u);
  EXPECT_NE(t->nodes()[0].id, t->nodes()[1].id);
  EXPECT_EQ(t->assigned_slots(), kClusterSlots);
  EXPECT_EQ(t->OwnerOf(5001)->name, "a");
  EXPECT_EQ(t->OwnerOf(5002)->name, "b");
}

TEST(ClusterTopologyTest, RefusesWhatNoClusterCouldBe) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"a 127.0.0.1:7000 0-16384\n", "line 1"},
      {"a 127.0.0.1:7000 5-4\n", "line 1"},
      {"a 127.0.0.1:7000 x\n", "line 1"},
      {"a 127.0.0.1:7000 -1\n", "line 1"},
      {"a 127.0.0.1:7000 0-10\nb 127.0.0.1:7001 10\n", "slot 10"},
      {"a 127.0.0.1:7000\na 127.0.0.1:7001\n", "given twice"},
      {"a 127.0.0.1\n", "HOST:PORT"},
      {"a 127.0.0.1:0\n", "HOST:PORT"},
      {"a 127.0.0.1:70000\n", "HOST:PORT"},
      {"a\n", "expected NAME"},
      {"b 127.0.0.1:7000 0-16383\n", "no node a"},
  };
  for (const auto& [text, error] : cases) {
    auto t = ClusterTopology::Parse(text, "a", "f");
    ASSERT_FALSE(t.ok()) << text;
    EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(t.status().message().find(error), std::string::npos)
        << t.status();
  }
  EXPECT_FALSE(ClusterTopology::Load("/nonexistent/topology", "a").ok());
}

class ClusterNodeTest : public CommandsFixture {
 protected:
  // This node serves slots 0-8191 but not 12182 ("foo"); 16000-16383 are
  // nobody's.
  void Configure(ServerConfig& config) override {
    config.cluster = std::make_shared<const ClusterTopology>(
        *ClusterTopology::Parse("me 127.0.0.1:7000 0-8191\n"
                                "other 127.0.0.2:7001 8192-15999\n",
                                "me", "test"));
  }
  // A key whose slot is in [first, last], found by trying names.
  static std::string KeyIn(uint32_t first, uint32_t last) {
    for (int i = 0;; ++i) {
      std::string k = "k" + std::to_string(i);
      if (KeySlot(k) >= first && KeySlot(k) <= last) return k;
    }
  }
};

TEST_F(ClusterNodeTest, RoutesEachRequestByItsKeysSlot) {
  const std::string mine = KeyIn(0, 8191), theirs = KeyIn(8192, 15999),
                    nobodys = KeyIn(16000, 16383);
  EXPECT_EQ(Run({"SET", mine, "v"}), "+OK\r\n");
  EXPECT_EQ(Run({"GET", mine}), "$1\r\nv\r\n");
  EXPECT_EQ(Run({"GET", "foo"}), "-MOVED 12182 127.0.0.2:7001\r\n");
  EXPECT_EQ(Run({"SET", theirs, "v"}),
            "-MOVED " + std::to_string(KeySlot(theirs)) +
                " 127.0.0.2:7001\r\n");
  EXPECT_EQ(Run({"GET", nobodys}), "-CLUSTERDOWN Hash slot not served\r\n");
  // Several keys: one slot, or CROSSSLOT even when all are this node's.
  EXPECT_EQ(Run({"MSET", "{t}a", "1", "{t}b", "2"}),
            KeySlot("t") <= 8191 ? "+OK\r\n"
                                 : "-MOVED " + std::to_string(KeySlot("t")) +
                                       " 127.0.0.2:7001\r\n");
  EXPECT_EQ(Run({"DEL", mine, KeyIn(0, KeySlot(mine) - 1)}),
            "-CROSSSLOT Keys in request don't hash to the same slot\r\n");
  // Commands without keys run on the node.
  EXPECT_EQ(Run({"DBSIZE"}).substr(0, 1), ":");
  EXPECT_EQ(Run({"PING"}), "+PONG\r\n");
  EXPECT_EQ(Run({"READONLY"}), "+OK\r\n");
}

TEST_F(ClusterNodeTest, ClusterCommandsDescribeTheTopology) {
  EXPECT_EQ(Run({"CLUSTER", "KEYSLOT", "somekey"}), ":11058\r\n");
  const std::string id = config_.cluster->self().id;
  EXPECT_EQ(Run({"CLUSTER", "MYID"}), "$40\r\n" + id + "\r\n");
  const std::string info = Run({"CLUSTER", "INFO"});
  EXPECT_NE(info.find("cluster_state:fail\r\n"), std::string::npos);
  EXPECT_NE(info.find("cluster_slots_assigned:16000\r\n"), std::string::npos);
  EXPECT_NE(info.find("cluster_known_nodes:2\r\n"), std::string::npos);
  const std::string nodes = Run({"CLUSTER", "NODES"});
  EXPECT_NE(nodes.find(id + " 127.0.0.1:7000@17000 myself,master - 0 0 1 "
                            "connected 0-8191\n"),
            std::string::npos);
  EXPECT_NE(nodes.find(" 127.0.0.2:7001@17001 master - 0 0 2 connected "
                       "8192-15999\n"),
            std::string::npos);
  EXPECT_TRUE(Run({"CLUSTER", "SLOTS"})
                  .starts_with("*2\r\n*3\r\n:0\r\n:8191\r\n*3\r\n"
                               "$9\r\n127.0.0.1\r\n:7000\r\n$40\r\n" +
                               id));
  EXPECT_TRUE(Run({"CLUSTER", "SHARDS"})
                  .starts_with("*2\r\n*4\r\n$5\r\nslots\r\n*2\r\n:0\r\n"
                               ":8191\r\n$5\r\nnodes\r\n*1\r\n*14\r\n"));
  EXPECT_EQ(Run({"CLUSTER", "NOSUCH"}),
            "-ERR unknown subcommand 'NOSUCH'. Try CLUSTER HELP.\r\n");
  EXPECT_EQ(Run({"CLUSTER", "KEYSLOT"}),
            "-ERR wrong number of arguments for 'cluster|keyslot' command\r\n");
  EXPECT_NE(Run({"INFO", "cluster"}).find("cluster_enabled:1"),
            std::string::npos);
  // Without a topology: Redis's error.
  ServerConfig plain;
  Commands standalone(table_.get(), &plain, Hooks());
  std::string out;
  const std::vector<std::string_view> args = {"CLUSTER", "INFO"};
  standalone.Execute(session_, args, &out, counters_);
  EXPECT_EQ(out, "-ERR This instance has cluster support disabled\r\n");
}

}  // namespace
}  // namespace roundtable::server
