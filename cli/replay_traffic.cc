#include "replay_traffic.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <nlohmann/json.hpp>

namespace humus::cli::replay {

namespace {

using Json = nlohmann::json;

// A transport or TLS status (docs/README.md §1) as a line names it: "HUMUS_E_CONNECTION_LOST" is
// "connection_lost"; "" for a number the library does not know. Named as the library names them, so a status
// it adds is accepted without a change here.
std::string kind_name(humus_status s) {
  std::string name = humus_status_name(s);
  if (name == "HUMUS_E_UNKNOWN" || name.rfind("HUMUS_E_", 0) != 0) return "";
  name = name.substr(8);
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  return name;
}

// The ranges a dependency's failure can come from: transport (300-399) and TLS (400-499).
constexpr humus_status kFirstTransportStatus = 300;
constexpr humus_status kPastTlsStatus = 500;

std::optional<humus_status> transport_status(const std::string& kind) {
  for (humus_status s = kFirstTransportStatus; s < kPastTlsStatus; ++s) {
    if (kind_name(s) == kind) return s;
  }
  return std::nullopt;
}

// Seconds (a JSON number >= 0) as whole milliseconds, rounded.
std::optional<int64_t> seconds_ms(const Json& v) {
  if (!v.is_number()) return std::nullopt;
  const double s = v.get<double>();
  if (!std::isfinite(s) || s < 0 || s > 1e9) return std::nullopt;
  return static_cast<int64_t>(std::llround(s * 1000));
}

std::optional<std::string> parse_line(const Json& j, TrafficLine& line) {
  if (!j.is_object()) return "not a JSON object";
  bool has_time = false;
  for (const auto& [key, v] : j.items()) {
    if (key == "time") {
      const std::optional<int64_t> ms = seconds_ms(v);
      if (!ms) return "\"time\" must be seconds >= 0";
      line.time_ms = *ms;
      has_time = true;
    } else if (key == "method") {
      if (!v.is_string() || v.get<std::string>().empty()) return "\"method\" must be a non-empty string";
      line.method = v.get<std::string>();
    } else if (key == "status") {
      if (!v.is_number_integer() || v.get<int64_t>() < 100 || v.get<int64_t>() > 599)
        return "\"status\" must be an HTTP status, 100 to 599";
      line.status = v.get<int32_t>();
    } else if (key == "error") {
      if (!v.is_string()) return "\"error\" must be a string";
      const std::string kind = v.get<std::string>();
      if (kind == "timeout") {
        line.hang = true;
        line.error = HUMUS_E_TIMEOUT;
      } else if (kind == "rejected") {
        line.rejected = true;
        line.error = HUMUS_E_REJECTED;
      } else if (std::optional<humus_status> s = transport_status(kind)) {
        line.error = *s;
      } else {
        std::string known;
        for (const std::string& k : error_kinds()) known += (known.empty() ? "" : ", ") + k;
        return "\"error\": unknown kind \"" + kind + "\" (known: " + known + ")";
      }
    } else if (key == "latency") {
      const std::optional<int64_t> ms = seconds_ms(v);
      if (!ms) return "\"latency\" must be seconds >= 0";
      line.latency_ms = *ms;
    } else if (key == "retry_after") {
      if (v.is_string()) {
        line.retry_after = v.get<std::string>();
      } else if (v.is_number_unsigned()) {
        line.retry_after = std::to_string(v.get<uint64_t>());
      } else if (!v.is_null()) {
        return "\"retry_after\" must be whole seconds or the header's text";
      }
    } else if (key == "resend") {
      if (!v.is_number_unsigned() || v.get<uint64_t>() > 1000) return "\"resend\" must be a count >= 0";
      line.resend = v.get<int32_t>();
    } else {
      return "unknown key \"" + key + "\" (known: time, method, status, error, latency, retry_after, resend)";
    }
  }
  if (!has_time) return "\"time\" is missing";
  if ((line.status != 0) == (line.error != HUMUS_OK)) return "exactly one of \"status\" and \"error\" is needed";
  return std::nullopt;
}

}  // namespace

std::vector<std::string> error_kinds() {
  std::vector<std::string> kinds{"timeout", "rejected"};
  for (humus_status s = kFirstTransportStatus; s < kPastTlsStatus; ++s) {
    if (std::string name = kind_name(s); !name.empty()) kinds.push_back(std::move(name));
  }
  return kinds;
}

std::optional<std::string> parse_traffic(const std::string& text, Traffic& out) {
  out = Traffic{};
  size_t number = 0;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    const std::string raw = text.substr(at, end - at);
    at = end + 1;
    ++number;
    if (raw.find_first_not_of(" \t\r") == std::string::npos) continue;
    const Json j = Json::parse(raw, nullptr, false);
    if (j.is_discarded()) return "line " + std::to_string(number) + ": not valid JSON";
    TrafficLine line;
    line.line_number = number;
    if (std::optional<std::string> why = parse_line(j, line)) return "line " + std::to_string(number) + ": " + *why;
    out.lines.push_back(std::move(line));
  }
  if (out.lines.empty()) return "no request recorded";
  std::stable_sort(out.lines.begin(), out.lines.end(),
                   [](const TrafficLine& a, const TrafficLine& b) { return a.time_ms < b.time_ms; });
  for (size_t i = 0; i < out.lines.size(); ++i) {
    if (!out.lines[i].rejected) out.answers.push_back(i);
  }
  if (out.answers.empty()) return "no line records an answer of the dependency (every one is \"rejected\")";
  if (out.calls() == 0) return "no line starts a call (every one has \"resend\" > 0)";
  return std::nullopt;
}

const TrafficLine& Traffic::outcome_at(int64_t t_ms) const {
  // The first answering line recorded after t_ms; the one before it is in effect.
  const auto after = std::upper_bound(answers.begin(), answers.end(), t_ms,
                                      [this](int64_t t, size_t i) { return t < lines[i].time_ms; });
  return lines[after == answers.begin() ? answers.front() : *(after - 1)];
}

size_t Traffic::calls() const {
  return static_cast<size_t>(
      std::count_if(lines.begin(), lines.end(), [](const TrafficLine& l) { return l.resend == 0; }));
}

}  // namespace humus::cli::replay
