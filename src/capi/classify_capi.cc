// The classifier section of the C ABI: what a C classifier can read of an attempt, and the built-in
// classifiers it can delegate to.
//
// Accessors given a NULL attempt — or one kept past its classifier's call, or a foreign pointer — return a
// value that reads as "nothing": "" for strings that are never NULL otherwise, NULL for a header, 0 for
// numbers (HUMUS_OK for the error kind). They cannot fail, so they do not touch the thread's last error.
#include <chrono>
#include <memory>
#include <string>

#include "capi/error.h"
#include "capi/guard.h"
#include "capi/attempt_view.h"
#include "classify/default_classifier.h"

namespace {

void write_out(const humus::classify::Classification& c, humus_classification* out) {
  out->retry = static_cast<int32_t>(c.retry);
  out->breaker = static_cast<int32_t>(c.breaker);
  // Rounded up: waiting a fraction of a millisecond longer than asked is harmless, shorter is not.
  out->retry_after_ms = std::chrono::ceil<std::chrono::milliseconds>(c.retry_after).count();
}

humus_status classify_with(const humus::classify::Classifier& classifier, const humus_attempt* a,
                           humus_classification* out) {
  const humus::Result<humus::classify::Classification> r = classifier.classify(a->attempt);
  if (!r.ok()) return humus::capi::report(r.status(), nullptr);
  write_out(*r, out);
  return HUMUS_OK;
}

}  // namespace

extern "C" {

HUMUS_API const char* humus_attempt_method(const humus_attempt* a) {
  return humus::capi::live(a) == nullptr ? "" : a->method.c_str();
}

HUMUS_API int32_t humus_attempt_status(const humus_attempt* a) {
  return humus::capi::live(a) == nullptr ? 0 : static_cast<int32_t>(a->attempt.status);
}

HUMUS_API const char* humus_attempt_header(const humus_attempt* a, const char* name) {
  if (humus::capi::live(a) == nullptr || name == nullptr || a->attempt.headers == nullptr || a->attempt.status <= 0)
    return nullptr;
  const std::string* value = a->attempt.headers->find(name);
  return value == nullptr ? nullptr : value->c_str();
}

HUMUS_API size_t humus_attempt_header_count(const humus_attempt* a) {
  if (humus::capi::live(a) == nullptr || a->attempt.headers == nullptr || a->attempt.status <= 0) return 0;
  return a->attempt.headers->size();
}

HUMUS_API const char* humus_attempt_header_name(const humus_attempt* a, size_t i) {
  if (i >= humus_attempt_header_count(a)) return nullptr;
  return a->attempt.headers->fields()[i].first.c_str();
}

HUMUS_API const char* humus_attempt_header_value(const humus_attempt* a, size_t i) {
  if (i >= humus_attempt_header_count(a)) return nullptr;
  return a->attempt.headers->fields()[i].second.c_str();
}

HUMUS_API humus_status humus_attempt_error(const humus_attempt* a) {
  if (humus::capi::live(a) == nullptr || a->attempt.status > 0) return HUMUS_OK;
  return static_cast<humus_status>(a->attempt.error);
}

HUMUS_API const char* humus_attempt_error_message(const humus_attempt* a) {
  return humus::capi::live(a) == nullptr ? "" : a->error_message.c_str();
}

HUMUS_API int32_t humus_attempt_number(const humus_attempt* a) {
  return humus::capi::live(a) == nullptr ? 0 : static_cast<int32_t>(a->attempt.number);
}

HUMUS_API humus_status humus_classify_default(const humus_attempt* a, humus_classification* out) {
  return humus::capi::guard(nullptr, [&]() -> humus_status {
    if (humus::capi::live(a) == nullptr) return humus::capi::bad_handle("humus_classify_default", "attempt", nullptr);
    if (out == nullptr) return humus::capi::null_argument("humus_classify_default", "out", nullptr);
    return classify_with(*humus::classify::default_classifier(), a, out);
  });
}

HUMUS_API humus_status humus_classify_preset(const char* preset, const humus_attempt* a,
                                             humus_classification* out) {
  return humus::capi::guard(nullptr, [&]() -> humus_status {
    if (preset == nullptr) return humus::capi::null_argument("humus_classify_preset", "preset", nullptr);
    if (humus::capi::live(a) == nullptr) return humus::capi::bad_handle("humus_classify_preset", "attempt", nullptr);
    if (out == nullptr) return humus::capi::null_argument("humus_classify_preset", "out", nullptr);
    const std::shared_ptr<const humus::classify::Classifier> classifier = humus::classify::preset(preset);
    if (classifier == nullptr) {
      return humus::capi::report(humus::Status(humus::Code::kInvalidArgument,
                                               std::string("humus_classify_preset: unknown preset \"") +
                                                   preset + "\" (known: humus, jfast, strict)",
                                               {"preset"}),
                                 nullptr);
    }
    return classify_with(*classifier, a, out);
  });
}

}  // extern "C"
