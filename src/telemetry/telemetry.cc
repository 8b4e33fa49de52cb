#include "telemetry/telemetry.h"

#include <utility>

namespace humus::telemetry {

std::string transition_message(std::string_view origin, const breaker::Transition& t) {
  std::string m = "circuit for ";
  m += origin;
  m += ": ";
  m += breaker::state_name(t.from);
  m += " -> ";
  m += breaker::state_name(t.to);
  m += " (successes " + std::to_string(t.counts_at_change.successes) + ", failures " +
       std::to_string(t.counts_at_change.failures) + ", consecutive failures " +
       std::to_string(t.counts_at_change.consecutive_failures) + ")";
  return m;
}

void Telemetry::set_log_sink(LogSink sink) {
  std::shared_ptr<const LogSink> next;
  if (sink) next = std::make_shared<const LogSink>(std::move(sink));
  {
    MutexLock lock(mu_);
    log_sink_.swap(next);
  }
  // `next` holds the old sink: released here, outside the lock (its destroy may run user code).
}

void Telemetry::log(const LogRecord& record) {
  std::shared_ptr<const LogSink> sink;
  {
    MutexLock lock(mu_);
    sink = log_sink_;
  }
  if (!sink) return;
  try {
    (*sink)(record);
  } catch (...) {
    // Dropped: see the header.
  }
}

void Telemetry::set_span_sink(SpanSink sink) {
  std::shared_ptr<const SpanSink> next;
  if (sink) next = std::make_shared<const SpanSink>(std::move(sink));
  {
    MutexLock lock(mu_);
    span_sink_.swap(next);
    has_span_sink_.store(span_sink_ != nullptr, std::memory_order_release);
  }
}

std::shared_ptr<const SpanSink> Telemetry::span_sink() const {
  if (!has_span_sink_.load(std::memory_order_acquire)) return nullptr;
  MutexLock lock(mu_);
  return span_sink_;
}

}  // namespace humus::telemetry
