// A client made through the C ABI from settings JSON, for the tests of tests/capi that need one.
#pragma once

#include <gtest/gtest.h>

#include <cstring>

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

}  // namespace humus::testing
