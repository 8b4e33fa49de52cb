#include "retry/repeat.h"

#include <array>

namespace humus::retry {
namespace {

bool is_blank(std::string_view value) {
  for (char c : value) {
    if (c != ' ' && c != '\t') return false;
  }
  return true;
}

}  // namespace

bool is_idempotent_method(std::string_view method) {
  static constexpr std::array<std::string_view, 6> kIdempotent = {"GET",   "HEAD", "OPTIONS",
                                                                  "TRACE", "PUT",  "DELETE"};
  for (std::string_view m : kIdempotent) {
    if (method == m) return true;
  }
  return false;
}

bool has_idempotency_key(const Headers& request_headers) {
  // Every field, not just the first of each name: a duplicate with a real key still vouches.
  for (const Headers::Field& field : request_headers.fields()) {
    if ((equals_ignore_case(field.first, "Idempotency-Key") ||
         equals_ignore_case(field.first, "X-Idempotency-Key")) &&
        !is_blank(field.second)) {
      return true;
    }
  }
  return false;
}

bool may_send_twice(std::string_view method, const Headers& request_headers, bool body_replayable,
                    RetryOverride retry_override) {
  switch (retry_override) {
    case RetryOverride::kForbid:
      return false;
    case RetryOverride::kForce:
      return body_replayable;
    case RetryOverride::kDefault:
      break;
  }
  if (!body_replayable) return false;
  return is_idempotent_method(method) || has_idempotency_key(request_headers);
}

}  // namespace humus::retry
