// Text for error messages.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace humus {

// `text` quoted for a message: control bytes, quotes and backslashes escaped as \xNN, cut after `max` bytes
// with "..." (configuration and headers may hold anything, and messages stay one readable line).
std::string quote_for_message(std::string_view text, size_t max = 64);

}  // namespace humus
