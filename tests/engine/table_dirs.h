// Directories for the tables the engine's tests make: each call names a
// fresh one under testing::TempDir(), unique in the process, with nothing
// an earlier run left there; the process that named them removes them all,
// and what its tests made beside them ("<dir>.<anything>"), when it ends
// (a child it forked and that exits removes none).
#ifndef ROUNDTABLE_TESTS_ENGINE_TABLE_DIRS_H_
#define ROUNDTABLE_TESTS_ENGINE_TABLE_DIRS_H_

#include <unistd.h>

#include <filesystem>
#include <mutex>
#include <set>
#include <string>
#include <system_error>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace roundtable {

// "<TempDir>/<prefix>_<tag>_<pid>_<n>", absent.
inline std::string FreshTableDir(const std::string& prefix,
                                 const std::string& tag) {
  struct Named {
    std::mutex mu;
    const pid_t owner = getpid();
    int next = 0;
    std::vector<std::string> dirs;
    ~Named() {
      if (getpid() != owner || dirs.empty()) return;
      // One pass over their parent (testing::TempDir() for all of them).
      std::set<std::string> names;
      for (const std::string& dir : dirs) {
        names.insert(std::filesystem::path(dir).filename().string());
      }
      std::error_code ignored;
      const std::filesystem::path parent =
          std::filesystem::path(dirs.front()).parent_path();
      std::vector<std::filesystem::path> doomed;
      for (const auto& entry :
           std::filesystem::directory_iterator(parent, ignored)) {
        const std::string name = entry.path().filename().string();
        // The directory, or what a test made beside it ("<dir>.saved").
        const std::string stem = name.substr(0, name.find('.'));
        if (names.count(name) > 0 || names.count(stem) > 0) {
          doomed.push_back(entry.path());
        }
      }
      for (const auto& path : doomed) {
        std::filesystem::remove_all(path, ignored);
      }
    }
  };
  static Named named;
  std::lock_guard<std::mutex> lock(named.mu);
  std::string dir = absl::StrCat(testing::TempDir(), "/", prefix, "_", tag,
                                 "_", getpid(), "_", named.next++);
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
  named.dirs.push_back(dir);
  return dir;
}

}  // namespace roundtable

#endif  // ROUNDTABLE_TESTS_ENGINE_TABLE_DIRS_H_
