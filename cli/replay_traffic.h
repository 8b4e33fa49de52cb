#pragma once
// Recorded traffic for humus-http replay (docs/replay.md §21.1): one JSON object a line, one request each, and
// the dependency it describes, modelled as a function of time.

#include <humus_http.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace humus::cli::replay {

// One recorded request, its times in whole milliseconds of the recording.
struct TrafficLine {
  int64_t time_ms = 0;
  std::string method = "GET";
  int32_t status = 0;             // the HTTP status it got; 0 when it got none
  humus_status error = HUMUS_OK;  // else the error in its place
  bool hang = false;              // "timeout": no answer came; a replayed attempt waits for its own timeout
  bool rejected = false;          // the recording client's breaker turned it away: it says nothing of the dependency
  int64_t latency_ms = 0;
  std::optional<std::string> retry_after;  // the Retry-After header's value, as the dependency sent it
  int32_t resend = 0;                      // > 0: a retry of an earlier line, not a call of its own
  size_t line_number = 0;                  // in the file, for messages
};

struct Traffic {
  std::vector<TrafficLine> lines;  // in time order (lines of one time keep the file's order)
  std::vector<size_t> answers;     // indexes of the lines that say what the dependency answered, in time order

  // The recorded request in effect at `t_ms`: the last answering line recorded at or before `t_ms`, or the
  // first one when `t_ms` comes before them all. Never called on traffic without an answering line.
  const TrafficLine& outcome_at(int64_t t_ms) const;
  // Lines that start a call: those with resend 0.
  size_t calls() const;
  int64_t span_ms() const { return lines.empty() ? 0 : lines.back().time_ms - lines.front().time_ms; }
};

// The error kinds a line may name: "timeout", "rejected", and the transport and TLS statuses in lowercase
// without their prefix ("connect", "connection_lost", "tls", ...), as humus_status_name spells them.
std::vector<std::string> error_kinds();

// Reads traffic from `text`; on failure returns "line N: why".
std::optional<std::string> parse_traffic(const std::string& text, Traffic& out);

}  // namespace humus::cli::replay
