#pragma once
// --trace: what the client saw and decided, as far as the C ABI lets a program observe it. Per attempt, a
// classifier that delegates to the client's own preset (so classification is unchanged) reports the attempt's
// result and its classification; the runtime's log sink reports each breaker state change; per call, the
// outcome, its retry decisions (the client's metrics) and the breaker's and budget's state after it.

#include <humus_http.h>

#include <atomic>
#include <cstdint>
#include <string>

namespace humus::cli {

class Tracer {
 public:
  // `preset`: the settings' "classify" value ("humus", "jfast", "strict"), which the tracer delegates to.
  // `budget_policy` and `budget_tokens`: the effective retry_budget, to say what the balance means.
  Tracer(std::string preset, std::string budget_policy, double budget_tokens);
  Tracer(const Tracer&) = delete;
  Tracer& operator=(const Tracer&) = delete;

  // Installs the tracing classifier on `s`; the tracer must outlive every client built from `s`.
  humus_status install(humus_settings* s, humus_error** err);
  // Prints each breaker state change the runtime logs (docs/telemetry.md §13.3); the tracer must outlive `rt`.
  humus_status install_log_sink(humus_runtime* rt, humus_error** err);
  // The client whose breaker and budget the attempt lines read (set once it is built).
  void attach(humus_client* c) { client_.store(c, std::memory_order_release); }

  // "breaker closed (1 success, 2 failures, 2 in a row; window: 3 results, 2 failed)".
  std::string breaker_summary() const;
  // "budget 7.1 of 10 tokens" or "budget 2.0 retries left in the window".
  std::string budget_summary() const;

 private:
  static humus_status classify(void* user_data, const humus_attempt* attempt, humus_classification* out);
  static void log(void* user_data, const humus_log_record* record);

  std::string preset_;
  std::string budget_policy_;
  double budget_tokens_;
  // Release/acquire: an attempt line that sees the client sees it fully built.
  std::atomic<humus_client*> client_{nullptr};
};

}  // namespace humus::cli
