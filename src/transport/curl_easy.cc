#include "transport/curl_easy.h"

#include <cstdio>
#include <cstring>

#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <charconv>
#include <new>
#include <string_view>

#include "transport/curl_errors.h"

namespace humus::transport {
namespace {

using std::chrono::duration_cast;
using std::chrono::milliseconds;


using std::chrono::duration_cast;
using std::chrono::milliseconds;

bool is_ip_literal(std::string_view host) {
  return host.find(':') != std::string_view::npos ||
         std::all_of(host.begin(), host.end(), [](char c) { return (c >= '0' && c <= '9') || c == '.'; });
}

// Hostname verification by OpenSSL itself, never against the subject CN: libcurl 7.88 falls back to the CN
// of a certificate with no subjectAltName, which Go and browsers refuse (SPEC §19).
CURLcode pin_hostname_check(CURL* /*easy*/, void* ssl_ctx, void* user) {
  const std::string& host = *static_cast<const std::string*>(user);
  X509_VERIFY_PARAM* param = SSL_CTX_get0_param(static_cast<SSL_CTX*>(ssl_ctx));
  X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NEVER_CHECK_SUBJECT | X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
  const int ok = is_ip_literal(host) ? X509_VERIFY_PARAM_set1_ip_asc(param, host.c_str())
                                     : X509_VERIFY_PARAM_set1_host(param, host.c_str(), host.size());
  return ok == 1 ? CURLE_OK : CURLE_SSL_CERTPROBLEM;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n')) {
    s.remove_suffix(1);
  }
  return s;
}

size_t on_header(char* data, size_t size, size_t count, void* user) {
  auto& st = *static_cast<AttemptState*>(user);
  const size_t n = size * count;
  const std::string_view line = trim(std::string_view(data, n));
  if (line.starts_with("HTTP/")) {
    // A new status line: an interim 1xx response was replaced, start over.
    st.response.headers = Headers();
    st.content_length.clear();
    const size_t sp = line.find(' ');
    int status = 0;
    if (sp != std::string_view::npos && line.size() >= sp + 4) {
      std::from_chars(line.data() + sp + 1, line.data() + sp + 4, status);
    }
    st.response.status = status;
    return n;
  }
  if (line.empty()) {
    if (st.response.status >= 200) st.headers_done = true;
    return n;
  }
  const size_t colon = line.find(':');
  if (colon == std::string_view::npos) return n;  // a folded or malformed line: libcurl already vetted framing
  std::string_view name = trim(line.substr(0, colon));
  std::string_view value = trim(line.substr(colon + 1));
  if (equals_ignore_case(name, "content-length")) {
    if (!st.content_length.empty() && st.content_length != value) {
      st.abort(Code::kProtocol, "response has two differing Content-Length headers (" + st.content_length +
                                    ", " + std::string(value) + ")");
      return 0;
    }
    st.content_length = value;
  }
  st.response.headers.add(std::string(name), std::string(value));
  return n;
}

size_t on_body(char* data, size_t size, size_t count, void* user) {
  auto& st = *static_cast<AttemptState*>(user);
  const size_t taken = st.sink.write(data, size * count);
  if (st.sink.over_limit()) {
    st.abort(Code::kTooLarge, "the response body passed max_response_body (" + std::to_string(st.sink.limit()) +
                                  " bytes" + (st.decoding ? ", decoded" : "") + ")");
  }
  return taken;
}

// The request body the caller streams (SPEC §7); a failing reader fails the attempt with kCallback.
size_t on_read(char* buf, size_t size, size_t count, void* user) {
  auto& st = *static_cast<AttemptState*>(user);
  if (st.source == nullptr) return 0;
  const size_t cap = size * count;
  Result<size_t> n = st.source->read(buf, cap);
  if (!n.ok()) {
    st.abort(Code::kCallback, "the request body reader failed: " + n.status().message());
    return CURL_READFUNC_ABORT;
  }
  return *n;
}

// libcurl rewinds a body it must send again within one attempt (its resend on a dead reused connection,
// an HTTP/2 refused stream): only a source with a rewind can.
int on_seek(void* user, curl_off_t offset, int origin) {
  auto& st = *static_cast<AttemptState*>(user);
  if (st.source == nullptr || offset != 0 || origin != SEEK_SET || !st.source->replayable()) {
    return CURL_SEEKFUNC_CANTSEEK;
  }
  if (Status s = st.source->rewind(); !s.ok()) {
    st.abort(Code::kCallback, "the request body reader's rewind failed: " + s.message());
    return CURL_SEEKFUNC_FAIL;
  }
  return CURL_SEEKFUNC_OK;
}

// Called by libcurl each time the request is about to go on the wire, including its silent resend
// (Curl_retry_request, SPEC §19). libcurl resends in two cases: the first send went on a reused connection
// that turned out dead — the request may have been processed, so one not safe to send twice stops here —
// or the server refused the HTTP/2 stream (REFUSED_STREAM: never processed, safe for any method). A send on
// a connection of its own can only be resent for the second reason.
int on_prereq(void* user, char* /*primary_ip*/, char* /*local_ip*/, int /*primary_port*/, int /*local_port*/) {
  auto& st = *static_cast<AttemptState*>(user);
  ++st.wire_sends;
  if (st.wire_sends == 1) {
    long connects = 0;
    curl_easy_getinfo(st.easy, CURLINFO_NUM_CONNECTS, &connects);
    st.first_send_reused = connects == 0;
  } else if (st.first_send_reused && !st.allow_resend) {
    st.abort(Code::kConnectionLost,
             "the reused connection closed before the response; the request was not sent again because it is "
             "not safe to send twice");
    return CURL_PREREQFUNC_ABORT;
  }
  return CURL_PREREQFUNC_OK;
}

long curl_http_version(const TransportConfig& c) {
  if (!c.https) return CURL_HTTP_VERSION_1_1;  // no h2c (SPEC §10.2)
  switch (c.http_version) {
    case TransportConfig::HttpVersion::k1_1: return CURL_HTTP_VERSION_1_1;
    case TransportConfig::HttpVersion::k2:
    case TransportConfig::HttpVersion::kAuto: return CURL_HTTP_VERSION_2TLS;
  }
  return CURL_HTTP_VERSION_2TLS;
}

}  // namespace

void ensure_curl_global() {
  // libcurl's global state, initialised once per process before the first handle.
  static const CURLcode rc = curl_global_init(CURL_GLOBAL_DEFAULT);
  (void)rc;
}

Slist make_slist(const std::vector<std::string>& lines) {
  curl_slist* list = nullptr;
  for (const std::string& line : lines) {
    curl_slist* grown = curl_slist_append(list, line.c_str());
    if (grown == nullptr) {
      curl_slist_free_all(list);
      throw std::bad_alloc();
    }
    list = grown;
  }
  return Slist(list);
}

void AttemptState::reset(bool resend_allowed) {
  response = WireResponse{};
  response.headers.reserve(12);  // one allocation for a typical response's header list
  headers_done = false;
  wire_sends = 0;
  allow_resend = resend_allowed;
  first_send_reused = false;
  content_length.clear();
  abort_code = Code::kOk;
  abort_message.clear();
}

void AttemptState::abort(Code code, std::string message) {
  abort_code = code;
  abort_message = std::move(message);
}

CurlEasy::CurlEasy(const TransportConfig& config, const Slist& connect_to)
    : easy_(curl_easy_init()), max_body_(config.max_response_body), decompress_(config.decompress) {
  if (easy_ == nullptr) throw std::bad_alloc();
  state_.easy = easy_;
  configure(config, connect_to);
}

CurlEasy::~CurlEasy() { curl_easy_cleanup(easy_); }

void CurlEasy::configure(const TransportConfig& c, const Slist& connect_to) {
  CURL* e = easy_;
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);  // redirects are the client's: one attempt each (SPEC §2)
  // No ambient proxy (SPEC §10.4): an empty proxy disables the environment's http_proxy and friends.
  curl_easy_setopt(e, CURLOPT_PROXY, "");
  curl_easy_setopt(e, CURLOPT_NOPROXY, "*");
  curl_easy_setopt(e, CURLOPT_NETRC, static_cast<long>(CURL_NETRC_IGNORED));
  curl_easy_setopt(e, CURLOPT_HTTP_VERSION, curl_http_version(c));
  curl_easy_setopt(e, CURLOPT_PIPEWAIT, 1L);
  curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
  curl_easy_setopt(e, CURLOPT_MAXAGE_CONN,
                   static_cast<long>(std::max<int64_t>(1, std::chrono::duration_cast<std::chrono::seconds>(c.idle_timeout).count())));
  curl_easy_setopt(e, CURLOPT_ERRORBUFFER, error_);
  curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(e, CURLOPT_HEADERDATA, &state_);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, &state_);
  curl_easy_setopt(e, CURLOPT_PREREQFUNCTION, on_prereq);
  curl_easy_setopt(e, CURLOPT_PREREQDATA, &state_);
  if (connect_to) curl_easy_setopt(e, CURLOPT_CONNECT_TO, connect_to.get());
  connect_timeout_ = c.connect_timeout;
  if (!c.https) return;

  // TLS (SPEC §10.3): verification always on; the given CA and nothing ambient, else the system roots.
  curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 1L);
  curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 2L);
  curl_easy_setopt(e, CURLOPT_SSLVERSION,
                   static_cast<long>(c.tls13_only ? CURL_SSLVERSION_TLSv1_3 : CURL_SSLVERSION_TLSv1_2));
  curl_easy_setopt(e, CURLOPT_SSL_CTX_FUNCTION, pin_hostname_check);
  curl_easy_setopt(e, CURLOPT_SSL_CTX_DATA, const_cast<std::string*>(&c.host));
  if (!c.ca_file.empty() || !c.ca_pem.empty()) {
    curl_easy_setopt(e, CURLOPT_CAPATH, nullptr);
    if (!c.ca_pem.empty()) {
      curl_blob blob{const_cast<char*>(c.ca_pem.data()), c.ca_pem.size(), CURL_BLOB_COPY};
      curl_easy_setopt(e, CURLOPT_CAINFO_BLOB, &blob);
    } else {
      curl_easy_setopt(e, CURLOPT_CAINFO, c.ca_file.c_str());
    }
  }
  if (!c.cert_pem.empty()) {
    curl_blob blob{const_cast<char*>(c.cert_pem.data()), c.cert_pem.size(), CURL_BLOB_COPY};
    curl_easy_setopt(e, CURLOPT_SSLCERT_BLOB, &blob);
  } else if (!c.cert_file.empty()) {
    curl_easy_setopt(e, CURLOPT_SSLCERT, c.cert_file.c_str());
  }
  if (!c.key_pem.empty()) {
    curl_blob blob{const_cast<char*>(c.key_pem.data()), c.key_pem.size(), CURL_BLOB_COPY};
    curl_easy_setopt(e, CURLOPT_SSLKEY_BLOB, &blob);
  } else if (!c.key_file.empty()) {
    curl_easy_setopt(e, CURLOPT_SSLKEY, c.key_file.c_str());
  }
}

namespace {
long to_ms_at_least_1(Duration d) {
  return static_cast<long>(std::max<int64_t>(1, duration_cast<milliseconds>(d).count()));
}
}  // namespace

void CurlEasy::prepare(const WireRequest& r, const AttemptLimits& limits, Instant now) {
  CURL* e = easy_;
  // Options persist on the handle between attempts; each is set again only when it changes, because libcurl
  // does real work per setopt (the request line and header block are rebuilt from them).
  if (r.url != last_url_) {
    curl_easy_setopt(e, CURLOPT_URL, r.url.c_str());
    last_url_ = r.url;
  }
  const bool has_body = r.body != nullptr || r.body_source != nullptr;
  if (has_body || r.method != last_method_ || last_had_body_) {
    curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, nullptr);
    const bool sends_body_by_default = r.method == "POST" || r.method == "PUT" || r.method == "PATCH";
    if (r.method == "HEAD") {
      curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
    } else if (has_body || sends_body_by_default) {
      // POST framing gives Content-Length (0 for an empty body); the method name is then replaced.
      curl_easy_setopt(e, CURLOPT_POST, 1L);
      if (r.body_source != nullptr) {
        // No POSTFIELDS: libcurl reads the body through on_read; an unknown length (-1) is sent chunked on
        // HTTP/1.1.
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, nullptr);
        curl_easy_setopt(e, CURLOPT_READFUNCTION, on_read);
        curl_easy_setopt(e, CURLOPT_READDATA, &state_);
        curl_easy_setopt(e, CURLOPT_SEEKFUNCTION, on_seek);
        curl_easy_setopt(e, CURLOPT_SEEKDATA, &state_);
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(r.body_source->length()));
      } else {
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, r.body != nullptr ? r.body->data() : "");
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE,
                         static_cast<curl_off_t>(r.body != nullptr ? r.body->size() : 0));
      }
      if (r.method != "POST") curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, r.method.c_str());
    } else {
      curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
      if (r.method != "GET") curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, r.method.c_str());
    }
    last_method_ = r.method;
    last_had_body_ = has_body;
  }

  if (headers_ && patch_header_values(r.headers)) {
    // Same names, same value lengths: the list libcurl reads at each perform was rewritten in place.
  } else if (!headers_ || r.headers.fields() != last_headers_.fields()) {
    std::vector<std::string> lines;
    lines.reserve(r.headers.size() + 2);
    // No "Expect: 100-continue" round trip: the client's own timeouts bound a slow dependency.
    lines.emplace_back("Expect:");
    // Sent as a plain header rather than CURLOPT_USERAGENT, which libcurl re-formats on every request.
    if (!r.headers.contains("User-Agent")) lines.emplace_back("User-Agent: humus_http/" HUMUS_VERSION_STRING);
    for (const auto& [name, value] : r.headers.fields()) {
      // "Name;" is libcurl's spelling of a header with an empty value ("Name:" would remove it).
      lines.push_back(value.empty() ? name + ";" : name + ": " + value);
    }
    headers_ = make_slist(lines);
    last_headers_ = r.headers;
    header_nodes_.clear();
    curl_slist* node = headers_.get();
    for (size_t skip = lines.size() - r.headers.size(); skip > 0; --skip) node = node->next;
    for (; node != nullptr; node = node->next) header_nodes_.push_back(node);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, headers_.get());
  }

  // The call's deadline is the driver's to enforce (it also covers the body); libcurl only needs to know how
  // long a connect may take.
  const long connect_ms = to_ms_at_least_1(std::min(connect_timeout_, limits.attempt_deadline - now));
  if (connect_ms != last_connect_ms_) {
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, connect_ms);
    last_connect_ms_ = connect_ms;
  }
  // Decoded bodies by default (gzip, deflate, br, zstd: every coding this libcurl decodes, "" asks for all);
  // raw bytes when the caller asked for an encoding itself, for a HEAD or a Range (as Go's Transport).
  const bool decode = decompress_ && r.method != "HEAD" && !r.headers.contains("Accept-Encoding") &&
                      !r.headers.contains("Range");
  if (static_cast<int>(decode) != last_accept_encoding_) {
    curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, decode ? "" : nullptr);
    last_accept_encoding_ = static_cast<int>(decode);
  }
  state_.reset(r.allow_resend);
  state_.sink.buffer_into(&state_.response.body, max_body_);
  state_.source = r.body_source.get();
  state_.decoding = decode;
  error_[0] = '\0';
}

WireResult CurlEasy::head() {
  WireResult out;
  out.wire_sends = state_.wire_sends;
  out.headers_received = true;
  long version = 0;
  curl_easy_getinfo(easy_, CURLINFO_HTTP_VERSION, &version);
  out.response.status = state_.response.status;
  out.response.headers = std::move(state_.response.headers);
  if (state_.decoding) strip_decoded_headers(out.response.headers);
  out.response.http_version = version == CURL_HTTP_VERSION_2_0 ? "2" : version == CURL_HTTP_VERSION_1_0 ? "1.0" : "1.1";
  return out;
}

bool CurlEasy::patch_header_values(const Headers& next) {
  const auto& was = last_headers_.fields();
  const auto& now = next.fields();
  if (was.size() != now.size() || header_nodes_.size() != now.size()) return false;
  bool changed = false;
  for (size_t i = 0; i < now.size(); ++i) {
    if (was[i].first != now[i].first || was[i].second.size() != now[i].second.size()) return false;
    changed = changed || was[i].second != now[i].second;
  }
  if (!changed) return true;
  // Only values changed, each to one of the same length (an attempt's own traceparent, SPEC §13.1): rewriting
  // the bytes after "Name: " in the list's own strings spares rebuilding the whole list per attempt.
  for (size_t i = 0; i < now.size(); ++i) {
    const std::string& value = now[i].second;
    if (value.empty() || was[i].second == value) continue;
    std::memcpy(header_nodes_[i]->data + now[i].first.size() + 2, value.data(), value.size());
    last_headers_.replace_value(i, value);
  }
  return true;
}

WireResult CurlEasy::finish(CURLcode code, Interrupt interrupt) {
  WireResult out;
  out.wire_sends = state_.wire_sends;
  out.headers_received = state_.headers_done;
  if (interrupt == Interrupt::kCancelled) {
    out.error = Code::kCancelled;
    out.message = "the call was cancelled";
  } else if (interrupt == Interrupt::kAttemptTimeout) {
    out.error = Code::kTimeout;
    out.message = "attempt timed out before the response headers";
  } else if (interrupt == Interrupt::kCallTimeout) {
    out.error = Code::kTimeout;
    out.message = "the call's deadline passed";
  } else if (state_.abort_code != Code::kOk) {
    out.error = state_.abort_code;
    out.message = std::move(state_.abort_message);
  } else if (code != CURLE_OK) {
    const std::string_view detail = error_[0] != '\0' ? std::string_view(error_) : curl_easy_strerror(code);
    out.error = map_curl_error(code, detail, state_.headers_done);
    out.message = std::string(detail);
  } else {
    long version = 0;
    curl_easy_getinfo(easy_, CURLINFO_HTTP_VERSION, &version);
    state_.response.http_version = version == CURL_HTTP_VERSION_2_0 ? "2" : version == CURL_HTTP_VERSION_1_0 ? "1.0" : "1.1";
    if (state_.decoding) strip_decoded_headers(state_.response.headers);
    out.response = std::move(state_.response);
  }
  // A failed transfer may leave its connection half-used: the lane keeps no connection libcurl did not
  // vouch for, because libcurl closes those itself on error.
  return out;
}

}  // namespace humus::transport
