#include "settings_flags.h"

#include <algorithm>
#include <cstdio>

#include "capi.h"
#include "exit_codes.h"
#include "request_body.h"
#include "urls.h"

namespace humus::cli {

using Json = nlohmann::json;

namespace {

// The largest `timeout` the settings accept, from their schema (one table: docs/settings.md), for -m 0.
std::optional<std::string> longest_timeout() {
  char* text = nullptr;
  size_t len = 0;
  if (humus_settings_schema_json(&text, &len, nullptr) != HUMUS_OK) return std::nullopt;
  LibString owned(text);
  const Json schema = Json::parse(std::string(text, len), nullptr, false);
  if (!schema.is_object() || !schema.contains("keys") || !schema["keys"].is_array()) return std::nullopt;
  for (const Json& key : schema["keys"]) {
    if (key.is_object() && key.value("key", "") == "timeout" && key.contains("max") && key["max"].is_string())
      return key["max"].get<std::string>();
  }
  return std::nullopt;
}

// Where `text`, which is not JSON, stops being JSON: "not valid JSON at line 3, column 14: <the parser's why>".
// Parsed once more, with exceptions, only to learn the place (the first parse said no without one).
std::string where_not_json(const std::string& text) {
  try {
    const Json parsed = Json::parse(text);
    return parsed.is_discarded() ? "not valid JSON" : "valid JSON";  // not reached: the first parse failed
  } catch (const Json::parse_error& e) {
    // e.byte is 1-based: the byte the parser stopped at (one past the end for a text cut short).
    const size_t stop = std::min(e.byte > 0 ? e.byte - 1 : 0, text.size());
    size_t line = 1;
    size_t line_start = 0;
    for (size_t i = 0; i < stop; ++i) {
      if (text[i] == '\n') {
        ++line;
        line_start = i + 1;
      }
    }
    // The parser's own words after its "[json.exception...] parse error at ...: " prefix.
    std::string why = e.what();
    const size_t syntax = why.find("syntax error");
    why = syntax == std::string::npos ? std::string() : ": " + why.substr(syntax);
    return "not valid JSON at line " + std::to_string(line) + ", column " + std::to_string(stop - line_start + 1) +
           why;
  } catch (const Json::exception&) {
  }
  return "not valid JSON";
}

}  // namespace

const std::string* Sources::flag_for(const std::string& key) const {
  for (const auto& [k, flag] : flag_of_key) {
    if (k == key) return &flag;
  }
  return nullptr;
}

Outcome settings_error(const humus_error* e, const Sources& src) {
  std::vector<std::string> named;
  const auto name = [&](const std::string& n) {
    for (const std::string& x : named) {
      if (x == n) return;
    }
    named.push_back(n);
  };
  int code = exit_code::kConfig;
  bool flag_named = false;
  bool url_named = false;
  for (size_t i = 0; i < humus_error_field_count(e); ++i) {
    const std::string key = humus_error_field(e, i);
    if (const std::string* flag = src.flag_for(key)) {
      name(*flag);
      flag_named = true;
      if (key == "tls.ca_file") code = exit_code::kCaFile;
      if ((key == "tls.cert_file" || key == "tls.key_file") && code != exit_code::kCaFile) {
        code = exit_code::kClientCertFile;
      }
    } else if (key == "base_url" && src.base_url_from_url) {
      name("URL");
      url_named = true;
    } else if (key == "tls" && !src.tls_flags.empty()) {
      for (const std::string& f : src.tls_flags) name(f);
      flag_named = true;
    }
  }
  if (code == exit_code::kConfig) {
    // A rule across a flag and the URL (--cacert on an http URL) is the flag's fault: the URL alone is fine.
    if (flag_named) {
      code = exit_code::kUsage;
    } else if (url_named) {
      code = exit_code::kUrl;
    }
  }
  if (code == exit_code::kConfig && src.settings_file) name("--settings " + *src.settings_file);
  std::string message = describe(e);
  if (url_named) {
    // The user typed a URL, not a base_url: say so in the user's terms.
    for (size_t at = message.find("base_url: "); at != std::string::npos;
         at = message.find("base_url: ", at)) {
      message.erase(at, 10);
    }
  }
  std::string prefix;
  for (const std::string& n : named) {
    prefix += (prefix.empty() ? "" : ", ") + (n == "URL" ? "URL '" + shown_url(src.url) + "'" : n);
  }
  // A URL's user-info is refused (docs/origin.md §2) and must not be echoed on the way out.
  if (src.url != shown_url(src.url)) {
    for (size_t at = message.find(src.url); at != std::string::npos; at = message.find(src.url, at))
      message.replace(at, src.url.size(), shown_url(src.url));
    const std::string origin = origin_of(src.url);
    for (size_t at = message.find(origin); at != std::string::npos; at = message.find(origin, at))
      message.replace(at, origin.size(), shown_url(origin));
    message += " (give a user and password with -u)";
  }
  return {code, (prefix.empty() ? "" : prefix + ": ") + message};
}

std::optional<Outcome> settings_json(const FetchOptions& o, Json& j, Sources& src) {
  j = Json::object();
  if (o.settings_file) {
    const std::string& file = *o.settings_file;
    src.settings_file = file;
    std::string text;
    std::string why;
    if (!read_file(file, text, why)) return Outcome{exit_code::kConfig, "--settings: " + why};
    j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) return Outcome{exit_code::kConfig, "--settings " + file + ": " + where_not_json(text)};
    if (!j.is_object()) return Outcome{exit_code::kConfig, "--settings " + file + ": must be a JSON object"};
  }
  if (!j.contains("base_url")) {
    j["base_url"] = origin_of(o.url);
    src.base_url_from_url = true;
    src.url = o.url;
  }
  const auto set = [&](const std::string& key, const Json& value, const std::string& flag) {
    j[key] = value;
    src.flag_of_key.emplace_back(key, flag);
  };
  if (o.max_time) set("timeout", *o.max_time, "--max-time");
  if (o.max_time_longest) {
    const std::optional<std::string> longest = longest_timeout();
    if (!longest) return Outcome{exit_code::kFailure, "-m 0: the settings schema gives timeout no maximum"};
    set("timeout", *longest, "--max-time");
    if (!o.silent) {
      std::fprintf(stderr, "humus-http: note: -m 0: a call always has a deadline; this one's is the longest "
                   "allowed, %s (the setting timeout's maximum)\n", longest->c_str());
    }
  }
  if (o.attempt_timeout) set("attempt_timeout", *o.attempt_timeout, "--attempt-timeout");
  if (o.connect_timeout) set("connect_timeout", *o.connect_timeout, "--connect-timeout");
  if (o.retry) set("max_attempts", *o.retry + 1, "--retry");
  if (o.retry_delay) {
    set("backoff_base", *o.retry_delay, "--retry-delay");
    set("backoff_max", *o.retry_delay, "--retry-delay");
  }
  if (o.http_version) set("http_version", *o.http_version, *o.http_version == "2" ? "--http2" : "--http1.1");
  if (o.cacert || o.cert) {
    Json& tls = j["tls"];
    if (!tls.is_object()) tls = Json::object();
    const auto set_tls = [&](const char* key, const std::string& value, const std::string& flag) {
      tls[key] = value;
      src.flag_of_key.emplace_back(std::string("tls.") + key, flag);
      src.tls_flags.push_back(flag);
    };
    if (o.cacert) set_tls("ca_file", *o.cacert, "--cacert");
    if (o.cert) {
      set_tls("cert_file", *o.cert, "--cert");
      // curl's rule: without --key, the key is in the certificate's file.
      set_tls("key_file", o.key ? *o.key : *o.cert, o.key ? "--key" : "--cert");
    }
  }
  return std::nullopt;
}

// Arguments are bytes, not necessarily UTF-8, and dump() throws on invalid UTF-8 (which ended the program
// through std::terminate): such bytes become U+FFFD, and the library then refuses or ignores the value as it
// would any other bad one.
std::string json_text_of(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

std::string redacted_settings(const Json& effective) {
  Json j = effective;
  if (j.contains("tls") && j["tls"].is_object() && j["tls"].contains("key_pem"))
    j["tls"]["key_pem"] = "(redacted)";
  return json_text_of(j);
}

}  // namespace humus::cli
