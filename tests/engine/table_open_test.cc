// Opening a table beside other handles and on hostile ground: the lock (two
// handles in one process, a writer killed while holding it), read-only opens
// that need only read permission (a user who may not write, a read-only
// mount, missing log files), symbolic links and other files in place of the
// table's files, creating over leftovers, and a full file system.
//
// The tests that need root's privileges (mounts, another user) run in a
// forked child, in a mount namespace of its own, and are skipped with a
// message where the machine refuses them.
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/internal/table_files.h"
#include "roundtable/table.h"
#include "gtest/gtest.h"
#include "tests/engine/table_dirs.h"

namespace roundtable {
namespace {

namespace fs = std::filesystem;
using internal::kDataFiles;

std::string TempDir(const std::string& tag) {
  return FreshTableDir("rt_open", tag);
}

std::string FileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void WriteFileBytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

Options Small() {
  Options o;
  o.block_size = 512;
  o.s0 = 4;
  return o;
}

// A closed table of `n` records key<i> -> value<i>.
void MakeTable(const std::string& dir, int n) {
  auto t = Table::Open(Small(), dir);
  ASSERT_TRUE(t.ok()) << t.status();
  for (int i = 0; i < n; ++i) {
    ASSERT_TRUE((*t)->Put(absl::StrCat("key", i), absl::StrCat("value", i)).ok());
  }
  ASSERT_TRUE((*t)->Close().ok());
}

Options ReadOnly() {
  Options o = Small();
  o.read_only = true;
  o.create_if_missing = false;
  return o;
}

// Reads every key of MakeTable(dir, n) and walks the table: "" when all is
// as written, else what differed.
std::string Verify(const std::string& dir, int n, const Options& o) {
  auto t = Table::Open(o, dir);
  if (!t.ok()) return t.status().ToString();
  for (int i = 0; i < n; ++i) {
    auto v = (*t)->Get(absl::StrCat("key", i));
    if (!v.ok()) return absl::StrCat("key", i, ": ", v.status().ToString());
    if (*v != absl::StrCat("value", i)) return absl::StrCat("key", i, " = ", *v);
  }
  int walked = 0;
  auto it = (*t)->NewIterator();
  for (; it->Valid(); it->Next()) ++walked;
  if (!it->status().ok()) return it->status().ToString();
  if (walked != n) return absl::StrCat("walked ", walked, " of ", n);
  if (absl::Status s = (*t)->Check(); !s.ok()) return s.ToString();
  if (absl::Status s = (*t)->Close(); !s.ok()) return s.ToString();
  return "";
}

// Runs fn in a forked child; its exit code (fn's return), or 128 + signal.
int InChild(const std::function<int()>& fn) {
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    const int rc = fn();
    std::fflush(nullptr);
    _exit(rc);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Exit codes of the children below besides 0 (passed) and 1 (failed).
constexpr int kCannot = 77;  // the machine refused the set-up: skip

// Prints why a child failed, for the parent's log.
int Failed(const std::string& why) {
  std::fprintf(stderr, "child: %s\n", why.c_str());
  return 1;
}

// In a child that may not write the table at `dir` (of MakeTable(dir, n)):
// a writer's open is refused, and a reader finds every record.
int RefusesAWriterAndReads(const std::string& dir, int n) {
  Options w = Small();
  w.create_if_missing = false;
  if (Table::Open(w, dir).ok()) {
    return Failed("a writer opened a table it may not write");
  }
  const std::string why = Verify(dir, n, ReadOnly());
  return why.empty() ? 0 : Failed(why);
}

TEST(TableLockTest, SecondWriterInTheSameProcessIsRefusedAndChangesNothing) {
  const std::string dir = TempDir("two");
  auto first = Table::Open(Small(), dir);
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE((*first)->Put("a", "1").ok());
  Options o = Small();
  o.create_if_missing = false;
  auto second = Table::Open(o, dir);
  ASSERT_FALSE(second.ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(second.status())) << second.status();
  EXPECT_TRUE(absl::StrContains(second.status().message(), dir));
  EXPECT_TRUE(absl::StrContains(second.status().message(), "locked by a writer"))
      << second.status();
  EXPECT_TRUE(absl::StrContains(second.status().message(),
                                absl::StrCat("process ", getpid())))
      << second.status();
  // A reader is refused as clearly while the writer has the table.
  auto reader = Table::Open(ReadOnly(), dir);
  ASSERT_FALSE(reader.ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(reader.status())) << reader.status();
  // The first handle is untouched and goes on.
  ASSERT_TRUE((*first)->Put("b", "2").ok());
  ASSERT_TRUE((*first)->Close().ok());
  // Close released the lock: the table opens again with both writes.
  auto again = Table::Open(o, dir);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*(*again)->Get("a"), "1");
  EXPECT_EQ(*(*again)->Get("b"), "2");
  ASSERT_TRUE((*again)->Close().ok());
  fs::remove_all(dir);
}

TEST(TableLockTest, ReadersShareATableAndExcludeAWriter) {
  const std::string dir = TempDir("readers");
  MakeTable(dir, 50);
  auto r1 = Table::Open(ReadOnly(), dir);
  auto r2 = Table::Open(ReadOnly(), dir);
  ASSERT_TRUE(r1.ok()) << r1.status();
  ASSERT_TRUE(r2.ok()) << r2.status();
  EXPECT_EQ(*(*r1)->Get("key7"), "value7");
  EXPECT_EQ(*(*r2)->Get("key8"), "value8");
  Options o = Small();
  o.create_if_missing = false;
  auto writer = Table::Open(o, dir);
  ASSERT_FALSE(writer.ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(writer.status()));
  EXPECT_TRUE(absl::StrContains(writer.status().message(), "read-only"))
      << writer.status();
  // Destroying it is refused too, with nothing removed.
  EXPECT_TRUE(absl::IsFailedPrecondition(DestroyTable(dir)));
  EXPECT_TRUE(fs::exists(dir + "/blocks"));
  ASSERT_TRUE((*r1)->Close().ok());
  ASSERT_TRUE((*r2)->Close().ok());
  EXPECT_EQ(Verify(dir, 50, o), "");
  ASSERT_TRUE(DestroyTable(dir).ok());
  EXPECT_FALSE(fs::exists(dir));
}

TEST(TableLockTest, AWriterKilledWhileHoldingTheLockLeavesNoStaleLock) {
  const std::string dir = TempDir("killed");
  MakeTable(dir, 20);
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    Options o = Small();
    o.create_if_missing = false;
    auto t = Table::Open(o, dir);
    if (!t.ok() || !(*t)->Put("key20", "value20").ok()) _exit(1);
    const char c = 1;
    if (write(ready[1], &c, 1) != 1) _exit(1);
    pause();
    _exit(0);
  }
  close(ready[1]);
  char c = 0;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  close(ready[0]);
  // While the child lives its lock holds, naming it.
  Options o = Small();
  o.create_if_missing = false;
  auto refused = Table::Open(o, dir);
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(absl::StrContains(refused.status().message(),
                                absl::StrCat("process ", pid)))
      << refused.status();
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  // Gone with the process: the next open recovers the acknowledged put.
  EXPECT_EQ(Verify(dir, 21, o), "");
  fs::remove_all(dir);
}

TEST(TableReadOnlyTest, MissingLogAndJournalAreEmptyAndNothingIsCreated) {
  const std::string dir = TempDir("missing");
  MakeTable(dir, 30);
  for (const char* f : {"wal", "wal.1", "journal"}) fs::remove(dir + "/" + f);
  EXPECT_EQ(Verify(dir, 30, ReadOnly()), "");
  for (const char* f : {"wal", "wal.1", "journal"}) {
    EXPECT_FALSE(fs::exists(dir + "/" + f)) << f;
  }
  // A writer makes them anew.
  Options o = Small();
  o.create_if_missing = false;
  EXPECT_EQ(Verify(dir, 30, o), "");
  EXPECT_TRUE(fs::exists(dir + "/wal"));
  fs::remove_all(dir);
}

TEST(TableReadOnlyTest, AUserWhoMayOnlyReadTheTableReadsIt) {
  const std::string dir = TempDir("perm");
  MakeTable(dir, 40);
  // A log to replay, left by a writer that did not close.
  {
    Options o = Small();
    o.create_if_missing = false;
    auto t = Table::Open(o, dir);
    ASSERT_TRUE(t.ok());
    ASSERT_TRUE((*t)->Put("key40", "value40").ok());
    // The files as a crash leaves them: copied while the writer has them.
    fs::copy(dir, dir + "_crashed");
    ASSERT_TRUE((*t)->Close().ok());
  }
  const std::string crashed = dir + "_crashed";
  fs::remove(crashed + "/LOCK");
  chmod(crashed.c_str(), 0755);
  for (const auto& e : fs::directory_iterator(crashed)) {
    chmod(e.path().c_str(), 0644);
  }
  std::map<std::string, std::string> before;
  for (const auto& e : fs::directory_iterator(crashed)) {
    before[e.path().filename()] = FileBytes(e.path());
  }
  const int rc = InChild([&] {
    if (setgid(65534) != 0 || setuid(65534) != 0) return kCannot;
    // Writing is refused, and so is a writer's open.
    if (access((crashed + "/blocks").c_str(), W_OK) == 0) return kCannot;
    return RefusesAWriterAndReads(crashed, 41);
  });
  if (rc == kCannot) GTEST_SKIP() << "cannot run as another user here";
  EXPECT_EQ(rc, 0);
  // Nothing changed, nothing created (the reader could not make a LOCK).
  std::map<std::string, std::string> after;
  for (const auto& e : fs::directory_iterator(crashed)) {
    after[e.path().filename()] = FileBytes(e.path());
  }
  EXPECT_EQ(before, after);
  fs::remove_all(crashed);
  fs::remove_all(dir);
}

// Runs fn in a child with a mount namespace of its own (so that nothing it
// mounts outlives it); kCannot when the machine refuses one.
int InMountNamespace(const std::function<int()>& fn) {
  return InChild([&] {
    if (unshare(CLONE_NEWNS) != 0) return kCannot;
    if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
      return kCannot;
    }
    return fn();
  });
}

TEST(TableReadOnlyTest, ATableOnAReadOnlyMountCanBeRead) {
  const std::string dir = TempDir("romount");
  MakeTable(dir, 60);
  const std::string view = dir + "_view";
  fs::create_directories(view);
  const int rc = InMountNamespace([&] {
    if (mount(dir.c_str(), view.c_str(), nullptr, MS_BIND, nullptr) != 0 ||
        mount(nullptr, view.c_str(), nullptr,
              MS_BIND | MS_REMOUNT | MS_RDONLY, nullptr) != 0) {
      return kCannot;
    }
    return RefusesAWriterAndReads(view, 60);
  });
  if (rc == kCannot) GTEST_SKIP() << "cannot bind-mount read-only here";
  EXPECT_EQ(rc, 0);
  fs::remove_all(view);
  fs::remove_all(dir);
}

TEST(TableFilesTest, ASymbolicLinkInPlaceOfAnyFileIsRefusedAndItsTargetKept) {
  for (const char* file :
       {"blocks", "stash", "buffer", "wal", "wal.1", "journal", "LOCK"}) {
    SCOPED_TRACE(file);
    const std::string dir = TempDir("symlink");
    MakeTable(dir, 10);
    const std::string target = dir + "_target";
    const std::string path = absl::StrCat(dir, "/", file);
    const std::string bytes =
        fs::exists(path) ? FileBytes(path) : std::string("precious");
    WriteFileBytes(target, bytes + "precious");
    fs::remove(path);
    fs::create_symlink(target, path);
    Options o = Small();
    o.create_if_missing = false;
    for (const Options& opts : {o, ReadOnly()}) {
      auto t = Table::Open(opts, dir);
      EXPECT_FALSE(t.ok()) << (opts.read_only ? "read-only" : "writable");
      if (t.ok()) {
        (*t)->Put("x", "y").IgnoreError();
        (*t)->Close().IgnoreError();
      } else {
        EXPECT_TRUE(absl::StrContains(t.status().message(), "symbolic link"))
            << t.status();
      }
    }
    EXPECT_EQ(FileBytes(target), bytes + "precious");
    fs::remove_all(dir);
    fs::remove(target);
  }
}

TEST(TableFilesTest, ADirectoryInPlaceOfAFileIsRefused) {
  const std::string dir = TempDir("notfile");
  MakeTable(dir, 10);
  fs::remove(dir + "/wal");
  fs::create_directory(dir + "/wal");
  Options o = Small();
  o.create_if_missing = false;
  auto t = Table::Open(o, dir);
  ASSERT_FALSE(t.ok());
  EXPECT_TRUE(absl::StrContains(t.status().message(), "not a regular file"))
      << t.status();
  fs::remove(dir + "/wal");
  ASSERT_EQ(mkfifo((dir + "/wal").c_str(), 0644), 0);
  auto r = Table::Open(ReadOnly(), dir);  // must not block on the FIFO
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(absl::StrContains(r.status().message(), "not a regular file"))
      << r.status();
  fs::remove_all(dir);
}

TEST(TableFilesTest, CreateNeverTruncatesWhatItDidNotCreate) {
  // A stray table file with no block file: refused, kept.
  const std::string dir = TempDir("stray");
  fs::create_directories(dir);
  WriteFileBytes(dir + "/wal", "not yours");
  auto t = Table::Open(Small(), dir);
  ASSERT_FALSE(t.ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(t.status())) << t.status();
  EXPECT_EQ(FileBytes(dir + "/wal"), "not yours");
  fs::remove_all(dir);

  // The leftovers of a creation cut short are discarded, but a symbolic
  // link among them is unlinked, its target untouched.
  const std::string cut = TempDir("cut");
  fs::create_directories(cut);
  WriteFileBytes(cut + "/blocks.new", "half made");
  const std::string target = cut + "_target";
  WriteFileBytes(target, "precious");
  fs::create_symlink(target, cut + "/stash");
  EXPECT_EQ(Verify(cut, 0, Small()), "");
  EXPECT_EQ(FileBytes(target), "precious");
  EXPECT_FALSE(fs::is_symlink(cut + "/stash"));
  MakeTable(cut, 5);  // and it is a table
  fs::remove_all(cut);
  fs::remove(target);
}

// The table's files on a file system of `megabytes` (a tmpfs of the
// child's own mount namespace), for fn; kCannot where none can be mounted.
int OnSmallFileSystem(const std::string& mount_point, int megabytes,
                      const std::function<int()>& fn) {
  return InMountNamespace([&] {
    fs::create_directories(mount_point);
    const std::string size = absl::StrCat("size=", megabytes, "m");
    if (mount("tmpfs", mount_point.c_str(), "tmpfs", 0, size.c_str()) != 0) {
      return kCannot;
    }
    return fn();
  });
}

TEST(TableFullDiskTest, AFullDiskFailsTheWriteThatMeetsItAndEveryReadWorks) {
  const std::string mnt = TempDir("full");
  const int rc = OnSmallFileSystem(mnt, 4, [&]() -> int {
    const std::string dir = mnt + "/t";
    Options o = Small();
    o.checkpoint_bytes = 64 << 10;
    auto t = Table::Open(o, dir);
    if (!t.ok()) return Failed(t.status().ToString());
    // Synced puts of 100-byte values until the disk is full.
    const std::string value(100, 'v');
    WriteOptions sync;
    sync.sync = true;
    int acknowledged = 0;
    absl::Status s;
    for (int i = 0; i < 200000 && s.ok(); ++i) {
      s = (*t)->Put(absl::StrCat("key", i), value, sync);
      if (s.ok()) acknowledged = i + 1;
    }
    if (s.ok()) return Failed("4 MiB took 200000 records");
    if (!absl::IsResourceExhausted(s)) {
      return Failed("the full disk was " + s.ToString());
    }
    (*t)->Close().IgnoreError();
    // Every acknowledged put is there, read-only and writable, while the
    // disk is still full.
    auto check = [&](const Options& opts) -> std::string {
      auto r = Table::Open(opts, dir);
      if (!r.ok()) return r.status().ToString();
      for (int i = 0; i < acknowledged; ++i) {
        auto v = (*r)->Get(absl::StrCat("key", i));
        if (!v.ok() || *v != value) return absl::StrCat("lost key", i);
      }
      if (absl::Status c = (*r)->Check(); !c.ok()) return c.ToString();
      (*r)->Close().IgnoreError();
      return "";
    };
    Options ro = o;
    ro.read_only = true;
    ro.create_if_missing = false;
    if (std::string why = check(ro); !why.empty()) return Failed(why);
    Options rw = o;
    rw.create_if_missing = false;
    // A writable open may itself find no room for its recovery; it then
    // fails with a status, and the reader still finds everything.
    auto w = Table::Open(rw, dir);
    if (w.ok()) {
      (*w)->Put("more", value).IgnoreError();
      (*w)->Close().IgnoreError();
    } else if (!absl::IsResourceExhausted(w.status())) {
      return Failed("reopen: " + w.status().ToString());
    }
    if (std::string why = check(ro); !why.empty()) return Failed(why);
    std::printf("acknowledged %d synced puts on 4 MiB\n", acknowledged);
    return 0;
  });
  if (rc == kCannot) GTEST_SKIP() << "cannot mount a tmpfs here";
  EXPECT_EQ(rc, 0);
  fs::remove_all(mnt);
}

TEST(TableFullDiskTest, ATableTheDiskHasNoRoomForIsRefusedBeforeItIsMade) {
  const std::string mnt = TempDir("room");
  const int rc = OnSmallFileSystem(mnt, 4, [&]() -> int {
    Options o;
    o.block_size = 65536;
    o.s0 = 1 << 10;  // 64 MiB of empty blocks
    auto t = Table::Open(o, mnt + "/t");
    if (t.ok() || !absl::IsResourceExhausted(t.status())) {
      return Failed("a table larger than the disk: " + t.status().ToString());
    }
    if (fs::exists(mnt + "/t/blocks.new")) return Failed("blocks.new made");
    // The same directory takes a table that fits.
    o.block_size = 512;
    o.s0 = 4;
    t = Table::Open(o, mnt + "/t");
    return t.ok() ? 0 : Failed(t.status().ToString());
  });
  if (rc == kCannot) GTEST_SKIP() << "cannot mount a tmpfs here";
  EXPECT_EQ(rc, 0);
  fs::remove_all(mnt);
}

}  // namespace
}  // namespace roundtable
