// A client's origin as a URL prefix (docs/origin.md §2): the canonical spellings that let a call skip parsing
// its URL, since a URL starting with one of them cannot be on another origin.
#pragma once

#include <string>
#include <string_view>

#include "transport/url.h"

namespace humus::client {

class OriginSpelling {
 public:
  explicit OriginSpelling(const transport::Origin& origin);

  // True when `url` starts with the origin spelled canonically ("https://payments:8443" or, for a default
  // port, "https://payments") followed by a path, query or nothing. Any other spelling needs the full parse.
  bool matches(std::string_view url) const;
  const std::string& with_port() const { return with_port_; }  // "https://payments:443"

 private:
  std::string with_port_;
  std::string without_port_;  // "https://payments" when the port is the scheme's default, else ""
};

}  // namespace humus::client
