#pragma once
// --inject-fault (docs/failure-injection.md §14): the humus.fault baggage member a call carries so the client fails on purpose.

#include <string>
#include <vector>

namespace humus::cli {

// The injection point of the client for `base_url` ("https://payments:8443" → "http:payments:8443"; the
// scheme's default port written out; an IPv6 host keeps its brackets).
std::string fault_point(const std::string& base_url);

// "humus.fault=<item>|<item>…": each fault given as ACTION[@P] is aimed at `point`; POINT=ACTION[@P] as is.
std::string fault_member(const std::vector<std::string>& faults, const std::string& point);

}  // namespace humus::cli
