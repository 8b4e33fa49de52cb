#include "progress.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

namespace humus::cli {
namespace {

constexpr auto kRedraw = std::chrono::milliseconds(250);  // curl redraws a few times a second too
constexpr const char* kColumns = "%3s  %8s  %5s  %5s  %5s  %8s  %8s";

int terminal_width() {
  winsize w{};
  if (ioctl(STDERR_FILENO, TIOCGWINSZ, &w) == 0 && w.ws_col > 20) return w.ws_col;
  if (const char* columns = std::getenv("COLUMNS")) {
    const int n = std::atoi(columns);
    if (n > 20) return n;
  }
  return 80;
}

}  // namespace

std::string format_size(uint64_t bytes) {
  char buf[48];
  constexpr uint64_t kKi = 1024;
  if (bytes < 100'000) {
    std::snprintf(buf, sizeof buf, "%5llu", static_cast<unsigned long long>(bytes));
    return buf;
  }
  // Above the bytes: a whole number with its unit while it fits in four digits, else one decimal of the next.
  static constexpr char kUnits[] = {'k', 'M', 'G', 'T', 'P'};
  uint64_t unit = kKi;
  for (char u : kUnits) {
    if (bytes / unit < 10'000) {
      const uint64_t whole = bytes / unit;
      if (whole < 100 && unit > kKi) {
        std::snprintf(buf, sizeof buf, "%2llu.%llu%c", static_cast<unsigned long long>(whole),
                      static_cast<unsigned long long>(bytes % unit * 10 / unit), u);
      } else {
        std::snprintf(buf, sizeof buf, "%4llu%c", static_cast<unsigned long long>(whole), u);
      }
      return buf;
    }
    unit *= kKi;
  }
  std::snprintf(buf, sizeof buf, "%4lluE", static_cast<unsigned long long>(bytes / unit));
  return buf;
}

std::string format_clock(std::optional<int64_t> ms) {
  if (!ms || *ms < 0) return "--:--:--";
  const int64_t s = *ms / 1000;
  if (s >= 100 * 3600) return "99:59:59";
  char buf[48];
  std::snprintf(buf, sizeof buf, "%2lld:%02lld:%02lld", static_cast<long long>(s / 3600),
                static_cast<long long>(s / 60 % 60), static_cast<long long>(s % 60));
  return buf;
}

std::string meter_header() {
  char buf[96];
  std::snprintf(buf, sizeof buf, kColumns, "%", "Received", "Total", "Sent", "Speed", "Time", "Left");
  return buf;
}

std::string meter_row(const TransferState& s) {
  // The direction under way: the body coming in, or (before any of it) the request body going out.
  const bool sending = s.received == 0 && s.sent > 0;
  const uint64_t done = sending ? s.sent : s.received;
  const std::optional<uint64_t> total = sending ? s.send_total : s.total;
  const uint64_t speed = s.elapsed_ms > 0 ? done * 1000 / static_cast<uint64_t>(s.elapsed_ms) : 0;
  std::string percent = "--";
  std::optional<int64_t> left;
  if (total && *total > 0) {
    percent = std::to_string(std::min<uint64_t>(100, done * 100 / *total));
    if (speed > 0) left = static_cast<int64_t>((*total > done ? *total - done : 0) * 1000 / speed);
  } else if (total) {
    percent = "100";
  }
  char buf[96];
  std::snprintf(buf, sizeof buf, kColumns, percent.c_str(), format_size(s.received).c_str(),
                s.total ? format_size(*s.total).c_str() : "   --", format_size(s.sent).c_str(),
                format_size(speed).c_str(), format_clock(s.elapsed_ms).c_str(), format_clock(left).c_str());
  return buf;
}

std::string bar_row(const TransferState& s, int width) {
  const bool sending = s.received == 0 && s.sent > 0;
  const uint64_t done = sending ? s.sent : s.received;
  const std::optional<uint64_t> total = sending ? s.send_total : s.total;
  if (!total) return "#=#=# " + format_size(done) + (sending ? " sent" : " received");
  const double fraction =
      *total == 0 ? 1.0 : std::min(1.0, static_cast<double>(done) / static_cast<double>(*total));
  const int cells = std::max(1, width - 8);  // " 100.0%" and a spare column, so the line never wraps
  const int filled = static_cast<int>(fraction * cells);
  char percent[16];
  std::snprintf(percent, sizeof percent, " %5.1f%%", fraction * 100);
  return std::string(static_cast<size_t>(filled), '#') +
         std::string(static_cast<size_t>(cells - filled), ' ') + percent;
}

Progress::Style Progress::choose(bool silent, bool bar, bool chatty, bool body_to_file) {
  if (silent || chatty || isatty(STDERR_FILENO) == 0) return Style::kNone;
  if (bar) return Style::kBar;
  return body_to_file || isatty(STDOUT_FILENO) == 0 ? Style::kMeter : Style::kNone;
}

void Progress::begin(std::optional<uint64_t> send_total) {
  if (style_ == Style::kNone) return;
  state_ = TransferState{};
  state_.send_total = send_total;
  start_ = std::chrono::steady_clock::now();
  drawn_ = start_;
  active_ = true;
  if (style_ == Style::kMeter) std::fprintf(stderr, "%s\n", meter_header().c_str());
  draw(true);
}

void Progress::add_received(size_t n) {
  if (!active_) return;
  state_.received += n;
  draw(false);
}

void Progress::add_sent(size_t n) {
  if (!active_) return;
  state_.sent += n;
  draw(false);
}

void Progress::end() {
  if (!active_) return;
  draw(true);
  std::fputc('\n', stderr);
  active_ = false;
}

void Progress::draw(bool force) {
  const auto now = std::chrono::steady_clock::now();
  if (!force && now - drawn_ < kRedraw) return;
  drawn_ = now;
  state_.elapsed_ms = std::chrono::duration_cast<std::chrono::milliseconds>(now - start_).count();
  const std::string row = style_ == Style::kBar ? bar_row(state_, terminal_width()) : meter_row(state_);
  std::fprintf(stderr, "\r%s", row.c_str());
  std::fflush(stderr);
}

}  // namespace humus::cli
