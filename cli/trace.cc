#include "trace.h"

#include <algorithm>
#include <cstdio>
#include <utility>
#include <vector>

#include "capi.h"

namespace humus::cli {
namespace {

using Json = nlohmann::json;

std::string plural(uint64_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

// Seconds as the trace gives them, to the millisecond: "0.052s".
std::string secs_of(const Json& v) {
  if (!v.is_number()) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3fs", v.get<double>());
  return buf;
}

std::string balance_of(const Json& v) {
  if (!v.is_number()) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v.get<double>());
  return buf;
}

std::string str_of(const Json& v) { return v.is_string() ? v.get<std::string>() : "-"; }

// "half_open" is the trace's spelling; the CLI says "half-open" everywhere else.
std::string circuit_of(const Json& position) {
  if (!position.is_object()) return "-";
  std::string state = str_of(position.value("state", Json()));
  std::replace(state.begin(), state.end(), '_', '-');
  return state;
}

// The attempt's outcome: its status, the error in its place, or "not sent".
std::string result_of(const Json& r) {
  const Json status = r.value("status", Json());
  if (status.is_number_integer()) return std::to_string(status.get<int64_t>());
  const Json error = r.value("error", Json());
  return error.is_string() ? error.get<std::string>() : "not sent";
}

std::string retry_after_of(const Json& r) {
  const Json after = r.value("retry_after", Json());
  if (!after.is_number()) return "-";
  return secs_of(after) + " (" + str_of(r.value("retry_after_source", Json())) + ")";
}

std::string wait_of(const Json& r) {
  const std::string source = str_of(r.value("wait_source", Json()));
  if (source == "none" || source == "-") return "-";
  return secs_of(r.value("wait", Json())) + " (" + source + ")";
}

int64_t int_of(const Json& r, const char* key) {
  const Json v = r.value(key, Json());
  return v.is_number_integer() ? v.get<int64_t>() : 0;
}

// "(redirect 1, GET http://host/new)" for a redirect hop's attempt; "" for the request's own.
std::string hop_of(const Json& r) {
  const int64_t redirect = int_of(r, "redirect");
  if (redirect == 0) return "";
  return " (redirect " + std::to_string(redirect) + ", " + str_of(r.value("method", Json())) + " " +
         str_of(r.value("url", Json())) + ")";
}

// The classifier's verdicts, "again, failure"; "-" when no classifier judged the attempt.
std::string classified_of(const Json& r) {
  const Json verdict = r.value("retry_verdict", Json());
  if (!verdict.is_string()) return "-";
  return verdict.get<std::string>() + ", " + str_of(r.value("breaker_verdict", Json()));
}

// "closed -> open": the breaker as the attempt found and left it.
std::string breaker_change_of(const Json& r) {
  return circuit_of(r.value("breaker", Json())) + " -> " + circuit_of(r.value("breaker_after", Json()));
}

std::string budget_change_of(const Json& r) {
  return balance_of(r.value("budget_before", Json())) + " -> " + balance_of(r.value("budget_after", Json()));
}

}  // namespace

CallTrace trace_of(const humus_response* resp, const humus_error* err) {
  CallTrace t;
  char* json = nullptr;
  size_t len = 0;
  const humus_status st =
      resp != nullptr ? humus_response_trace(resp, &json, &len, nullptr) : humus_error_trace(err, &json, &len);
  if (st != HUMUS_OK) return t;
  LibString owned(json);
  t.json.assign(json, len);
  const Json parsed = Json::parse(t.json, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_array()) t.records = parsed;
  return t;
}

int32_t retries_made(const CallTrace& t) {
  int32_t n = 0;
  for (const Json& r : t.records) {
    // docs/trace.md §20.2: an attempt is one with a breaker position and a decision other than rejected.
    const bool attempted = r.value("breaker", Json()).is_object() && str_of(r.value("decision", Json())) != "rejected";
    if (attempted && r.value("resend", false)) ++n;
  }
  return n;
}

int32_t redirects_followed(const CallTrace& t) {
  return t.records.empty() ? 0 : static_cast<int32_t>(int_of(t.records.back(), "redirect"));
}

std::string trace_lines(const CallTrace& t) {
  std::string out;
  for (const Json& r : t.records) {
    out += "trace: attempt " + std::to_string(int_of(r, "attempt")) + hop_of(r) + ": " + result_of(r) + " in " +
           secs_of(r.value("duration", Json())) + " (sent " + std::to_string(int_of(r, "wire_sends")) + ")";
    out += " | classified: " + classified_of(r);
    if (r.value("retry_after", Json()).is_number()) out += ", Retry-After " + retry_after_of(r);
    out += " | breaker " + breaker_change_of(r) + ", budget " + budget_change_of(r);
    out += " | decision: " + str_of(r.value("decision", Json()));
    if (const std::string w = wait_of(r); w != "-") out += ", wait " + w;
    out += ", " + secs_of(r.value("deadline_left", Json())) + " left\n";
  }
  return out;
}

std::string trace_table(const CallTrace& t) {
  std::vector<std::vector<std::string>> rows = {{"#", "request", "result", "sent", "took", "classified",
                                                 "Retry-After", "breaker", "budget", "decision", "wait", "left"}};
  for (const Json& r : t.records) {
    const int64_t redirect = int_of(r, "redirect");
    rows.push_back({std::to_string(int_of(r, "attempt")),
                    (redirect == 0 ? std::string() : "redirect " + std::to_string(redirect) + ": ") +
                        str_of(r.value("method", Json())) + " " + str_of(r.value("url", Json())),
                    result_of(r), std::to_string(int_of(r, "wire_sends")), secs_of(r.value("duration", Json())),
                    classified_of(r), retry_after_of(r), breaker_change_of(r), budget_change_of(r),
                    str_of(r.value("decision", Json())), wait_of(r), secs_of(r.value("deadline_left", Json()))});
  }
  std::vector<size_t> width(rows.front().size(), 0);
  for (const auto& row : rows) {
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line = "  ";
    for (size_t c = 0; c < row.size(); ++c) {
      line += row[c];
      if (c + 1 < row.size()) line += std::string(width[c] - row[c].size() + 2, ' ');
    }
    out += line + "\n";
  }
  return out;
}

Tracer::Tracer(std::string budget_policy, double budget_tokens)
    : budget_policy_(std::move(budget_policy)), budget_tokens_(budget_tokens) {}

humus_status Tracer::install_log_sink(humus_runtime* rt, humus_error** err) {
  humus_log_sink sink = HUMUS_LOG_SINK_INIT;
  sink.record = &Tracer::log;
  sink.user_data = this;
  return humus_runtime_set_log_sink(rt, &sink, err);
}

void Tracer::log(void* /*user_data*/, const humus_log_record* record) {
  if (record->new_state < 0) return;  // not a breaker state change
  const std::string line = std::string("trace: breaker ") + circuit_name(record->previous_state) + " -> " +
                           circuit_name(record->new_state) + ": " + record->message + "\n";
  std::fputs(line.c_str(), stderr);
}

std::string Tracer::breaker_summary() const {
  humus_client* c = client_.load(std::memory_order_acquire);
  if (c == nullptr) return "breaker unknown";
  humus_breaker_counts counts = HUMUS_BREAKER_COUNTS_INIT;
  if (humus_client_breaker_counts(c, &counts) != HUMUS_OK) return "breaker unknown";
  const uint64_t in_a_row = counts.consecutive_failures;
  std::string s = std::string("breaker ") + circuit_name(counts.state) + " (" +
                  plural(counts.successes, "success", "successes") + ", " +
                  plural(counts.failures, "failure", "failures");
  if (in_a_row > 0) s += ", " + std::to_string(in_a_row) + " in a row";
  s += "; window " + plural(counts.window_results, "result", "results") + ", " +
       std::to_string(counts.window_failures) + " failed)";
  return s;
}

std::string Tracer::budget_summary() const {
  humus_client* c = client_.load(std::memory_order_acquire);
  double tokens = 0;
  if (c == nullptr || humus_client_budget_tokens(c, &tokens) != HUMUS_OK) return "budget unknown";
  char buf[96];
  if (budget_policy_ == "token_bucket") {
    // docs/retries.md §6.4: a retry is allowed only while more than half the tokens remain.
    std::snprintf(buf, sizeof buf, "budget %.1f of %g tokens (retries need more than %g)", tokens,
                  budget_tokens_, budget_tokens_ / 2);
  } else {
    std::snprintf(buf, sizeof buf, "budget %.1f retries left in the window", tokens);
  }
  return buf;
}

}  // namespace humus::cli
