// The upstreams section of include/humus_http.h (docs/upstreams.md §15): clients by name from one JSON document.
#include <memory>
#include <string>
#include <vector>

#include "capi/client_capi.h"
#include "capi/guard.h"
#include "capi/plugin_entry.h"
#include "capi/text_out.h"
#include "upstreams/readiness.h"
#include "upstreams/registry.h"

using humus::capi::guard;
using humus::capi::null_argument;
using humus::capi::report;

using humus::capi::bad_handle;
using humus::capi::live;
using humus::capi::publish;
using humus::capi::retire;

struct humus_upstreams {
  static constexpr humus::capi::Magic kMagic = humus::capi::Magic::kUpstreams;
  humus::capi::Magic magic = kMagic;
  std::vector<std::string> names;       // sorted
  std::vector<humus_client*> clients;   // parallel to names; owned (lent to callers), freed by humus_upstreams_free
};

extern "C" {

HUMUS_API humus_status humus_upstreams_from_json(humus_runtime* rt, const char* json, size_t len,
                                                 humus_upstreams** out, humus_error** err) {
  return guard(err, [&]() -> humus_status {
    if (live(rt) == nullptr) return bad_handle("humus_upstreams_from_json", "rt", err);
    if (json == nullptr && len > 0) return null_argument("humus_upstreams_from_json", "json", err);
    if (out == nullptr) return null_argument("humus_upstreams_from_json", "out", err);
    humus::capi::install_plugin_entry_points();  // an upstream's settings may name a plugin
    humus::Result<std::vector<humus::upstreams::Upstream>> built = humus::upstreams::build_upstreams(
        rt->runtime, std::string_view(json == nullptr ? "" : json, len), humus::upstreams::process_environment());
    if (!built.ok()) return report(built.status(), err);
    auto registry = std::make_unique<humus_upstreams>();
    std::vector<humus::upstreams::Upstream> upstreams = std::move(built).value();
    for (humus::upstreams::Upstream& u : upstreams) {
      registry->names.push_back(std::move(u.name));
      auto client = std::make_unique<humus_client>();
      client->client = std::move(u.client);
      client->lent = true;
      registry->clients.push_back(publish(client.release()));
    }
    *out = publish(registry.release());
    return HUMUS_OK;
  });
}

HUMUS_API void humus_upstreams_free(humus_upstreams* u) {
  if (!retire(u)) return;
  for (humus_client* c : u->clients) {
    c->lent = false;  // the registry's own free: humus_client_free takes it now
    humus_client_free(c);
  }
  delete u;
}

HUMUS_API humus_status humus_upstreams_client(humus_upstreams* u, const char* name, humus_client** out,
                                              humus_error** err) {
  return guard(err, [&]() -> humus_status {
    if (live(u) == nullptr) return bad_handle("humus_upstreams_client", "u", err);
    if (name == nullptr) return null_argument("humus_upstreams_client", "name", err);
    if (out == nullptr) return null_argument("humus_upstreams_client", "out", err);
    for (size_t i = 0; i < u->names.size(); ++i) {
      if (u->names[i] == name) {
        *out = u->clients[i];
        return HUMUS_OK;
      }
    }
    return report(humus::upstreams::no_such_upstream(name, u->names), err);
  });
}

HUMUS_API size_t humus_upstreams_count(const humus_upstreams* u) { return live(u) == nullptr ? 0 : u->names.size(); }

HUMUS_API const char* humus_upstreams_name(const humus_upstreams* u, size_t i) {
  return live(u) == nullptr || i >= u->names.size() ? nullptr : u->names[i].c_str();
}

HUMUS_API humus_status humus_upstreams_readiness_json(humus_upstreams* u, char** out, size_t* len,
                                                      humus_error** err) {
  return guard(err, [&]() -> humus_status {
    if (live(u) == nullptr) return bad_handle("humus_upstreams_readiness_json", "u", err);
    if (out == nullptr) return null_argument("humus_upstreams_readiness_json", "out", err);
    std::vector<humus::upstreams::ReadinessEntry> entries;
    for (size_t i = 0; i < u->names.size(); ++i) {
      humus::client::Client& c = *u->clients[i]->client;
      entries.push_back({u->names[i], humus::telemetry::view_of(c.breaker(), c.origin().to_string(), &c.bulkhead())});
    }
    return humus::capi::text_out(humus::upstreams::readiness_json(entries), out, len);
  });
}

}  // extern "C"
