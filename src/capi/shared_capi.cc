// The shared-state section of include/humus_http.h (docs/shared.md §22.5): the segments of this host, read and
// removed by tools (humus-http shared ls|show|reset).
#include <sys/stat.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "breaker/policy.h"
#include "capi/guard.h"
#include "capi/text_out.h"
#include "retry/budget.h"
#include "shared/segment.h"

using humus::capi::guard;
using humus::capi::null_argument;
using humus::capi::report;

namespace {

using Json = nlohmann::ordered_json;

// The segment file's size; 0 when it cannot be read (removed meanwhile).
uint64_t segment_size(const std::string& name) {
  struct stat st {};
  const std::string path = std::string("/dev/shm/") + humus::shared::kNamePrefix + name;
  return ::stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

uint32_t live_count(const humus::shared::Report& r) {
  uint32_t n = 0;
  for (const auto& p : r.processes) n += p.alive ? 1 : 0;
  return n;
}

Json report_json(const humus::shared::Report& r) {
  Json processes = Json::array();
  for (const auto& p : r.processes) {
    processes.push_back(Json{{"pid", p.id.pid}, {"clients", p.clients}, {"alive", p.alive}});
  }
  Json origins = Json::array();
  for (const auto& o : r.origins) {
    const auto& c = o.counts;
    origins.push_back(Json{
        {"origin", o.origin},
        {"state", humus::breaker::state_name(o.state)},
        {"generation", o.generation},
        {"counts",
         Json{{"successes", c.successes},
              {"failures", c.failures},
              {"consecutive_successes", c.consecutive_successes},
              {"consecutive_failures", c.consecutive_failures},
              {"timed_out_probes", c.timed_out_probes},
              {"window_results", c.window_results},
              {"window_failures", c.window_failures}}},
        {"probes_in_flight", o.probes_in_flight},
        {"budget", Json{{"policy", humus::retry::budget_policy_name(
                                       static_cast<humus::retry::BudgetPolicy>(o.budget_policy))},
                        {"tokens", o.budget_tokens}}},
        {"bulkhead", Json{{"in_flight", o.in_flight}, {"max_concurrent", o.max_concurrent}}}});
  }
  return Json{{"name", r.name},
              {"size", segment_size(r.name)},
              {"version", r.version},
              {"repairs", r.repairs},
              {"live_processes", live_count(r)},
              {"processes", std::move(processes)},
              {"origins", std::move(origins)}};
}

}  // namespace

extern "C" {

HUMUS_API humus_status humus_shared_list_json(char** out, size_t* len, humus_error** err) {
  return guard(err, [&]() -> humus_status {
    if (out == nullptr) return null_argument("humus_shared_list_json", "out", err);
    Json segments = Json::array();
    for (const std::string& name : humus::shared::list()) {
      Json entry{{"name", name}, {"size", segment_size(name)}};
      humus::Result<humus::shared::Report> r = humus::shared::inspect(name);
      if (r.ok()) {
        Json origins = Json::array();
        for (const auto& o : r->origins) origins.push_back(o.origin);
        entry["origins"] = std::move(origins);
        entry["live_processes"] = live_count(*r);
      } else {
        // Another layout version, or a file that is not a segment: listed, so that it can be reset.
        entry["error"] = r.status().message();
      }
      segments.push_back(std::move(entry));
    }
    return humus::capi::text_out(Json{{"segments", std::move(segments)}}.dump(), out, len);
  });
}

HUMUS_API humus_status humus_shared_show_json(const char* name, char** out, size_t* len, humus_error** err) {
  return guard(err, [&]() -> humus_status {
    if (name == nullptr) return null_argument("humus_shared_show_json", "name", err);
    if (out == nullptr) return null_argument("humus_shared_show_json", "out", err);
    humus::Result<humus::shared::Report> r = humus::shared::inspect(name);
    if (!r.ok()) return report(r.status(), err);
    return humus::capi::text_out(report_json(*r).dump(), out, len);
  });
}

HUMUS_API humus_status humus_shared_remove(const char* name, humus_error** err) {
  return guard(err, [&]() -> humus_status {
    if (name == nullptr) return null_argument("humus_shared_remove", "name", err);
    if (humus::Status st = humus::shared::remove(name); !st.ok()) return report(st, err);
    return HUMUS_OK;
  });
}

}  // extern "C"
