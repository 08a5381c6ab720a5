// RebuildTable: every record into a new layout, and a crash at any step
// (a child process killed at the n-th kill point the rebuild reaches: in
// the copy's writes and checkpoints, after the copy, after the exchange)
// leaves the old table or the new one, whole, never neither; the next
// rebuild finishes the job. Between every pair of block sizes.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <map>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/internal/kill_points.h"
#include "gtest/gtest.h"
#include "roundtable/table.h"
#include "tests/engine/table_dirs.h"

namespace roundtable {
namespace {

namespace fs = std::filesystem;
using Model = std::map<std::string, std::string>;

std::string TempDir(const std::string& name) {
  return FreshTableDir("rt_rebuild", name);
}

// A table of `block_size` with records of every kind: small, past the
// inline limit (out of line), empty; returns what it holds.
Model MakeTable(const std::string& dir, uint32_t block_size) {
  Options o;
  o.block_size = block_size;
  o.s0 = 2;
  o.write_buffer_bytes = 8 << 10;  // some puts still buffered at the end
  std::unique_ptr<Table> table = *Table::Open(o, dir);
  std::mt19937_64 rng(block_size);
  Model model;
  for (int i = 0; i < 300; ++i) {
    const std::string key = absl::StrCat("key", i);
    const size_t sizes[] = {0, 20, 100, 3000};
    std::string value(sizes[rng() % 4], static_cast<char>('a' + i % 26));
    EXPECT_TRUE(table->Put(key, value).ok());
    model[key] = value;
  }
  for (int i = 0; i < 300; i += 7) {
    EXPECT_TRUE(table->Delete(absl::StrCat("key", i)).ok());
    model.erase(absl::StrCat("key", i));
  }
  EXPECT_TRUE(table->Close().ok());
  return model;
}

// The table at `dir` opens with no layout given, holds exactly `model`,
// checks, and has one of `block_sizes`' sizes; returns its block size.
uint32_t Verify(const std::string& dir, const Model& model) {
  auto table = Table::Open(Options(), dir);
  EXPECT_TRUE(table.ok()) << table.status();
  if (!table.ok()) return 0;
  Model found;
  auto it = (*table)->NewIterator();
  for (; it->Valid(); it->Next()) {
    found[std::string(it->key())] = std::string(it->value());
  }
  EXPECT_TRUE(it->status().ok()) << it->status();
  EXPECT_TRUE(found == model)
      << found.size() << " records, not " << model.size();
  EXPECT_TRUE((*table)->Check().ok()) << (*table)->Check();
  const uint32_t block_size = (*table)->GetStats().block_size;
  EXPECT_TRUE((*table)->Close().ok());
  return block_size;
}

std::vector<std::string>* g_points = nullptr;  // counting pass
int g_kill_at = 0;                             // child: die at this hit
std::atomic<int> g_hits{0};  // checkpoints reach theirs on their own thread

void Record(std::string_view point) { g_points->emplace_back(point); }
void KillAt(std::string_view) {
  if (g_hits.fetch_add(1) + 1 == g_kill_at) kill(getpid(), SIGKILL);
}

Options Layout(uint32_t block_size) {
  Options o;
  o.block_size = block_size;
  return o;
}

TEST(TableRebuildTest, RebuildsIntoAnotherLayoutWithEveryRecord) {
  const std::string dir = TempDir("plain");
  const Model model = MakeTable(dir, 1024);
  Options layout;
  layout.block_size = 4096;
  layout.s0 = 8;
  layout.epsilon = 0.2;
  uint64_t reported = 0;
  ASSERT_TRUE(RebuildTable(dir, layout, [&](uint64_t records, uint64_t) {
                reported = records;
              }).ok());
  EXPECT_EQ(reported, model.size());
  EXPECT_EQ(Verify(dir, model), 4096u);
  auto table = *Table::Open(Options(), dir);
  EXPECT_EQ(table->GetStats().s0, 8u);
  EXPECT_EQ(table->GetStats().epsilon, 0.2);
  // Locked while open: the rebuild is refused and changes nothing.
  EXPECT_EQ(RebuildTable(dir, Layout(512)).code(),
            absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(table->Close().ok());
  EXPECT_FALSE(fs::exists(RebuildScratchPath(dir)));
  EXPECT_EQ(RebuildTable(dir + "_missing", Layout(512)).code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(RebuildTable(dir, Layout(1000)).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Verify(dir, model), 4096u);
  fs::remove_all(dir);
}

TEST(TableRebuildTest, ACrashAtAnyStepLeavesTheOldTableOrTheNew) {
  const std::vector<uint32_t> sizes = {512, 1024, 4096, 16384};
  for (const uint32_t from : sizes) {
    const std::string pristine = TempDir(absl::StrCat("pristine", from));
    const Model model = MakeTable(pristine, from);
    for (const uint32_t to : sizes) {
      if (to == from) continue;
      SCOPED_TRACE(absl::StrCat(from, " -> ", to));
      const std::string dir = TempDir("crash");
      // Counting pass: every kill point the rebuild reaches, in order.
      fs::copy(pristine, dir, fs::copy_options::recursive);
      std::vector<std::string> points;
      g_points = &points;
      internal::SetKillHandler(Record);
      ASSERT_TRUE(RebuildTable(dir, Layout(to)).ok());
      internal::SetKillHandler(nullptr);
      ASSERT_EQ(Verify(dir, model), to);
      fs::remove_all(dir);
      // The hits to die at: each of the rebuild's own steps, and a spread
      // over the copy's writes and checkpoints.
      std::set<int> kills;
      for (size_t i = 0; i < points.size(); ++i) {
        if (points[i].rfind("rebuild:", 0) == 0 ||
            points[i].rfind("checkpoint:", 0) == 0) {
          kills.insert(static_cast<int>(i) + 1);
        }
      }
      for (int k = 1; k <= 8; ++k) {
        kills.insert(std::max<int>(1, points.size() * k / 8));
      }
      ASSERT_TRUE(std::any_of(points.begin(), points.end(), [](auto& p) {
        return p == "rebuild: exchanged";
      }));
      int old_seen = 0, new_seen = 0, killed = 0;
      for (const int k : kills) {
        SCOPED_TRACE(absl::StrCat("killed at hit ", k, " of ", points.size(),
                                  ": ", points[k - 1]));
        fs::copy(pristine, dir, fs::copy_options::recursive);
        const pid_t pid = fork();
        ASSERT_GE(pid, 0);
        if (pid == 0) {
          g_kill_at = k;
          internal::SetKillHandler(KillAt);
          _exit(RebuildTable(dir, Layout(to)).ok() ? 3 : 4);
        }
        int status = 0;
        waitpid(pid, &status, 0);
        // The checkpoints' thread may reach a few kill points fewer in one
        // run than another: a rebuild that ended before its k-th is whole.
        if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) {
          ++killed;
        } else {
          ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 3)
              << "the child's rebuild failed: status " << status;
        }
        const uint32_t found = Verify(dir, model);
        EXPECT_TRUE(found == from || found == to) << found;
        (found == from ? old_seen : new_seen)++;
        // The next rebuild finishes it, whatever was left beside it.
        ASSERT_TRUE(RebuildTable(dir, Layout(to)).ok());
        EXPECT_EQ(Verify(dir, model), to);
        EXPECT_FALSE(fs::exists(RebuildScratchPath(dir)));
        fs::remove_all(dir);
      }
      EXPECT_GT(killed, static_cast<int>(kills.size()) / 2);
      EXPECT_GT(old_seen, 0);  // kills before the exchange
      EXPECT_GT(new_seen, 0);  // and after it
    }
    fs::remove_all(pristine);
  }
}

}  // namespace
}  // namespace roundtable
