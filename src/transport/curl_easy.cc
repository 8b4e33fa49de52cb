#include "transport/curl_easy.h"

#include <netinet/in.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <new>
#include <optional>
#include <string_view>

#include "transport/curl_errors.h"
#include "transport/fork.h"
#include "transport/h2_observer.h"
#include "transport/response_head.h"
#include "transport/version_info.h"

namespace humus::transport {

namespace {

using std::chrono::duration_cast;
using std::chrono::milliseconds;

// "http://h/a?" and "http://h/a?#f": a "?" with nothing after it before the fragment.
bool has_empty_query(std::string_view url) {
  const std::string_view before_fragment = url.substr(0, url.find('#'));
  const size_t q = before_fragment.find('?');
  return q != std::string_view::npos && q + 1 == before_fragment.size();
}

bool is_ip_literal(std::string_view host) {
  return host.find(':') != std::string_view::npos ||
         std::all_of(host.begin(), host.end(), [](char c) { return (c >= '0' && c <= '9') || c == '.'; });
}

// The TLS connections that read a close_notify alert lately on this thread — the thread that drives their
// transfers and then calls finish() — so that a connection's end can be told the peer's own from a cut.
// libcurl 7.88 takes a bare EOF as a clean end too (curl exits 0). A few slots: one multi handle may end
// several transfers in one go.
thread_local std::array<const void*, 8> close_notified{};
thread_local size_t close_notified_next = 0;

// The record itself is watched: OpenSSL 3.0's info callback reports a close_notify read also for a bare EOF.
void on_tls_message(int write_p, int /*version*/, int content_type, const void* buf, size_t len, SSL* ssl,
                    void* /*arg*/) {
  if (content_type == SSL3_RT_HANDSHAKE) {
    // A handshake: a new connection, whose SSL may sit where one whose close_notify was noted was freed.
    for (const void*& seen : close_notified) {
      if (seen == ssl) seen = nullptr;
    }
    return;
  }
  if (write_p != 0 || content_type != SSL3_RT_ALERT || len != 2) return;
  if (static_cast<const unsigned char*>(buf)[1] != SSL_AD_CLOSE_NOTIFY) return;
  close_notified[close_notified_next++ % close_notified.size()] = ssl;
}

bool take_close_notify(const void* ssl) {
  for (const void*& seen : close_notified) {
    if (seen == ssl) {
      seen = nullptr;
      return true;
    }
  }
  return false;
}

// Called by libcurl for each new TLS connection's SSL_CTX:
// - hostname verification by OpenSSL itself, never against the subject CN: libcurl 7.88 falls back to the CN
//   of a certificate with no subjectAltName, which Go and browsers refuse (docs/libcurl-traps.md §19);
// - the close_notify watch above.
CURLcode pin_hostname_check(CURL* /*easy*/, void* ssl_ctx, void* user) {
  const std::string& host = *static_cast<const std::string*>(user);
  SSL_CTX_set_msg_callback(static_cast<SSL_CTX*>(ssl_ctx), on_tls_message);
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

// "HTTP/1.1 200 OK", "HTTP/2 204": a version, one space, exactly three digits 100..599, then a space or the
// end. libcurl 7.88 takes "HTTP/1.1 2000" as 200 and passes on what a broken peer sends; the client does not.
int parse_status_line(std::string_view line) {
  const size_t sp = line.find(' ');
  if (sp == std::string_view::npos || line.size() < sp + 4) return 0;
  const std::string_view code = line.substr(sp + 1, 3);
  if (!std::all_of(code.begin(), code.end(), [](char c) { return c >= '0' && c <= '9'; })) return 0;
  if (line.size() > sp + 4 && line[sp + 4] != ' ') return 0;
  int status = 0;
  std::from_chars(code.data(), code.data() + 3, status);
  return status >= 100 && status <= 599 ? status : 0;
}

// How many fields a response's header block typically has (nginx sends 6 to 9, a cloud API 10 to 15).
constexpr size_t kTypicalHeaderFields = 12;

size_t on_header(char* data, size_t size, size_t count, void* user) {
  auto& st = *static_cast<AttemptState*>(user);
  const size_t n = size * count;
  // The client's own limit on the header block (docs/transport.md §10.7): a peer sending megabytes of headers
  // ends the attempt once, as too large, instead of costing memory and retries.
  st.header_bytes += n;
  if (st.header_bytes > st.max_header_bytes) {
    st.abort(Code::kTooLarge, "the response's header block passed max_response_headers (" +
                                  std::to_string(st.max_header_bytes) + " bytes)");
    return 0;
  }
  const std::string_view raw(data, n);
  const std::string_view line = trim(raw);
  if (line.starts_with("HTTP/")) {
    // A new status line: an interim 1xx response was replaced, start over. Room for a typical header block
    // at once, instead of the vector growing four times on the way to it; cleared, not replaced, so the room
    // reset() made for the attempt is the room used.
    st.response.headers.clear();
    st.response.headers.reserve(kTypicalHeaderFields);
    st.content_length.clear();
    st.h2_head_open = line.starts_with("HTTP/2");
    st.head_bytes = n;
    st.response.status = parse_status_line(line);
    if (st.response.status == 0) {
      st.abort(Code::kProtocol, "the server sent a malformed status line");
      return 0;
    }
    // What follows "HTTP/x NNN ": HTTP/2 has none (libcurl writes "HTTP/2 200 "), trimmed away with the CRLF.
    const size_t phrase_at = line.find(' ') + 5;
    st.response.reason = line.size() > phrase_at ? reason_text(line.substr(phrase_at)) : std::string();
    return n;
  }
  if (line.empty()) {
    st.h2_head_open = false;
    if (st.response.status >= 200 && !st.headers_done) {
      st.headers_done = true;
      uint64_t length = 0;
      const char* end = st.content_length.data() + st.content_length.size();
      if (!st.head && st.response.status != 204 && st.response.status != 304 && !st.content_length.empty() &&
          std::from_chars(st.content_length.data(), end, length).ptr == end) {
        st.sink.expect(length);
      }
      curl_tlssessioninfo* tls = nullptr;
      if (curl_easy_getinfo(st.easy, CURLINFO_TLS_SSL_PTR, &tls) == CURLE_OK && tls != nullptr &&
          tls->backend == CURLSSLBACKEND_OPENSSL) {
        st.tls_session = tls->internals;
      }
      if (st.progress != nullptr) st.progress(st.progress_data);
    }
    return n;
  }
  if (st.h2_head_open) {
    st.head_bytes += n;
    // A head this large may outgrow the receive buffer libcurl hands it over in (kick_stalled_head).
    st.h2_big_head = st.h2_big_head || st.head_bytes > BodySink::kReceiveBuffer / 2;
  }
  if (st.h2_big_head) st.handed_over(n);
  if (++st.header_fields > st.max_header_fields) {
    st.abort(Code::kTooLarge, "the response has more than " + std::to_string(st.max_header_fields) +
                                  " header fields (max_response_headers)");
    return 0;
  }
  const size_t colon = line.find(':');
  if (colon == std::string_view::npos) {
    if (raw.front() == ' ' || raw.front() == '\t') return n;  // an obsolete line folding: libcurl passes it on
    st.abort(Code::kProtocol, "the server sent a header line without a colon");
    return 0;
  }
  std::string_view name = trim(line.substr(0, colon));
  std::string_view value = trim(line.substr(colon + 1));
  if (equals_ignore_case(name, "transfer-encoding")) st.saw_transfer_encoding = true;
  if (equals_ignore_case(name, "content-encoding")) st.saw_content_encoding = true;
  if (equals_ignore_case(name, "content-length")) {
    if (!st.content_length.empty() && st.content_length != value) {
      st.abort(Code::kProtocol, "response has two differing Content-Length headers (" + st.content_length +
                                    ", " + std::string(value) + ")");
      return 0;
    }
    st.content_length = value;
  }
  st.response.headers.add(field_text(name), field_text(value));  // no CR, LF or NUL passes on
  return n;
}

size_t on_body(char* data, size_t size, size_t count, void* user) {
  auto& st = *static_cast<AttemptState*>(user);
  const size_t taken = st.sink.write(data, size * count);
  // A reader's buffer with no room for another receive: libcurl stops before making it, so every byte is
  // copied once, straight into a reader's buffer. Not for a body libcurl decodes: paused, it would keep all
  // that its current receive decodes to (a gzip bomb's 1000:1), where the keep-ahead takes some of it first.
  if (!(st.decoding && st.saw_content_encoding) && st.sink.should_hold()) {
    st.sink.holds();
    curl_easy_pause(st.easy, CURLPAUSE_RECV);
  }
  if (st.progress != nullptr) st.progress(st.progress_data);
  if (st.h2_big_head) st.handed_over(size * count);
  if (st.sink.over_limit()) {
    st.abort(Code::kTooLarge, "the response body passed max_response_body (" + std::to_string(st.sink.limit()) +
                                  " bytes" + (st.decoding ? ", decoded" : "") + ")");
  }
  return taken;
}

// The request body the caller streams (docs/bodies.md §7); a failing reader fails the attempt with kCallback.
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

// The socket libcurl opened for the connection on local port `port`, among those this transfer opened.
int socket_on_port(const std::vector<int>& opened, int port) {
  for (int fd : opened) {
    sockaddr_storage local{};
    socklen_t len = sizeof local;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) != 0) continue;
    const int bound = local.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&local)->sin6_port)
                                                  : ntohs(reinterpret_cast<sockaddr_in*>(&local)->sin_port);
    if (bound == port) return fd;
  }
  return -1;
}

// Called by libcurl each time the request is about to go on the wire, on a connection it just made or took
// from its cache. Two guards live here (docs/transport.md §10.7, §10.8; docs/libcurl-traps.md §19):
// - A pooled HTTP/1.1 connection with unread bytes (a peer's late bytes after a complete response, an EOF)
//   would hand them to this request as its response; an idle pooled HTTP/2 connection with unread input has
//   mostly been told to go away (GOAWAY, close_notify, EOF), which libcurl 7.88 notices only after sending
//   on it. Either way the send is stopped before anything goes out, the connection is made dead for libcurl,
//   and the driver sends the same attempt on a fresh connection. An HTTP/2 connection another transfer may
//   be using is left alone: libcurl reads its frames as they come.
// - libcurl resends a request by itself when a reused connection turned out dead (Curl_retry_request), an
//   HTTP/2 stream was refused, or the server asked for HTTP/1.1 — uncounted, unclassified, behind the
//   policy's back. No second send is ever let through: the attempt ends, and the policy decides whether
//   another attempt goes out.
int on_prereq(void* user, char* /*primary_ip*/, char* /*local_ip*/, int /*primary_port*/, int local_port) {
  auto& st = *static_cast<AttemptState*>(user);
  if (st.wire_sends == 0) {
    long connects = 0;
    curl_easy_getinfo(st.easy, CURLINFO_NUM_CONNECTS, &connects);
    st.first_send_reused = connects == 0;
    st.first_send_http1 = st.sockets->known_http1(local_port);
    if (!st.first_send_reused) {
      if (const int fd = socket_on_port(st.opened, local_port); fd >= 0) st.sockets->bind(local_port, fd);
    }
    const int fd = st.sockets->fd_for(local_port);
    st.connection_fd = fd;
    const Instant now = std::chrono::steady_clock::now();
    if (!st.first_send_reused) st.sockets->mark_born(local_port, now);
    // A pooled connection as old as max_connection_lifetime takes no new request (docs/transport.md §10.1).
    // libcurl closes one no transfer uses only once its age in whole seconds is past the limit (set to the
    // lifetime less one second): in between, the request goes once more on a fresh connection and the old one
    // is closed — only when nothing else may be using it (an HTTP/1.1 connection, or the one transfer of the
    // cache). A busy HTTP/2 connection is not given a new stream at all once aged (h2::set_lifetime).
    if (st.first_send_reused && fd >= 0 && (st.first_send_http1 || st.sockets->transfers() <= 1) &&
        st.sockets->aged(local_port, st.max_lifetime, now)) {
      poison(fd);
      st.stale_connection = true;
      return CURL_PREREQFUNC_ABORT;
    }
    if (st.first_send_reused && fd >= 0 &&
        (st.sockets->retired(local_port) ||
         (has_unread_input(fd) && (st.first_send_http1 || (st.sockets->known_http2(local_port) &&
                                                           st.sockets->transfers() <= 1))))) {
      poison(fd);
      st.stale_connection = true;
      return CURL_PREREQFUNC_ABORT;
    }
    ++st.wire_sends;
    return CURL_PREREQFUNC_OK;
  }
  // libcurl wants to send the request again (Curl_retry_request): a refused HTTP/2 stream, a stream the server
  // asked to have over HTTP/1.1, or a reused connection that failed before any answer. Which one, nghttp2
  // says (h2_observer.h); libcurl's own word for it is the same for a refused stream and for a connection the
  // server broke after reading the request, so without nghttp2's it is a lost connection: safe only to send
  // again where the policy may send twice.
  if (!st.first_send_http1) {
    const h2::StreamFacts facts = h2::facts(st.easy);
    if (std::optional<TransportError> why = http2_failure(facts)) {
      if (facts.close_code == h2::kHttp11Required) st.origin->http1_required.store(true, std::memory_order_relaxed);
      st.abort(why->code, std::move(why->message));
      return CURL_PREREQFUNC_ABORT;
    }
  }
  st.abort(Code::kConnectionLost, st.first_send_reused ? "the pooled connection failed before the response"
                                                       : "the connection failed before the response");
  return CURL_PREREQFUNC_ABORT;
}

curl_socket_t on_open_socket(void* user, curlsocktype /*purpose*/, curl_sockaddr* address) {
  auto& st = *static_cast<AttemptState*>(user);
  const int fd = ::socket(address->family, address->socktype | SOCK_CLOEXEC, address->protocol);
  if (fd < 0) {
    st.local_errno = errno;
    return CURL_SOCKET_BAD;
  }
  st.opened.push_back(fd);
  note_socket_opened(fd);  // a forked child must not use it (docs/fork.md §23)
  return fd;
}

int on_close_socket(void* user, curl_socket_t fd) {
  static_cast<SocketRegistry*>(user)->closed(fd);
  note_socket_closed(fd);
  return ::close(fd);
}

long curl_http_version(const TransportConfig& c) {
  if (!c.https) return CURL_HTTP_VERSION_1_1;  // no h2c (docs/transport.md §10.2)
  switch (c.http_version) {
    case HttpVersion::kHttp1_1: return CURL_HTTP_VERSION_1_1;
    case HttpVersion::kHttp2:
    case HttpVersion::kAuto: return CURL_HTTP_VERSION_2TLS;
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

void AttemptState::reset() {
  response = WireResponse{};
  progress = nullptr;
  progress_data = nullptr;
  response.headers.reserve(kTypicalHeaderFields);  // one allocation for a typical response's header list
  headers_done = false;
  wire_sends = 0;
  first_send_reused = false;
  first_send_http1 = false;
  stale_connection = false;
  connection_judged = false;
  tls_session = nullptr;
  opened.clear();
  local_errno = 0;
  connection_fd = -1;
  header_bytes = 0;
  header_fields = 0;
  h2_head_open = false;
  head_bytes = 0;
  h2_big_head = false;
  delivered = 0;
  delivered_at_kick = 0;
  idle_kicks = 0;
  head_held = nullptr;
  head_held_data = nullptr;
  saw_transfer_encoding = false;
  saw_content_encoding = false;
  content_length.clear();
  abort_code = Code::kOk;
  abort_message.clear();
}

void AttemptState::abort(Code code, std::string message) {
  abort_code = code;
  abort_message = std::move(message);
}

CurlEasy::CurlEasy(const TransportConfig& config, const Slist& connect_to, SocketRegistry& sockets,
                   OriginMemory& origin)
    : easy_(curl_easy_init()), config_(config), max_body_(config.max_response_body),
      decompress_(config.decompress) {
  if (easy_ == nullptr) throw std::bad_alloc();
  state_.easy = easy_;
  state_.sockets = &sockets;
  state_.origin = &origin;
  state_.max_header_bytes = config.max_response_headers;
  state_.max_header_fields = config.max_response_fields;
  configure(config, connect_to);
  if (config.https) h2::watch(easy_);  // HTTP/2 only over TLS (no h2c, docs/transport.md §10.2)
}

CurlEasy::~CurlEasy() {
  if (config_.https) h2::unwatch(easy_);
  curl_easy_cleanup(easy_);
}

bool CurlEasy::kick_stalled_head() {
  if (!state_.h2_big_head || state_.sink.paused()) return false;
  // A run that handed nothing over may still have read the stream's end from what libcurl held: one more.
  if (state_.delivered == state_.delivered_at_kick && ++state_.idle_kicks > 1) return false;
  if (state_.delivered != state_.delivered_at_kick) state_.idle_kicks = 0;
  state_.delivered_at_kick = state_.delivered;
  // Unpausing a transfer has libcurl look at its connection again at its next run, socket readable or not
  // (libcurl 7.88's curl_easy_pause): the rest of the head is then handed over. Pausing first, since an
  // unpause of a transfer that is not paused does nothing.
  curl_easy_pause(easy_, CURLPAUSE_RECV);
  curl_easy_pause(easy_, CURLPAUSE_CONT);
  return true;
}

void CurlEasy::configure(const TransportConfig& c, const Slist& connect_to) {
  CURL* e = easy_;
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  // libcurl's receive buffer: each socket read and write callback hands over at most this. 32 KiB rather than
  // the default 16 halves the reads, write callbacks and (streamed) wake-ups per byte, and lets the peer send
  // more per round trip — measured on a streamed 1 GiB, about a third less CPU. Not more: while a stream is
  // paused libcurl 7.88 keeps all that one read decodes to, refusing beyond 64 MiB, and a deflate stream
  // inflates at most about 1032:1, so 32 KiB keeps a gzip bomb read under that (33 MiB) where 64 would not.
  curl_easy_setopt(e, CURLOPT_BUFFERSIZE, static_cast<long>(BodySink::kReceiveBuffer));
  curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);  // redirects are the client's: one attempt each (docs/origin.md §2)
  // No ambient proxy (docs/transport.md §10.4): an empty proxy disables the environment's http_proxy and friends.
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
  curl_easy_setopt(e, CURLOPT_OPENSOCKETFUNCTION, on_open_socket);
  curl_easy_setopt(e, CURLOPT_OPENSOCKETDATA, &state_);
  // The registry outlives every connection of the cache; the easy handle that opened one may not.
  curl_easy_setopt(e, CURLOPT_CLOSESOCKETFUNCTION, on_close_socket);
  curl_easy_setopt(e, CURLOPT_CLOSESOCKETDATA, state_.sockets);
  // An older connection takes no new request (docs/transport.md §10.1): it is closed instead of reused.
  // libcurl compares whole seconds with ">", so a limit of L-1 closes a connection aged L seconds or more.
  const int64_t lifetime_s = std::chrono::duration_cast<std::chrono::seconds>(c.max_connection_lifetime).count();
  curl_easy_setopt(e, CURLOPT_MAXLIFETIME_CONN, static_cast<long>(std::max<int64_t>(1, lifetime_s - 1)));
  // libcurl applies that only to a connection no transfer uses: the send guard (on_prereq) refuses an aged
  // idle one libcurl's whole seconds let through, and a busy HTTP/2 connection is given no new stream once
  // aged (h2_observer.h). Sessions are HTTP/2 only over TLS (no h2c, docs/transport.md §10.2).
  state_.max_lifetime = c.max_connection_lifetime;
  if (c.https) h2::set_lifetime(e, c.max_connection_lifetime);
  // Every new connection resolves the name afresh, as Go's net/http does: libcurl's DNS cache (60 s by
  // default) would hand a connection made because the last one aged, or because its address stopped
  // answering, the address that connection had. The cost is one lookup per new connection; pooled
  // connections, HTTP/2 multiplexing and the lifetime make those rare.
  curl_easy_setopt(e, CURLOPT_DNS_CACHE_TIMEOUT, 0L);
  if (connect_to) curl_easy_setopt(e, CURLOPT_CONNECT_TO, connect_to.get());
  connect_timeout_ = c.connect_timeout;
  if (!c.https) return;

  // TLS (docs/transport.md §10.3): verification always on; the given CA and nothing ambient, else the system roots.
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
  } else if (!c.system_ca_file.empty()) {
    // libcurl's built-in bundle is missing here: the system's, found where this distribution keeps it.
    curl_easy_setopt(e, CURLOPT_CAPATH, nullptr);
    curl_easy_setopt(e, CURLOPT_CAINFO, c.system_ca_file.c_str());
  }
  if (!c.cert_pem.empty()) {
    curl_blob blob{const_cast<char*>(c.cert_pem.data()), c.cert_pem.size(), CURL_BLOB_COPY};
    curl_easy_setopt(e, CURLOPT_SSLCERT_BLOB, &blob);
  } else if (!c.cert_file.empty()) {
    curl_easy_setopt(e, CURLOPT_SSLCERT, c.cert_file.c_str());
  }
  if (!c.key_pem.empty()) {
    // Not copied: libcurl frees its copies unwiped, and the transport's own copy, which outlives every handle,
    // is wiped when the transport goes (docs/transport.md §10.3).
    curl_blob blob{const_cast<char*>(c.key_pem.data()), c.key_pem.size(), CURL_BLOB_NOCOPY};
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

void CurlEasy::set_url(const std::string& url) {
  // libcurl parses a CURLOPT_URL anew at every transfer (about 10k instructions for a plain URL); a URL handle
  // it is given instead is copied, not parsed, so the URL is parsed here once per change of URL. CURLOPT_URL
  // is still set, for the text libcurl reports of the transfer (the handle wins where they could differ).
  if (url_handle_ == nullptr) url_handle_.reset(curl_url());
  if (url_handle_ != nullptr &&
      curl_url_set(url_handle_.get(), CURLUPART_URL, url.c_str(), CURLU_NON_SUPPORT_SCHEME) == CURLUE_OK) {
    curl_easy_setopt(easy_, CURLOPT_CURLU, url_handle_.get());
  } else {
    curl_easy_setopt(easy_, CURLOPT_CURLU, nullptr);  // libcurl parses the text and says what it refuses
  }
  curl_easy_setopt(easy_, CURLOPT_URL, url.c_str());
  // An empty query ("/a?") is sent as written, as Go's net/http and libcurl up to 8.7 send it (RFC 3986 §6.2.3:
  // "/a?" and "/a" need not be the same resource); libcurl 8.8 and later drop the "?" from the request line.
  std::string target;
  if (has_empty_query(url) && url_handle_ != nullptr) {
    char* path = nullptr;
    if (curl_url_get(url_handle_.get(), CURLUPART_PATH, &path, 0) == CURLUE_OK && path != nullptr) {
      target = std::string(path) + "?";
    }
    curl_free(path);
  }
  curl_easy_setopt(easy_, CURLOPT_REQUEST_TARGET, target.empty() ? nullptr : target.c_str());
  last_url_ = url;
}

void CurlEasy::prepare(const WireRequest& r, const AttemptLimits& limits, Instant now) {
  CURL* e = easy_;
  // Options persist on the handle between attempts; each is set again only when it changes, because libcurl
  // does real work per setopt (the request line and header block are rebuilt from them).
  if (r.url != last_url_) set_url(r.url);
  const bool has_body = r.body != nullptr || r.body_source != nullptr;
  const bool sends_body_by_default = r.method == "POST" || r.method == "PUT" || r.method == "PATCH";
  // Framed as a POST, whose defaults (a form's Content-Type, "Expect: 100-continue") libcurl adds.
  const bool post_framed = r.method != "HEAD" && (has_body || sends_body_by_default);
  if (has_body || r.method != last_method_ || last_had_body_) {
    curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, nullptr);
    if (r.method == "HEAD") {
      curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
    } else if (post_framed) {
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

  // Decoded bodies by default (gzip, deflate, br, zstd: every coding this libcurl decodes, "" asks for all);
  // raw bytes when the caller asked for an encoding itself, for a HEAD or a Range (as Go's Transport).
  const auto omitted = [&r](std::string_view name) {
    return std::any_of(r.omitted_headers.begin(), r.omitted_headers.end(),
                       [name](const std::string& o) { return equals_ignore_case(o, name); });
  };
  // A caller who leaves Accept-Encoding out asks for the bytes as sent, as one who sets it does.
  const bool decode = decompress_ && r.method != "HEAD" && !r.headers.contains("Accept-Encoding") &&
                      !r.headers.contains("Range") && (r.omitted_headers.empty() || !omitted("Accept-Encoding"));
  const bool same_list_lines = headers_ && decode == headers_ask_codings_ && post_framed == headers_post_framed_ &&
                               r.omitted_headers == last_omitted_;
  if (same_list_lines && patch_header_values(r.headers)) {
    // Same names, same value lengths: the list libcurl reads at each perform was rewritten in place.
  } else if (!same_list_lines || r.headers.fields() != last_headers_.fields()) {
    std::vector<std::string> lines;
    lines.reserve(r.headers.size() + 4);
    // The Accept-Encoding of a decoded body is a line of this list rather than libcurl's own, which libcurl
    // formats anew for every request a character at a time, and then once more into the request; a line here
    // is formatted once (callgrind, a 100-byte GET: 81.2k -> 77.8k instructions). libcurl leaves its own out
    // when the list has one, and still decodes, since CURLOPT_ACCEPT_ENCODING stays set (below).
    if (decode && !decodable_codings().empty()) lines.push_back("Accept-Encoding: " + decodable_codings());
    // No "Expect: 100-continue" round trip: the client's own timeouts bound a slow dependency.
    if (post_framed) lines.emplace_back("Expect:");
    // Sent as a plain header rather than CURLOPT_USERAGENT, which libcurl re-formats on every request.
    if (!r.headers.contains("User-Agent") && (r.omitted_headers.empty() || !omitted("User-Agent"))) {
      lines.emplace_back("User-Agent: humus_http/" HUMUS_CMAKE_VERSION_STRING);
    }
    // libcurl labels every POST-framed body application/x-www-form-urlencoded; the client sends only the type
    // its caller gave, as net/http does (a PUT of a file is not a form). The two lines that take libcurl's
    // defaults away go only with a POST-framed request, since no other gets either: libcurl scans the whole
    // list for every header it considers adding (callgrind, a 100-byte GET: about 500 of libcurl's
    // instructions less a request).
    if (post_framed && !r.headers.contains("Content-Type")) lines.emplace_back("Content-Type:");
    // "Name:" is libcurl's spelling of "send none": it leaves out its own (Accept, Host) too.
    for (const std::string& name : r.omitted_headers) {
      if (!r.headers.contains(name)) lines.push_back(name + ":");
    }
    for (const auto& [name, value] : r.headers.fields()) {
      // "Name;" is libcurl's spelling of a header with an empty value ("Name:" would remove it).
      lines.push_back(value.empty() ? name + ";" : name + ": " + value);
    }
    headers_ = make_slist(lines);
    headers_ask_codings_ = decode;
    headers_post_framed_ = post_framed;
    last_headers_ = r.headers;
    last_omitted_ = r.omitted_headers;
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
  if (const bool http1 = config_.https && state_.origin->http1_required.load(std::memory_order_relaxed);
      http1 != http1_forced_) {
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION, http1 ? static_cast<long>(CURL_HTTP_VERSION_1_1) : curl_http_version(config_));
    http1_forced_ = http1;
  }
  if (static_cast<int>(decode) != last_accept_encoding_) {
    curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, decode ? "" : nullptr);
    last_accept_encoding_ = static_cast<int>(decode);
  }
  if (fresh_connect_) {
    curl_easy_setopt(e, CURLOPT_FRESH_CONNECT, 0L);
    fresh_connect_ = false;
  }
  state_.reset();
  if (config_.https) h2::clear(easy_);
  curl_easy_getinfo(e, CURLINFO_OS_ERRNO, &state_.os_errno_before);
  state_.sink.buffer_into(&state_.response.body, max_body_);
  state_.source = r.body_source.get();
  state_.decoding = decode;
  state_.head = r.method == "HEAD";
  error_[0] = '\0';
}

bool CurlEasy::ready_fresh_retry() {
  if (!state_.stale_connection) return false;
  curl_easy_setopt(easy_, CURLOPT_FRESH_CONNECT, 1L);
  fresh_connect_ = true;
  // The transfer stopped in on_prereq, before a byte of the request or its answer: only what the send
  // guard recorded goes back; the body sink and source stay as prepare() set them.
  state_.wire_sends = 0;
  state_.first_send_reused = false;
  state_.first_send_http1 = false;
  state_.stale_connection = false;
  state_.opened.clear();
  state_.local_errno = 0;
  if (config_.https) h2::clear(easy_);
  error_[0] = '\0';
  return true;
}

WireResult CurlEasy::head() {
  WireResult out;
  out.wire_sends = state_.wire_sends;
  out.headers_received = true;
  // Judged as finish() judges it: a streamed body's connection goes back to the pool without finish().
  if (!judge_head(out, /*body_read=*/false)) return out;
  out.response = std::move(state_.response);  // no body: it stays in the sink, on its connection
  return out;
}

bool CurlEasy::judge_head(WireResult& out, bool body_read) {
  // The status libcurl read from the final status line, by which it also framed the body: on_header's own
  // reading of a malformed line ("HTTP/.1  213 OK", two spaces) can miss it and leave 0.
  long status = 0;
  curl_easy_getinfo(easy_, CURLINFO_RESPONSE_CODE, &status);
  state_.response.status = static_cast<int>(status);
  if (status < 100 || status > 999) {
    // libcurl reads "HTTP/2  1.1" as status 1: no answer a caller could act on.
    out.error = Code::kProtocol;
    out.message = "malformed status line (status " + std::to_string(status) + ")";
    return false;
  }
  long version = 0;
  curl_easy_getinfo(easy_, CURLINFO_HTTP_VERSION, &version);
  const bool http2 = version == CURL_HTTP_VERSION_2_0;
  state_.response.http_version = http2 ? "2" : version == CURL_HTTP_VERSION_1_0 ? "1.0" : "1.1";
  if (state_.decoding) strip_decoded_headers(state_.response.headers);
  const long port = note_protocol(http2);
  if (port > 0 && framed_two_ways(version)) {
    if (!body_read) {
      // Its body is still to be read: the connection is closed when a request would next reuse it.
      state_.sockets->retire(static_cast<int>(port));
    } else if (const int fd = state_.sockets->fd_for(static_cast<int>(port)); fd >= 0) {
      poison(fd);
    }
  }
  return true;
}

bool CurlEasy::framed_two_ways(long version) const {
  // A message framed by both Content-Length and Transfer-Encoding is a smuggling sign (RFC 9112 §6.3): its
  // body is read as chunked, and its connection carries nothing more.
  return version != CURL_HTTP_VERSION_2_0 && state_.saw_transfer_encoding && !state_.content_length.empty();
}

long CurlEasy::note_protocol(bool http2) {
  long local_port = 0;
  if (curl_easy_getinfo(easy_, CURLINFO_LOCAL_PORT, &local_port) == CURLE_OK && local_port > 0) {
    state_.sockets->mark_protocol(static_cast<int>(local_port), http2);
  }
  return local_port;
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
  // Only values changed, each to one of the same length (an attempt's own traceparent, docs/telemetry.md §13.1): rewriting
  // the bytes after "Name: " in the list's own strings spares rebuilding the whole list per attempt.
  for (size_t i = 0; i < now.size(); ++i) {
    const std::string& value = now[i].second;
    if (value.empty() || was[i].second == value) continue;
    std::memcpy(header_nodes_[i]->data + now[i].first.size() + 2, value.data(), value.size());
    last_headers_.replace_value(i, value);
  }
  return true;
}

bool CurlEasy::close_delimited_body_cut(bool http2) {
  // A body framed by the connection's end is whole only if that end was the peer's own: over TLS, a
  // close_notify (RFC 8446 §6.1). A bare EOF may be anyone on the path cutting it (docs/transport.md §10.7).
  const bool close_delimited = !http2 && state_.content_length.empty() && !state_.saw_transfer_encoding &&
                               last_method_ != "HEAD" && state_.response.status != 204 &&
                               state_.response.status != 304;
  return close_delimited && state_.tls_session != nullptr && !take_close_notify(state_.tls_session);
}

bool CurlEasy::body_cut_at_close() {
  long version = 0;
  curl_easy_getinfo(easy_, CURLINFO_HTTP_VERSION, &version);
  return close_delimited_body_cut(version == CURL_HTTP_VERSION_2_0);
}

void CurlEasy::retire_connection_after_timeout(Interrupt interrupt) {
  if (state_.connection_judged) return;
  state_.connection_judged = true;
  if (interrupt != Interrupt::kAttemptTimeout && interrupt != Interrupt::kCallTimeout) return;
  // A peer that let the attempt time out may have stopped answering altogether (a dead HTTP/2 connection
  // answers no PING either, docs/transport.md §10.7): its connection takes no further attempt. libcurl
  // closes an HTTP/1.1 connection cut mid-transfer itself, but keeps a multiplexed one — which other
  // transfers may be using: then it stays, since cutting it would fail them too.
  long local_port = 0;
  if (curl_easy_getinfo(easy_, CURLINFO_LOCAL_PORT, &local_port) == CURLE_OK && local_port > 0 &&
      state_.sockets->transfers() <= 1) {
    if (const int fd = state_.sockets->fd_for(static_cast<int>(local_port)); fd >= 0) poison(fd);
  }
}

WireResult CurlEasy::finish(CURLcode code, Interrupt interrupt) {
  retire_connection_after_timeout(interrupt);
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
    CurlFailure failure;
    failure.code = code;
    failure.detail = error_[0] != '\0' ? std::string_view(error_) : curl_easy_strerror(code);
    failure.headers_received = state_.headers_done;
    long os_errno = 0;
    curl_easy_getinfo(easy_, CURLINFO_OS_ERRNO, &os_errno);
    failure.os_errno = state_.local_errno != 0 ? state_.local_errno : static_cast<int>(os_errno);
    failure.socket_open_failed = state_.local_errno != 0;
    failure.os_errno_before = static_cast<int>(state_.os_errno_before);
    failure.tls = config_.https;
    failure.peer_ended = state_.connection_fd >= 0 && state_.sockets->ended_by_peer(state_.connection_fd);
    long verify = 0;
    if (config_.https) curl_easy_getinfo(easy_, CURLINFO_SSL_VERIFYRESULT, &verify);
    failure.verify_result = verify;
    failure.host = config_.host;
    const h2::StreamFacts facts = config_.https ? h2::facts(easy_) : h2::StreamFacts{};
    std::optional<TransportError> http2 = http2_failure(facts);
    if (http2 && facts.close_code == h2::kHttp11Required) {
      state_.origin->http1_required.store(true, std::memory_order_relaxed);
    }
    const TransportError mapped = http2 ? std::move(*http2) : describe_curl_failure(failure);
    out.error = mapped.code;
    out.message = mapped.message;
  } else if (!state_.headers_done) {
    // libcurl 7.88 returns a header block cut by EOF (no blank line) as a complete, empty response
    // (docs/libcurl-traps.md §19): it is a dropped connection.
    out.error = Code::kConnectionLost;
    out.message = "the connection closed in the middle of the response headers";
  } else if (judge_head(out, /*body_read=*/true)) {
    long version = 0;
    curl_easy_getinfo(easy_, CURLINFO_HTTP_VERSION, &version);
    if (close_delimited_body_cut(version == CURL_HTTP_VERSION_2_0)) {
      out.error = Code::kConnectionLost;
      out.message = kCutWithoutCloseNotify;
      return out;
    }
    out.response = std::move(state_.response);
  }
  // A failed transfer may leave its connection half-used: the lane keeps no connection libcurl did not
  // vouch for, because libcurl closes those itself on error.
  return out;
}

}  // namespace humus::transport
