// The metrics of docs/telemetry.md §13.2: per-client instruments updated on the request path with relaxed
// atomics (no lock, no allocation), and the runtime's registry that sums them by origin at collection. Every
// series has the origin's server.address and server.port; the two histograms also have the semantic
// conventions' attributes of the attempt (method, status code, error.type, protocol version), in a bounded
// table per client.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "breaker/breaker.h"
#include "bulkhead/bulkhead.h"
#include "common/clock.h"
#include "common/mutex.h"
#include "common/status.h"
#include "retry/decision.h"

namespace humus::telemetry {

// Explicit bucket boundaries. Durations: OpenTelemetry's advice for http.client.request.duration (seconds),
// which has no 0 bound (an attempt of no time, as on a virtual clock, is in le 0.005). Body sizes: the
// OpenTelemetry SDK's default boundaries (bytes), as no advice exists for them; their 0 bound counts the
// attempts without a body.
using Bounds = std::span<const double>;
inline constexpr std::array<double, 14> kDurationBounds = {0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25,
                                                           0.5,   0.75, 1,     2.5,  5,     7.5, 10};
inline constexpr std::array<double, 15> kSizeBounds = {0,   5,   10,   25,   50,   75,   100,  250,
                                                       500, 750, 1000, 2500, 5000, 7500, 10000};
// Room for the buckets of the histogram with the most bounds; the last one of each is (last bound, +Inf).
// A histogram with fewer bounds leaves the rest of its array at 0.
inline constexpr size_t kMaxBuckets = kSizeBounds.size() + 1;

// humus.circuit.calls' series: how an admitted attempt counted with the breaker (a breaker::Outcome, in its
// order), and a last one for the attempts the breaker rejected.
inline constexpr size_t kCallOutcomes = 4;
constexpr size_t call_series(breaker::Outcome o) { 
  return static_cast<size_t>(o) - static_cast<size_t>(breaker::Outcome::kSuccess);
}
inline constexpr size_t kRejectedSeries = kCallOutcomes - 1;
inline constexpr size_t kDecisions = 6;  // retry::Decision kDone..kStopped
inline constexpr size_t kStates = 3;     // breaker::State kClosed, kOpen, kHalfOpen
inline constexpr size_t kBulkheadModes = 2;  // fixed, adaptive

// A histogram's values at one collection: per-bucket (not cumulative) counts against its Bounds, the first
// bounds.size() + 1 of `buckets` (the rest stay 0).
struct HistogramData {
  std::array<uint64_t, kMaxBuckets> buckets{};
  double sum = 0;
  uint64_t count() const;
  void add(const HistogramData& other);
};

// A histogram written by many threads at once. Each field is updated with relaxed atomics: a reader may see a
// sample in a bucket before its sum (the snapshot is approximate while writes race it, never torn).
class Histogram {
 public:
  explicit Histogram(Bounds bounds) : bounds_(bounds) {}  // at most kMaxBuckets - 1 bounds
  void record(double value);
  HistogramData read() const;

 private:
  const Bounds bounds_;
  std::array<std::atomic<uint64_t>, kMaxBuckets> buckets_{};
  std::atomic<double> sum_{0};
};

// The attributes of one attempt's histogram samples, besides the origin's (OpenTelemetry's semantic
// conventions for HTTP client metrics). Each has few values, so the series stay few: http.request.method is
// one of the methods RFC 9110 and RFC 5789 name or "_OTHER"; an attempt that got no answer has no status code
// and no protocol version.
struct AttemptAttributes {
  uint8_t method = 0;    // index into the known methods, the last standing for "_OTHER"
  uint16_t status = 0;   // http.response.status_code, 0: none
  uint16_t error = 0;    // the attempt's Code when it got no answer (error.type), 0: answered
  uint8_t protocol = 0;  // network.protocol.version: 0 none, then "1.0", "1.1", "2", "3"

  static AttemptAttributes of(std::string_view method, int status, std::string_view protocol, Code error);
  // One number per distinct set, never 0 (the table's empty slot), and back.
  uint64_t key() const;
  static AttemptAttributes from_key(uint64_t key);

  const char* method_name() const;    // "GET", ..., "_OTHER"
  const char* protocol_name() const;  // "1.1", or nullptr for none
  // error.type as the spans have it: the lowercase status name ("timeout") for an attempt without an answer,
  // the status code ("503") for an answer of 400 or more, empty otherwise.
  std::string error_type() const;
};

// At most this many attribute sets per client; an attempt of a set beyond them is counted in the overflow
// series (attribute otel.metric.overflow=true, as OpenTelemetry's SDKs do at their cardinality limit).
inline constexpr size_t kAttemptSeriesPerClient = 64;
// The key of the overflow series: no AttemptAttributes::key() is this.
inline constexpr uint64_t kOverflowKey = 1;

// One attribute set's histograms at a collection.
struct AttemptSeries {
  uint64_t key = 0;         // AttemptAttributes::key(), or kOverflowKey
  HistogramData duration;   // http.client.request.duration, seconds
  HistogramData body_size;  // http.client.request.body.size, bytes
};

// Everything one origin's series hold at a collection.
struct OriginSeries {
  std::string address;                           // server.address: the origin's host
  int port = 0;                                  // server.port
  HistogramData duration;                        // http.client.request.duration, seconds: every attempt
  HistogramData body_size;                       // http.client.request.body.size, bytes: every attempt
  std::vector<AttemptSeries> attempts;           // the same by attribute set, sorted by key
  std::array<uint64_t, kStates> breakers{};      // humus.circuit.state: live breakers per state
  std::array<uint64_t, kStates> transitions{};   // humus.circuit.transitions by the state entered
  std::array<uint64_t, kCallOutcomes> calls{};   // humus.circuit.calls by outcome
  std::array<uint64_t, kDecisions> decisions{};  // humus.retry.decisions by decision
  // humus.bulkhead.limit by humus.bulkhead.mode (fixed, adaptive): the live clients' limits, summed.
  std::array<uint64_t, kBulkheadModes> bulkhead_limits{};
};

// One collection: an entry per origin, sorted by address then port.
struct Snapshot {
  std::vector<OriginSeries> origins;
};

// One client's instruments. Every recording member is thread-safe and lock-free; only a client's first
// attempt allocates (its table of attribute sets, about 20 KiB, which a client that never calls does not
// hold), every later one is allocation-free.
class ClientMetrics {
 public:
  ClientMetrics(std::string address, int port) : address_(std::move(address)), port_(port) {}
  ~ClientMetrics();
  ClientMetrics(const ClientMetrics&) = delete;
  ClientMetrics& operator=(const ClientMetrics&) = delete;

  // One attempt that reached the transport: how long it took, the request body it carried, and what it was.
  void attempt(Duration took, size_t body_bytes, const AttemptAttributes& attributes) {
    Series& s = series_for(attributes.key());
    s.duration.record(std::chrono::duration<double>(took).count());
    s.body_size.record(static_cast<double>(body_bytes));
  }
  // Relaxed: each counter is independent; collection needs no ordering against other memory.
  void outcome(breaker::Outcome o) { calls_[call_series(o)].fetch_add(1, std::memory_order_relaxed); }
  void rejected() { calls_[kRejectedSeries].fetch_add(1, std::memory_order_relaxed); }
  void decision(retry::Decision d) {
    decisions_[static_cast<size_t>(d)].fetch_add(1, std::memory_order_relaxed);
  }
  void transition(breaker::State to) {
    transitions_[static_cast<size_t>(to)].fetch_add(1, std::memory_order_relaxed);
  }

  const std::string& address() const { return address_; }
  int port() const { return port_; }
  // Adds this client's counts to `into` (whose address and port the caller has set).
  void read_into(OriginSeries& into) const;

 private:
  // A slot of the attribute-set table: its key is claimed once, by compare-and-swap, and never changes again.
  struct Series {
    std::atomic<uint64_t> key{0};  // 0: free
    Histogram duration{kDurationBounds};
    Histogram body_size{kSizeBounds};
  };
  using SeriesTable = std::array<Series, kAttemptSeriesPerClient>;
  // The slot of `key` (an open-addressing table, probed linearly), claiming a free one; the overflow series
  // when every slot holds another key (or the table could not be allocated). Lock-free.
  Series& series_for(uint64_t key);
  // The table, made by the first attempt (nullptr: out of memory).
  SeriesTable* table();

  const std::string address_;
  const int port_;
  std::atomic<SeriesTable*> table_{nullptr};  // published once with release, never replaced
  Series overflow_;
  std::array<std::atomic<uint64_t>, kCallOutcomes> calls_{};
  std::array<std::atomic<uint64_t>, kDecisions> decisions_{};
  std::array<std::atomic<uint64_t>, kStates> transitions_{};
};

// What readiness (docs/upstreams.md §15.2) reports of one client's breaker, and its bulkhead's limit.
struct BreakerView {
  std::string origin;  // "https://payments:8443"
  breaker::State state = breaker::State::kClosed;
  breaker::Counts counts;
  Duration retry_after{};
  uint32_t processes = 0;  // live processes sharing the breaker (docs/shared.md §22); 0: not shared
  std::optional<uint32_t> bulkhead_limit;  // docs/bulkhead.md §11: the limit now; none without a bulkhead
};

// Reads `breaker` now: counts first, since reading them advances a due open → half-open, so state and counts
// agree. With `bulkhead`, its limit too.
BreakerView view_of(breaker::Breaker& breaker, std::string origin, const bulkhead::Bulkhead* bulkhead = nullptr);

// The runtime's list of live clients. Counters of a client that goes away are kept under its origin, so
// counters never go backwards while the runtime lives. Thread-safe.
//
// The lock is recursive and held while breakers are read: reading a breaker's state may deliver its lazy
// open → half-open transition, whose log record reaches the user's log sink on this thread, and that sink may
// collect metrics again.
class MetricsRegistry {
 public:
  // `bulkhead` (may be null) gives humus.bulkhead.limit and readiness its limit; it must outlive the entry.
  void add(const ClientMetrics& metrics, breaker::Breaker& breaker, std::string origin,
           const bulkhead::Bulkhead* bulkhead = nullptr);
  // Forgets the client, keeping its counts; it must not record anything afterwards.
  void remove(const ClientMetrics& metrics);

  Snapshot collect();
  // Every live client's breaker, in the order the clients were made.
  std::vector<BreakerView> breakers();

 private:
  struct Entry {
    const ClientMetrics* metrics;
    breaker::Breaker* breaker;
    std::string origin;
    const bulkhead::Bulkhead* bulkhead;
  };
  RecursiveMutex mu_;
  std::vector<Entry> live_ GUARDED_BY(mu_);
  std::vector<OriginSeries> retired_ GUARDED_BY(mu_);  // counts of clients gone, per origin
};

}  // namespace humus::telemetry
