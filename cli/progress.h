#pragma once
// The progress meter on stderr, as curl draws it: the table by default, a bar with -#, none with -s, and
// never when stderr is not a terminal (a log file gets no carriage returns).

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

namespace humus::cli {

// One moment of a transfer, what a row shows.
struct TransferState {
  uint64_t received = 0;
  std::optional<uint64_t> total;  // the body's length when the server gave it
  uint64_t sent = 0;
  std::optional<uint64_t> send_total;  // a streamed request body's length when known
  int64_t elapsed_ms = 0;
};

// curl's five-column sizes: "  999", "97.6k"... as 5 characters: bytes below 100000, then k, M, G, T.
std::string format_size(uint64_t bytes);
// " H:MM:SS" (at most 99:59:59), or "--:--:--" when unknown.
std::string format_clock(std::optional<int64_t> ms);
// The meter's header line and one row (no carriage return, no newline).
std::string meter_header();
std::string meter_row(const TransferState& s);
// The bar of -#, `width` columns wide: '#' for what came of the total, then the percent; without a total,
// the bytes received so far.
std::string bar_row(const TransferState& s, int width);

class Progress {
 public:
  enum class Style { kNone, kMeter, kBar };

  // The style for this command: none with -s, -v or --trace (their lines would be overwritten) or when
  // stderr is not a terminal; else the bar with -#, the meter when the body goes to a file or stdout is
  // not a terminal (on a terminal the body itself shows the progress, as in curl).
  static Style choose(bool silent, bool bar, bool chatty, bool body_to_file);

  explicit Progress(Style style) : style_(style) {}
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // A call starts: counters to zero, the clock from now; `send_total` for a streamed request body.
  void begin(std::optional<uint64_t> send_total);
  // Before any begin(): the style is known once the output is.
  void set_style(Style style) { style_ = style; }
  void set_total(std::optional<uint64_t> total) {
    if (active_) state_.total = total;
  }
  void add_received(size_t n);
  void add_sent(size_t n);
  // The call is over: the last row, then a newline.
  void end();

 private:
  void draw(bool force);

  Style style_;
  bool active_ = false;
  TransferState state_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point drawn_;
};

}  // namespace humus::cli
