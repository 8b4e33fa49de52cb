// URLs and origins (docs/origin.md §2). Parsing is libcurl's own (CURLU), so what the settings accept is exactly what
// the transport will later connect to.
#pragma once

#include <string>
#include <string_view>
#include <utility>

#include "common/status.h"

namespace humus::transport {

struct Url {
  std::string scheme;  // lowercase, e.g. "https"
  std::string host;    // lowercase (ASCII); an IPv6 address without brackets, zone appended as "%zone"
  std::string path;    // "/" when the URL has none
  std::string query;   // without '?'; empty when none
  int port = 0;        // explicit, else the scheme's default (http 80, https 443); 0 if the scheme has none
  bool has_userinfo = false;  // "user:password@" (even an empty one) was present; never stored
};

// Parses an absolute URL "scheme://host[:port][/path][?query][#fragment]". Refused (kInvalidArgument): a
// relative URL, no host ("http:///x", which libcurl alone would read as host "x"), a port outside 1..65535, a
// NUL byte, and anything libcurl refuses. Any scheme libcurl can parse is accepted; callers check which
// they serve. The message never repeats the URL: it may carry a password. Never throws.
Result<Url> parse_url(std::string_view text);

// True when `tail`, what follows a URL's authority, is empty or a path, query or fragment with no space,
// control character or backslash: the bytes parse_url refuses there (the url fuzzer checks it).
bool is_plain_url_tail(std::string_view tail);

// True when `text` is an http or https URL in its plainest spelling: "http://" or "https://", a host of ASCII
// letters, digits, '-' and '.', an optional port 1..65535 without a leading zero, then a plain tail.
// parse_url accepts every such URL, with no user-info (the url fuzzer checks it), so a request's URL spelled
// so is taken without libcurl's parse (about 10k instructions); any other spelling needs the full parse.
bool is_plain_http_url(std::string_view text);

// What a dependency is (docs/origin.md §2): scheme, host, port with the default filled in, so "https://payments" and
// "https://PAYMENTS:443" are one origin.
struct Origin {
  std::string scheme;
  std::string host;
  int port = 0;

  bool operator==(const Origin&) const = default;
  // "https://payments:8443", "http://[::1]:8080": always with the port, as error messages name origins.
  [[nodiscard]] std::string to_string() const;
};

Origin origin_of(const Url& url);

// Resolves a reference (a redirect's Location) against the URL it came from (RFC 3986 §5), with the same
// parser as parse_url. kProtocol "malformed Location" when either does not parse; kNoMemory.
Result<std::string> resolve_reference(const std::string& base, const std::string& reference);

// A URL a client may name — its base_url, a request's target, a redirect's Location (docs/origin.md §2): one
// that parsed and carries no user-info, since a password in a URL would be repeated in every log and error.
// from() and parse() are the only ways to make one, so that rule is checked there once, and nothing that
// holds a ClientUrl checks it again. Which schemes are served stays each caller's to say.
class ClientUrl {
 public:
  // kInvalidArgument "user-info is not allowed" when `parsed` has any (even an empty one).
  static Result<ClientUrl> from(Url parsed);
  // parse_url's refusal, or from()'s.
  static Result<ClientUrl> parse(std::string_view text);

  const Url& parts() const { return url_; }
  Origin origin() const { return origin_of(url_); }

 private:
  explicit ClientUrl(Url url) : url_(std::move(url)) {}
  Url url_;
};

}  // namespace humus::transport
