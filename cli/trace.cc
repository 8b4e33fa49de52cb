#include "trace.h"

#include <cstdio>
#include <utility>

#include "capi.h"

namespace humus::cli {
namespace {

const char* retry_name(int32_t retry) {
  switch (retry) {
    case HUMUS_RETRY_AGAIN:
      return "again";
    case HUMUS_RETRY_DONE:
      return "done";
    default:
      return "invalid";
  }
}

const char* breaker_verdict_name(int32_t verdict) {
  switch (verdict) {
    case HUMUS_BREAKER_SUCCESS:
      return "success";
    case HUMUS_BREAKER_FAILURE:
      return "failure";
    case HUMUS_BREAKER_IGNORED:
      return "ignored";
    default:
      return "invalid";
  }
}

std::string plural(uint64_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

}  // namespace

Tracer::Tracer(std::string preset, std::string budget_policy, double budget_tokens)
    : preset_(std::move(preset)), budget_policy_(std::move(budget_policy)), budget_tokens_(budget_tokens) {}

humus_status Tracer::install(humus_settings* s, humus_error** err) {
  humus_classifier table = HUMUS_CLASSIFIER_INIT;
  table.classify = &Tracer::classify;
  table.user_data = this;
  return humus_settings_set_classifier(s, &table, err);
}

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

humus_status Tracer::classify(void* user_data, const humus_attempt* attempt, humus_classification* out) {
  const auto* self = static_cast<const Tracer*>(user_data);
  // Read before the result counts: the breaker and budget as this attempt found them.
  const std::string breaker = self->breaker_summary();
  const std::string budget = self->budget_summary();
  const humus_status st = humus_classify_preset(self->preset_.c_str(), attempt, out);
  std::string seen;
  if (const int32_t status = humus_attempt_status(attempt); status != 0) {
    seen = std::to_string(status);
  } else {
    seen = std::string(humus_status_name(humus_attempt_error(attempt))) + " (" +
           humus_attempt_error_message(attempt) + ")";
  }
  std::string line = "trace: attempt " + std::to_string(humus_attempt_number(attempt)) + ": " + seen;
  if (st != HUMUS_OK) {
    line += " -> classifier failed: " + std::string(humus_status_name(st));
  } else {
    line += std::string(" -> retry: ") + retry_name(out->retry) +
            ", breaker: " + breaker_verdict_name(out->breaker);
    if (out->retry_after_ms > 0) line += ", Retry-After " + std::to_string(out->retry_after_ms) + "ms";
  }
  line += " | before it: " + breaker + ", " + budget + "\n";
  std::fputs(line.c_str(), stderr);
  return st;
}

}  // namespace humus::cli
