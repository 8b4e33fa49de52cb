// The settings part of the C ABI (include/humus_http.h, "Settings").
#include "capi/settings_capi.h"

#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#include "capi/error.h"
#include "capi/guard.h"
#include "capi/plugin_entry.h"
#include "capi/text_out.h"
#include "settings/schema.h"

extern "C" {

HUMUS_API humus_status humus_settings_from_json(const char* json, size_t len, humus_settings** out,
                                                humus_error** err) {
  return humus::capi::guard(err, [&]() -> humus_status {
    if (json == nullptr) return humus::capi::null_argument("humus_settings_from_json", "json", err);
    if (out == nullptr) return humus::capi::null_argument("humus_settings_from_json", "out", err);
    humus::capi::install_plugin_entry_points();  // the settings may name a plugin
    humus::Result<humus::settings::Settings> parsed = humus::settings::from_json(std::string_view(json, len));
    if (!parsed.ok()) return humus::capi::report(parsed.status(), err);
    auto made = std::make_unique<humus_settings>();
    made->value = std::move(parsed).value();
    *out = humus::capi::publish(made.release());
    return HUMUS_OK;
  });
}

HUMUS_API humus_status humus_settings_clone(const humus_settings* s, humus_settings** out,
                                            humus_error** err) {
  return humus::capi::guard(err, [&]() -> humus_status {
    if (humus::capi::live(s) == nullptr) return humus::capi::bad_handle("humus_settings_clone", "s", err);
    if (out == nullptr) return humus::capi::null_argument("humus_settings_clone", "out", err);
    auto made = std::make_unique<humus_settings>();
    made->value = s->value;
    *out = humus::capi::publish(made.release());
    return HUMUS_OK;
  });
}

HUMUS_API void humus_settings_free(humus_settings* s) {
  if (humus::capi::retire(s)) delete s;
}

namespace {

humus_status check_field(const char* function, const char* key, const char* value_json, size_t len,
                         humus_error** err) {
  return humus::capi::guard(err, [&]() -> humus_status {
    if (key == nullptr) return humus::capi::null_argument(function, "key", err);
    if (value_json == nullptr) return humus::capi::null_argument(function, "value_json", err);
    humus::capi::install_plugin_entry_points();  // a "classify" or "breaker_policy" value may name a plugin
    const humus::Status status = humus::settings::check_field(key, std::string_view(value_json, len));
    if (!status.ok()) return humus::capi::report(status, err);
    return HUMUS_OK;
  });
}

}  // namespace

HUMUS_API humus_status humus_settings_check_field(const char* key, const char* value_json, size_t len,
                                                  humus_error** err) {
  return check_field("humus_settings_check_field", key, value_json, len, err);
}

// The first name of humus_settings_check_field, kept for callers built against it.
HUMUS_API humus_status humus_settings_check(const char* key, const char* value_json, size_t len,
                                            humus_error** err) {
  return check_field("humus_settings_check", key, value_json, len, err);
}

HUMUS_API humus_status humus_settings_schema_json(char** out, size_t* len, humus_error** err) {
  return humus::capi::guard(err, [&]() -> humus_status {
    if (out == nullptr) return humus::capi::null_argument("humus_settings_schema_json", "out", err);
    return humus::capi::text_out(humus::settings::schema::schema_json(), out, len);
  });
}

HUMUS_API humus_status humus_settings_to_json(const humus_settings* s, char** out, size_t* len,
                                              humus_error** err) {
  return humus::capi::guard(err, [&]() -> humus_status {
    if (humus::capi::live(s) == nullptr) return humus::capi::bad_handle("humus_settings_to_json", "s", err);
    if (out == nullptr) return humus::capi::null_argument("humus_settings_to_json", "out", err);
    return humus::capi::text_out(humus::settings::to_json(s->value), out, len);
  });
}

// Strings come from new[] in this library: only this function may free them.
HUMUS_API void humus_string_free(char* str) { delete[] str; }

}  // extern "C"
