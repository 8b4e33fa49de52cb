// The runtime's telemetry (docs/telemetry.md §13): the metrics registry of its clients, the span sink that receives one
// span per attempt (§13.1), and the log sink that receives one record per breaker state change (§13.3) and
// the upstreams' configuration notices (§15.1).
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "breaker/breaker.h"
#include "common/clock.h"
#include "common/mutex.h"
#include "telemetry/metrics.h"
#include "telemetry/span.h"

namespace humus::telemetry {

inline constexpr std::string_view kCircuitStateChange = "humus.circuit.state_change";
inline constexpr std::string_view kUpstreamBaseUrlOverride = "humus.upstreams.base_url_override";

// One log record; its views live for the duration of the sink's call.
struct LogRecord {
  std::string_view event;  // kCircuitStateChange or kUpstreamBaseUrlOverride
  std::string_view message;
  std::string_view server_address;
  int server_port = 0;
  bool state_change = false;  // previous/next/counts are meaningful
  breaker::State previous = breaker::State::kClosed;
  breaker::State next = breaker::State::kClosed;
  breaker::Counts counts;  // at the change: of the state left, including the result that caused it
  WallTime time{};
  std::string_view upstream;  // the upstream's name, for upstreams records
};

// Must be thread-safe: records of different clients may arrive on several threads at once.
using LogSink = std::function<void(const LogRecord&)>;

// The message of a breaker transition's record: "circuit for https://payments:8443: closed -> open (…)".
std::string transition_message(std::string_view origin, const breaker::Transition& t);

// Thread-safe.
class Telemetry {
 public:
  MetricsRegistry& metrics() { return metrics_; }

  // Replaces the log sink (empty removes it). The previous one is released once no delivery uses it.
  void set_log_sink(LogSink sink);
  // Hands `record` to the sink, if any, on the calling thread, outside every lock of this object. A sink
  // that throws loses that record, nothing else: the request path must not fail because of telemetry.
  void log(const LogRecord& record);

  // Replaces the span sink (empty removes it), like set_log_sink. Without one no span or trace id is made.
  void set_span_sink(SpanSink sink);
  // The current span sink, or nullptr: a call takes it once, so its spans all go to one sink.
  std::shared_ptr<const SpanSink> span_sink() const;

 private:
  MetricsRegistry metrics_;
  mutable Mutex mu_;
  std::shared_ptr<const LogSink> log_sink_ GUARDED_BY(mu_);
  // Read on every call: an atomic shared_ptr would cost as much as the lock, so a flag skips both when unset.
  std::shared_ptr<const SpanSink> span_sink_ GUARDED_BY(mu_);
  std::atomic<bool> has_span_sink_{false};
};

}  // namespace humus::telemetry
