#include "telemetry/metrics.h"

#include <algorithm>
#include <new>
#include <tuple>

#include "telemetry/call_trace.h"

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

namespace {

// http.request.method's known values (the semantic conventions': RFC 9110's methods and PATCH), and "_OTHER".
constexpr std::array<const char*, 10> kMethods = {"GET",     "HEAD",    "POST",  "PUT",   "DELETE",
                                                  "CONNECT", "OPTIONS", "TRACE", "PATCH", "_OTHER"};
constexpr uint8_t kOtherMethod = kMethods.size() - 1;
constexpr std::array<const char*, 5> kProtocols = {nullptr, "1.0", "1.1", "2", "3"};

// Key layout: bit 63 set (so no key is 0 or kOverflowKey) | method << 40 | status << 24 | error << 8 |
// protocol.
constexpr uint64_t kKeyMark = uint64_t{1} << 63;

}  // namespace

AttemptAttributes AttemptAttributes::of(std::string_view method, int status, std::string_view protocol,
                                        Code error) {
  AttemptAttributes a;
  a.method = kOtherMethod;
  for (uint8_t i = 0; i < kOtherMethod && a.method == kOtherMethod; ++i) {
    if (method == kMethods[i]) a.method = i;
  }
  if (error != Code::kOk) {
    a.error = static_cast<uint16_t>(error);
    return a;  // no answer: no status code, no protocol version
  }
  a.status = status > 0 && status < 1000 ? static_cast<uint16_t>(status) : 0;
  for (uint8_t i = 1; i < kProtocols.size() && a.protocol == 0; ++i) {
    if (protocol == kProtocols[i]) a.protocol = i;
  }
  return a;
}

uint64_t AttemptAttributes::key() const {
  return kKeyMark | uint64_t{method} << 40 | uint64_t{status} << 24 | uint64_t{error} << 8 | protocol;
}

AttemptAttributes AttemptAttributes::from_key(uint64_t key) {
  AttemptAttributes a;
  a.method = static_cast<uint8_t>(std::min<uint64_t>((key >> 40) & 0xff, kOtherMethod));
  a.status = static_cast<uint16_t>((key >> 24) & 0xffff);
  a.error = static_cast<uint16_t>((key >> 8) & 0xffff);
  a.protocol = static_cast<uint8_t>(std::min<uint64_t>(key & 0xff, kProtocols.size() - 1));
  return a;
}

const char* AttemptAttributes::method_name() const {
  return kMethods[std::min<size_t>(method, kOtherMethod)];
}

const char* AttemptAttributes::protocol_name() const {
  return kProtocols[std::min<size_t>(protocol, kProtocols.size() - 1)];
}

std::string AttemptAttributes::error_type() const {
  return attempt_error_type(static_cast<Code>(error), status);
}

ClientMetrics::~ClientMetrics() { delete table_.load(std::memory_order_acquire); }

ClientMetrics::SeriesTable* ClientMetrics::table() {
  SeriesTable* table = table_.load(std::memory_order_acquire);
  if (table != nullptr) return table;
  auto* fresh = new (std::nothrow) SeriesTable();
  if (fresh == nullptr) return nullptr;
  // Two first attempts at once: one table is published, the other thread frees its own and takes that one.
  if (table_.compare_exchange_strong(table, fresh, std::memory_order_acq_rel, std::memory_order_acquire)) {
    return fresh;
  }
  delete fresh;
  return table;
}

ClientMetrics::Series& ClientMetrics::series_for(uint64_t key) {
  SeriesTable* table = this->table();
  if (table == nullptr) return overflow_;
  SeriesTable& series = *table;
  // Fibonacci hashing spreads keys that differ only in low fields (the status code) over the table.
  constexpr size_t kMask = kAttemptSeriesPerClient - 1;
  static_assert((kAttemptSeriesPerClient & kMask) == 0, "the table's size is a power of two");
  size_t i = static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> 32) & kMask;
  for (size_t probe = 0; probe < kAttemptSeriesPerClient; ++probe, i = (i + 1) & kMask) {
    // Relaxed: a slot's histograms exist from the start, so claiming its key publishes nothing else.
    uint64_t seen = series[i].key.load(std::memory_order_relaxed);
    if (seen == 0 && series[i].key.compare_exchange_strong(seen, key, std::memory_order_relaxed)) {
      return series[i];
    }
    if (seen == key) return series[i];  // ours, or claimed for our key by another thread just now
  }
  return overflow_;
}

void ClientMetrics::read_into(OriginSeries& into) const {
  auto add = [&into](uint64_t key, const Series& s) {
    auto it = std::lower_bound(into.attempts.begin(), into.attempts.end(), key,
                               [](const AttemptSeries& a, uint64_t k) { return a.key < k; });
    if (it == into.attempts.end() || it->key != key)
      it = into.attempts.insert(it, AttemptSeries{key, {}, {}});
    const HistogramData duration = s.duration.read();
    const HistogramData body_size = s.body_size.read();
    it->duration.add(duration);
    it->body_size.add(body_size);
    into.duration.add(duration);
    into.body_size.add(body_size);
  };
  if (const SeriesTable* table = table_.load(std::memory_order_acquire); table != nullptr) {
    for (const Series& s : *table) {
      const uint64_t key = s.key.load(std::memory_order_relaxed);
      if (key != 0) add(key, s);
    }
  }
  if (overflow_.duration.read().count() != 0) add(kOverflowKey, overflow_);
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

void MetricsRegistry::add(const ClientMetrics& metrics, breaker::Breaker& breaker, std::string origin,
                          const bulkhead::Bulkhead* bulkhead) {
  MutexLock lock(mu_);
  live_.push_back(Entry{&metrics, &breaker, std::move(origin), bulkhead});
}

void MetricsRegistry::remove(const ClientMetrics& metrics) {
  MutexLock lock(mu_);
  auto it = std::find_if(live_.begin(), live_.end(), [&](const Entry& e) { return e.metrics == &metrics; });
  if (it == live_.end()) return;
  metrics.read_into(series_for(retired_, metrics.address(), metrics.port()));
  live_.erase(it);
}

Snapshot MetricsRegistry::collect() {
  Snapshot snap;
  MutexLock lock(mu_);
  snap.origins = retired_;
  for (OriginSeries& s : snap.origins) s.breakers = {};  // a gone client has no breaker
  // Indexing by position: a log sink reached from a breaker read may run a nested collect on this thread.
  for (size_t i = 0; i < live_.size(); ++i) {
    // Copied out: a sink reached from state() could add a client and move live_'s elements.
    const ClientMetrics* metrics = live_[i].metrics;
    breaker::Breaker* breaker = live_[i].breaker;
    const bulkhead::Bulkhead* bulkhead = live_[i].bulkhead;
    // Read at collection (lazy open → half-open happens here); before the counters, so a transition this
    // read causes is in the counts too.
    const breaker::State state = breaker->state();
    OriginSeries& s = series_for(snap.origins, metrics->address(), metrics->port());
    ++s.breakers[static_cast<size_t>(state)];
    if (bulkhead != nullptr) s.bulkhead_limits[bulkhead->adaptive() ? 1 : 0] += bulkhead->limit();
    metrics->read_into(s);
  }
  std::sort(snap.origins.begin(), snap.origins.end(), [](const OriginSeries& a, const OriginSeries& b) {
    return std::tie(a.address, a.port) < std::tie(b.address, b.port);
  });
  return snap;
}

std::vector<BreakerView> MetricsRegistry::breakers() {
  std::vector<BreakerView> out;
  MutexLock lock(mu_);
  out.reserve(live_.size());
  for (const Entry& e : live_) out.push_back(view_of(*e.breaker, e.origin, e.bulkhead));
  return out;
}

BreakerView view_of(breaker::Breaker& breaker, std::string origin, const bulkhead::Bulkhead* bulkhead) {
  BreakerView v;
  v.origin = std::move(origin);
  v.counts = breaker.counts();
  v.state = v.counts.state;
  v.retry_after = breaker.retry_after();
  v.processes = breaker.processes();
  if (bulkhead != nullptr) v.bulkhead_limit = bulkhead->limit();
  return v;
}

}  // namespace humus::telemetry
