#include "tools/roundtable/progress.h"

#include <unistd.h>

#include <cstdio>
#include <utility>

namespace roundtable::cli {

ProgressLine::ProgressLine(std::string label, bool enabled, std::string unit)
    : label_(std::move(label)), enabled_(enabled), unit_(std::move(unit)) {}

bool ProgressLine::OnTerminal() { return isatty(STDERR_FILENO) != 0; }

void ProgressLine::Add(uint64_t records, uint64_t bytes) {
  records_ += records;
  bytes_ += bytes;
  if (!enabled_) return;
  const Clock::time_point now = Clock::now();
  if (now - shown_ < std::chrono::milliseconds(200)) return;
  shown_ = now;
  const double seconds = std::chrono::duration<double>(now - start_).count();
  std::fprintf(stderr, "\r%s: %llu %s, %.0f MB, %.0f %s/s   ", label_.c_str(),
               static_cast<unsigned long long>(records_), unit_.c_str(),
               bytes_ / 1e6, seconds > 0 ? records_ / seconds : 0.0,
               unit_.c_str());
  std::fflush(stderr);
}

void ProgressLine::Finish() {
  if (!enabled_) return;
  const double seconds =
      std::chrono::duration<double>(Clock::now() - start_).count();
  std::fprintf(stderr,
               "\r%78s\r%s: %llu %s, %.1f MB in %.2f s: %.0f %s/s, %.1f MB/s\n",
               "", label_.c_str(), static_cast<unsigned long long>(records_),
               unit_.c_str(), bytes_ / 1e6, seconds,
               seconds > 0 ? records_ / seconds : 0.0, unit_.c_str(),
               seconds > 0 ? bytes_ / 1e6 / seconds : 0.0);
}

}  // namespace roundtable::cli
