#include "transport/response_head.h"

namespace humus::transport {

std::string field_text(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c == '\r' || c == '\n' || c == '\0') c = ' ';
  }
  return out;
}

std::string reason_text(std::string_view text) {
  std::string out(text.substr(0, kMaxReasonPhrase));
  for (char& c : out) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) c = ' ';
  }
  return out;
}

}  // namespace humus::transport
