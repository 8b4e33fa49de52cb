#include "upstreams/readiness.h"

#include <nlohmann/json.hpp>

namespace humus::upstreams {

std::string readiness_json(const std::vector<ReadinessEntry>& entries) {
  bool degraded = false;
  nlohmann::json clients = nlohmann::json::array();
  for (const ReadinessEntry& e : entries) {
    const telemetry::BreakerView& b = e.breaker;
    degraded = degraded || b.state != breaker::State::kClosed;
    nlohmann::json c = nlohmann::json::object();
    if (!e.name.empty()) c["name"] = e.name;
    c["origin"] = b.origin;
    c["state"] = breaker::state_name(b.state);
    c["retry_after_ms"] = std::chrono::duration_cast<std::chrono::milliseconds>(b.retry_after).count();
    c["counts"] = {{"successes", b.counts.successes},
                   {"failures", b.counts.failures},
                   {"consecutive_successes", b.counts.consecutive_successes},
                   {"consecutive_failures", b.counts.consecutive_failures},
                   {"timed_out_probes", b.counts.timed_out_probes},
                   {"window_results", b.counts.window_results},
                   {"window_failures", b.counts.window_failures},
                   {"slow_results", b.counts.slow_results},
                   {"window_slow", b.counts.window_slow}};
    // A breaker shared by the processes of the host (docs/shared.md §22): how many share it now.
    if (b.processes > 0) c["processes"] = b.processes;
    // The bulkhead's limit now (docs/bulkhead.md §11): max_concurrent, or where an adaptive one has moved it.
    if (b.bulkhead_limit) c["bulkhead_limit"] = *b.bulkhead_limit;
    clients.push_back(std::move(c));
  }
  return nlohmann::json{{"status", degraded ? "degraded" : "ok"}, {"clients", std::move(clients)}}.dump();
}

}  // namespace humus::upstreams
