// ProgressLine: counts from many threads, the summary's figures, and
// nothing at all when disabled (standard error captured in a file).
#include "tools/roundtable/progress.h"

#include <fcntl.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace roundtable::cli {
namespace {

// What `body` writes to standard error.
template <typename Body>
std::string StderrOf(Body body) {
  const std::string path =
      testing::TempDir() + "/progress_" + std::to_string(getpid());
  std::fflush(stderr);
  const int saved = dup(STDERR_FILENO);
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  dup2(fd, STDERR_FILENO);
  close(fd);
  body();
  std::fflush(stderr);
  dup2(saved, STDERR_FILENO);
  close(saved);
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  unlink(path.c_str());
  return text.str();
}

TEST(ProgressLineTest, CountsFromEveryThreadIntoTheSummary) {
  const std::string text = StderrOf([] {
    ProgressLine line("copy", /*enabled=*/true, "records", 40000);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&] {
        for (int i = 0; i < 10000; ++i) {
          line.Add(1, 10);
          if (i % 1000 == 0) line.SetNote("working");
        }
      });
    }
    for (std::thread& t : threads) t.join();
    line.Finish();
  });
  // The summary is the last line: every unit and byte counted.
  const size_t last = text.rfind('\r');
  ASSERT_NE(last, std::string::npos) << text;
  const std::string summary =
      text.substr(text.find_first_not_of(' ', last + 1));
  EXPECT_EQ(summary.rfind("copy: 40000 records, 0.4 MB in ", 0), 0u) << summary;
  EXPECT_NE(summary.find(" records/s, "), std::string::npos) << summary;
  EXPECT_EQ(summary.back(), '\n');
}

TEST(ProgressLineTest, TotalsAddWhatIsNewSinceTheLastReport) {
  const std::string text = StderrOf([] {
    ProgressLine line("rebuild", /*enabled=*/true);
    auto report = line.Totals();
    report(100, 1000);
    report(250, 2500000);
    report(250, 2500000);
    line.Finish();
  });
  EXPECT_NE(text.find("rebuild: 250 records, 2.5 MB in "), std::string::npos)
      << text;
}

TEST(ProgressLineTest, SaysNothingWhenDisabled) {
  const std::string text = StderrOf([] {
    ProgressLine line("scan", /*enabled=*/false, "records", 10);
    for (int i = 0; i < 1000; ++i) line.Add(1, 1);
    line.SetNote("note");
    line.Finish();
  });
  EXPECT_EQ(text, "");
}

TEST(ProgressLineTest, AnUnfinishedLineIsClearedAndLeavesNoSummary) {
  const std::string text = StderrOf([] {
    ProgressLine line("load", /*enabled=*/true);
    line.Add(5);
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    line.Add(5);  // drawn: 200 ms have passed
  });
  EXPECT_NE(text.find("load: 10 records"), std::string::npos) << text;
  EXPECT_EQ(text.find(" in "), std::string::npos) << text;  // no summary
  EXPECT_EQ(text.back(), '\r') << text;                     // the line cleared
}

}  // namespace
}  // namespace roundtable::cli
