#include "telemetry/redact.h"

#include <array>

namespace humus::telemetry {
namespace {

constexpr std::array<std::string_view, 4> kSensitiveParameters = {"AWSAccessKeyId", "Signature", "sig",
                                                                  "X-Goog-Signature"};

bool is_sensitive(std::string_view name) {
  for (std::string_view s : kSensitiveParameters) {
    if (name == s) return true;
  }
  return false;
}

}  // namespace

std::string redacted_url(std::string_view url) {
  // Most URLs have nothing to remove (this runs for every attempt's span): no '@', no query, no fragment. A
  // plain loop: string_view::find_first_of calls memchr on the set once per character of the URL.
  bool plain = true;
  for (const char c : url) plain = plain && c != '@' && c != '?' && c != '#';
  if (plain) return std::string(url);
  if (const size_t hash = url.find('#'); hash != std::string_view::npos) url = url.substr(0, hash);
  std::string out;
  out.reserve(url.size());
  // scheme://[user-info@]authority
  size_t rest = 0;
  if (const size_t scheme = url.find("://"); scheme != std::string_view::npos) {
    const size_t authority = scheme + 3;
    const size_t end = url.find_first_of("/?", authority);
    const std::string_view host_part = url.substr(authority, end == std::string_view::npos ? url.npos : end - authority);
    const size_t at = host_part.rfind('@');
    out.append(url.substr(0, authority));
    out.append(at == std::string_view::npos ? host_part : host_part.substr(at + 1));
    rest = end == std::string_view::npos ? url.size() : end;
  }
  const size_t query = url.find('?', rest);
  if (query == std::string_view::npos) {
    out.append(url.substr(rest));
    return out;
  }
  out.append(url.substr(rest, query + 1 - rest));
  std::string_view params = url.substr(query + 1);
  while (true) {
    const size_t amp = params.find('&');
    const std::string_view param = params.substr(0, amp);
    const size_t eq = param.find('=');
    if (eq != std::string_view::npos && is_sensitive(param.substr(0, eq))) {
      out.append(param.substr(0, eq + 1)).append("REDACTED");
    } else {
      out.append(param);
    }
    if (amp == std::string_view::npos) break;
    out.push_back('&');
    params.remove_prefix(amp + 1);
  }
  return out;
}

}  // namespace humus::telemetry
