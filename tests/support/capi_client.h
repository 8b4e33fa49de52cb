// A client made through the C ABI from settings JSON, for the tests of tests/capi that need one.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>

#include "humus_http.h"

namespace humus::testing {

// A client of `rt` with the settings `json`; null, the test failed with the library's message, when refused.
inline humus_client* new_capi_client(humus_runtime* rt, const char* json) {
  humus_settings* s = nullptr;
  humus_error* err = nullptr;
  if (humus_settings_from_json(json, std::strlen(json), &s, &err) != HUMUS_OK) {
    ADD_FAILURE() << "settings refused: " << humus_error_message(err);
    humus_error_free(err);
    return nullptr;
  }
  humus_client* c = nullptr;
  const humus_status st = humus_client_new(rt, s, &c, &err);
  humus_settings_free(s);
  if (st != HUMUS_OK) {
    ADD_FAILURE() << "client refused: " << humus_error_message(err);
    humus_error_free(err);
    return nullptr;
  }
  return c;
}

// How a call submitted through the C ABI ended: pass `&outcome` as the user data of `CallOutcome::done`.
struct CallOutcome {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  humus_status status = HUMUS_OK;
  int32_t http_status = 0;  // 0 when the call failed
  int32_t attempts = -1;

  // Waits (bounded) for the completion; false if it never came.
  bool wait(std::chrono::seconds bound = std::chrono::seconds(30)) {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, bound, [&] { return done; });
  }

  // A humus_call_done: records the outcome and frees what it was handed.
  static void on_done(void* user, humus_status status, humus_response* resp, humus_error* err) {
    auto* o = static_cast<CallOutcome*>(user);
    std::lock_guard<std::mutex> lock(o->mu);
    o->status = status;
    o->http_status = resp != nullptr ? humus_response_status(resp) : 0;
    o->attempts = resp != nullptr ? humus_response_attempts(resp) : humus_error_attempts(err);
    o->done = true;
    o->cv.notify_all();
    humus_response_free(resp);
    humus_error_free(err);
  }
};

}  // namespace humus::testing
