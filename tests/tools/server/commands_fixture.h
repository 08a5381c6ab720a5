// A test fixture that runs server commands on a fresh table in-process and
// returns their replies as RESP text; Configure sets the server's settings
// before the commands are made.
#ifndef ROUNDTABLE_TESTS_TOOLS_SERVER_COMMANDS_FIXTURE_H_
#define ROUNDTABLE_TESTS_TOOLS_SERVER_COMMANDS_FIXTURE_H_

#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gtest/gtest.h"
#include "roundtable/table.h"
#include "tools/server/commands.h"

namespace roundtable::server {

class CommandsFixture : public testing::Test {
 protected:
  virtual void Configure(ServerConfig&) {}

  void SetUp() override {
    dir_ = testing::TempDir() + "/commands_" + std::to_string(getpid()) +
           "_" + testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(dir_);
    table_ = *Table::Open(Options(), dir_);
    Configure(config_);
    commands_ = std::make_unique<Commands>(table_.get(), &config_, Hooks());
    session_.id = 7;
  }
  // One client (session_) and the counters of one loop (counters_), as a
  // server of one loop would report them.
  ServerHooks Hooks() {
    return {[this] { return std::vector<Session>{session_}; },
            [this] {
              ServerStats s;
              s.commands_processed = counters_.commands_processed.Get();
              s.keyspace_hits = counters_.keyspace_hits.Get();
              s.keyspace_misses = counters_.keyspace_misses.Get();
              return s;
            },
            [] {}};
  }
  void TearDown() override {
    commands_.reset();
    if (table_) {
      EXPECT_TRUE(table_->Close().ok());
    }
    std::filesystem::remove_all(dir_);
  }

  std::string Run(std::vector<std::string> args) {
    std::vector<std::string_view> views(args.begin(), args.end());
    std::string out;
    commands_->Execute(session_, views, &out, counters_);
    return out;
  }

  std::string dir_;
  ServerConfig config_;
  LoopCounters counters_;
  Session session_;
  std::unique_ptr<Table> table_;
  std::unique_ptr<Commands> commands_;
};

}  // namespace roundtable::server

#endif  // ROUNDTABLE_TESTS_TOOLS_SERVER_COMMANDS_FIXTURE_H_
