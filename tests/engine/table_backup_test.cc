// Table::Backup: a copy as of one moment, taken while writers (and
// explicit checkpoints) go on, opens as a table of its own that holds a
// prefix of the acknowledged writes including every one acknowledged before
// the call, and passes Check.
#include <atomic>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "roundtable/table.h"
#include "tests/engine/table_dirs.h"

namespace roundtable {
namespace {

namespace fs = std::filesystem;

std::string TempDir(const std::string& name) {
  return FreshTableDir("rt_backup", name);
}

std::map<std::string, std::string> Contents(Table& table) {
  std::map<std::string, std::string> found;
  auto it = table.NewIterator();
  for (; it->Valid(); it->Next()) {
    found[std::string(it->key())] = std::string(it->value());
  }
  EXPECT_TRUE(it->status().ok()) << it->status();
  return found;
}

TEST(TableBackupTest, TheCopyHoldsTheTableAsItWas) {
  const std::string dir = TempDir("plain"), copy = TempDir("plain_copy");
  Options o;
  o.block_size = 1024;
  o.s0 = 2;
  o.write_buffer_bytes = 16 << 10;
  o.checkpoint_bytes = 64 << 10;
  auto table = *Table::Open(o, dir);
  std::mt19937_64 rng(3);
  std::map<std::string, std::string> model;
  for (int i = 0; i < 3000; ++i) {
    const std::string key = absl::StrCat("key", rng() % 2000);
    const size_t sizes[] = {0, 40, 200, 5000};  // inline, stash, out of line
    const std::string value(sizes[rng() % 4], static_cast<char>('a' + i % 26));
    ASSERT_TRUE(table->Put(key, value).ok());
    model[key] = value;
  }
  ASSERT_TRUE(table->Delete("key7").ok());
  model.erase("key7");
  ASSERT_TRUE(table->Backup(copy).ok());
  // The table goes on; the copy does not see it.
  ASSERT_TRUE(table->Put("after", "x").ok());
  {
    auto backup = Table::Open(Options(), copy);
    ASSERT_TRUE(backup.ok()) << backup.status();
    EXPECT_TRUE(Contents(**backup) == model);
    EXPECT_TRUE((*backup)->Check().ok()) << (*backup)->Check();
    EXPECT_EQ(*(*backup)->Count(), model.size());
    EXPECT_EQ((*backup)->GetStats().block_size, 1024u);
    // A table of its own: written and reopened.
    ASSERT_TRUE((*backup)->Put("own", "y").ok());
  }
  EXPECT_EQ(*(*Table::Open(Options(), copy))->Get("own"), "y");
  EXPECT_EQ(*table->Get("after"), "x");
  EXPECT_TRUE(absl::IsNotFound(table->Get("own").status()));
  // Not over a table; not from a read-only, closed or in-memory one.
  EXPECT_EQ(table->Backup(copy).code(), absl::StatusCode::kAlreadyExists);
  ASSERT_TRUE(table->Close().ok());
  EXPECT_EQ(table->Backup(copy + "2").code(),
            absl::StatusCode::kFailedPrecondition);
  Options ro;
  ro.read_only = true;
  EXPECT_EQ((*Table::Open(ro, dir))->Backup(copy + "3").code(),
            absl::StatusCode::kFailedPrecondition);
  Options memory;
  memory.backend = Backend::kMemory;
  EXPECT_EQ((*Table::Open(memory, "m"))->Backup(copy + "4").code(),
            absl::StatusCode::kFailedPrecondition);
  // A refused backup leaves nothing behind.
  for (const char* refused : {"2", "3", "4"}) {
    EXPECT_FALSE(fs::exists(copy + refused)) << refused;
  }
  fs::remove_all(dir);
  fs::remove_all(copy);
}

TEST(TableBackupTest, BackupsWhileAWriterRunsHoldAPrefixOfItsWrites) {
  const std::string dir = TempDir("writer");
  Options o;
  o.block_size = 1024;
  o.s0 = 2;
  o.checkpoint_bytes = 32 << 10;  // many checkpoints would come meanwhile
  auto table = *Table::Open(o, dir);
  std::atomic<int> acked{-1};
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    for (int i = 0; !stop && i < 2000000; ++i) {
      // Every seventh value out of line.
      const std::string value(i % 7 == 0 ? 3000 : 50, 'v');
      if (!table->Put(absl::StrCat("k", i), value).ok()) return;
      acked = i;
    }
  });
  std::thread checkpoints([&] {
    while (!stop) {
      EXPECT_TRUE(table->Checkpoint().ok());
      std::this_thread::sleep_for(std::chrono::milliseconds(3));
    }
  });
  int during = 0;
  for (int round = 0; round < 5; ++round) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const std::string copy = TempDir(absl::StrCat("writer_copy", round));
    const int before = acked;
    ASSERT_TRUE(table->Backup(copy).ok());
    const int after = acked;
    during += after - before;
    auto backup = Table::Open(Options(), copy);
    ASSERT_TRUE(backup.ok()) << backup.status();
    const std::map<std::string, std::string> found = Contents(**backup);
    // k0 .. kj for some j from `before` to `after`.
    const int j = static_cast<int>(found.size()) - 1;
    EXPECT_GE(j, before) << "round " << round;
    EXPECT_LE(j, after + 1) << "round " << round;
    for (int i = 0; i <= j; ++i) {
      const auto it = found.find(absl::StrCat("k", i));
      ASSERT_NE(it, found.end()) << "k" << i << " missing, round " << round;
      EXPECT_EQ(it->second.size(), i % 7 == 0 ? 3000u : 50u);
    }
    EXPECT_TRUE((*backup)->Check().ok()) << (*backup)->Check();
    backup->reset();
    fs::remove_all(copy);
  }
  stop = true;
  writer.join();
  checkpoints.join();
  // The writer went on while the copies were made.
  EXPECT_GT(during, 0);
  ASSERT_TRUE(table->Check().ok()) << table->Check();
  ASSERT_TRUE(table->Close().ok());
  fs::remove_all(dir);
}

}  // namespace
}  // namespace roundtable
