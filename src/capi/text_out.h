// Text handed to a C caller: a NUL-terminated copy it frees with humus_string_free().
#pragma once

#include <cstring>
#include <memory>
#include <string>

#include "humus_http.h"

namespace humus::capi {

inline humus_status text_out(const std::string& text, char** out, size_t* len) {
  auto buffer = std::make_unique<char[]>(text.size() + 1);
  std::memcpy(buffer.get(), text.c_str(), text.size() + 1);
  *out = buffer.release();
  if (len != nullptr) *len = text.size();
  return HUMUS_OK;
}

}  // namespace humus::capi
