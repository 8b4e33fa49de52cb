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

std::string status_line(const humus_response* r) {
  return "HTTP/" + std::string(humus_response_http_version(r)) + " " +
         std::to_string(humus_response_status(r));
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

}  // namespace humus::cli
