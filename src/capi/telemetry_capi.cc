// The C functions of the log sink, metrics and readiness sections of include/humus_http.h (docs/telemetry.md §13, docs/upstreams.md §15.2).
#include <chrono>
#include <cstddef>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "capi/breaker_policy_adapter.h"
#include "capi/client_capi.h"
#include "capi/guard.h"
#include "capi/log_record_v1.h"
#include "capi/sink_table.h"
#include "capi/text_out.h"
#include "telemetry/exposition.h"
#include "upstreams/readiness.h"

using humus::Code;
using humus::Status;
using humus::capi::bad_handle;
using humus::capi::guard;
using humus::capi::live;
using humus::capi::null_argument;
using humus::capi::report;

namespace {

using LogSinkTable = humus::capi::SinkTable<humus_log_sink>;

// A version 1 sink's record: the same values in the first ABI's layout (capi/log_record_v1.h).
humus::capi::LogRecordV1 as_v1(const humus_log_record& c) {
  humus::capi::LogRecordV1 v1{};
  v1.version = 1;
  v1.event = c.event;
  v1.message = c.message;
  v1.server_address = c.server_address;
  v1.server_port = c.server_port;
  v1.previous_state = c.previous_state;
  v1.new_state = c.new_state;
  // Version 1 of the counts is the prefix of the header's struct up to the members version 2 added.
  static_assert(sizeof(v1.counts) == offsetof(humus_breaker_counts, slow_results), "version 1's counts moved");
  std::memcpy(&v1.counts, c.counts, sizeof v1.counts);
  v1.counts.version = 1;
  v1.time_unix_ms = c.time_unix_ms;
  v1.upstream = c.upstream;
  return v1;
}

void deliver(const LogSinkTable& sink, const humus::telemetry::LogRecord& r) {
  const std::string event(r.event), message(r.message), address(r.server_address), upstream(r.upstream);
  const humus_breaker_counts counts = humus::capi::to_c_counts(r.counts);
  humus_log_record c{};
  c.version = HUMUS_LOG_RECORD_VERSION;
  c.event = event.c_str();
  c.message = message.c_str();
  c.server_address = address.c_str();
  c.server_port = r.server_port;
  c.previous_state = r.state_change ? static_cast<int32_t>(r.previous) : -1;
  c.new_state = r.state_change ? static_cast<int32_t>(r.next) : -1;
  c.counts = &counts;
  c.time_unix_ms = std::chrono::duration_cast<std::chrono::milliseconds>(r.time.time_since_epoch()).count();
  c.upstream = upstream.c_str();
  if (sink.table.version == 1) {
    const humus::capi::LogRecordV1 v1 = as_v1(c);
    // The sink was compiled against version 1's humus_log_record, which is this layout.
    sink.table.record(sink.table.user_data, reinterpret_cast<const humus_log_record*>(&v1));
    return;
  }
  sink.table.record(sink.table.user_data, &c);
}

}  // namespace

extern "C" {

HUMUS_API humus_status humus_runtime_set_log_sink(humus_runtime* rt, const humus_log_sink* sink,
                                                  humus_error** err) {
  return guard(err, [&]() -> humus_status {
    if (live(rt) == nullptr) return bad_handle("humus_runtime_set_log_sink", "rt", err);
    if (sink == nullptr) {
      rt->runtime.telemetry().set_log_sink(nullptr);
      return HUMUS_OK;
    }
    auto owned = humus::capi::adopt_sink(*sink, &humus_log_sink::record, "log sink", "record");
    if (!owned.ok()) return report(owned.status(), err);
    rt->runtime.telemetry().set_log_sink([owned = *owned](const humus::telemetry::LogRecord& r) { deliver(*owned, r); });
    return HUMUS_OK;
  });
}

HUMUS_API humus_status humus_runtime_metrics_prometheus(humus_runtime* rt, char** out, size_t* len,
                                                        humus_error** err) {
  return guard(err, [&]() -> humus_status {
    if (live(rt) == nullptr) return bad_handle("humus_runtime_metrics_prometheus", "rt", err);
    if (out == nullptr) return null_argument("humus_runtime_metrics_prometheus", "out", err);
    return humus::capi::text_out(humus::telemetry::to_prometheus(rt->runtime.telemetry().metrics().collect()), out, len);
  });
}

HUMUS_API humus_status humus_runtime_metrics_json(humus_runtime* rt, char** out, size_t* len,
                                                  humus_error** err) {
  return guard(err, [&]() -> humus_status {
    if (live(rt) == nullptr) return bad_handle("humus_runtime_metrics_json", "rt", err);
    if (out == nullptr) return null_argument("humus_runtime_metrics_json", "out", err);
    return humus::capi::text_out(humus::telemetry::to_json(rt->runtime.telemetry().metrics().collect()), out, len);
  });
}

HUMUS_API humus_status humus_runtime_metrics_collect(humus_runtime* rt, humus_metric_sink sink,
                                                     void* user_data, humus_error** err) {
  return guard(err, [&]() -> humus_status {
    namespace t = humus::telemetry;
    if (live(rt) == nullptr) return bad_handle("humus_runtime_metrics_collect", "rt", err);
    if (sink == nullptr) return null_argument("humus_runtime_metrics_collect", "sink", err);
    const t::Snapshot snap = rt->runtime.telemetry().metrics().collect();
    for (size_t i = 0; i < t::kInstrumentCount; ++i) {
      const t::Instrument& in = t::instrument(i);
      for (const t::OriginSeries& s : snap.origins) {
        humus_metric_point p{};
        p.version = HUMUS_METRIC_POINT_VERSION;
        p.name = in.name;
        p.unit = in.unit;
        p.server_address = s.address.c_str();
        p.server_port = s.port;
        auto deliver = [&]() -> humus_status {
          const humus_status st = sink(user_data, &p);
          if (st == HUMUS_OK) return HUMUS_OK;
          return report(Status(Code::kCallback, std::string("metric sink returned ") + humus_status_name(st) +
                                                    " at " + in.name),
                        err);
        };
        if (in.kind == t::InstrumentKind::kHistogram) {
          p.kind = HUMUS_METRIC_HISTOGRAM;
          p.bound_count = t::bounds_of(i).size();
          p.bounds = t::bounds_of(i).data();
          for (const t::AttemptSeries& series : s.attempts) {
            const t::HistogramData& h = t::histogram_of(series, i);
            p.count = h.count();
            p.sum = h.sum;
            p.bucket_counts = h.buckets.data();
            const std::vector<t::Attribute> attributes = t::attributes_of(series);
            std::vector<const char*> names, values;
            for (const t::Attribute& a : attributes) {
              names.push_back(a.name);
              values.push_back(a.value.c_str());
            }
            p.attribute_count = attributes.size();
            p.attribute_names = names.data();
            p.attribute_values = values.data();
            if (const humus_status st = deliver(); st != HUMUS_OK) return st;
          }
          continue;
        }
        p.kind = in.kind == t::InstrumentKind::kGauge ? HUMUS_METRIC_GAUGE : HUMUS_METRIC_COUNTER;
        p.attribute_name = in.attribute;
        p.attribute_count = 1;
        p.attribute_names = &p.attribute_name;
        p.attribute_values = &p.attribute_value;
        for (size_t j = 0; j < t::label_value_count(i); ++j) {
          p.attribute_value = t::label_value(i, j);
          p.value = t::labelled_count(s, i, j);
          if (const humus_status st = deliver(); st != HUMUS_OK) return st;
        }
      }
    }
    return HUMUS_OK;
  });
}

HUMUS_API humus_status humus_runtime_readiness_json(humus_runtime* rt, char** out, size_t* len,
                                                    humus_error** err) {
  return guard(err, [&]() -> humus_status {
    if (live(rt) == nullptr) return bad_handle("humus_runtime_readiness_json", "rt", err);
    if (out == nullptr) return null_argument("humus_runtime_readiness_json", "out", err);
    std::vector<humus::upstreams::ReadinessEntry> entries;
    for (humus::telemetry::BreakerView& b : rt->runtime.telemetry().metrics().breakers()) {
      entries.push_back({std::string(), std::move(b)});
    }
    return humus::capi::text_out(humus::upstreams::readiness_json(entries), out, len);
  });
}

}  // extern "C"
