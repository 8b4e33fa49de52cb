#include "telemetry/exposition.h"

#include <charconv>
#include <cmath>
#include <nlohmann/json.hpp>
#include <vector>

namespace humus::telemetry {
namespace {

constexpr Instrument kInstruments[kInstrumentCount] = {
    {"http.client.request.duration", "s", InstrumentKind::kHistogram, "http_client_request_duration_seconds",
     "Duration of HTTP client requests (one per attempt).", nullptr},
    {"http.client.request.body.size", "By", InstrumentKind::kHistogram, "http_client_request_body_size_bytes",
     "Size of HTTP client request bodies (one per attempt).", nullptr},
    {"humus.circuit.state", "{breaker}", InstrumentKind::kGauge, "humus_circuit_state",
     "Circuit breakers in each state, read at collection.", "humus.circuit.state"},
    {"humus.circuit.transitions", "{transition}", InstrumentKind::kCounter, "humus_circuit_transitions_total",
     "Circuit breaker state changes, by the state entered.", "humus.circuit.state"},
    {"humus.circuit.calls", "{call}", InstrumentKind::kCounter, "humus_circuit_calls_total",
     "Attempts as the circuit breaker counted them, and attempts it rejected.", "humus.circuit.outcome"},
    {"humus.retry.decisions", "{decision}", InstrumentKind::kCounter, "humus_retry_decisions_total",
     "Retry decisions after attempts, by decision.", "humus.retry.decision"},
    {"humus.bulkhead.limit", "{call}", InstrumentKind::kGauge, "humus_bulkhead_limit",
     "Bulkhead limits of the live clients, summed by mode, read at collection.", "humus.bulkhead.mode"},
};

constexpr const char* kStateNames[kStates] = {"closed", "open", "half_open"};
constexpr const char* kOutcomeNames[kCallOutcomes] = {"success", "failure", "ignored", "rejected"};
constexpr const char* kDecisionNames[kDecisions] = {"done",      "again",   "throttled",
                                                    "exhausted", "expired", "stopped"};
constexpr const char* kBulkheadModeNames[kBulkheadModes] = {"fixed", "adaptive"};

void escape_label(std::string& out, std::string_view v) {
  for (const char c : v) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
}

std::string prom_name(const char* dotted) {
  std::string s(dotted);
  for (char& c : s) {
    if (c == '.') c = '_';
  }
  return s;
}

// server_address="…",server_port="…"
std::string origin_labels(const OriginSeries& s) {
  std::string out = "server_address=\"";
  escape_label(out, s.address);
  out += "\",server_port=\"" + std::to_string(s.port) + "\"";
  return out;
}

const char* type_name(InstrumentKind k) {
  switch (k) {
    case InstrumentKind::kHistogram:
      return "histogram";
    case InstrumentKind::kGauge:
      return "gauge";
    case InstrumentKind::kCounter:
      return "counter";
  }
  return "untyped";
}

// One series of a histogram: cumulative _bucket{le=…} lines up to +Inf, then _sum and _count.
void append_histogram(std::string& out, const char* name, const std::string& labels, const HistogramData& h,
                      Bounds bounds) {
  uint64_t cumulative = 0;
  for (size_t b = 0; b <= bounds.size(); ++b) {
    cumulative += h.buckets[b];
    const std::string le = b < bounds.size() ? format_double(bounds[b]) : "+Inf";
    out +=
        std::string(name) + "_bucket{" + labels + ",le=\"" + le + "\"} " + std::to_string(cumulative) + "\n";
  }
  out += std::string(name) + "_sum{" + labels + "} " + format_double(h.sum) + "\n";
  out += std::string(name) + "_count{" + labels + "} " + std::to_string(cumulative) + "\n";
}

}  // namespace

const Instrument& instrument(size_t i) { return kInstruments[i]; }

size_t label_value_count(size_t i) {
  switch (i) {
    case 2:
    case 3:
      return kStates;
    case 4:
      return kCallOutcomes;
    case 5:
      return kDecisions;
    case 6:
      return kBulkheadModes;
    default:
      return 0;
  }
}

const char* label_value(size_t i, size_t j) {
  switch (i) {
    case 2:
    case 3:
      return kStateNames[j];
    case 4:
      return kOutcomeNames[j];
    case 5:
      return kDecisionNames[j];
    case 6:
      return kBulkheadModeNames[j];
    default:
      return "";
  }
}

uint64_t labelled_count(const OriginSeries& s, size_t i, size_t j) {
  switch (i) {
    case 2:
      return s.breakers[j];
    case 3:
      return s.transitions[j];
    case 4:
      return s.calls[j];
    case 5:
      return s.decisions[j];
    case 6:
      return s.bulkhead_limits[j];
    default:
      return 0;
  }
}

const HistogramData& histogram_of(const AttemptSeries& s, size_t i) {
  return i == 0 ? s.duration : s.body_size;
}

std::vector<Attribute> attributes_of(const AttemptSeries& s) {
  if (s.key == kOverflowKey) return {{"otel.metric.overflow", "true", Attribute::Kind::kBool}};
  const AttemptAttributes a = AttemptAttributes::from_key(s.key);
  std::vector<Attribute> out;
  out.push_back({"http.request.method", a.method_name()});
  if (a.status != 0)
    out.push_back({"http.response.status_code", std::to_string(a.status), Attribute::Kind::kInt});
  if (std::string type = a.error_type(); !type.empty()) out.push_back({"error.type", std::move(type)});
  if (const char* protocol = a.protocol_name()) out.push_back({"network.protocol.version", protocol});
  return out;
}
Bounds bounds_of(size_t i) { return i == 0 ? Bounds(kDurationBounds) : Bounds(kSizeBounds); }

std::string format_double(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (std::isnan(v)) return "NaN";
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

std::string to_prometheus(const Snapshot& snapshot) {
  std::string out;
  out.reserve(4096);
  for (size_t i = 0; i < kInstrumentCount; ++i) {
    const Instrument& in = kInstruments[i];
    out += std::string("# HELP ") + in.prometheus_name + " " + in.help + "\n";
    out += std::string("# TYPE ") + in.prometheus_name + " " + type_name(in.kind) + "\n";
    for (const OriginSeries& s : snapshot.origins) {
      const std::string labels = origin_labels(s);
      if (in.kind == InstrumentKind::kHistogram) {
        for (const AttemptSeries& series : s.attempts) {
          std::string series_labels = labels;
          for (const Attribute& a : attributes_of(series)) {
            series_labels += "," + prom_name(a.name) + "=\"";
            escape_label(series_labels, a.value);
            series_labels += "\"";
          }
          append_histogram(out, in.prometheus_name, series_labels, histogram_of(series, i), bounds_of(i));
        }
        continue;
      }
      const std::string attribute = prom_name(in.attribute);
      for (size_t j = 0; j < label_value_count(i); ++j) {
        out += std::string(in.prometheus_name) + "{" + labels + "," + attribute + "=\"" + label_value(i, j) +
               "\"} " + std::to_string(labelled_count(s, i, j)) + "\n";
      }
    }
  }
  return out;
}

namespace {

nlohmann::json json_value(const Attribute& a) {
  switch (a.kind) {
    case Attribute::Kind::kInt:
      return std::stoi(a.value);
    case Attribute::Kind::kBool:
      return a.value == "true";
    case Attribute::Kind::kString:
      break;
  }
  return a.value;
}

}  // namespace

std::string to_json(const Snapshot& snapshot) {
  nlohmann::json metrics = nlohmann::json::array();
  for (size_t i = 0; i < kInstrumentCount; ++i) {
    const Instrument& in = kInstruments[i];
    nlohmann::json m = {{"name", in.name}, {"unit", in.unit}, {"type", type_name(in.kind)}};
    nlohmann::json points = nlohmann::json::array();
    if (in.kind == InstrumentKind::kHistogram) {
      const Bounds bounds = bounds_of(i);
      m["bounds"] = std::vector<double>(bounds.begin(), bounds.end());
    }
    for (const OriginSeries& s : snapshot.origins) {
      const nlohmann::json origin = {{"server.address", s.address}, {"server.port", s.port}};
      if (in.kind == InstrumentKind::kHistogram) {
        for (const AttemptSeries& series : s.attempts) {
          nlohmann::json attributes = origin;
          for (const Attribute& a : attributes_of(series)) attributes[a.name] = json_value(a);
          const HistogramData& h = histogram_of(series, i);
          const std::vector<uint64_t> counts(h.buckets.begin(), h.buckets.begin() + bounds_of(i).size() + 1);
          points.push_back({{"attributes", std::move(attributes)},
                            {"count", h.count()},
                            {"sum", h.sum},
                            {"bucket_counts", counts}});
        }
        continue;
      }
      for (size_t j = 0; j < label_value_count(i); ++j) {
        nlohmann::json attributes = origin;
        attributes[in.attribute] = label_value(i, j);
        points.push_back({{"attributes", std::move(attributes)}, {"value", labelled_count(s, i, j)}});
      }
    }
    m["points"] = std::move(points);
    metrics.push_back(std::move(m));
  }
  return nlohmann::json{{"metrics", std::move(metrics)}}.dump();
}

}  // namespace humus::telemetry
