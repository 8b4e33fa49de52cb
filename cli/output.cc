#include "output.h"

#include <cerrno>
#include <system_error>

#include "exit_codes.h"

namespace humus::cli {

Output::~Output() {
  if (file_ != nullptr && file_ != stdout) std::fclose(file_);
}

std::optional<Outcome> Output::write(const void* data, size_t len) {
  if (file_ == nullptr) {
    file_ = path_ ? std::fopen(path_->c_str(), "wb") : stdout;
    if (file_ == nullptr) return failed();
  }
  if (len > 0 && std::fwrite(data, 1, len, file_) != len) return failed();
  if (len > 0) ends_line_ = static_cast<const char*>(data)[len - 1] == '\n';
  return std::nullopt;
}

std::optional<Outcome> Output::finish() {
  if (file_ == nullptr) return std::nullopt;
  if (std::fflush(file_) != 0) return failed();
  if (file_ != stdout) {
    const int rc = std::fclose(file_);
    file_ = nullptr;
    if (rc != 0) return failed();
  }
  return std::nullopt;
}

Outcome Output::failed() const {
  const int error = errno;
  return {exit_code::kWrite, (path_ ? flag_ + " " + *path_ : std::string("stdout")) +
                                 ": cannot write: " + std::generic_category().message(error)};
}

namespace {

// curl's status line: "HTTP/1.1 404 Not Found" with the phrase as sent, "HTTP/2 200 " (HTTP/2 has none; curl
// writes the space the phrase would follow, as a conforming HTTP/1.1 server with an empty phrase does).
std::string status_text(const char* version, int32_t status, const char* reason) {
  return "HTTP/" + std::string(version) + " " + std::to_string(status) + " " + reason;
}

}  // namespace

std::string status_line(const humus_response* r) {
  return status_text(humus_response_http_version(r), humus_response_status(r), humus_response_reason(r));
}

std::string headers_block(const humus_response* r, const char* prefix, const char* eol) {
  std::string s = prefix + status_line(r) + eol;
  for (size_t i = 0; i < humus_response_header_count(r); ++i) {
    const char* name = nullptr;
    const char* value = nullptr;
    if (humus_response_header_at(r, i, &name, &value) == HUMUS_OK)
      s += std::string(prefix) + name + ": " + value + eol;
  }
  return s;
}

std::string redirects_block(const humus_response* r, const char* prefix, const char* eol) {
  std::string s;
  for (size_t i = 0; i < humus_response_redirect_count(r); ++i) {
    int32_t status = 0;
    const char* url = nullptr;
    if (humus_response_redirect_at(r, i, &status, &url) != HUMUS_OK) continue;
    s += prefix + status_text(humus_response_redirect_http_version(r, i), status, humus_response_redirect_reason(r, i)) +
         eol;
    for (size_t j = 0; j < humus_response_redirect_header_count(r, i); ++j) {
      const char* name = nullptr;
      const char* value = nullptr;
      if (humus_response_redirect_header_at(r, i, j, &name, &value) == HUMUS_OK)
        s += std::string(prefix) + name + ": " + value + eol;
    }
    s += prefix + std::string(eol);
  }
  return s;
}

}  // namespace humus::cli
