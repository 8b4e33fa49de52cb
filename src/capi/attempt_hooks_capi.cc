// The attempt-hooks section of the C ABI: what a `before` hook can read and change of an attempt's request,
// and the setters of a hooks table on settings and on a request.
//
// Accessors given a NULL request — or one kept past its hook's call, or a foreign pointer — return a value
// that reads as "nothing": "" for the method and URL, NULL for a header, 0 for numbers.
#include <memory>
#include <string>

#include "capi/attempt_hooks_adapter.h"
#include "capi/attempt_request_view.h"
#include "capi/client_capi.h"
#include "capi/guard.h"
#include "capi/settings_capi.h"
#include "common/headers.h"

using humus::Code;
using humus::Status;
using humus::capi::bad_handle;
using humus::capi::guard;
using humus::capi::live;
using humus::capi::null_argument;
using humus::capi::report;

namespace {

// A NULL table is a fault in code, as for the classifier (docs/settings.md §3.3).
humus::Result<std::shared_ptr<const humus::classify::AttemptHooks>> adapt(const humus_attempt_hooks* hooks) {
  if (hooks == nullptr) return Status(Code::kProgram, "attempt hooks: NULL table", {"attempt_hooks"});
  return humus::capi::make_c_attempt_hooks(*hooks);
}

const humus::Headers::Field* field(const humus_attempt_request* r, size_t i) {
  if (live(r) == nullptr) return nullptr;
  const auto& fields = r->request.headers.fields();
  return i < fields.size() ? &fields[i] : nullptr;
}

}  // namespace

extern "C" {

HUMUS_API const char* humus_attempt_request_method(const humus_attempt_request* r) {
  return live(r) == nullptr ? "" : r->request.method.c_str();
}

HUMUS_API const char* humus_attempt_request_url(const humus_attempt_request* r) {
  return live(r) == nullptr ? "" : r->request.url.c_str();
}

HUMUS_API int32_t humus_attempt_request_number(const humus_attempt_request* r) {
  return live(r) == nullptr ? 0 : static_cast<int32_t>(r->request.number);
}

HUMUS_API size_t humus_attempt_request_header_count(const humus_attempt_request* r) {
  return live(r) == nullptr ? 0 : r->request.headers.size();
}

HUMUS_API const char* humus_attempt_request_header_name(const humus_attempt_request* r, size_t i) {
  const humus::Headers::Field* f = field(r, i);
  return f == nullptr ? nullptr : f->first.c_str();
}

HUMUS_API const char* humus_attempt_request_header_value(const humus_attempt_request* r, size_t i) {
  const humus::Headers::Field* f = field(r, i);
  return f == nullptr ? nullptr : f->second.c_str();
}

HUMUS_API humus_status humus_attempt_request_set_header(humus_attempt_request* r, const char* name,
                                                        const char* value, humus_error** err) {
  return guard(err, [&]() -> humus_status {
    if (live(r) == nullptr) return bad_handle("humus_attempt_request_set_header", "r", err);
    if (name == nullptr) return null_argument("humus_attempt_request_set_header", "name", err);
    if (value == nullptr) return null_argument("humus_attempt_request_set_header", "value", err);
    // The check every header a caller sends passes (docs/transport.md §10.5): it names the header, never its
    // value.
    if (std::string why = humus::header_problem(name, value); !why.empty()) {
      return report(Status(Code::kInvalidArgument, "humus_attempt_request_set_header: " + why, {name}), err);
    }
    r->request.headers.set(name, value);
    return HUMUS_OK;
  });
}

HUMUS_API humus_status humus_settings_set_attempt_hooks(humus_settings* s, const humus_attempt_hooks* hooks,
                                                        humus_error** err) {
  return guard(err, [&]() -> humus_status {
    if (live(s) == nullptr) return bad_handle("humus_settings_set_attempt_hooks", "s", err);
    humus::Result<std::shared_ptr<const humus::classify::AttemptHooks>> adapted = adapt(hooks);
    if (!adapted.ok()) return report(adapted.status(), err);
    s->value.attempt_hooks = std::move(adapted).value();
    return HUMUS_OK;
  });
}

HUMUS_API humus_status humus_request_set_attempt_hooks(humus_request* r, const humus_attempt_hooks* hooks,
                                                       humus_error** err) {
  return guard(err, [&]() -> humus_status {
    if (live(r) == nullptr) return bad_handle("humus_request_set_attempt_hooks", "r", err);
    humus::Result<std::shared_ptr<const humus::classify::AttemptHooks>> adapted = adapt(hooks);
    if (!adapted.ok()) return report(adapted.status(), err);
    r->request.attempt_hooks = std::move(adapted).value();
    return HUMUS_OK;
  });
}

}  // extern "C"
