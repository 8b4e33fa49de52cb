#include "write_out.h"

#include <cstdio>
#include <string_view>

namespace humus::cli {
namespace {

constexpr std::string_view kVariables[] = {
    "http_code",   "response_code", "time_total",    "size_download", "num_retries",  "num_redirects",
    "redirect_url", "content_type",  "http_version",  "url_effective", "exitcode",     "attempts",
    "breaker_state"};

bool known(std::string_view name) {
  for (std::string_view v : kVariables) {
    if (v == name) return true;
  }
  return false;
}

std::string value_of(std::string_view name, const WriteOutValues& v) {
  char buf[32];
  if (name == "http_code" || name == "response_code") {
    std::snprintf(buf, sizeof buf, "%03d", v.http_code);
    return buf;
  }
  if (name == "time_total") {
    // curl's spelling: seconds with six decimals.
    std::snprintf(buf, sizeof buf, "%lld.%06lld", static_cast<long long>(v.time_total_us / 1'000'000),
                  static_cast<long long>(v.time_total_us % 1'000'000));
    return buf;
  }
  if (name == "size_download") return std::to_string(v.size_download);
  if (name == "num_retries") return std::to_string(v.retries);
  if (name == "num_redirects") return std::to_string(v.redirects);
  if (name == "redirect_url") return v.redirect_url;
  if (name == "content_type") return v.content_type;
  if (name == "http_version") return v.http_version.empty() ? "0" : v.http_version;
  if (name == "attempts") return std::to_string(v.attempts);
  if (name == "url_effective") return v.url_effective;
  if (name == "exitcode") return std::to_string(v.exitcode);
  return v.breaker_state;
}

}  // namespace

std::optional<std::string> write_out_error(const std::string& format) {
  for (size_t i = 0; i + 1 < format.size(); ++i) {
    if (format[i] != '%' || format[i + 1] != '{') continue;
    const size_t end = format.find('}', i + 2);
    if (end == std::string::npos) return "-w: unclosed %{ in the format";
    const std::string name = format.substr(i + 2, end - i - 2);
    if (!known(name)) {
      std::string list;
      for (std::string_view v : kVariables) list += (list.empty() ? "" : ", ") + std::string(v);
      return "-w: unknown variable %{" + name.substr(0, 40) + "} (known: " + list + ")";
    }
    i = end;
  }
  return std::nullopt;
}

std::string render_write_out(const std::string& format, const WriteOutValues& values) {
  std::string out;
  for (size_t i = 0; i < format.size(); ++i) {
    const char c = format[i];
    const char next = i + 1 < format.size() ? format[i + 1] : '\0';
    if (c == '%' && next == '{') {
      const size_t end = format.find('}', i + 2);
      out += value_of(std::string_view(format).substr(i + 2, end - i - 2), values);
      i = end;
    } else if (c == '%' && next == '%') {
      out += '%';
      ++i;
    } else if (c == '\\' && (next == 'n' || next == 'r' || next == 't' || next == '\\')) {
      out += next == 'n' ? '\n' : next == 'r' ? '\r' : next == 't' ? '\t' : '\\';
      ++i;
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace humus::cli
