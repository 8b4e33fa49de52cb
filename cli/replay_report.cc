#include "replay_report.h"

#include <humus_http.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <functional>

#include "capi.h"

namespace humus::cli::replay {

namespace {

constexpr int kLabelWidth = 28;

template <typename... A>
std::string printed(const char* format, A... a) {
  char buf[128];
  std::snprintf(buf, sizeof buf, format, a...);
  return buf;
}

std::string seconds_text(int64_t ms) { return printed("%" PRId64 ".%03" PRId64 " s", ms / 1000, ms % 1000); }

std::string padded_right(const std::string& s, size_t width) {
  return s.size() >= width ? s : std::string(width - s.size(), ' ') + s;
}

std::string padded_left(const std::string& s, size_t width) {
  return s.size() >= width ? s : s + std::string(width - s.size(), ' ');
}

}  // namespace

std::string format_report(const std::string& traffic_name, const Traffic& traffic, uint64_t seed,
                          const std::vector<Column>& columns) {
  std::string out = "replay of " + traffic_name + ": " + std::to_string(traffic.lines.size()) +
                    " recorded requests, " + std::to_string(traffic.calls()) + " calls, over " +
                    seconds_text(traffic.span_ms()) + "; seed " + std::to_string(seed) + "\n\n";
  size_t width = 14;
  for (const Column& c : columns) width = std::max(width, c.name.size() + 2);

  using Cell = std::function<std::string(const Outcome&)>;
  const auto count = [](int64_t Outcome::*member) -> Cell {
    return [member](const Outcome& o) { return std::to_string(o.*member); };
  };
  const auto latency = [](double p) -> Cell {
    return [p](const Outcome& o) { return std::to_string(o.percentile_ms(p)) + " ms"; };
  };
  const std::vector<std::pair<std::string, Cell>> rows{
      {"calls", count(&Outcome::calls)},
      {"  answered 2xx", count(&Outcome::ok)},
      {"  answered otherwise", count(&Outcome::answered_else)},
      {"  failed, no answer", count(&Outcome::failed)},
      {"  rejected by the breaker", count(&Outcome::rejected_calls)},
      {"  bulkhead full", count(&Outcome::bulkhead_full)},
      {"attempts", count(&Outcome::attempts)},
      {"wire requests", count(&Outcome::wire_requests)},
      {"retries", count(&Outcome::retries)},
      {"throttled", count(&Outcome::throttled)},
      {"rejected attempts", count(&Outcome::rejected)},
      {"most calls in flight", count(&Outcome::max_in_flight)},
      {"load amplification", [](const Outcome& o) { return printed("%.2fx", o.amplification()); }},
      {"call latency p50", latency(50)},
      {"call latency p99", latency(99)},
      {"breaker transitions",
       [](const Outcome& o) { return std::to_string(o.transitions.size()); }},
      {"last call ended at", [](const Outcome& o) { return seconds_text(o.end_ms); }},
  };
  std::string head = padded_left("", kLabelWidth);
  for (const Column& c : columns) head += padded_right(c.name, width);
  out += head + "\n";
  for (const auto& [label, cell] : rows) {
    std::string line = padded_left(label, kLabelWidth);
    for (const Column& c : columns) line += padded_right(cell(c.outcome), width);
    out += line + "\n";
  }

  // Each column's breaker changes, in time order, side by side.
  size_t most = 0;
  for (const Column& c : columns) most = std::max(most, c.outcome.transitions.size());
  if (most == 0) return out;
  constexpr size_t kChangeWidth = 34;
  out += "\nbreaker transitions (time from the replay's start)\n";
  if (columns.size() > 1) {
    std::string names;
    for (const Column& c : columns) names += padded_left("  " + c.name, kChangeWidth);
    out += names.substr(0, names.find_last_not_of(' ') + 1) + "\n";
  }
  for (size_t i = 0; i < most; ++i) {
    std::string line;
    for (const Column& c : columns) {
      std::string change;
      if (i < c.outcome.transitions.size()) {
        const Transition& t = c.outcome.transitions[i];
        change = padded_right(seconds_text(t.ms), 12) + "  " + circuit_name(t.from) + " -> " + circuit_name(t.to);
      }
      line += padded_left(change, kChangeWidth);
    }
    out += line.substr(0, line.find_last_not_of(' ') + 1) + "\n";
  }
  return out;
}

}  // namespace humus::cli::replay
