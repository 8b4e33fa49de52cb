// Redirects (docs/origin.md §2): followed within the origin, each a request with attempts of its own; a redirect to
// another origin is handed back to the caller as the 3xx it is.
#pragma once

#include <cstddef>
#include <optional>

#include "client/request.h"
#include "transport/url.h"
#include "transport/wire.h"

namespace humus::client {

inline constexpr size_t kMaxRedirects = 10;

// The request a 3xx response asks for, or nullopt when it is not followed: not a redirect status, no or a
// malformed Location, or a Location on another origin (credentials never leave the origin). 303 turns any
// method but HEAD into a GET without a body; 301 and 302 turn a POST into a GET, as browsers and Go do;
// 307 and 308 repeat the request as it was.
std::optional<transport::WireRequest> follow_redirect(const transport::WireRequest& request,
                                                      const Response& response,
                                                      const transport::Origin& origin);

}  // namespace humus::client
