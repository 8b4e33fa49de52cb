// A metrics Snapshot as the Prometheus text exposition format 0.0.4 and as JSON (docs/telemetry.md §13.2), and the list
// of instruments both are made from.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "telemetry/metrics.h"

namespace humus::telemetry {

enum class InstrumentKind { kHistogram, kGauge, kCounter };

// One instrument of docs/telemetry.md §13.2 with its OpenTelemetry name and unit and its Prometheus name.
struct Instrument {
  const char* name;  // "humus.circuit.calls"
  const char* unit;  // "s", "By", "{breaker}", ...
  InstrumentKind kind;
  const char* prometheus_name;  // "humus_circuit_calls_total"
  const char* help;
  const char* attribute;  // the attribute besides server.address/port ("humus.circuit.state"), or null
};

inline constexpr size_t kInstrumentCount = 7;
const Instrument& instrument(size_t i);  // in the order docs/telemetry.md §13.2 lists them

// Each labelled value of instrument `i` (gauge or counter) for one origin: how many, and the i-th label
// value and count. Histograms have none.
size_t label_value_count(size_t instrument);
const char* label_value(size_t instrument, size_t j);
uint64_t labelled_count(const OriginSeries& s, size_t instrument, size_t j);
const HistogramData& histogram_of(const AttemptSeries& s, size_t instrument);
Bounds bounds_of(size_t instrument);  // histograms only

// An attribute of a histogram's series besides server.address and server.port, with its value as text.
// JSON writes `kind` as OpenTelemetry types it: http.response.status_code an int, otel.metric.overflow a
// bool.
struct Attribute {
  enum class Kind { kString, kInt, kBool };
  const char* name;  // "http.request.method", ...
  std::string value;
  Kind kind = Kind::kString;
};
// In this order, those the attempts had: http.request.method, http.response.status_code, error.type,
// network.protocol.version; for the overflow series only otel.metric.overflow = true.
std::vector<Attribute> attributes_of(const AttemptSeries& s);

// Text format 0.0.4: # HELP and # TYPE per family; histograms as cumulative _bucket{le=…} with +Inf, _sum
// and _count, one series per attribute set an attempt had (attribute names with '_' for '.'); label values
// escaped (\\, \", \n); every labelled value of a counter or gauge present, zeros included.
std::string to_prometheus(const Snapshot& snapshot);

// {"metrics": [{"name", "unit", "type": "histogram"|"gauge"|"counter", ["bounds": [...]], "points": [
//   {"attributes": {"server.address": …, "server.port": n, [attribute: value]...},
//    "value": n | "count": n, "sum": x, "bucket_counts": [per bucket, not cumulative; bounds.size()+1]}]}]}
std::string to_json(const Snapshot& snapshot);

// Shortest text that reads back as the same double ("0.005", "10", "+Inf").
std::string format_double(double v);

}  // namespace humus::telemetry
