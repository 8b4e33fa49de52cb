// One libcurl easy handle with everything an attempt needs around it: the options every attempt of a
// client shares (set once), the per-attempt request, the callbacks that collect the response and guard
// against libcurl's silent resend (SPEC §19), and the mapping of how it ended onto WireResult. The blocking
// lanes and the asynchronous transfers of curl_transport.cc both drive one.
#pragma once

#include <curl/curl.h>

#include <memory>
#include <string>
#include <vector>

#include "transport/body_sink.h"
#include "transport/wire.h"

namespace humus::transport {

void ensure_curl_global();

struct SlistDeleter {
  void operator()(curl_slist* list) const { curl_slist_free_all(list); }
};
using Slist = std::unique_ptr<curl_slist, SlistDeleter>;
Slist make_slist(const std::vector<std::string>& lines);

// Per-attempt state the callbacks fill. Reset before every attempt.
struct AttemptState {
  WireResponse response;
  bool headers_done = false;
  int wire_sends = 0;
  bool allow_resend = true;
  bool first_send_reused = false;  // the first send went on a connection an earlier transfer had opened
  CURL* easy = nullptr;
  std::string content_length;      // first Content-Length seen, to refuse a differing duplicate
  Code abort_code = Code::kOk;     // why a callback aborted the transfer
  std::string abort_message;
  BodySink sink;                   // where on_body puts the body (buffered into response.body, or streamed)
  BodySource* source = nullptr;    // the request body read by on_read, when the caller streams it
  bool decoding = false;           // libcurl was asked to decode a Content-Encoding (CURLOPT_ACCEPT_ENCODING)

  void reset(bool resend_allowed);
  void abort(Code code, std::string message);
};

// Why the driver stopped a transfer before libcurl finished it.
enum class Interrupt { kNone, kCancelled, kAttemptTimeout, kCallTimeout };

class CurlEasy {
 public:
  // `config` and `connect_to` must outlive the handle.
  CurlEasy(const TransportConfig& config, const Slist& connect_to);
  ~CurlEasy();
  CurlEasy(const CurlEasy&) = delete;
  CurlEasy& operator=(const CurlEasy&) = delete;

  CURL* handle() const { return easy_; }
  bool headers_done() const { return state_.headers_done; }
  // Sets the attempt's request and deadlines; the request must outlive the transfer.
  void prepare(const WireRequest& request, const AttemptLimits& limits, Instant now);
  // How the transfer ended: libcurl's code, or the driver's interrupt.
  WireResult finish(CURLcode code, Interrupt interrupt);

  // Streaming (curl_stream.h), after prepare(): the body goes to the reader, not into the response.
  void stream_body() { state_.sink.stream(); }
  BodySink& sink() { return state_.sink; }
  // The response as far as its headers, once headers_done(): status, headers, version; no body.
  WireResult head();

 private:
  void configure(const TransportConfig& config, const Slist& connect_to);
  // When `next` differs from the headers last set only in values of unchanged lengths, writes those values
  // into the list in place and returns true; false when the list must be rebuilt.
  bool patch_header_values(const Headers& next);

  CURL* easy_;
  AttemptState state_;
  char error_[CURL_ERROR_SIZE] = {};
  Duration connect_timeout_{};
  // What the handle was last set to (see prepare()).
  Slist headers_;
  Headers last_headers_;
  std::vector<curl_slist*> header_nodes_;  // the nodes of headers_ holding last_headers_' fields, in order
  std::string last_url_;
  std::string last_method_;
  bool last_had_body_ = false;
  long last_connect_ms_ = -1;
  uint64_t max_body_ = 0;      // TransportConfig::max_response_body: the buffered body's limit
  bool decompress_ = true;     // TransportConfig::decompress
  int last_accept_encoding_ = -1;  // -1 never set, 0 off, 1 on
};

}  // namespace humus::transport
