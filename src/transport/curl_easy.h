// One libcurl easy handle with everything an attempt needs around it: the options every attempt of a
// client shares (set once), the per-attempt request, the callbacks that collect the response and guard
// against libcurl's silent resend (docs/libcurl-traps.md §19), and the mapping of how it ended onto WireResult. The blocking
// lanes and the asynchronous transfers of curl_transport.cc both drive one.
#pragma once

#include <curl/curl.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "transport/sockets.h"
#include "transport/body_sink.h"
#include "transport/wire.h"

namespace humus::transport {

void ensure_curl_global();

inline constexpr const char* kCutWithoutCloseNotify =
    "the TLS connection ended without close_notify: the close-delimited body may have been cut";

struct SlistDeleter {
  void operator()(curl_slist* list) const { curl_slist_free_all(list); }
};
using Slist = std::unique_ptr<curl_slist, SlistDeleter>;
Slist make_slist(const std::vector<std::string>& lines);

// What one client's transport learned about its origin, shared by every handle it drives (any thread).
struct OriginMemory {
  // The server reset a stream with HTTP_1_1_REQUIRED: every later attempt asks for HTTP/1.1 only
  // (docs/transport.md §10.2). Relaxed is enough: a handle that reads a stale false only costs one more reset.
  std::atomic<bool> http1_required{false};
};

// Per-attempt state the callbacks fill. Reset before every attempt.
struct AttemptState {
  WireResponse response;
  bool headers_done = false;
  int wire_sends = 0;
  bool first_send_reused = false;  // the first send went on a connection an earlier transfer had opened
  bool first_send_http1 = false;   // ... and that connection had carried an HTTP/1.x answer before
  bool stale_connection = false;   // the pooled connection held unread bytes: go again on a fresh one
  bool connection_judged = false;  // retire_connection_after_timeout decided already (once per attempt)
  CURL* easy = nullptr;
  const void* tls_session = nullptr;  // the SSL* the response came over (TLS only)
  SocketRegistry* sockets = nullptr;  // of the connection cache the handle is driven in
  OriginMemory* origin = nullptr;
  std::vector<int> opened;         // sockets libcurl opened during this transfer
  int local_errno = 0;             // why opening a socket failed (a local shortage, docs/transport.md §10.7)
  int connection_fd = -1;          // the socket the request first went out on
  long os_errno_before = 0;        // CURLINFO_OS_ERRNO when the attempt began: libcurl 7.88 never clears it
  std::string content_length;      // first Content-Length seen, to refuse a differing duplicate
  bool head = false;               // a HEAD: its Content-Length announces no body
  size_t header_bytes = 0;         // of the status lines and fields so far (interim responses included)
  size_t header_fields = 0;
  // An HTTP/2 head is being handed over and its end has not come; head_bytes of it so far. libcurl 7.88 hands
  // a decoded HTTP/2 header block over a receive buffer at a time and then waits for the socket, though the
  // rest is in its memory, and so does the body that came with it: a head over the buffer waits for bytes
  // that may never come. Once a head passed half the buffer (h2_big_head), the transfer is kicked after
  // every run of libcurl's that handed something over (delivered), until one hands nothing (kick_stalled_head).
  bool h2_head_open = false;
  size_t head_bytes = 0;
  bool h2_big_head = false;
  uint64_t delivered = 0;          // header and body bytes handed over since h2_big_head
  uint64_t delivered_at_kick = 0;
  int idle_kicks = 0;              // kicks in a row after which nothing more was handed over
  bool saw_transfer_encoding = false;  // with a Content-Length too, the connection is not reused
  bool saw_content_encoding = false;   // with `decoding`, libcurl decodes the body before on_body sees it
  size_t max_header_bytes = 0;     // TransportConfig::max_response_headers
  size_t max_header_fields = 0;
  Duration max_lifetime{};         // TransportConfig::max_connection_lifetime (set by configure)
  Code abort_code = Code::kOk;     // why a callback aborted the transfer
  std::string abort_message;
  BodySink sink;                   // where on_body puts the body (buffered into response.body, or streamed)
  BodySource* source = nullptr;    // the request body read by on_read, when the caller streams it
  bool decoding = false;           // libcurl was asked to decode a Content-Encoding (CURLOPT_ACCEPT_ENCODING)
  // A streamed transfer on the event loop is told when its headers are in and when body bytes reach the
  // sink. Called from inside libcurl's callbacks, so it only notes the transfer for later. Cleared by reset().
  void (*progress)(void* data) = nullptr;
  void* progress_data = nullptr;
  // A transfer on the event loop whose HTTP/2 head may be held up is told so the same way (kick_stalled_head).
  void (*head_held)(void* data) = nullptr;
  void* head_held_data = nullptr;

  void reset();
  void abort(Code code, std::string message);
  // `n` bytes of a response with a large HTTP/2 head were handed over (kick_stalled_head).
  void handed_over(size_t n) {
    delivered += n;
    if (head_held != nullptr) head_held(head_held_data);
  }
};

// Why the driver stopped a transfer before libcurl finished it.
enum class Interrupt { kNone, kCancelled, kAttemptTimeout, kCallTimeout };

class CurlEasy {
 public:
  // `config`, `connect_to`, `sockets` (the registry of the connection cache the handle is driven in) and
  // `origin` must outlive the handle.
  CurlEasy(const TransportConfig& config, const Slist& connect_to, SocketRegistry& sockets, OriginMemory& origin);
  ~CurlEasy();
  CurlEasy(const CurlEasy&) = delete;
  CurlEasy& operator=(const CurlEasy&) = delete;

  CURL* handle() const { return easy_; }
  bool headers_done() const { return state_.headers_done; }
  // Sets the attempt's request and deadlines; the request must outlive the transfer.
  void prepare(const WireRequest& request, const AttemptLimits& limits, Instant now);
  // How the transfer ended: libcurl's code, or the driver's interrupt.
  WireResult finish(CURLcode code, Interrupt interrupt);
  // After a timeout the attempt's connection takes no further attempt, unless another transfer shares it
  // (see finish). Decided once per attempt, by the first call: one that takes its transfer out of the multi
  // before finish() must call it first, while the cache still counts the transfer among its own.
  void retire_connection_after_timeout(Interrupt interrupt);
  // After a transfer that ended (with CURLE_ABORTED_BY_CALLBACK) because its pooled connection held unread
  // bytes — nothing was sent —: readies the same request for a fresh connection and returns true; false for
  // any other ending. The driver then runs the transfer again, once.
  bool ready_fresh_retry();

  // Streaming (curl_stream.h), after prepare(): the body goes to the reader, not into the response.
  void stream_body() { state_.sink.stream(); }
  // After stream_body(), for a transfer driven by the event loop: `progress(data)` runs inside libcurl's
  // callbacks when the headers are in and when body bytes reach the sink (AttemptState::progress).
  void on_progress(void (*progress)(void* data), void* data) {
    state_.progress = progress;
    state_.progress_data = data;
  }
  // For a transfer driven by the event loop: `held(data)` runs inside libcurl's callbacks when bytes of a
  // response with a large HTTP/2 head are handed over, so that the driver can kick_stalled_head() once libcurl
  // returned.
  void on_head_held(void (*held)(void* data), void* data) {
    state_.head_held = held;
    state_.head_held_data = data;
  }
  // After libcurl returned: when it may hold the rest of a large HTTP/2 head, or the body that came with it,
  // which it would not hand over until the socket is readable again, has it look at its connection at its
  // next run (libcurl then asks for a timer of 0) and returns true. Not for a transfer the body's reader
  // paused.
  bool kick_stalled_head();
  BodySink& sink() { return state_.sink; }
  // The response as far as its headers, once headers_done(): status, headers, version; no body.
  WireResult head();
  // After a transfer libcurl ended well: whether its body, delimited by the connection's end, ended with a
  // bare TLS EOF instead of a close_notify (a cut, docs/transport.md §10.7). Asks once per transfer.
  bool body_cut_at_close();

 private:
  void configure(const TransportConfig& config, const Slist& connect_to);
  // What the final head says, judged alike whether its body came with the transfer (finish, `body_read`) or
  // stays on the connection (head): libcurl's status, which must be 100–999 (else kProtocol in `out` and
  // false); the protocol; decoded headers stripped; a connection framed two ways closed or retired.
  bool judge_head(WireResult& out, bool body_read);
  // Records in the socket registry that the attempt's connection speaks HTTP/2 (else HTTP/1.x): a reused
  // HTTP/1.1 connection is checked for a peer's late bytes before a request goes out on it (on_prereq).
  // Returns the connection's local port, 0 when libcurl has none.
  long note_protocol(bool http2);
  // Whether the response, over HTTP/1.x (`version` as CURLINFO_HTTP_VERSION), carried both framings.
  bool framed_two_ways(long version) const;
  // When `next` differs from the headers last set only in values of unchanged lengths, writes those values
  // into the list in place and returns true; false when the list must be rebuilt.
  bool patch_header_values(const Headers& next);
  bool close_delimited_body_cut(bool http2);
  void set_url(const std::string& url);

  struct UrlFree {
    void operator()(CURLU* u) const { curl_url_cleanup(u); }
  };

  CURL* easy_;
  AttemptState state_;
  char error_[CURL_ERROR_SIZE] = {};
  Duration connect_timeout_{};
  // What the handle was last set to (see prepare()).
  Slist headers_;
  Headers last_headers_;
  std::vector<std::string> last_omitted_;  // the omitted_headers the list was built for
  std::vector<curl_slist*> header_nodes_;  // the nodes of headers_ holding last_headers_' fields, in order
  bool headers_ask_codings_ = false;       // headers_ has the Accept-Encoding line of a decoded body
  bool headers_post_framed_ = false;       // headers_ has the lines that take libcurl's POST defaults away
  std::string last_url_;
  std::unique_ptr<CURLU, UrlFree> url_handle_;  // last_url_ parsed, as libcurl reads it (set_url)
  std::string last_method_;
  bool last_had_body_ = false;
  long last_connect_ms_ = -1;
  bool http1_forced_ = false;  // CURLOPT_HTTP_VERSION lowered to 1.1 after the origin asked for it
  bool fresh_connect_ = false;
  const TransportConfig& config_;
  uint64_t max_body_ = 0;      // TransportConfig::max_response_body: the buffered body's limit
  bool decompress_ = true;     // TransportConfig::decompress
  int last_accept_encoding_ = -1;  // -1 never set, 0 off, 1 on
};

}  // namespace humus::transport
