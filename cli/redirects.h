#pragma once
// Redirects as curl's flags see them: --max-redirs, and what -w's %{redirect_url} shows. The client follows
// same-origin redirects itself, up to 10 (docs/origin.md §2); the C ABI has "follow or not", so a lower limit
// is kept by an attempt hook that refuses the first hop past it before it is sent.

#include <humus_http.h>

#include <cstdint>
#include <optional>
#include <string>

namespace humus::cli {

// The client's own limit on the redirects one call follows.
inline constexpr int32_t kClientMaxRedirects = 10;

class RedirectLimit {
 public:
  // `max`: the redirects a call may follow (--max-redirs N).
  explicit RedirectLimit(int32_t max) : max_(max) {}
  RedirectLimit(const RedirectLimit&) = delete;
  RedirectLimit& operator=(const RedirectLimit&) = delete;

  // Installs the hook on `r` when `max` is below the client's own limit; the limit must outlive the request.
  humus_status install(humus_request* r, humus_error** err);
  // Before each call, on the thread that makes it (the hook runs there: humus_client_do, humus_client_open).
  static void begin_call();
  // Whether the call just made on this thread was ended by the limit, and the hop it refused.
  static std::optional<std::string> refused_url();

 private:
  static humus_status before(void* user_data, humus_attempt_request* request);

  int32_t max_;
};

// The absolute URL a 3xx response's Location points to (resolved against the response's URL), or nullopt
// when the response is no redirect or has no Location.
std::optional<std::string> redirect_target(const humus_response* resp);

// Whether the client would have followed `resp` had its own limit allowed: a redirect status with a Location
// on the origin of the response's URL.
bool followable(const humus_response* resp);

}  // namespace humus::cli
