// What a long command shows while it runs and says when it ends: a line on
// standard error, redrawn at most five times a second ("dump: 450000
// records, 52 MB, 300123 records/s"; with a known total also the share
// done and the time left, and a note of what is being worked on), and a
// summary ("dump: 1000000 records, 116.0 MB in 3.20 s: 312500 records/s,
// 36.3 MB/s"). Both only when enabled, which the commands take from
// whether standard error is a terminal: nothing extra goes to a pipe or a
// file.
//
// Thread-safety: Add and SetNote may be called from any thread (the
// experiments' workers); the constructor, Finish and the destructor from
// one.
#ifndef ROUNDTABLE_TOOLS_ROUNDTABLE_PROGRESS_H_
#define ROUNDTABLE_TOOLS_ROUNDTABLE_PROGRESS_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>

namespace roundtable::cli {

class ProgressLine {
 public:
  // `enabled`: whether to print at all (ProgressLine::OnTerminal() for the
  // commands).
  // `unit`: what Add counts ("records", "buckets" for check, "inserts" for
  // the experiments).
  // `total`: how many units the work has, when known (0: not known).
  ProgressLine(std::string label, bool enabled, std::string unit = "records",
               uint64_t total = 0);
  ~ProgressLine();  // clears a line that Finish did not end (a failure)
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  static bool OnTerminal();

  void Add(uint64_t units, uint64_t bytes = 0);
  // Shown after the counts: what is being worked on ("3/40 runs").
  void SetNote(std::string note);
  // A callback for the library's reports of running totals
  // (RebuildProgress): each report adds what is new since the last.
  std::function<void(uint64_t units, uint64_t bytes)> Totals();
  // Clears the line, for other output to go there; the next Add draws it
  // again.
  void Clear();
  // Clears the line and prints the summary.
  void Finish();

 private:
  using Clock = std::chrono::steady_clock;
  void MaybeDraw();

  const std::string label_;
  const bool enabled_;
  const std::string unit_;
  const uint64_t total_;
  const Clock::time_point start_ = Clock::now();
  std::atomic<uint64_t> units_{0};
  std::atomic<uint64_t> bytes_{0};
  std::mutex mu_;                     // one thread draws
  Clock::time_point shown_ = start_;  // guarded by mu_
  std::string note_;                  // guarded by mu_
  bool drawn_ = false;                // guarded by mu_
  bool finished_ = false;
};

}  // namespace roundtable::cli

#endif  // ROUNDTABLE_TOOLS_ROUNDTABLE_PROGRESS_H_
