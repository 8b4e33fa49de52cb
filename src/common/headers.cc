#include "common/headers.h"

#include <algorithm>

namespace humus {

bool equals_ignore_case(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i];
    char y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

namespace {

// RFC 9110 §5.6.2 tchar.
bool is_tchar(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

constexpr std::string_view kClientOwned[] = {"Host",    "Content-Length", "Transfer-Encoding", "Connection",
                                             "Keep-Alive", "Upgrade",     "TE",                "Trailer",
                                             "Proxy-Connection"};

}  // namespace

std::string header_problem(std::string_view name, std::string_view value) {
  if (name.empty()) return "a header name must not be empty";
  const std::string quoted = "\"" + std::string(name.substr(0, 64)) + "\"";
  if (name.front() == ':') return "header " + quoted + " is an HTTP/2 pseudo-header: the client sets those";
  if (!std::all_of(name.begin(), name.end(), is_tchar)) {
    std::string shown;
    for (char c : name.substr(0, 64)) shown += (c >= 0x20 && c < 0x7f) ? std::string(1, c) : "?";
    return "header name \"" + shown + "\" is not an RFC 9110 token";
  }
  for (std::string_view owned : kClientOwned) {
    if (equals_ignore_case(name, owned)) {
      return "header " + quoted + " is the client's own (framing, origin or connection management): a caller "
             "may not set it";
    }
  }
  for (char c : value) {
    const auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 && c != '\t') || u == 0x7f) {
      return "header " + quoted + ": value contains a control character (CR, LF, NUL and the like are header "
             "injection)";
    }
  }
  return "";
}

void Headers::set(std::string name, std::string value) {
  remove(name);
  add(std::move(name), std::move(value));
}

void Headers::remove(std::string_view name) {
  std::erase_if(fields_, [&](const Field& f) { return equals_ignore_case(f.first, name); });
}

const std::string* Headers::find(std::string_view name) const {
  for (const Field& f : fields_) {
    if (equals_ignore_case(f.first, name)) return &f.second;
  }
  return nullptr;
}

}  // namespace humus
