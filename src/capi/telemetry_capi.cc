// The C functions of the log sink, metrics and readiness sections of include/humus_http.h (docs/telemetry.md §13, docs/upstreams.md §15.2).
#include <chrono>
#include <cstring>
#include <memory>
#include <string>

#include "breaker/policy.h"
#include "capi/client_capi.h"
#include "capi/guard.h"
#include "capi/text_out.h"
#include "capi/sink_table.h"
#include "telemetry/exposition.h"
#include "upstreams/readiness.h"

using humus::Code;
using humus::Status;
using humus::capi::guard;
using humus::capi::null_argument;
using humus::capi::report;

namespace {

using LogSinkTable = humus::capi::SinkTable<humus_log_sink>;

}  // namespace

extern "C" {

HUMUS_API humus_status humus_runtime_set_log_sink(humus_runtime* rt, const humus_log_sink* sink,
                                                  humus_error** err) {
  return guard(err, [&]() -> humus_status {
    if (rt == nullptr) return null_argument("humus_runtime_set_log_sink", "rt", err);
    if (sink == nullptr) {
      rt->runtime.telemetry().set_log_sink(nullptr);
      return HUMUS_OK;
    }
    if (Status st = humus::capi::check_sink_table(sink->version, HUMUS_LOG_SINK_VERSION, sink->record != nullptr,
                                                  "log sink", "record");
        !st.ok()) {
      return report(st, err);
    }
    auto owned = std::make_shared<LogSinkTable>(*sink);
    rt->runtime.telemetry().set_log_sink([owned](const humus::telemetry::LogRecord& r) {
      const std::string event(r.event), message(r.message), address(r.server_address), upstream(r.upstream);
      humus_log_record c{};
      c.version = HUMUS_LOG_RECORD_VERSION;
      c.event = event.c_str();
      c.message = message.c_str();
      c.server_address = address.c_str();
      c.server_port = r.server_port;
      c.previous_state = r.state_change ? static_cast<int32_t>(r.previous) : -1;
      c.new_state = r.state_change ? static_cast<int32_t>(r.next) : -1;
      c.counts = humus::breaker::to_c_counts(r.counts);
      c.time_unix_ms =
          std::chrono::duration_cast<std::chrono::milliseconds>(r.time.time_since_epoch()).count();
      c.upstream = upstream.c_str();
      owned->table.record(owned->table.user_data, &c);
    });
    return HUMUS_OK;
  });
}

HUMUS_API humus_status humus_runtime_metrics_prometheus(humus_runtime* rt, char** out, size_t* len,
                                                        humus_error** err) {
  return guard(err, [&]() -> humus_status {
    if (rt == nullptr) return null_argument("humus_runtime_metrics_prometheus", "rt", err);
    if (out == nullptr) return null_argument("humus_runtime_metrics_prometheus", "out", err);
    return humus::capi::text_out(humus::telemetry::to_prometheus(rt->runtime.telemetry().metrics().collect()), out, len);
  });
}

HUMUS_API humus_status humus_runtime_metrics_json(humus_runtime* rt, char** out, size_t* len,
                                                  humus_error** err) {
  return guard(err, [&]() -> humus_status {
    if (rt == nullptr) return null_argument("humus_runtime_metrics_json", "rt", err);
    if (out == nullptr) return null_argument("humus_runtime_metrics_json", "out", err);
    return humus::capi::text_out(humus::telemetry::to_json(rt->runtime.telemetry().metrics().collect()), out, len);
  });
}

HUMUS_API humus_status humus_runtime_metrics_collect(humus_runtime* rt, humus_metric_sink sink,
                                                     void* user_data, humus_error** err) {
  return guard(err, [&]() -> humus_status {
    namespace t = humus::telemetry;
    if (rt == nullptr) return null_argument("humus_runtime_metrics_collect", "rt", err);
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
          const t::HistogramData& h = t::histogram_of(s, i);
          p.kind = HUMUS_METRIC_HISTOGRAM;
          p.count = h.count();
          p.sum = h.sum;
          p.bound_count = t::bounds_of(i).size();
          p.bounds = t::bounds_of(i).data();
          p.bucket_counts = h.buckets.data();
          if (const humus_status st = deliver(); st != HUMUS_OK) return st;
          continue;
        }
        p.kind = in.kind == t::InstrumentKind::kGauge ? HUMUS_METRIC_GAUGE : HUMUS_METRIC_COUNTER;
        p.attribute_name = in.attribute;
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
    if (rt == nullptr) return null_argument("humus_runtime_readiness_json", "rt", err);
    if (out == nullptr) return null_argument("humus_runtime_readiness_json", "out", err);
    std::vector<humus::upstreams::ReadinessEntry> entries;
    for (humus::telemetry::BreakerView& b : rt->runtime.telemetry().metrics().breakers()) {
      entries.push_back({std::string(), std::move(b)});
    }
    return humus::capi::text_out(humus::upstreams::readiness_json(entries), out, len);
  });
}

}  // extern "C"
