#include "fetch.h"

#include <humus_http.h>
#include <strings.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <random>
#include <nlohmann/json.hpp>
#include <system_error>
#include <thread>
#include <vector>

#include "capi.h"
#include "exit_codes.h"
#include "faults.h"
#include "metrics.h"
#include "trace.h"
#include "write_out.h"

namespace humus::cli {
namespace {

using Json = nlohmann::json;

constexpr const char* kDecisions = "humus.retry.decisions";

struct Outcome {
  int code = exit_code::kOk;
  std::string message;
};

// Reads FILE whole ("-" is stdin); false with the reason.
bool read_file(const std::string& name, std::string& out, std::string& why) {
  if (name == "-") {
    out.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
    if (std::cin.bad()) {
      why = "cannot read stdin";
      return false;
    }
    return true;
  }
  std::ifstream in(name, std::ios::binary);
  if (!in) {
    const int error = errno;
    why = "cannot read " + name + ": " + std::generic_category().message(error);
    return false;
  }
  out.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  if (in.bad()) {
    const int error = errno;
    why = "cannot read " + name + ": " + std::generic_category().message(error);
    return false;
  }
  return true;
}

// The URL as it may be printed: a user and password in it become "***" (they are never echoed).
std::string shown_url(const std::string& url) {
  const size_t scheme_end = url.find("://");
  if (scheme_end == std::string::npos) return url;
  const size_t authority_end = url.find_first_of("/?#", scheme_end + 3);
  const size_t at = url.rfind('@', authority_end == std::string::npos ? url.size() : authority_end);
  if (at == std::string::npos || at < scheme_end + 3) return url;
  return url.substr(0, scheme_end + 3) + "***" + url.substr(at);
}

// scheme://host[:port] of an absolute URL: the client's origin (docs/origin.md §2). The library checks the rest.
std::string origin_of(const std::string& url) {
  const size_t scheme_end = url.find("://");
  if (scheme_end == std::string::npos) return url;
  return url.substr(0, url.find_first_of("/?#", scheme_end + 3));
}

// Where each settings key came from, so an error names what the user typed.
struct Sources {
  std::vector<std::pair<std::string, std::string>> flag_of_key;  // "timeout" -> "--max-time"
  bool base_url_from_url = false;
  std::string url;  // as given
  std::optional<std::string> settings_file;
  std::vector<std::string> tls_flags;  // which of --cacert, --cert, --key were given

  [[nodiscard]] const std::string* flag_for(const std::string& key) const {
    for (const auto& [k, flag] : flag_of_key) {
      if (k == key) return &flag;
    }
    return nullptr;
  }
};

// A settings or client error, blamed on the flags (or the URL, or the --settings file) that set its keys.
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

// The settings JSON: the --settings file, then every flag over it, base_url from the URL when absent.
std::optional<Outcome> settings_json(const FetchOptions& o, Json& j, Sources& src) {
  j = Json::object();
  if (o.settings_file) {
    const std::string& file = *o.settings_file;
    src.settings_file = file;
    std::string text;
    std::string why;
    if (!read_file(file, text, why)) return Outcome{exit_code::kConfig, "--settings: " + why};
    j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) return Outcome{exit_code::kConfig, "--settings " + file + ": not valid JSON"};
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

// curl's --data-urlencode: every byte but the unreserved ones as %XX.
std::string url_encoded(const std::string& s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
        c == '_' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
    }
  }
  return out;
}

// The data: every -d / --data-binary / --data-urlencode joined with '&' as curl does; --json pieces as given.
std::optional<Outcome> body_of(const FetchOptions& o, std::string& body) {
  for (size_t i = 0; i < o.data.size(); ++i) {
    const DataPiece& piece = o.data[i];
    std::string bytes = piece.text;
    if (piece.from_file) {
      std::string why;
      if (!read_file(piece.text, bytes, why))
        return Outcome{exit_code::kRead, piece.flag + " @" + piece.text + ": " + why};
      if (piece.strip_newlines) std::erase_if(bytes, [](char c) { return c == '\r' || c == '\n'; });
    }
    if (piece.kind == DataPiece::Kind::kUrlencode)
      bytes = (piece.has_name ? piece.name + "=" : "") + url_encoded(bytes);
    if (i > 0 && piece.kind != DataPiece::Kind::kJson) body += '&';
    body += bytes;
  }
  return std::nullopt;
}

// curl's guesses from a file name's extension; application/octet-stream otherwise.
std::string content_type_of(const std::string& file) {
  static const std::pair<const char*, const char*> kTypes[] = {
      {".txt", "text/plain"},       {".html", "text/html"},        {".htm", "text/html"},
      {".css", "text/css"},         {".csv", "text/csv"},          {".json", "application/json"},
      {".xml", "application/xml"},  {".pdf", "application/pdf"},   {".zip", "application/zip"},
      {".png", "image/png"},        {".jpg", "image/jpeg"},        {".jpeg", "image/jpeg"},
      {".gif", "image/gif"},        {".svg", "image/svg+xml"},     {".js", "application/javascript"}};
  for (const auto& [ext, type] : kTypes) {
    const size_t n = std::strlen(ext);
    if (file.size() > n && strcasecmp(file.c_str() + file.size() - n, ext) == 0) return type;
  }
  return "application/octet-stream";
}

// -F's parts as multipart/form-data (RFC 7578); `boundary` is chosen to appear in none of them.
std::optional<Outcome> form_body(const FetchOptions& o, std::string& body, std::string& boundary) {
  struct Part {
    std::string headers;
    std::string bytes;
  };
  std::vector<Part> parts;
  for (const FormPart& f : o.form) {
    Part part;
    part.bytes = f.value;
    if (f.from_file) {
      std::string why;
      if (!read_file(f.value, part.bytes, why))
        return Outcome{exit_code::kRead,
                       "-F " + f.name + "=" + (f.upload ? "@" : "<") + f.value + ": " + why};
    }
    part.headers = "Content-Disposition: form-data; name=\"" + f.name + "\"";
    if (f.upload) {
      std::string filename = f.filename.value_or(f.value == "-" ? std::string() : f.value);
      if (!f.filename) filename = filename.substr(filename.find_last_of('/') + 1);
      if (!filename.empty()) part.headers += "; filename=\"" + filename + "\"";
      part.headers += "\r\nContent-Type: " + f.type.value_or(content_type_of(filename));
    } else if (f.type) {
      part.headers += "\r\nContent-Type: " + *f.type;
    }
    parts.push_back(std::move(part));
  }
  std::random_device seed;
  std::mt19937_64 random(seed());
  for (;;) {
    char hex[33];
    std::snprintf(hex, sizeof hex, "%016llx%016llx", static_cast<unsigned long long>(random()),
                  static_cast<unsigned long long>(random()));
    boundary = std::string("------------------------") + hex;
    if (std::none_of(parts.begin(), parts.end(),
                     [&](const Part& p) { return p.bytes.find(boundary) != std::string::npos; }))
      break;
  }
  for (const Part& p : parts) body += "--" + boundary + "\r\n" + p.headers + "\r\n\r\n" + p.bytes + "\r\n";
  body += "--" + boundary + "--\r\n";
  return std::nullopt;
}

// The URL's last path segment, for -O; empty when it has none.
std::string remote_name_of(const std::string& url) {
  const size_t scheme_end = url.find("://");
  const size_t path = url.find('/', scheme_end == std::string::npos ? 0 : scheme_end + 3);
  if (path == std::string::npos) return "";
  std::string p = url.substr(path, url.find_first_of("?#", path) - path);
  return p.substr(p.find_last_of('/') + 1);
}

// -G: the data after the URL's query (or as its query), before any fragment.
std::string with_query(const std::string& url, const std::string& data) {
  const size_t hash = url.find('#');
  std::string base = url.substr(0, hash);
  if (!data.empty()) {
    base += (base.find('?') == std::string::npos ? "?" : (base.back() == '?' ? "" : "&")) + data;
  }
  return base + (hash == std::string::npos ? "" : url.substr(hash));
}

std::string base64(const std::string& in) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const uint32_t n = (static_cast<unsigned char>(in[i]) << 16) |
                       (static_cast<unsigned char>(in[i + 1]) << 8) | static_cast<unsigned char>(in[i + 2]);
    for (int k = 18; k >= 0; k -= 6) out += kAlphabet[(n >> k) & 63];
  }
  if (i < in.size()) {
    uint32_t n = static_cast<unsigned char>(in[i]) << 16;
    if (i + 1 < in.size()) n |= static_cast<unsigned char>(in[i + 1]) << 8;
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += i + 1 < in.size() ? kAlphabet[(n >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

bool has_header(const FetchOptions& o, const char* name) {
  return std::any_of(o.headers.begin(), o.headers.end(),
                     [&](const auto& h) { return strcasecmp(h.first.c_str(), name) == 0; });
}

// Where the output goes: stdout, or -o FILE opened at the first write (a refused --fail call creates none).
class Output {
 public:
  // `flag` names the file in messages: "-o", "-D".
  explicit Output(std::optional<std::string> path, std::string flag = "-o")
      : path_(std::move(path)), flag_(std::move(flag)) {}
  Output(const Output&) = delete;
  Output& operator=(const Output&) = delete;
  ~Output() {
    if (file_ != nullptr && file_ != stdout) std::fclose(file_);
  }

  std::optional<Outcome> write(const void* data, size_t len) {
    if (file_ == nullptr) {
      file_ = path_ ? std::fopen(path_->c_str(), "wb") : stdout;
      if (file_ == nullptr) return failed();
    }
    if (len > 0 && std::fwrite(data, 1, len, file_) != len) return failed();
    if (len > 0) ends_line_ = static_cast<const char*>(data)[len - 1] == '\n';
    return std::nullopt;
  }
  // Whether what went to stdout (if anything) ends with a newline.
  [[nodiscard]] bool stdout_ends_line() const { return path_.has_value() || file_ == nullptr || ends_line_; }
  std::optional<Outcome> write(const std::string& s) { return write(s.data(), s.size()); }
  std::optional<Outcome> finish() {
    if (file_ == nullptr) return std::nullopt;
    if (std::fflush(file_) != 0) return failed();
    if (file_ != stdout) {
      const int rc = std::fclose(file_);
      file_ = nullptr;
      if (rc != 0) return failed();
    }
    return std::nullopt;
  }

 private:
  [[nodiscard]] Outcome failed() const {
    const int error = errno;
    return {exit_code::kWrite, (path_ ? flag_ + " " + *path_ : std::string("stdout")) +
                                   ": cannot write: " + std::generic_category().message(error)};
  }

  std::optional<std::string> path_;
  std::string flag_;
  FILE* file_ = nullptr;
  bool ends_line_ = true;
};

struct CallResult {
  Response response;
  Error error;
  int64_t elapsed_ms = 0;
  int64_t elapsed_us = 0;
  std::string breaker_state;  // just after the call, for -w
  // The body, read as soon as the call returns: reading it is what counts the result (docs/bodies.md §7).
  const void* body = nullptr;
  size_t body_len = 0;
  Error body_error;
};

std::string attempts_text(int32_t n) { return std::to_string(n) + (n == 1 ? " attempt" : " attempts"); }

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

// JSON text of a document built from the command line. Arguments are bytes, not necessarily UTF-8, and
// dump() throws on invalid UTF-8 (which ended the program through std::terminate): such bytes become
// U+FFFD, and the library then refuses or ignores the value as it would any other bad one.
std::string json_text_of(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

// The effective settings for -v, with a private key's PEM left out.
std::string redacted_settings(const Json& effective) {
  Json j = effective;
  if (j.contains("tls") && j["tls"].is_object() && j["tls"].contains("key_pem"))
    j["tls"]["key_pem"] = "(redacted)";
  return json_text_of(j);
}

}  // namespace

int run_fetch(const FetchOptions& o) {
  const auto report = [&](const Outcome& out) {
    if (!o.silent && !out.message.empty())
      std::fprintf(stderr, "humus-http: (%d) %s\n", out.code, out.message.c_str());
    return out.code;
  };

  std::string body;
  std::string boundary;
  if (auto failed = o.form.empty() ? body_of(o, body) : form_body(o, body, boundary)) return report(*failed);
  std::string url = o.url;
  const bool has_body = !o.form.empty() || (!o.data.empty() && !o.get_query);
  if (o.get_query) {
    url = with_query(o.url, body);
    body.clear();
  }
  std::optional<std::string> output_path = o.output;
  if (o.remote_name) {
    output_path = remote_name_of(o.url);
    if (output_path->empty())
      return report({exit_code::kWrite, "-O: the URL '" + shown_url(o.url) + "' names no file in its path"});
  }

  // Settings, then the client.
  Json json;
  Sources sources;
  if (auto failed = settings_json(o, json, sources)) return report(*failed);
  humus_error* raw_error = nullptr;
  humus_settings* raw_settings = nullptr;
  const std::string json_text = json_text_of(json);
  if (humus_settings_from_json(json_text.data(), json_text.size(), &raw_settings, &raw_error) != HUMUS_OK) {
    Error e(raw_error);
    return report(settings_error(e.get(), sources));
  }
  Settings settings(raw_settings);

  Json effective;
  {
    char* text = nullptr;
    size_t len = 0;
    if (humus_settings_to_json(settings.get(), &text, &len, &raw_error) != HUMUS_OK) {
      Error e(raw_error);
      return report({exit_code::kFailure, describe(e.get())});
    }
    LibString owned(text);
    effective = Json::parse(std::string(text, len), nullptr, false);
    if (!effective.is_object())
      return report({exit_code::kFailure, "the effective settings are not a JSON object"});
  }
  const Json budget = effective.value("retry_budget", Json::object());
  Tracer tracer(effective.value("classify", "humus"), budget.value("policy", "token_bucket"),
                budget.value("tokens", 0.0));
  if (o.trace && tracer.install(settings.get(), &raw_error) != HUMUS_OK) {
    Error e(raw_error);
    return report({exit_code::kFailure, "--trace: " + describe(e.get())});
  }

  Json runtime_options = Json::object();
  if (!o.faults.empty()) runtime_options["faults"] = true;
  if (!o.resolve.empty()) {
    Json& resolve = runtime_options["resolve"];
    resolve = Json::object();
    for (const auto& [from, to] : o.resolve) resolve[from] = to;
  }
  const std::string options_text = json_text_of(runtime_options);
  humus_runtime* raw_runtime = nullptr;
  if (humus_runtime_new(options_text.data(), options_text.size(), &raw_runtime, &raw_error) != HUMUS_OK) {
    Error e(raw_error);
    return report({exit_code::kUsage, "--resolve: " + describe(e.get())});
  }
  Runtime runtime(raw_runtime);
  if (o.trace && tracer.install_log_sink(runtime.get(), &raw_error) != HUMUS_OK) {
    Error e(raw_error);
    return report({exit_code::kFailure, "--trace: " + describe(e.get())});
  }
  humus_client* raw_client = nullptr;
  if (humus_client_new(runtime.get(), settings.get(), &raw_client, &raw_error) != HUMUS_OK) {
    Error e(raw_error);
    return report(settings_error(e.get(), sources));
  }
  Client client(raw_client);
  tracer.attach(client.get());

  // The request.
  humus_request* raw_request = nullptr;
  if (humus_request_new(o.method.c_str(), url.c_str(), &raw_request, &raw_error) != HUMUS_OK) {
    Error e(raw_error);
    const bool method =
        humus_error_field_count(e.get()) == 1 && std::strcmp(humus_error_field(e.get(), 0), "method") == 0;
    if (method) return report({exit_code::kUsage, "-X '" + o.method + "': " + describe(e.get())});
    const std::string hint = shown_url(url) != url ? " (give a user and password with -u)" : "";
    return report({exit_code::kUrl, "URL '" + shown_url(url) + "': " + describe(e.get()) + hint});
  }
  Request request(raw_request);
  std::vector<std::pair<std::string, std::string>> sent_headers;
  // curl's: what -A, -u and --json imply comes first, and a -H of the same name replaces it.
  const bool json_body = !o.data.empty() && o.data.front().kind == DataPiece::Kind::kJson;
  if (o.user_agent && !has_header(o, "User-Agent")) sent_headers.emplace_back("User-Agent", *o.user_agent);
  if (o.user && !has_header(o, "Authorization"))
    sent_headers.emplace_back("Authorization", "Basic " + base64(*o.user));
  if (json_body && !has_header(o, "Accept")) sent_headers.emplace_back("Accept", "application/json");
  if (has_body && !has_header(o, "Content-Type")) {
    sent_headers.emplace_back("Content-Type", !o.form.empty() ? "multipart/form-data; boundary=" + boundary
                                              : json_body     ? "application/json"
                                                              : "application/x-www-form-urlencoded");
  }
  sent_headers.insert(sent_headers.end(), o.headers.begin(), o.headers.end());
  // The fault scenario joins the baggage a -H gives, else it is the call context's baggage.
  std::string fault_member;
  if (!o.faults.empty()) fault_member = cli::fault_member(o.faults, cli::fault_point(effective.value("base_url", "")));
  for (auto& [name, value] : sent_headers) {
    if (!fault_member.empty() && strcasecmp(name.c_str(), "baggage") == 0) {
      value += "," + fault_member;
      fault_member.clear();
    }
    if (humus_request_set_header(request.get(), name.c_str(), value.c_str(), &raw_error) != HUMUS_OK) {
      Error e(raw_error);
      return report({exit_code::kUsage, "-H '" + name + "': " + describe(e.get())});
    }
  }
  if (!fault_member.empty() &&
      humus_request_set_context(request.get(), nullptr, nullptr, fault_member.c_str(), nullptr, nullptr,
                                &raw_error) != HUMUS_OK) {
    Error e(raw_error);
    return report({exit_code::kUsage, "--inject-fault: " + describe(e.get())});
  }
  if (o.idempotency_key &&
      humus_request_set_idempotency_key(request.get(), o.idempotency_key->c_str(), &raw_error) != HUMUS_OK) {
    Error e(raw_error);
    return report({exit_code::kUsage, "--idempotency-key: " + describe(e.get())});
  }
  if (has_body && humus_request_set_body(request.get(), body.data(), body.size()) != HUMUS_OK) {
    return report({exit_code::kFailure, "the body could not be set"});
  }
  if (o.retry_all_errors &&
      humus_request_set_retry(request.get(), HUMUS_RETRY_MODE_FORCE, &raw_error) != HUMUS_OK) {
    Error e(raw_error);
    return report({exit_code::kFailure, "--retry-all-errors: " + describe(e.get())});
  }
  if (o.retry_max_time_ms &&
      humus_request_set_timeout_ms(request.get(), *o.retry_max_time_ms, &raw_error) != HUMUS_OK) {
    Error e(raw_error);
    return report({exit_code::kFailure, "--retry-max-time: " + describe(e.get())});
  }

  if (o.verbose) {
    std::fprintf(stderr, "* humus-http %s, libhumus_http %s\n", HUMUS_VERSION_STRING, humus_version());
    std::fprintf(stderr, "* settings: %s\n", redacted_settings(effective).c_str());
    for (const auto& [from, to] : o.resolve)
      std::fprintf(stderr, "* resolve: %s -> %s\n", from.c_str(), to.c_str());
    std::fprintf(stderr, "> %s %s\n", o.method.c_str(), shown_url(url).c_str());
    for (const auto& [name, value] : sent_headers) {
      // Credentials are never printed: the scheme stays, the rest is hidden.
      const bool secret = strcasecmp(name.c_str(), "Authorization") == 0 ||
                          strcasecmp(name.c_str(), "Proxy-Authorization") == 0;
      const std::string v = secret ? value.substr(0, value.find(' ')) + " (hidden)" : value;
      std::fprintf(stderr, "> %s: %s\n", name.c_str(), v.c_str());
    }
    if (o.idempotency_key) std::fprintf(stderr, "> Idempotency-Key: %s\n", o.idempotency_key->c_str());
    if (has_body) std::fprintf(stderr, "> (body: %zu bytes)\n", body.size());
  }
  if (o.trace) {
    std::fprintf(stderr, "trace: client for %s: max_attempts %d, timeout %s, attempt_timeout %s; %s; %s\n",
                 effective.value("base_url", "").c_str(), effective.value("max_attempts", 0),
                 effective.value("timeout", "").c_str(), effective.value("attempt_timeout", "").c_str(),
                 tracer.breaker_summary().c_str(), tracer.budget_summary().c_str());
  }

  // The calls: --repeat of them, --concurrency at a time, all through the one client.
  std::vector<CallResult> results(static_cast<size_t>(o.repeat));
  std::atomic<int32_t> next{0};
  const auto worker = [&] {
    for (;;) {
      const int32_t i = next.fetch_add(1, std::memory_order_relaxed);
      if (i >= o.repeat) return;
      // One call at a time: the decisions counted around it are its own.
      const bool own_decisions = o.trace && o.concurrency == 1;
      std::map<std::string, uint64_t> decisions_before;
      if (own_decisions) decisions_before = counter_by_attribute(runtime.get(), kDecisions);
      const auto start = std::chrono::steady_clock::now();
      humus_response* resp = nullptr;
      humus_error* err = nullptr;
      (void)humus_client_do(client.get(), request.get(), &resp, &err);
      CallResult& r = results[static_cast<size_t>(i)];
      r.response.reset(resp);
      r.error.reset(err);
      humus_error* body_err = nullptr;
      if (resp != nullptr && humus_response_body(resp, &r.body, &r.body_len, &body_err) != HUMUS_OK) {
        r.body_error.reset(body_err);
      }
      const auto elapsed = std::chrono::steady_clock::now() - start;
      r.elapsed_ms = std::chrono::duration_cast<std::chrono::milliseconds>(elapsed).count();
      r.elapsed_us = std::chrono::duration_cast<std::chrono::microseconds>(elapsed).count();
      int32_t state = -1;
      if (o.write_out && humus_client_breaker_state(client.get(), &state) == HUMUS_OK)
        r.breaker_state = circuit_name(state);
      if (o.trace) {
        std::string what = resp != nullptr ? std::to_string(humus_response_status(resp)) + " after " +
                                                 attempts_text(humus_response_attempts(resp))
                                           : std::string(humus_status_name(humus_error_status(err))) +
                                                 " after " + attempts_text(humus_error_attempts(err));
        if (own_decisions) {
          what += " in " + std::to_string(r.elapsed_ms) + " ms | retry decisions: " +
                  decisions_text(counter_by_attribute(runtime.get(), kDecisions), decisions_before);
        } else {
          what += " in " + std::to_string(r.elapsed_ms) + " ms";
        }
        std::fprintf(stderr, "trace: call %d of %d: %s | after it: %s, %s\n", i + 1, o.repeat, what.c_str(),
                     tracer.breaker_summary().c_str(), tracer.budget_summary().c_str());
      }
    }
  };
  std::vector<std::thread> helpers;
  for (int32_t t = 1; t < o.concurrency; ++t) helpers.emplace_back(worker);
  worker();
  for (std::thread& t : helpers) t.join();
  if (o.trace && o.concurrency > 1) {
    std::fprintf(stderr, "trace: retry decisions of all %d calls: %s\n", o.repeat,
                 decisions_text(counter_by_attribute(runtime.get(), kDecisions)).c_str());
  }

  // Output, in call order.
  Output out(output_path, o.remote_name ? "-O" : "-o");
  Output headers_out(o.dump_header == "-" ? std::nullopt : o.dump_header, "-D");
  Output write_out(std::nullopt);
  int status = exit_code::kOk;
  for (size_t i = 0; i < results.size(); ++i) {
    const CallResult& r = results[i];
    const std::string which =
        o.repeat > 1 ? "call " + std::to_string(i + 1) + " of " + std::to_string(o.repeat) + ": " : "";
    // This call's exit status; a write that fails ends the command.
    int call_status = exit_code::kOk;
    humus_response* resp = r.response.get();
    if (resp == nullptr) {
      const humus_error* e = r.error.get();
      if (!o.faults.empty() && humus_error_field_count(e) == 1 &&
          std::strcmp(humus_error_field(e, 0), "baggage") == 0) {
        // The scenario cannot be read.
        call_status = report({exit_code::kUsage, "--inject-fault: " + describe(e)});
      } else {
        std::string message = which + humus_status_name(humus_error_status(e)) + ": " + describe(e) +
                              " (after " + attempts_text(humus_error_attempts(e)) + ")";
        if (humus_error_status(e) == HUMUS_E_REJECTED) {
          message += "; the breaker stays open " + std::to_string(humus_error_retry_after_ms(e)) + " ms more";
        }
        call_status = report({exit_code::for_call_error(e), message});
      }
    } else {
      const int32_t code = humus_response_status(resp);
      if (o.verbose) {
        std::fputs(headers_block(resp, "< ", "\n").c_str(), stderr);
        std::fprintf(stderr, "* %s%d after %s in %lld ms\n", which.c_str(), code,
                     attempts_text(humus_response_attempts(resp)).c_str(),
                     static_cast<long long>(r.elapsed_ms));
      }
      if (o.dump_header) {
        if (auto failed = headers_out.write(headers_block(resp, "", "\r\n") + "\r\n")) return report(*failed);
      }
      if (o.fail && code >= 400) {
        call_status = report(
            {exit_code::kHttpError, which + "the server answered " + std::to_string(code) + " (--fail)"});
      } else {
        if (o.include || o.method == "HEAD") {
          if (auto failed = out.write(headers_block(resp, "", "\r\n") + "\r\n")) return report(*failed);
        }
        if (r.body_error) {
          const humus_error* e = r.body_error.get();
          call_status = report({exit_code::for_call_error(e), which + "reading the body: " + describe(e)});
        } else {
          if (auto failed = out.write(r.body, r.body_len)) return report(*failed);
          if (o.fail_with_body && code >= 400) {
            const std::string answered = "the server answered " + std::to_string(code);
            call_status = report({exit_code::kHttpError, which + answered + " (--fail-with-body)"});
          }
        }
      }
    }
    if (o.write_out) {
      WriteOutValues v;
      v.time_total_us = r.elapsed_us;
      v.exitcode = call_status;
      v.breaker_state = r.breaker_state;
      if (resp != nullptr) {
        v.http_code = humus_response_status(resp);
        v.size_download = r.body_error ? 0 : r.body_len;
        v.attempts = humus_response_attempts(resp);
        v.url_effective = shown_url(humus_response_url(resp));
      } else {
        v.attempts = humus_error_attempts(r.error.get());
        v.url_effective = shown_url(url);
      }
      if (auto failed = write_out.write(render_write_out(*o.write_out, v))) return report(*failed);
    }
    if (call_status != exit_code::kOk) status = call_status;
  }
  if (o.dump_header && o.dump_header != "-") {
    if (auto failed = headers_out.finish()) return report(*failed);
  }
  if (o.metrics) {
    char* text = nullptr;
    size_t len = 0;
    if (humus_runtime_metrics_prometheus(runtime.get(), &text, &len, &raw_error) != HUMUS_OK) {
      Error e(raw_error);
      return report({exit_code::kFailure, "--metrics: " + describe(e.get())});
    }
    LibString owned(text);
    // After the body on stdout, the metrics start on a line of their own.
    if (!out.stdout_ends_line()) {
      if (auto failed = out.write("\n")) return report(*failed);
    }
    if (auto failed = out.finish()) return report(*failed);
    Output metrics_out(std::nullopt);
    if (auto failed = metrics_out.write(text, len)) return report(*failed);
    if (auto failed = metrics_out.finish()) return report(*failed);
    return status;
  }
  if (auto failed = out.finish()) return report(*failed);
  return status;
}

}  // namespace humus::cli
