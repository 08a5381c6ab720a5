// What a long command shows while it runs and says when it ends: a line on
// standard error, redrawn at most five times a second ("dump: 450000
// records, 52 MB, 300123 records/s"), and a summary ("dump: 1000000
// records, 116 MB in 3.2 s: 312500 records/s, 36.3 MB/s"). Both only when
// standard error is a terminal: nothing extra goes to a pipe or a file.
// (The experiments, whose work runs on many threads, report through
// experiment_table.h's Progress, which has a thread of its own.)
//
// Thread-safety: one thread.
#ifndef ROUNDTABLE_TOOLS_ROUNDTABLE_PROGRESS_H_
#define ROUNDTABLE_TOOLS_ROUNDTABLE_PROGRESS_H_

#include <chrono>
#include <cstdint>
#include <string>

namespace roundtable::cli {

class ProgressLine {
 public:
  // `enabled`: whether to print at all (ProgressLine::OnTerminal() for the
  // commands).
  // `unit`: what Add counts ("records", or "buckets" for check).
  ProgressLine(std::string label, bool enabled, std::string unit = "records");
  static bool OnTerminal();

  void Add(uint64_t records, uint64_t bytes);
  // Clears the line and prints the summary.
  void Finish();

 private:
  using Clock = std::chrono::steady_clock;
  std::string label_;
  bool enabled_;
  std::string unit_;
  Clock::time_point start_ = Clock::now();
  Clock::time_point shown_ = start_;
  uint64_t records_ = 0;
  uint64_t bytes_ = 0;
};

}  // namespace roundtable::cli

#endif  // ROUNDTABLE_TOOLS_ROUNDTABLE_PROGRESS_H_
