// SalvageTable: from a table with damaged blocks and a damaged value, every
// record that can be read is saved (those of intact blocks, the stash, the
// log), the lost ones are exactly the records of the damaged blocks (and
// the one whose value is damaged), and the damaged table is not written.
// From a table that cannot be opened (no valid superblock, a damaged
// stash-copy block) left by a writer that died after a checkpoint, its
// files read one by one give every record that held up, the log's writes
// last.
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "roundtable/table.h"

namespace roundtable {
namespace {

namespace fs = std::filesystem;

std::string Bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void Damage(const std::string& path, uint64_t offset) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(static_cast<std::streamoff>(offset));
  f.write("DAMAGE!!", 8);
}

// A table's directory and its salvage's, both absent.
std::pair<std::string, std::string> FreshDirs(const std::string& name) {
  const std::string dir =
      testing::TempDir() + "/" + name + "_" + std::to_string(getpid());
  fs::remove_all(dir);
  fs::remove_all(dir + ".saved");
  return {dir, dir + ".saved"};
}

TEST(TableSalvageTest, SavesEveryReadableRecordAndCountsTheLost) {
  for (const uint32_t block_size : {512u, 1024u, 4096u}) {
    SCOPED_TRACE(block_size);
    const auto [dir, saved] = FreshDirs("salvage");
    Options o;
    o.block_size = block_size;
    o.s0 = 2;
    o.write_buffer_bytes = 0;
    std::map<std::string, std::string> model;
    {
      auto table = *Table::Open(o, dir);
      std::mt19937_64 rng(block_size);
      for (int i = 0; i < 2000; ++i) {
        const std::string key = absl::StrCat("key", i);
        std::string value(rng() % 60, static_cast<char>('a' + i % 26));
        if (i == 77) value = std::string(block_size * 3, 'L');  // out of line
        ASSERT_TRUE(table->Put(key, value).ok());
        model[key] = value;
      }
      ASSERT_TRUE(table->Close().ok());
    }
    // Damage three blocks and the large value; note which records lived
    // in those blocks.
    std::set<uint64_t> damaged_blocks;
    std::set<std::string> lost;
    uint64_t value_offset = 0;
    {
      auto table = *Table::Open(Options(), dir);
      const uint64_t m = table->GetStats().buckets;
      // Where the blocks of buckets 1, m / 2 and m - 1 lie.
      for (const auto& [key, value] : model) {
        const KeyLocation at = *table->Locate(key);
        if (at.bucket == 1 || at.bucket == m / 2 || at.bucket == m - 1) {
          damaged_blocks.insert(at.block);
        }
      }
      ASSERT_EQ(damaged_blocks.size(), 3u);
      for (const auto& [key, value] : model) {
        const KeyLocation at = *table->Locate(key);
        if (at.where == KeyLocation::Where::kBlock &&
            damaged_blocks.count(at.block)) {
          lost.insert(key);
        }
        if (at.out_of_line) value_offset = at.value_offset;
      }
      ASSERT_TRUE(table->Close().ok());
    }
    ASSERT_GT(value_offset + 1, 0u);
    for (const uint64_t block : damaged_blocks) {
      Damage(dir + "/blocks", block * block_size + block_size / 2);
    }
    const bool value_lost = !lost.count("key77");
    Damage(dir + "/values", value_offset + 10);
    std::map<std::string, std::string> before;
    for (const auto& entry : fs::directory_iterator(dir)) {
      before[entry.path().filename()] = Bytes(entry.path());
    }
    auto report = SalvageTable(dir, saved);
    ASSERT_TRUE(report.ok()) << report.status();
    EXPECT_EQ(report->damaged_blocks, damaged_blocks.size());
    EXPECT_EQ(report->lost, lost.size());
    EXPECT_EQ(report->lost_values, value_lost ? 1u : 0u);
    EXPECT_EQ(report->saved, model.size() - lost.size() - (value_lost ? 1 : 0));
    // The damaged table is as it was, byte for byte.
    for (const auto& [name, bytes] : before) {
      EXPECT_TRUE(Bytes(dir + "/" + name) == bytes) << name << " changed";
    }
    // The new table holds exactly the readable records, and checks.
    auto table = *Table::Open(Options(), saved);
    EXPECT_TRUE(table->Check().ok()) << table->Check();
    EXPECT_EQ(table->GetStats().block_size, block_size);
    std::map<std::string, std::string> found;
    for (auto it = table->NewIterator(); it->Valid(); it->Next()) {
      found[std::string(it->key())] = std::string(it->value());
    }
    for (const auto& [key, value] : model) {
      const bool gone = lost.count(key) || (key == "key77" && value_lost);
      if (gone) {
        EXPECT_EQ(found.count(key), 0u) << key;
      } else {
        EXPECT_EQ(found[key], value) << key;
      }
    }
    EXPECT_EQ(found.size(), report->saved);
    table.reset();
    // A table there already is refused.
    EXPECT_EQ(SalvageTable(dir, saved).status().code(),
              absl::StatusCode::kAlreadyExists);
    fs::remove_all(dir);
    fs::remove_all(saved);
  }
}

// Runs fn in a forked child that ends without closing anything (as a
// writer that dies does); whether it got to the end.
bool InChild(const std::function<bool()>& fn) {
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid == 0) _exit(fn() ? 0 : 1);
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// The files of a table whose writer died: `records` puts (one value out
// of line) and a Close, then in another writer that dies without closing,
// overwrites of every tenth key with values of the same size, deletes of
// every 25th and new keys, left in the log. `model` is what an open finds,
// `recent` the keys the log names, `logged` its writes, `history` every
// value each key held, `where` each record's place as of the checkpoint.
struct Crashed {
  std::map<std::string, std::string> model;
  std::set<std::string> recent;
  size_t logged = 0;
  std::map<std::string, std::set<std::string>> history;
  std::map<std::string, KeyLocation::Where> where;
};

Crashed CrashAfterACheckpoint(const std::string& dir, const Options& o,
                              int records) {
  Crashed c;
  auto value_of = [&](int i, char fill) {
    if (i == 7) return std::string(*o.block_size * 2, fill);  // out of line
    return std::string(8 + i % 40, fill);
  };
  using Op = std::pair<std::string, std::optional<std::string>>;
  std::vector<Op> first, then;
  for (int i = 0; i < records; ++i) {
    first.emplace_back(absl::StrCat("key", i), value_of(i, 'a' + i % 26));
  }
  for (int i = 0; i < records; i += 10) {
    then.emplace_back(absl::StrCat("key", i), value_of(i, 'Z'));
  }
  for (int i = 5; i < records; i += 25) {
    then.emplace_back(absl::StrCat("key", i), std::nullopt);
  }
  for (int i = records; i < records + 40; ++i) {
    then.emplace_back(absl::StrCat("key", i), value_of(i, 'n'));
  }
  auto apply = [&](const std::vector<Op>& ops, bool close) {
    auto table = Table::Open(o, dir);
    if (!table.ok()) return false;
    for (const auto& [key, value] : ops) {
      const absl::Status s =
          value ? (*table)->Put(key, *value) : (*table)->Delete(key);
      if (!s.ok()) return false;
    }
    if (close) return (*table)->Close().ok();
    _exit(0);  // no Close: the writes are in the log alone
  };
  for (const auto* ops : {&first, &then}) {
    for (const auto& [key, value] : *ops) {
      if (value) {
        c.model[key] = *value;
        c.history[key].insert(*value);
      } else {
        c.model.erase(key);
      }
      if (ops == &then) c.recent.insert(key);
    }
  }
  c.logged = then.size();
  EXPECT_TRUE(InChild([&] { return apply(first, /*close=*/true); }));
  {
    Options r;
    r.read_only = true;
    auto table = *Table::Open(r, dir);
    for (const auto& [key, value] : first) {
      c.where[key] = table->Locate(key)->where;
    }
  }
  EXPECT_TRUE(InChild([&] { return apply(then, /*close=*/false); }));
  return c;
}

std::map<std::string, std::string> Records(const std::string& dir) {
  std::map<std::string, std::string> found;
  Options o;
  o.read_only = true;
  o.create_if_missing = false;
  auto table = Table::Open(o, dir);
  EXPECT_TRUE(table.ok()) << table.status();
  if (!table.ok()) return found;
  EXPECT_TRUE((*table)->Check().ok()) << (*table)->Check();
  for (auto it = (*table)->NewIterator(); it->Valid(); it->Next()) {
    found[std::string(it->key())] = std::string(it->value());
  }
  return found;
}

std::map<std::string, std::string> Snapshot(const std::string& dir) {
  std::map<std::string, std::string> files;
  for (const auto& entry : fs::directory_iterator(dir)) {
    files[entry.path().filename()] = Bytes(entry.path());
  }
  return files;
}

// The salvage of the table at `dir`, which must no longer open: its files
// read one by one, none of them written.
std::optional<SalvageReport> SalvageUnopenable(const std::string& dir,
                                               const std::string& saved) {
  EXPECT_EQ(Table::Open(Options(), dir).status().code(),
            absl::StatusCode::kDataLoss);
  const auto before = Snapshot(dir);
  auto report = SalvageTable(dir, saved);
  EXPECT_TRUE(report.ok()) << report.status();
  if (!report.ok()) return std::nullopt;
  EXPECT_FALSE(report->opened);
  EXPECT_EQ(Snapshot(dir), before);  // not written
  return *report;
}

TEST(TableSalvageTest, WithNoValidSuperblockTheFilesGiveEveryRecord) {
  // The journal keeps the last checkpoint's superblock: with it, the
  // layout is the table's; damaged too, the block size is found from the
  // blocks and the rest is the default.
  for (const bool journal_damaged : {false, true}) {
    for (const uint32_t block_size : {512u, 4096u}) {
      SCOPED_TRACE(absl::StrCat(block_size, journal_damaged ? " journal" : ""));
      const auto [dir, saved] = FreshDirs("salvage_nosb");
      Options o;
      o.block_size = block_size;
      o.s0 = 3;
      o.epsilon = 0.2;
      const Crashed c = CrashAfterACheckpoint(dir, o, 1500);
      ASSERT_EQ(Records(dir), c.model);  // what recovery finds: the premise
      // Both superblocks damaged: the table no longer opens.
      Damage(dir + "/blocks", 100);
      Damage(dir + "/blocks", block_size + 100);
      if (journal_damaged) Damage(dir + "/journal", 40);
      const auto report = SalvageUnopenable(dir, saved);
      ASSERT_TRUE(report.has_value());
      EXPECT_EQ(report->layout_known, !journal_damaged);
      EXPECT_EQ(report->damaged_blocks, 0u);
      EXPECT_EQ(report->damaged_copy_blocks, 0u);
      EXPECT_EQ(report->lost_values, 0u);
      EXPECT_EQ(report->lost, 0u);
      EXPECT_EQ(report->log_records, c.logged);
      EXPECT_EQ(report->saved, c.model.size());
      EXPECT_EQ(Records(saved), c.model);
      const Options layout = *Table::ReadLayout(saved);
      EXPECT_EQ(layout.block_size, block_size);
      EXPECT_EQ(layout.s0, journal_damaged ? Options::kDefaultS0 : 3u);
      fs::remove_all(dir);
      fs::remove_all(saved);
    }
  }
}

TEST(TableSalvageTest, ADamagedStashCopyBlockLosesOnlyWhatItHeld) {
  const auto [dir, saved] = FreshDirs("salvage_stash");
  Options o;
  o.block_size = 512;
  o.s0 = 2;
  o.epsilon = 0.05;  // full blocks: a large stash
  const Crashed c = CrashAfterACheckpoint(dir, o, 3000);
  ASSERT_EQ(Records(dir), c.model);
  size_t stashed = 0;
  for (const auto& [key, where] : c.where) {
    stashed += where == KeyLocation::Where::kStash;
  }
  ASSERT_GT(stashed, 100u);
  Damage(dir + "/stash", 40);  // the stash copy's first block
  const auto report = SalvageUnopenable(dir, saved);
  ASSERT_TRUE(report.has_value());
  EXPECT_TRUE(report->layout_known);
  EXPECT_EQ(report->damaged_blocks, 0u);
  EXPECT_EQ(report->damaged_copy_blocks, 1u);
  EXPECT_EQ(report->log_records, c.logged);
  const std::map<std::string, std::string> found = Records(saved);
  EXPECT_EQ(found.size(), report->saved);
  // Lost: records of the stash as of the checkpoint, some of which the
  // log wrote again.
  size_t missing = 0, stashed_and_logged = 0;
  for (const auto& [key, where] : c.where) {
    const bool in_stash = where == KeyLocation::Where::kStash;
    stashed_and_logged += in_stash && c.recent.count(key);
    if (!c.model.count(key) || c.recent.count(key)) continue;
    if (in_stash && !found.count(key)) {
      ++missing;
      continue;
    }
    EXPECT_EQ(found.count(key) ? found.at(key) : "(missing)", c.model.at(key))
        << key;
  }
  for (const std::string& key : c.recent) {  // the log's: exactly
    EXPECT_EQ(found.count(key), c.model.count(key)) << key;
    if (c.model.count(key)) EXPECT_EQ(found.at(key), c.model.at(key)) << key;
  }
  for (const auto& [key, value] : found) {
    ASSERT_TRUE(c.history.count(key)) << key;
    EXPECT_TRUE(c.history.at(key).count(value)) << key << " = " << value;
  }
  EXPECT_GT(missing, 0u);
  EXPECT_GE(report->lost, missing);
  EXPECT_LE(report->lost, missing + stashed_and_logged);
  fs::remove_all(dir);
  fs::remove_all(saved);
}

}  // namespace
}  // namespace roundtable
