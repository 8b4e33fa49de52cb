#include "faults.h"

namespace humus::cli {

std::string fault_point(const std::string& base_url) {
  const size_t scheme_end = base_url.find("://");
  const std::string scheme = scheme_end == std::string::npos ? "" : base_url.substr(0, scheme_end);
  const size_t host_start = scheme_end == std::string::npos ? 0 : scheme_end + 3;
  const std::string authority = base_url.substr(host_start, base_url.find_first_of("/?#", host_start) - host_start);
  // The port follows the last ':' outside an IPv6 literal's brackets.
  const size_t colon = authority.rfind(':');
  const bool has_port = colon != std::string::npos && authority.find(']', colon) == std::string::npos;
  const std::string host = has_port ? authority.substr(0, colon) : authority;
  const std::string port = has_port ? authority.substr(colon + 1) : scheme == "https" ? "443" : "80";
  return "http:" + host + ":" + port;
}

std::string fault_member(const std::vector<std::string>& faults, const std::string& point) {
  std::string member = "humus.fault=";
  for (size_t i = 0; i < faults.size(); ++i) {
    if (i > 0) member += '|';
    if (faults[i].find('=') == std::string::npos) member += point + "=";
    member += faults[i];
  }
  return member;
}

}  // namespace humus::cli
