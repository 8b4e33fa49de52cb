// Code-supplied parts of settings (docs/settings.md §3.3): a classifier and a breaker policy from C callback tables.
#include "capi/breaker_policy_adapter.h"
#include "capi/classifier_adapter.h"
#include "capi/guard.h"
#include "capi/settings_capi.h"

extern "C" {

HUMUS_API humus_status humus_settings_set_classifier(humus_settings* s, const humus_classifier* classifier,
                                                     humus_error** err) {
  return humus::capi::guard(err, [&]() -> humus_status {
    if (humus::capi::live(s) == nullptr) return humus::capi::bad_handle("humus_settings_set_classifier", "s", err);
    if (classifier == nullptr) {
      return humus::capi::report(humus::Status(humus::Code::kProgram, "classifier: NULL table", {"classify"}), err);
    }
    humus::Result<std::shared_ptr<const humus::classify::Classifier>> adapted =
        humus::capi::make_c_classifier(*classifier);
    if (!adapted.ok()) return humus::capi::report(adapted.status(), err);
    s->value.classifier = std::move(adapted).value();
    s->value.classify_plugin.reset();  // code replaces a plugin the settings named
    return HUMUS_OK;
  });
}

HUMUS_API humus_status humus_settings_set_breaker_policy(humus_settings* s, const humus_breaker_policy* policy,
                                                         humus_error** err) {
  return humus::capi::guard(err, [&]() -> humus_status {
    if (humus::capi::live(s) == nullptr) return humus::capi::bad_handle("humus_settings_set_breaker_policy", "s", err);
    if (policy == nullptr) {
      return humus::capi::report(humus::Status(humus::Code::kProgram, "breaker policy: NULL table", {"breaker_policy"}),
                                 err);
    }
    humus::Result<std::shared_ptr<const humus::breaker::Policy>> adapted = humus::capi::make_c_policy(*policy);
    if (!adapted.ok()) return humus::capi::report(adapted.status(), err);
    s->value.breaker_policy = std::move(adapted).value();
    s->value.breaker_policy_plugin.reset();  // code replaces a plugin the settings named
    return HUMUS_OK;
  });
}

}  // extern "C"
