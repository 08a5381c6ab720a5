// Process crashes: a child process writes to a table and reports each
// acknowledged write through a pipe; the parent kills it with SIGKILL at a
// random moment (often inside a distribute or a checkpoint, since both are
// frequent with these options), reopens the table, and checks that it holds
// exactly the acknowledged writes, plus possibly the one in flight: never a
// torn batch, a lost write or a resurrected delete. Every seed is printed.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/internal/kill_points.h"
#include "roundtable/table.h"
#include "gtest/gtest.h"

namespace roundtable {
namespace {

using Model = std::map<std::string, std::string>;

Options CrashOptions() {
  Options o;
  o.block_size = 1024;
  o.s0 = 4;
  o.block_cache_bytes = 16 * 1024;
  o.checkpoint_bytes = 48 * 1024;  // a checkpoint every few dozen writes
  o.write_buffer_bytes = 4096;     // a few dozen puts, drained all the time
  return o;
}

// Write i of a round: a put, a delete, or a batch of up to 8 of them, drawn
// from the round's seed alone so that parent and child agree. One value in
// eight goes out of line (the inline limit of 1 KiB blocks is 248 bytes).
std::vector<std::pair<std::string, std::optional<std::string>>> Ops(
    uint64_t round_seed, uint64_t i) {
  std::mt19937_64 rng(round_seed * 1000003 + i);
  std::vector<std::pair<std::string, std::optional<std::string>>> ops;
  const int n = rng() % 10 == 0 ? 1 + static_cast<int>(rng() % 8) : 1;
  for (int j = 0; j < n; ++j) {
    std::string key = absl::StrCat("key", rng() % 1500);
    if (rng() % 4 == 0) {
      ops.emplace_back(std::move(key), std::nullopt);
      continue;
    }
    const size_t large[] = {300, 2000, 9000};
    const size_t size = rng() % 8 == 0 ? large[rng() % 3] : rng() % 180;
    std::string value(size, static_cast<char>('a' + (i + j) % 26));
    const std::string mark = absl::StrCat(round_seed, ":", i, ":", j);
    value.replace(0, std::min(size, mark.size()), mark, 0,
                  std::min(size, mark.size()));
    ops.emplace_back(std::move(key), std::move(value));
  }
  return ops;
}

WriteBatch MakeWrite(uint64_t round_seed, uint64_t i) {
  WriteBatch batch;
  for (const auto& [key, value] : Ops(round_seed, i)) {
    if (value) {
      batch.Put(key, *value);
    } else {
      batch.Delete(key);
    }
  }
  return batch;
}

void ApplyToModel(uint64_t round_seed, uint64_t i, Model* model) {
  for (const auto& [key, value] : Ops(round_seed, i)) {
    if (value) {
      (*model)[key] = *value;
    } else {
      model->erase(key);
    }
  }
}

// The kill point at which the writer child ends itself, and on which hit
// (the handler is installed in the child only).
std::string_view g_kill_point;
int g_kill_hit = 0;

void KillAtPoint(std::string_view point) {
  if (point == g_kill_point && --g_kill_hit == 0) _exit(9);
}

// The child: writes until it dies, reporting each acknowledged write.
[[noreturn]] void RunWriter(const std::string& dir, uint64_t round_seed,
                            int fd) {
  auto table = Table::Open(CrashOptions(), dir);
  if (!table.ok()) _exit(2);
  for (uint64_t i = 0; i < 100000; ++i) {
    if (!(*table)->Write(MakeWrite(round_seed, i)).ok()) _exit(3);
    if (write(fd, &i, sizeof(i)) != sizeof(i)) _exit(4);
  }
  _exit(5);
}

Model Contents(Table& table) {
  Model out;
  auto it = table.NewIterator();
  for (; it->Valid(); it->Next()) out.emplace(it->key(), it->value());
  EXPECT_TRUE(it->status().ok()) << it->status();
  return out;
}

// One round: a writer child on `dir` is ended by `end` (given its pid);
// then the table must hold exactly the writes it acknowledged, or those and
// the one in flight. *model is the table's contents before and after.
// Returns the log records the reopen replayed.
template <typename End>
uint64_t CrashRound(const std::string& dir, uint64_t round_seed, Model* model,
                    End end) {
  int fds[2];
  EXPECT_EQ(pipe(fds), 0);
  const pid_t child = fork();
  EXPECT_GE(child, 0);
  if (child == 0) {
    close(fds[0]);
    if (!g_kill_point.empty()) internal::SetKillHandler(KillAtPoint);
    RunWriter(dir, round_seed, fds[1]);
  }
  close(fds[1]);
  end(child);
  // Read to the end (the child's death closes the pipe), so that a child
  // still running never blocks on a full pipe.
  uint64_t acked = 0, i;
  while (read(fds[0], &i, sizeof(i)) == sizeof(i)) acked = i + 1;
  close(fds[0]);
  int status = 0;
  EXPECT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFSIGNALED(status) ||
              (WIFEXITED(status) && WEXITSTATUS(status) == 9))
      << "the writer stopped by itself, status " << status;

  for (uint64_t k = 0; k < acked; ++k) ApplyToModel(round_seed, k, model);
  Model with_next = *model;
  ApplyToModel(round_seed, acked, &with_next);

  auto table = Table::Open(CrashOptions(), dir);
  EXPECT_TRUE(table.ok()) << table.status();
  if (!table.ok()) return 0;
  const TableStats stats = (*table)->GetStats();
  EXPECT_TRUE((*table)->Check().ok())
      << (*table)->Check() << "; replayed " << stats.recovered_records
      << " log records, journal " << stats.recovered_journal;
  const Model got = Contents(**table);
  if (got == with_next) {
    *model = with_next;  // the write in flight had reached the log
  } else {
    EXPECT_EQ(got.size(), model->size()) << acked << " writes acknowledged";
    EXPECT_TRUE(got == *model) << acked << " writes acknowledged";
    *model = got;
  }
  EXPECT_TRUE((*table)->Close().ok());
  return stats.recovered_records;
}

TEST(TableCrashTest, KilledWriterLosesNoAcknowledgedWrite) {
  const std::string dir =
      testing::TempDir() + "/rt_crash_" + std::to_string(getpid());
  ASSERT_TRUE(DestroyTable(dir).ok());
  Model model;
  std::mt19937_64 timing(12345);
  uint64_t replayed = 0;
  for (uint64_t round = 1; round <= 40 && !HasFailure(); ++round) {
    SCOPED_TRACE(absl::StrCat("round ", round));
    replayed += CrashRound(dir, round, &model, [&](pid_t child) {
      usleep(2000 + timing() % 60000);
      kill(child, SIGKILL);
    });
  }
  // The kills landed while the log held writes to replay.
  EXPECT_GT(replayed, 0u);
  ASSERT_TRUE(DestroyTable(dir).ok());
}

// The writer ends itself at the n-th pass through each kill point.
TEST(TableCrashTest, EveryKillPointRecovers) {
  const std::string dir =
      testing::TempDir() + "/rt_killpoint_" + std::to_string(getpid());
  ASSERT_TRUE(DestroyTable(dir).ok());
  Model model;
  uint64_t round = 1000;
  const std::vector<int> hits = {1, 2, 3, 7, 20};
  const std::vector<std::pair<const char*, std::vector<int>>> plan = {
      // The table is created once, in the first round: a crash there leaves
      // no table, and the next open creates an empty one.
      {"create: formatted", {1}},
      {"value: written", hits},
      {"write: logged", hits},
      {"grow: bucket added", hits},
      {"distribute: block rebuilt", hits},
      {"shrink: blocks rebuilt", {1, 2}},
      {"stash: entry logged", hits},
      {"stash: copy rewritten", {1, 2}},
      {"buffer: put drained", hits},
      {"buffer: copy rewritten", {1, 2}},
      {"write-ahead: blocks written", hits},
      {"checkpoint: blocks placed", hits},
      {"checkpoint: journal synced", hits},
      {"checkpoint: written in place", hits},
      {"checkpoint: superblock synced", hits}};
  for (const auto& [point, point_hits] : plan) {
    for (const int hit : point_hits) {
      SCOPED_TRACE(absl::StrCat(point, ", hit ", hit));
      g_kill_point = point;
      g_kill_hit = hit;
      CrashRound(dir, ++round, &model, [](pid_t) {});
      if (HasFailure()) break;
    }
  }
  g_kill_point = {};
  ASSERT_TRUE(DestroyTable(dir).ok());
}

}  // namespace
}  // namespace roundtable
