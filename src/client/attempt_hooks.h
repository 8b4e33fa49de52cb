// Code that runs around every attempt a call makes (docs/retries.md §6.7): `before` sees, and may add headers
// to, the request of one attempt just before it goes to the transport; `after` sees what that attempt got,
// before the classifier does. The settings carry hooks for all calls of a client, a request its own call's.
#pragma once

#include <memory>
#include <string>

#include "classify/classification.h"
#include "common/headers.h"
#include "common/status.h"
#include "humus_http.h"

namespace humus::client {

// One attempt's request as a `before` hook sees it. `headers` are this attempt's own copy: what a hook
// changes goes on the wire with this attempt only.
struct AttemptRequest {
  const std::string& method;
  const std::string& url;  // the full URL of this attempt (a redirect hop's own)
  int number;              // 1 for a request's first attempt
  Headers& headers;
};

// Implementations must be thread-safe: the attempts of many calls run at once, each on its driver's thread.
class AttemptHooks {
 public:
  virtual ~AttemptHooks() = default;
  // A Status other than ok ends the call before this attempt is sent, with that Status.
  virtual Status before(AttemptRequest& request) const = 0;
  // Once per attempt that reached the transport.
  virtual void after(const classify::Attempt& attempt) const = 0;
};

// A C table (humus_attempt_hooks) as AttemptHooks: owns user_data once made (destroy runs once, with the
// last holder). kInvalidArgument naming humus_attempt_hooks for a bad version, kProgram when both callbacks
// are NULL; on failure the caller keeps user_data.
Result<std::shared_ptr<const AttemptHooks>> make_c_attempt_hooks(const humus_attempt_hooks& table);

}  // namespace humus::client
