// Header names and values (docs/transport.md §10.5). Input: fields "name:value", one a line. The settings check, the C
// ABI's humus_request_set_header and an independent reading of RFC 9110 agree on every field; Headers keeps
// its case-insensitive promises (set leaves one field, remove none, find the first, clear nothing).
#include <humus_http.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/headers.h"
#include "fuzz_check.h"
#include "settings/settings.h"

namespace {

bool tchar(char c) {
  static constexpr std::string_view kSpecials = "!#$%&'*+-.^_`|~";
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         kSpecials.find(c) != std::string_view::npos;
}

// The headers the client owns (framing, origin, connection management): never a caller's.
bool client_owned(std::string_view name) {
  static constexpr std::string_view kOwned[] = {"host",    "content-length", "transfer-encoding",
                                                "connection", "keep-alive", "upgrade",
                                                "te",      "trailer",        "proxy-connection"};
  for (const std::string_view owned : kOwned) {
    if (owned.size() != name.size()) continue;
    bool same = true;
    for (size_t i = 0; i < name.size() && same; ++i) {
      const char c = name[i] >= 'A' && name[i] <= 'Z' ? static_cast<char>(name[i] - 'A' + 'a') : name[i];
      same = c == owned[i];
    }
    if (same) return true;
  }
  return false;
}

bool valid(std::string_view name, std::string_view value) {
  if (name.empty() || client_owned(name)) return false;
  for (const char c : name) {
    if (!tchar(c)) return false;
  }
  for (const char c : value) {
    const auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 && c != '\t') || u == 0x7f) return false;  // control characters but HTAB
  }
  return true;
}

size_t count_named(const humus::Headers& h, std::string_view name) {
  size_t n = 0;
  for (const auto& f : h.fields()) n += humus::equals_ignore_case(f.first, name) ? 1 : 0;
  return n;
}

}  // namespace

// S25: the libFuzzer target `headers`; its corpus replays as the ctest fuzz.headers.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  humus_request* request = nullptr;
  if (humus_request_new("GET", "http://fuzz.example/", &request, nullptr) != HUMUS_OK) std::abort();
  humus::Headers headers;
  bool all_valid = true;
  bool repeated = false;
  while (!in.empty()) {
    auto [line, rest] = humus::fuzz::split_once(in, '\n');
    in = rest;
    // A CR before the split stays in the value, as a caller's value could carry one.
    const auto [name, value] = humus::fuzz::split_once(line, ':');
    const bool ok = humus::settings::check_header(name, value).ok();
    FUZZ_CHECK(ok == valid(name, value), std::string(name).c_str());
    all_valid = all_valid && ok;
    repeated = repeated || headers.contains(name);

    const std::string cname(name), cvalue(value);
    // Without a NUL the C ABI sees all of it.
    if (cname.find('\0') == std::string::npos && cvalue.find('\0') == std::string::npos) {
      humus_error* err = nullptr;
      const humus_status st = humus_request_set_header(request, cname.c_str(), cvalue.c_str(), &err);
      FUZZ_CHECK((st == HUMUS_OK) == ok, cname.c_str());
      humus_error_free(err);
    }
    headers.add(cname, cvalue);
    FUZZ_CHECK(headers.find(name) != nullptr, "a field just added is found");
  }
  FUZZ_CHECK(humus::settings::check_headers(headers).ok() == (all_valid && !repeated), "check_headers");

  humus::Headers copy = headers;
  for (const auto& [name, value] : headers.fields()) {
    copy.set(name, "x");
    FUZZ_CHECK(count_named(copy, name) == 1 && *copy.find(name) == "x", name.c_str());
    copy.remove(name);
    FUZZ_CHECK(count_named(copy, name) == 0 && !copy.contains(name), name.c_str());
  }
  FUZZ_CHECK(copy.empty(), "every field removed");

  // clear() leaves nothing to find, and the list takes fields again (the transport clears an attempt's
  // list at every status line).
  humus::Headers cleared = headers;
  cleared.clear();
  FUZZ_CHECK(cleared.empty() && cleared.size() == 0, "cleared");
  for (const auto& [name, value] : headers.fields()) FUZZ_CHECK(!cleared.contains(name), name.c_str());
  if (!headers.empty()) {
    const auto& [name, value] = headers.fields().front();
    cleared.add(name, value);
    FUZZ_CHECK(cleared.size() == 1 && *cleared.find(name) == value, "a field added after clear()");
  }
  humus_request_free(request);
  return 0;
}
