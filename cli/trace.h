#pragma once
// --trace and --trace-json: each call's decision trace as the library records it (docs/trace.md: one record
// per attempt with its result, classification, breaker and budget before and after, decision and wait), and
// what the trace does not hold: each breaker state change as the runtime logs it, the breaker's counts and
// the budget's meaning after each call.

#include <humus_http.h>

#include <atomic>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace humus::cli {

// One call's trace: the library's JSON text and its parsed records (an empty array when it could not be had).
struct CallTrace {
  std::string json;  // as humus_response_trace / humus_error_trace give it
  nlohmann::json records = nlohmann::json::array();
};

// The trace of the call that ended with `resp`, or else with `err`.
CallTrace trace_of(const humus_response* resp, const humus_error* err);

// Retries the call made: attempts that resent a request after a failure, rejected ones left out (curl's
// %{num_retries}, which counts no redirect).
int32_t retries_made(const CallTrace& t);
// Redirects the call followed (the hop of its last record).
int32_t redirects_followed(const CallTrace& t);

// One line per attempt, each starting with "trace: attempt N": for a log or a pipe.
std::string trace_lines(const CallTrace& t);
// The same as a table with a header row, aligned: for a terminal.
std::string trace_table(const CallTrace& t);

class Tracer {
 public:
  // `budget_policy` and `budget_tokens`: the effective retry_budget, to say what the balance means.
  Tracer(std::string budget_policy, double budget_tokens);
  Tracer(const Tracer&) = delete;
  Tracer& operator=(const Tracer&) = delete;

  // Prints each breaker state change the runtime logs (docs/telemetry.md §13.3); the tracer must outlive `rt`.
  humus_status install_log_sink(humus_runtime* rt, humus_error** err);
  // The client whose breaker and budget the summaries read (set once it is built).
  void attach(humus_client* c) { client_.store(c, std::memory_order_release); }

  // "breaker closed (1 success, 2 failures, 2 in a row; window: 3 results, 2 failed)".
  std::string breaker_summary() const;
  // "budget 7.1 of 10 tokens" or "budget 2.0 retries left in the window".
  std::string budget_summary() const;

 private:
  static void log(void* user_data, const humus_log_record* record);

  std::string budget_policy_;
  double budget_tokens_;
  // Release/acquire: a summary that sees the client sees it fully built.
  std::atomic<humus_client*> client_{nullptr};
};

}  // namespace humus::cli
