// SalvageTable: from a table with damaged blocks and a damaged value, every
// record that can be read is saved (those of intact blocks, the stash, the
// log), the lost ones are exactly the records of the damaged blocks (and
// the one whose value is damaged), and the damaged table is not written.
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>

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

TEST(TableSalvageTest, SavesEveryReadableRecordAndCountsTheLost) {
  for (const uint32_t block_size : {512u, 1024u, 4096u}) {
    SCOPED_TRACE(block_size);
    const std::string dir =
        testing::TempDir() + "/salvage_" + std::to_string(getpid());
    const std::string saved = dir + ".saved";
    fs::remove_all(dir);
    fs::remove_all(saved);
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
      for (const uint64_t b : {uint64_t{1}, m / 2, m - 1}) {
        damaged_blocks.insert(b + 2);  // after the two superblocks
      }
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

}  // namespace
}  // namespace roundtable
