#include "tools/roundtable/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace roundtable::cli {
namespace {

constexpr auto kRedraw = std::chrono::milliseconds(200);

}  // namespace

ProgressLine::ProgressLine(std::string label, bool enabled, std::string unit,
                           uint64_t total)
    : label_(std::move(label)),
      enabled_(enabled),
      unit_(std::move(unit)),
      total_(total) {}

ProgressLine::~ProgressLine() {
  if (!finished_) Clear();  // the command failed: no summary
}

bool ProgressLine::OnTerminal() { return isatty(STDERR_FILENO) != 0; }

void ProgressLine::Add(uint64_t units, uint64_t bytes) {
  units_.fetch_add(units, std::memory_order_relaxed);
  if (bytes != 0) bytes_.fetch_add(bytes, std::memory_order_relaxed);
  if (enabled_) MaybeDraw();
}

void ProgressLine::SetNote(std::string note) {
  if (!enabled_) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    note_ = std::move(note);
  }
  MaybeDraw();
}

std::function<void(uint64_t, uint64_t)> ProgressLine::Totals() {
  return [this, units = uint64_t{0}, bytes = uint64_t{0}](
             uint64_t total_units, uint64_t total_bytes) mutable {
    Add(total_units - units, total_bytes - bytes);
    units = total_units;
    bytes = total_bytes;
  };
}

void ProgressLine::MaybeDraw() {
  std::unique_lock<std::mutex> lock(mu_, std::try_to_lock);
  if (!lock.owns_lock()) return;  // another thread is drawing
  const Clock::time_point now = Clock::now();
  if (now - shown_ < kRedraw) return;
  shown_ = now;
  drawn_ = true;
  const double seconds = std::chrono::duration<double>(now - start_).count();
  const uint64_t units = units_.load(std::memory_order_relaxed);
  const uint64_t bytes = bytes_.load(std::memory_order_relaxed);
  std::string line = absl::StrFormat("%s: %d %s", label_, units, unit_);
  if (total_ != 0) {
    const double done = std::min(1.0, static_cast<double>(units) / total_);
    absl::StrAppendFormat(&line, " (%.1f%%", 100 * done);
    if (done > 0.001) {
      absl::StrAppendFormat(&line, ", about %.0f s left",
                            seconds * (1 - done) / done);
    }
    line += ")";
  }
  if (bytes != 0) absl::StrAppendFormat(&line, ", %.0f MB", bytes / 1e6);
  if (seconds > 0) {
    absl::StrAppendFormat(&line, ", %.0f %s/s", units / seconds, unit_);
  }
  if (!note_.empty()) absl::StrAppend(&line, ", ", note_);
  std::fprintf(stderr, "\r%-79.79s", line.c_str());
  std::fflush(stderr);
}

void ProgressLine::Clear() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!drawn_) return;
  std::fprintf(stderr, "\r%79s\r", "");
  std::fflush(stderr);
  drawn_ = false;
}

void ProgressLine::Finish() {
  std::lock_guard<std::mutex> lock(mu_);
  finished_ = true;
  if (!enabled_) return;
  const double seconds =
      std::chrono::duration<double>(Clock::now() - start_).count();
  const uint64_t units = units_.load();
  const uint64_t bytes = bytes_.load();
  std::string line = absl::StrFormat("%s: %d %s", label_, units, unit_);
  if (bytes != 0) absl::StrAppendFormat(&line, ", %.1f MB", bytes / 1e6);
  absl::StrAppendFormat(&line, " in %.2f s", seconds);
  if (seconds > 0) {
    absl::StrAppendFormat(&line, ": %.0f %s/s", units / seconds, unit_);
    if (bytes != 0)
      absl::StrAppendFormat(&line, ", %.1f MB/s", bytes / 1e6 / seconds);
  }
  std::fprintf(stderr, "\r%79s\r%s\n", "", line.c_str());
  std::fflush(stderr);
}

}  // namespace roundtable::cli
