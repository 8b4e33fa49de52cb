#include "telemetry/metrics.h"

#include <algorithm>
#include <tuple>

namespace humus::telemetry {

uint64_t HistogramData::count() const {
  uint64_t n = 0;
  for (const uint64_t b : buckets) n += b;
  return n;
}

void HistogramData::add(const HistogramData& other) {
  for (size_t i = 0; i < kMaxBuckets; ++i) buckets[i] += other.buckets[i];
  sum += other.sum;
}

void Histogram::record(double value) {
  // Bucket i holds (bound[i-1], bound[i]], as Prometheus' "le" and OpenTelemetry's explicit buckets.
  size_t i = 0;
  while (i < bounds_.size() && value > bounds_[i]) ++i;
  // Relaxed: a sample's bucket and sum are independent counters; readers want totals, not ordering.
  buckets_[i].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(value, std::memory_order_relaxed);
}

HistogramData Histogram::read() const {
  HistogramData d;
  for (size_t i = 0; i < kMaxBuckets; ++i) d.buckets[i] = buckets_[i].load(std::memory_order_relaxed);
  d.sum = sum_.load(std::memory_order_relaxed);
  return d;
}

void ClientMetrics::read_into(OriginSeries& into) const {
  into.duration.add(duration_.read());
  into.body_size.add(body_size_.read());
  for (size_t i = 0; i < kCallOutcomes; ++i) into.calls[i] += calls_[i].load(std::memory_order_relaxed);
  for (size_t i = 0; i < kDecisions; ++i) into.decisions[i] += decisions_[i].load(std::memory_order_relaxed);
  for (size_t i = 0; i < kStates; ++i) into.transitions[i] += transitions_[i].load(std::memory_order_relaxed);
}

namespace {

OriginSeries& series_for(std::vector<OriginSeries>& all, const std::string& address, int port) {
  for (OriginSeries& s : all) {
    if (s.address == address && s.port == port) return s;
  }
  OriginSeries& s = all.emplace_back();
  s.address = address;
  s.port = port;
  return s;
}

}  // namespace

void MetricsRegistry::add(const ClientMetrics& metrics, breaker::Breaker& breaker, std::string origin) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  live_.push_back(Entry{&metrics, &breaker, std::move(origin)});
}

void MetricsRegistry::remove(const ClientMetrics& metrics) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  auto it = std::find_if(live_.begin(), live_.end(), [&](const Entry& e) { return e.metrics == &metrics; });
  if (it == live_.end()) return;
  metrics.read_into(series_for(retired_, metrics.address(), metrics.port()));
  live_.erase(it);
}

Snapshot MetricsRegistry::collect() {
  Snapshot snap;
  std::lock_guard<std::recursive_mutex> lock(mu_);
  snap.origins = retired_;
  for (OriginSeries& s : snap.origins) s.breakers = {};  // a gone client has no breaker
  // Indexing by position: a log sink reached from a breaker read may run a nested collect on this thread.
  for (size_t i = 0; i < live_.size(); ++i) {
    // Copied out: a sink reached from state() could add a client and move live_'s elements.
    const ClientMetrics* metrics = live_[i].metrics;
    breaker::Breaker* breaker = live_[i].breaker;
    // Read at collection (lazy open → half-open happens here); before the counters, so a transition this
    // read causes is in the counts too.
    const breaker::State state = breaker->state();
    OriginSeries& s = series_for(snap.origins, metrics->address(), metrics->port());
    ++s.breakers[static_cast<size_t>(state)];
    metrics->read_into(s);
  }
  std::sort(snap.origins.begin(), snap.origins.end(), [](const OriginSeries& a, const OriginSeries& b) {
    return std::tie(a.address, a.port) < std::tie(b.address, b.port);
  });
  return snap;
}

std::vector<BreakerView> MetricsRegistry::breakers() {
  std::vector<BreakerView> out;
  std::lock_guard<std::recursive_mutex> lock(mu_);
  out.reserve(live_.size());
  for (const Entry& e : live_) out.push_back(view_of(*e.breaker, e.origin));
  return out;
}

BreakerView view_of(breaker::Breaker& breaker, std::string origin) {
  BreakerView v;
  v.origin = std::move(origin);
  v.counts = breaker.counts();
  v.state = v.counts.state;
  v.retry_after = breaker.retry_after();
  return v;
}

}  // namespace humus::telemetry
