#include "client/redirect.h"

#include <string>
#include <utility>

namespace humus::client {

std::optional<transport::WireRequest> follow_redirect(const transport::WireRequest& request,
                                                      const Response& response,
                                                      const transport::Origin& origin) {
  const int s = response.status;
  if (s != 301 && s != 302 && s != 303 && s != 307 && s != 308) return std::nullopt;
  const std::string* location = response.headers.find("Location");
  if (location == nullptr || location->empty()) return std::nullopt;
  Result<std::string> target = transport::resolve_reference(request.url, *location);
  if (!target.ok()) return std::nullopt;
  Result<transport::ClientUrl> url = transport::ClientUrl::parse(*target);
  if (!url.ok() || !(url->origin() == origin)) return std::nullopt;

  transport::WireRequest next = request;
  next.url = std::move(target).value();
  const bool to_get = (s == 303 && request.method != "HEAD") || ((s == 301 || s == 302) && request.method == "POST");
  if (to_get) {
    next.method = "GET";
    next.body = nullptr;
    next.body_source = nullptr;
    next.headers.remove("Content-Type");
    next.headers.remove("Content-Length");
  }
  return next;
}

}  // namespace humus::client
