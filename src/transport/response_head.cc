#include "transport/response_head.h"

namespace humus::transport {

std::string field_text(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c == '\r' || c == '\n' || c == '\0') c = ' ';
  }
  return out;
}

}  // namespace humus::transport
