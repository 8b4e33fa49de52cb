#pragma once
// -w / --write-out FORMAT: curl's variables after each call, plus the client's own.

#include <cstdint>
#include <optional>
#include <string>

namespace humus::cli {

// What one call leaves for -w to print.
struct WriteOutValues {
  int32_t http_code = 0;  // 0 when no response came: printed 000, as curl does
  int64_t time_total_us = 0;
  uint64_t size_download = 0;
  int32_t attempts = 0;
  int32_t retries = 0;    // attempts that resent a request (redirects are not retries)
  int32_t redirects = 0;  // redirects followed
  std::string redirect_url;  // where a 3xx not followed points, absolute; "" otherwise
  std::string content_type;
  std::string http_version;  // "1.1", "2"; "0" when no response came, as curl prints it
  std::string url_effective;
  int exitcode = 0;
  std::string breaker_state;  // "closed", "open", "half-open"
};

// Why FORMAT cannot be printed (an unknown or unclosed %{...}), naming the variable; nullopt when it can.
std::optional<std::string> write_out_error(const std::string& format);

// FORMAT with %{variable}, %% and the escapes \n \r \t \\ replaced.
std::string render_write_out(const std::string& format, const WriteOutValues& values);

}  // namespace humus::cli
