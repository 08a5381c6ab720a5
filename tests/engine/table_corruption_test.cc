// Damage on the medium, in every region of a table's files: a flipped bit or
// a zeroed 512-byte sector, at random positions, in each superblock copy,
// the bucket blocks, the stash copy, the write buffer's copy, the journal,
// the write-ahead log, the value file, its space map and the block map of
// a table left by a crash (log records to replay, a stash, buffered puts,
// a journal, values out of line). Each
// is repaired from redundancy (a superblock copy and the journal hold the
// same state), or reported as DataLoss; never a crash, never a wrong value.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "roundtable/table.h"
#include "gtest/gtest.h"

namespace roundtable {
namespace {

using Model = std::map<std::string, std::string>;

Options DamageOptions() {
  Options o;
  o.block_size = 512;
  o.s0 = 2;
  o.block_cache_bytes = 0;
  o.checkpoint_bytes = 1 << 20;  // only the explicit checkpoint
  // A dozen buffered puts at a time: the others reach their blocks.
  o.write_buffer_bytes = 2048;
  return o;
}

// Every tenth key's value is out of line (past the 120-byte limit of
// 512-byte blocks); the rest are inline.
bool Large(int i) { return i % 10 == 0; }
std::string Value(int i, int round) {
  const size_t size =
      Large(i) ? 600 + (i * 7 + round) % 60 * 10 : 40 + (i * 7 + round) % 60;
  return std::string(size, static_cast<char>('a' + (i + round) % 26));
}

// The writes of the crashed writer, applied to `table` (or, when null, only
// recorded): 300 puts and a checkpoint (which moves the blocks out of
// memory), overwrites of every fifth key (which wait in the write buffer,
// the last of them until the next checkpoint) and a checkpoint, then synced
// deletes and overwrites left in the log.
struct History {
  std::vector<Model> states;  // [n]: the contents after n writes
  size_t logged_from = 0;     // the first write the log holds
  // Where each logged write's record ends in the log (bytes from its start).
  std::vector<uint64_t> record_ends;
};

History Workload(Table* table) {
  History h;
  h.states.emplace_back();
  WriteOptions sync;
  sync.sync = true;
  uint64_t log_bytes = 0;
  // Records: a 28-byte header, then op count, kind, key length, key, and
  // for a put the value length and value (every length here < 128: a large
  // value is logged as its 32-byte reference).
  auto write = [&](int i, bool put, int round) {
    const std::string key = absl::StrCat("key", i);
    Model next = h.states.back();
    if (put) {
      next[key] = Value(i, round);
      if (table != nullptr && !table->Put(key, next[key], sync).ok()) _exit(3);
    } else {
      next.erase(key);
      if (table != nullptr && !table->Delete(key, sync).ok()) _exit(3);
    }
    h.states.push_back(std::move(next));
    const size_t stored = Large(i) ? 32 : Value(i, round).size();
    log_bytes += 28 + 3 + key.size() + (put ? 1 + stored : 0);
    h.record_ends.push_back(log_bytes);
  };
  for (int i = 0; i < 300; ++i) write(i, true, 0);
  if (table != nullptr && !table->Checkpoint().ok()) _exit(4);
  for (int i = 0; i < 300; i += 5) write(i, true, 1);
  if (table != nullptr && !table->Checkpoint().ok()) _exit(4);
  h.logged_from = h.states.size() - 1;
  h.record_ends.clear();
  log_bytes = 0;
  for (int i = 0; i < 300; i += 3) write(i, false, 0);
  for (int i = 1; i < 300; i += 4) write(i, true, 1);
  return h;
}

// A damaged copy of the crashed table, opened: OK with contents equal to
// one of `allowed`, or DataLoss somewhere (at open, on a read, in Check),
// and never a value other than the one written.
struct Outcome {
  bool opened = false;
  bool data_loss = false;  // reported somewhere
  int matched = -1;        // which of `allowed` the contents equal
};

Outcome OpenDamaged(const std::string& dir, const std::vector<Model>& allowed,
                    const Model& any_value) {
  Outcome out;
  auto table = Table::Open(DamageOptions(), dir);
  if (!table.ok()) {
    EXPECT_TRUE(absl::IsDataLoss(table.status())) << table.status();
    out.data_loss = true;
    return out;
  }
  out.opened = true;
  Model got;
  for (const auto& [key, value] : any_value) {
    auto v = (*table)->Get(key);
    if (v.ok()) {
      // A value this key had at some point of the workload.
      EXPECT_TRUE(*v == Value(std::stoi(key.substr(3)), 0) ||
                  *v == Value(std::stoi(key.substr(3)), 1))
          << key;
      got[key] = *v;
    } else if (absl::IsDataLoss(v.status())) {
      out.data_loss = true;
    } else {
      EXPECT_TRUE(absl::IsNotFound(v.status())) << v.status();
    }
  }
  const absl::Status check = (*table)->Check();
  if (!check.ok()) {
    EXPECT_TRUE(absl::IsDataLoss(check)) << check;
    out.data_loss = true;
  }
  for (size_t i = 0; i < allowed.size() && !out.data_loss; ++i) {
    if (got == allowed[i]) out.matched = static_cast<int>(i);
  }
  return out;
}

// Bytes of `path` up to its last nonzero byte.
uint64_t UsedBytes(const std::string& path) {
  std::string bytes(std::filesystem::file_size(path), '\0');
  const int fd = open(path.c_str(), O_RDONLY);
  EXPECT_EQ(pread(fd, bytes.data(), bytes.size(), 0),
            static_cast<ssize_t>(bytes.size()));
  close(fd);
  const size_t last = bytes.find_last_not_of('\0');
  return last == std::string::npos ? 0 : last + 1;
}

void Damage(const std::string& path, uint64_t offset, bool zero_sector,
            uint64_t bit) {
  const int fd = open(path.c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  if (zero_sector) {
    const std::string zeros(512, '\0');
    ASSERT_EQ(pwrite(fd, zeros.data(), 512, offset / 512 * 512), 512);
  } else {
    char c;
    ASSERT_EQ(pread(fd, &c, 1, offset), 1);
    c ^= static_cast<char>(1 << bit);
    ASSERT_EQ(pwrite(fd, &c, 1, offset), 1);
  }
  close(fd);
}

TEST(TableCorruptionTest, EveryRegionIsRepairedOrDataLossNeverWrong) {
  const std::string base = testing::TempDir() + "/rt_damage_" +
                           std::to_string(getpid());
  const std::string pristine = base + "_pristine";
  ASSERT_TRUE(DestroyTable(pristine).ok());
  // A writer that crashes (exits without closing) after its last write.
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto table = Table::Open(DamageOptions(), pristine);
    if (!table.ok()) _exit(2);
    Workload(table->get());
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  const History history = Workload(nullptr);
  const Model& model = history.states.back();
  Model every_key;
  for (int i = 0; i < 300; ++i) every_key[absl::StrCat("key", i)];

  // The crashed table as it is: opens to exactly the writes made.
  const std::string dir = base + "_trial";
  auto copy = [&] {
    std::filesystem::remove_all(dir);
    std::filesystem::copy(pristine, dir);
  };
  copy();
  {
    const Outcome clean = OpenDamaged(dir, {model}, every_key);
    ASSERT_TRUE(clean.opened && clean.matched == 0);
  }

  struct Region {
    const char* name;
    const char* file;
    uint64_t begin, end;  // byte range damaged
    // The log: an opened table may also hold the writes before the first
    // damaged record, when no later record vouches for it (damage that
    // reaches the end of the log looks like a torn tail).
    bool is_log;
    bool must_repair;  // redundancy must hide the damage entirely
  };
  const uint64_t bs = *DamageOptions().block_size;
  const std::vector<Region> regions = {
      {"superblock copy 0", "blocks", 0, bs, false, true},
      {"superblock copy 1", "blocks", bs, 2 * bs, false, true},
      {"bucket blocks", "blocks", 2 * bs, UsedBytes(pristine + "/blocks"),
       false, false},
      {"stash copy", "stash", 0, UsedBytes(pristine + "/stash"), false, false},
      {"write buffer copy", "buffer", 0, UsedBytes(pristine + "/buffer"), false,
       false},
      {"journal", "journal", 0, UsedBytes(pristine + "/journal"), false, true},
      {"write-ahead log", "wal", 0, UsedBytes(pristine + "/wal"), true, false},
      {"value file", "values", 0, UsedBytes(pristine + "/values"), false,
       false},
      {"space map", "spacemap", 0, UsedBytes(pristine + "/spacemap"), false,
       false},
      {"block map", "blockmap", 0, UsedBytes(pristine + "/blockmap"), false,
       false},
  };
  std::mt19937_64 rng(2026);
  for (const Region& region : regions) {
    ASSERT_GT(region.end, region.begin) << region.name << " is empty";
    int repaired = 0, lost = 0;
    for (int trial = 0; trial < 40; ++trial) {
      const bool zero = trial % 2 == 1;
      const uint64_t offset =
          region.begin + rng() % (region.end - region.begin);
      const uint64_t bit = rng() % 8;
      SCOPED_TRACE(absl::StrCat(region.name, ": ",
                                zero ? "zeroed sector at " : "flipped bit at ",
                                offset));
      copy();
      Damage(absl::StrCat(dir, "/", region.file), offset, zero, bit);
      std::vector<Model> allowed = {model};
      if (region.is_log) {
        const uint64_t lo = zero ? offset / 512 * 512 : offset;
        const auto first = std::upper_bound(history.record_ends.begin(),
                                            history.record_ends.end(), lo);
        allowed.push_back(history.states[history.logged_from +
                                         (first - history.record_ends.begin())]);
      }
      const Outcome out = OpenDamaged(dir, allowed, every_key);
      if (region.must_repair) {
        EXPECT_TRUE(out.opened && out.matched == 0);
      } else {
        EXPECT_TRUE(out.data_loss || out.matched >= 0);
      }
      (out.data_loss ? lost : repaired) += 1;
    }
    std::printf("%-18s 40 damages: %2d repaired or harmless, %2d DataLoss\n",
                region.name, repaired, lost);
  }
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(DestroyTable(pristine).ok());
}

}  // namespace
}  // namespace roundtable
