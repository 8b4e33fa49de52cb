#include "stream.h"

#include <charconv>
#include <cstring>
#include <vector>

namespace humus::cli {

namespace {
constexpr size_t kBuffer = 64 * 1024;  // one read's worth: what the CLI holds of a body at any time
}  // namespace

CopiedBody copy_body(humus_response* resp, Output& out, Progress& progress) {
  CopiedBody copied;
  if (auto failed = out.write(nullptr, 0)) {
    copied.write_error = std::move(failed);
    return copied;
  }
  std::vector<char> buf(kBuffer);
  for (;;) {
    size_t n = 0;
    humus_error* err = nullptr;
    if (humus_response_read(resp, buf.data(), buf.size(), &n, &err) != HUMUS_OK) {
      copied.read_error.reset(err);
      return copied;
    }
    if (n == 0) return copied;
    if (auto failed = out.write(buf.data(), n)) {
      copied.write_error = std::move(failed);
      return copied;
    }
    copied.bytes += n;
    progress.add_received(n);
  }
}

std::optional<uint64_t> content_length(const humus_response* resp) {
  const char* value = humus_response_header(resp, "Content-Length");
  if (value == nullptr) return std::nullopt;
  uint64_t n = 0;
  const char* end = value + std::strlen(value);
  const auto [ptr, ec] = std::from_chars(value, end, n);
  if (ec != std::errc() || ptr != end || ptr == value) return std::nullopt;
  return n;
}

}  // namespace humus::cli
