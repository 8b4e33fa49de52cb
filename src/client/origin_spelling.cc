#include "client/origin_spelling.h"

#include <functional>

namespace humus::client {

OriginSpelling::OriginSpelling(const transport::Origin& origin) : with_port_(origin.to_string()) {
  const bool default_port = (origin.scheme == "https" && origin.port == 443) || (origin.scheme == "http" && origin.port == 80);
  if (default_port) without_port_ = with_port_.substr(0, with_port_.rfind(':'));
}

bool OriginSpelling::matches(std::string_view url) const {
  for (const std::string& prefix : {std::cref(with_port_), std::cref(without_port_)}) {
    if (prefix.empty() || !url.starts_with(prefix)) continue;
    const std::string_view rest = url.substr(prefix.size());
    if (!rest.empty() && rest[0] != '/' && rest[0] != '?' && rest[0] != '#') continue;
    return transport::is_plain_url_tail(rest);  // else a byte the full parse would refuse
  }
  return false;
}

}  // namespace humus::client
