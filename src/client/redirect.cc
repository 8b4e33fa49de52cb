#include "client/redirect.h"

#include <curl/curl.h>

#include <memory>

namespace humus::client {
namespace {

struct UrlDeleter {
  void operator()(CURLU* u) const { curl_url_cleanup(u); }
};

}  // namespace

Result<std::string> resolve_reference(const std::string& base, const std::string& reference) {
  std::unique_ptr<CURLU, UrlDeleter> u(curl_url());
  if (!u) return Status(Code::kNoMemory, "out of memory");
  if (curl_url_set(u.get(), CURLUPART_URL, base.c_str(), 0) != CURLUE_OK ||
      curl_url_set(u.get(), CURLUPART_URL, reference.c_str(), 0) != CURLUE_OK) {
    return Status(Code::kProtocol, "malformed Location \"" + reference + "\"");
  }
  char* out = nullptr;
  if (curl_url_get(u.get(), CURLUPART_URL, &out, 0) != CURLUE_OK || out == nullptr) {
    return Status(Code::kProtocol, "malformed Location \"" + reference + "\"");
  }
  std::string resolved(out);
  curl_free(out);
  return resolved;
}

std::optional<transport::WireRequest> follow_redirect(const transport::WireRequest& request,
                                                      const Response& response,
                                                      const transport::Origin& origin) {
  const int s = response.status;
  if (s != 301 && s != 302 && s != 303 && s != 307 && s != 308) return std::nullopt;
  const std::string* location = response.headers.find("Location");
  if (location == nullptr || location->empty()) return std::nullopt;
  Result<std::string> target = resolve_reference(request.url, *location);
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
