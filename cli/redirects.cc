#include "redirects.h"

#include "urls.h"

namespace humus::cli {
namespace {

// Per thread, since each call's hops run on the thread that makes it, and --concurrency makes calls on several.
thread_local int32_t requests_seen = 0;
thread_local std::optional<std::string> refused;

bool is_redirect_status(int32_t status) {
  return status == 301 || status == 302 || status == 303 || status == 307 || status == 308;
}

}  // namespace

humus_status RedirectLimit::install(humus_request* r, humus_error** err) {
  if (max_ < 0 || max_ >= kClientMaxRedirects) return HUMUS_OK;
  humus_attempt_hooks hooks = HUMUS_ATTEMPT_HOOKS_INIT;
  hooks.before = &RedirectLimit::before;
  hooks.user_data = this;
  return humus_request_set_attempt_hooks(r, &hooks, err);
}

void RedirectLimit::begin_call() {
  requests_seen = 0;
  refused.reset();
}

std::optional<std::string> RedirectLimit::refused_url() { return refused; }

humus_status RedirectLimit::before(void* user_data, humus_attempt_request* request) {
  const auto* self = static_cast<const RedirectLimit*>(user_data);
  // Number 1 starts a request: the call's own, then each hop (a retry of either counts on from 2).
  if (humus_attempt_request_number(request) != 1) return HUMUS_OK;
  if (++requests_seen - 1 <= self->max_) return HUMUS_OK;
  refused = humus_attempt_request_url(request);
  return HUMUS_E_CANCELLED;  // ends the call, the hop unsent
}

std::optional<std::string> redirect_target(const humus_response* resp) {
  if (!is_redirect_status(humus_response_status(resp))) return std::nullopt;
  const char* location = humus_response_header(resp, "Location");
  if (location == nullptr || *location == '\0') return std::nullopt;
  const std::string loc = location;
  const std::string base = humus_response_url(resp);
  if (loc.find("://") != std::string::npos) return loc;
  const std::string origin = origin_of(base);
  if (loc.rfind("//", 0) == 0) return base.substr(0, base.find("://") + 1) + loc;
  if (loc.front() == '/') return origin + loc;
  // A relative reference: beside the base's last path segment (its query and fragment dropped).
  std::string path = base.substr(origin.size());
  path = path.substr(0, path.find_first_of("?#"));
  path = path.substr(0, path.rfind('/') + 1);
  return origin + (path.empty() ? "/" : path) + loc;
}

bool followable(const humus_response* resp) {
  const std::optional<std::string> target = redirect_target(resp);
  return target && origin_of(*target) == origin_of(humus_response_url(resp));
}

}  // namespace humus::cli
