#include "common/text.h"

namespace humus {

std::string quote_for_message(std::string_view text, size_t max) {
  std::string out = "\"";
  for (size_t i = 0; i < text.size() && i < max; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7f || c == '"' || c == '\\') {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
    } else {
      out += static_cast<char>(c);
    }
  }
  if (text.size() > max) out += "...";
  out += '"';
  return out;
}

}  // namespace humus
