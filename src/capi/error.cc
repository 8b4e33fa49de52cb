#include "capi/error.h"

#include <memory>

#include "capi/guard.h"

namespace humus::capi {
namespace {

// This thread's last error: published, so the accessors take it; retired before it is replaced or freed.
struct LastError {
  ~LastError() { reset(nullptr); }
  void reset(std::unique_ptr<humus_error> next) {
    if (error) (void)retire(error.get());
    error = std::move(next);
    if (!error) return;
    error->lent = true;
    publish(error.get());
  }
  std::unique_ptr<humus_error> error;
};

LastError& last_error_slot() {
  thread_local LastError last;
  return last;
}

}  // namespace

humus_status report(const Status& status, humus_error** err, int32_t attempts, int64_t retry_after_ms,
                    std::shared_ptr<const client::DecisionTrace> trace) {
  auto error = std::make_unique<humus_error>();
  error->status = static_cast<humus_status>(status.code());
  error->message = status.message();
  error->fields = status.fields();
  error->attempts = attempts;
  error->retry_after_ms = retry_after_ms;
  error->trace = std::move(trace);
  last_error_slot().reset(std::make_unique<humus_error>(*error));
  if (err != nullptr) *err = publish(error.release());
  return static_cast<humus_status>(status.code());
}

}  // namespace humus::capi

using humus::capi::live;

extern "C" {

// Every accessor takes NULL — and a freed or foreign pointer — as "no error", so `humus_error_message(err)`
// after a call that left err NULL reads "" rather than crashing a binding that forgot to check.
HUMUS_API humus_status humus_error_status(const humus_error* e) {
  return live(e) == nullptr ? HUMUS_OK : e->status;
}
HUMUS_API const char* humus_error_message(const humus_error* e) {
  return live(e) == nullptr ? "" : e->message.c_str();
}
HUMUS_API int32_t humus_error_attempts(const humus_error* e) { return live(e) == nullptr ? 0 : e->attempts; }
HUMUS_API size_t humus_error_field_count(const humus_error* e) {
  return live(e) == nullptr ? 0 : e->fields.size();
}
HUMUS_API const char* humus_error_field(const humus_error* e, size_t i) {
  return live(e) != nullptr && i < e->fields.size() ? e->fields[i].c_str() : nullptr;
}
HUMUS_API int64_t humus_error_retry_after_ms(const humus_error* e) {
  return live(e) == nullptr ? 0 : e->retry_after_ms;
}
HUMUS_API void humus_error_free(humus_error* e) {
  if (const humus_error* owned = live(e); owned == nullptr || owned->lent) return;
  if (humus::capi::retire(e)) delete e;
}
HUMUS_API humus_status humus_error_new(humus_status status, const char* message, const char* field,
                                       humus_error** err) {
  if (status == HUMUS_OK || err == nullptr) return status;
  *err = nullptr;
  try {
    auto made = std::make_unique<humus_error>();
    made->status = status;
    made->message = message != nullptr ? message : "";
    if (field != nullptr) made->fields.emplace_back(field);
    *err = humus::capi::publish(made.release());
  } catch (...) {
    // Out of memory: the status alone still says what failed.
  }
  return status;
}
HUMUS_API const humus_error* humus_last_error(void) { return humus::capi::last_error_slot().error.get(); }

}  // extern "C"
