#include "transport/url.h"

#include <curl/curl.h>

#include <algorithm>
#include <charconv>

namespace humus::transport {
namespace {

// Owns a CURLU handle; one per parse, never copied.
class CurlUrl {
 public:
  CurlUrl() : handle_(curl_url()) {}
  ~CurlUrl() { curl_url_cleanup(handle_); }
  CurlUrl(const CurlUrl&) = delete;
  CurlUrl& operator=(const CurlUrl&) = delete;

  [[nodiscard]] CURLU* get() const { return handle_; }

 private:
  CURLU* handle_;
};

// A string libcurl allocated, freed with curl_free.
class CurlString {
 public:
  CurlString() = default;
  ~CurlString() { curl_free(data_); }
  CurlString(const CurlString&) = delete;
  CurlString& operator=(const CurlString&) = delete;

  char** out() { return &data_; }
  [[nodiscard]] std::string str() const { return data_ == nullptr ? std::string() : std::string(data_); }

 private:
  char* data_ = nullptr;
};

// Reads one part; CURLUE_OK fills `value`, any other code (e.g. the part is absent) is returned as is.
CURLUcode get_part(const CurlUrl& url, CURLUPart part, unsigned int flags, std::string& value) {
  CurlString s;
  const CURLUcode rc = curl_url_get(url.get(), part, s.out(), flags);
  if (rc == CURLUE_OK) value = s.str();
  return rc;
}

void lowercase(std::string& s) {
  for (char& c : s) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
}

Status bad_url(std::string_view why) {
  return Status(Code::kInvalidArgument, "invalid URL: " + std::string(why));
}

bool is_scheme_char(char c, bool first) {
  const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
  if (first) return alpha;
  return alpha || (c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.';
}

bool is_zone_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
         c == '_' || c == '~';
}

// RFC 3986's reg-name without its pct-encoded (unreserved and sub-delims), plus the bytes of UTF-8 names.
bool is_host_char(char c) {
  return is_zone_char(c) || static_cast<unsigned char>(c) >= 0x80 ||
         std::string_view("!$&'()*+,;=").find(c) != std::string_view::npos;
}

// libcurl is as lenient as a browser ("http:/host", "http:///host" both reach "host"); a setting is not
// typed into an address bar, so the shape "scheme://authority" is required before libcurl sees it.
bool has_scheme_and_authority(std::string_view text) {
  const size_t colon = text.find(':');
  if (colon == std::string_view::npos || colon == 0) return false;
  for (size_t i = 0; i < colon; ++i) {
    if (!is_scheme_char(text[i], i == 0)) return false;
  }
  const std::string_view rest = text.substr(colon + 1);
  return rest.size() > 2 && rest.substr(0, 2) == "//" && rest[2] != '/' && rest[2] != '?' && rest[2] != '#';
}

bool authority_is_percent_encoded(std::string_view text) {
  const size_t start = text.find("//") + 2;  // has_scheme_and_authority holds
  const size_t end = text.find_first_of("/?#", start);
  return text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start).find('%') !=
         std::string_view::npos;
}

bool spells_itself(const std::string& host) {
  CurlUrl again;
  if (again.get() == nullptr) return false;
  const std::string spelled = "http://" + host + "/";
  if (curl_url_set(again.get(), CURLUPART_URL, spelled.c_str(), 0) != CURLUE_OK) return false;
  std::string reread;
  if (get_part(again, CURLUPART_HOST, 0, reread) != CURLUE_OK) return false;
  lowercase(reread);
  std::string lowered = host;
  lowercase(lowered);
  return reread == lowered;
}

}  // namespace

Result<Url> parse_url(std::string_view text) {
  if (text.find('\0') != std::string_view::npos) return bad_url("contains a NUL byte");
  if (!has_scheme_and_authority(text)) return bad_url("not an absolute URL of the form scheme://host/path");
  CurlUrl url;
  if (url.get() == nullptr) return Status(Code::kNoMemory, "out of memory");
  const std::string copy(text);  // libcurl wants a NUL-terminated string
  // Schemes libcurl was built without still parse; which schemes are served is the caller's decision.
  const CURLUcode set = curl_url_set(url.get(), CURLUPART_URL, copy.c_str(), CURLU_NON_SUPPORT_SCHEME);
  if (set == CURLUE_OUT_OF_MEMORY) return Status(Code::kNoMemory, "out of memory");
  if (set != CURLUE_OK) return bad_url(curl_url_strerror(set));

  Url out;
  if (get_part(url, CURLUPART_SCHEME, 0, out.scheme) != CURLUE_OK) return bad_url("no scheme");
  lowercase(out.scheme);
  if (get_part(url, CURLUPART_HOST, 0, out.host) != CURLUE_OK || out.host.empty()) return bad_url("no host");
  // libcurl decodes a percent-encoded host ("a%2541" is "a%41", "0%7f.1" holds a DEL): what it decodes to
  // must spell itself, or the next parse of the origin's own spelling reads another host (or none). An IPv6
  // address is libcurl's to check, and its zone is read on its own below.
  if (out.host.front() != '[' && !std::all_of(out.host.begin(), out.host.end(), is_host_char)) {
    return bad_url("the host holds a character a host name cannot (after percent-decoding)");
  }
  // libcurl reads a number as an IPv4 address ("0xe1" is 0.0.0.225) before it decodes, so "0x%651" keeps the
  // host "0xe1", which the resolver and the next parse of its spelling read as 0.0.0.225: two hosts in one
  // spelling. A decoded host must parse again as itself.
  if (out.host.front() != '[' && authority_is_percent_encoded(text) && !spells_itself(out.host)) {
    return bad_url("the host, percent-decoded, reads as another host (spell the address as digits and dots)");
  }
  if (out.host.size() >= 2 && out.host.front() == '[' && out.host.back() == ']') {
    out.host = out.host.substr(1, out.host.size() - 2);
    std::string zone;
    if (get_part(url, CURLUPART_ZONEID, 0, zone) == CURLUE_OK && !zone.empty()) {
      // As for the host: an interface name or number, which spells itself.
      if (!std::all_of(zone.begin(), zone.end(), is_zone_char)) return bad_url("the IPv6 zone is malformed");
      out.host += "%" + zone;
    }
  }
  lowercase(out.host);

  std::string port;
  const CURLUcode port_rc = get_part(url, CURLUPART_PORT, CURLU_DEFAULT_PORT, port);
  if (port_rc == CURLUE_OK) {
    int value = 0;
    const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (ec != std::errc() || end != port.data() + port.size() || value < 1 || value > 65535) {
      return bad_url("port must be between 1 and 65535");
    }
    out.port = value;
  } else if (port_rc != CURLUE_NO_PORT) {
    return bad_url(curl_url_strerror(port_rc));
  }

  if (get_part(url, CURLUPART_PATH, 0, out.path) != CURLUE_OK || out.path.empty()) out.path = "/";
  (void)get_part(url, CURLUPART_QUERY, 0, out.query);  // absent: stays empty

  std::string ignored;
  out.has_userinfo = get_part(url, CURLUPART_USER, 0, ignored) == CURLUE_OK ||
                     get_part(url, CURLUPART_PASSWORD, 0, ignored) == CURLUE_OK ||
                     get_part(url, CURLUPART_OPTIONS, 0, ignored) == CURLUE_OK;
  return out;
}

bool is_plain_url_tail(std::string_view tail) {
  if (!tail.empty() && tail[0] != '/' && tail[0] != '?' && tail[0] != '#') return false;
  return std::none_of(tail.begin(), tail.end(),
                      [](char c) { return static_cast<unsigned char>(c) <= ' ' || c == '\\' || c == 0x7f; });
}

bool is_plain_http_url(std::string_view text) {
  // Far below libcurl's own limit on a URL's length (8 MB), which a longer one leaves to it.
  constexpr size_t kLongest = 8192;
  if (text.size() > kLongest) return false;
  if (text.starts_with("https://")) {
    text.remove_prefix(8);
  } else if (text.starts_with("http://")) {
    text.remove_prefix(7);
  } else {
    return false;
  }
  const auto is_digit = [](char c) { return c >= '0' && c <= '9'; };
  const auto is_plain_host_char = [&](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c) || c == '-' || c == '.';
  };
  const size_t host_end = std::find_if_not(text.begin(), text.end(), is_plain_host_char) - text.begin();
  if (host_end == 0) return false;  // no host
  text.remove_prefix(host_end);
  if (!text.empty() && text[0] == ':') {
    const size_t port_end = std::find_if_not(text.begin() + 1, text.end(), is_digit) - text.begin();
    int port = 0;
    const auto [end, ec] = std::from_chars(text.data() + 1, text.data() + port_end, port);
    if (port_end == 1 || port_end > 6 || text[1] == '0' || ec != std::errc() ||
        end != text.data() + port_end || port > 65535) {
      return false;
    }
    text.remove_prefix(port_end);
  }
  return is_plain_url_tail(text);
}

std::string Origin::to_string() const {
  std::string out = scheme + "://";
  if (host.find(':') != std::string::npos) {
    // IPv6: brackets, and the zone's '%' percent-encoded as RFC 6874 writes it.
    out += '[';
    for (char c : host) {
      if (c == '%') {
        out += "%25";
      } else {
        out += c;
      }
    }
    out += ']';
  } else {
    out += host;
  }
  out += ':';
  out += std::to_string(port);
  return out;
}

Origin origin_of(const Url& url) { return Origin{url.scheme, url.host, url.port}; }

Result<ClientUrl> ClientUrl::from(Url parsed) {
  if (parsed.has_userinfo) return Status(Code::kInvalidArgument, "user-info is not allowed");
  return ClientUrl(std::move(parsed));
}

Result<ClientUrl> ClientUrl::parse(std::string_view text) {
  Result<Url> url = parse_url(text);
  if (!url.ok()) return url.status();
  return from(std::move(url).value());
}

Result<std::string> resolve_reference(const std::string& base, const std::string& reference) {
  const CurlUrl u;
  if (u.get() == nullptr) return Status(Code::kNoMemory, "out of memory");
  // Setting a URL on a handle that holds one resolves it against that one (RFC 3986 §5.2).
  if (curl_url_set(u.get(), CURLUPART_URL, base.c_str(), 0) != CURLUE_OK ||
      curl_url_set(u.get(), CURLUPART_URL, reference.c_str(), 0) != CURLUE_OK) {
    return Status(Code::kProtocol, "malformed Location \"" + reference + "\"");
  }
  std::string resolved;
  if (get_part(u, CURLUPART_URL, 0, resolved) != CURLUE_OK) {
    return Status(Code::kProtocol, "malformed Location \"" + reference + "\"");
  }
  return resolved;
}

}  // namespace humus::transport
