// Code that runs around every attempt a call makes (docs/retries.md §6.7): `before` sees, and may add headers
// to, the request of one attempt just before it goes to the transport; `after` sees what that attempt got,
// before the classifier does. The settings carry hooks for all calls of a client, a request its own call's.
// Declared here, beside the Attempt the hooks see, so the settings hold them without reaching up to client/.
#pragma once

#include <string>

#include "classify/classification.h"
#include "common/headers.h"
#include "common/status.h"

namespace humus::classify {

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
  virtual void after(const Attempt& attempt) const = 0;
};

}  // namespace humus::classify
