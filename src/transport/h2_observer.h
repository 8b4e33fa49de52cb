// What nghttp2 knows about an attempt's HTTP/2 stream and connection, and libcurl keeps to itself: the code
// the stream was closed with (REFUSED_STREAM: the server did not process it, RFC 9113 §8.7), whether the
// request's last frame went out, and whether nghttp2 ended the connection because the server broke HTTP/2.
// libcurl folds all of these into two or three CURLcodes and message texts that change from version to
// version; the transport classifies an HTTP/2 failure by these facts instead (docs/libcurl-traps.md §19).
//
// How they are seen: libcurl registers its nghttp2 callbacks through nghttp2's public functions, and this
// library defines six of those functions too (h2_observer.cc). The dynamic linker finds a definition of this
// library before libnghttp2's, so libcurl's calls come here first: the callback libcurl gives is wrapped by
// one that notes the facts of watched easy handles' streams, then the real function is called. Nothing is
// changed on the wire. When the wrapping is not in effect (a libcurl already loaded before this library, or
// one that reaches nghttp2 directly), no facts arrive, active() says so, and the transport falls back to the
// classification that never takes a lost stream for a refused one.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace humus::transport::h2 {

// RFC 9113 §7 error codes the transport acts on.
inline constexpr uint32_t kNoError = 0x0;
inline constexpr uint32_t kProtocolError = 0x1;
inline constexpr uint32_t kFlowControlError = 0x3;
inline constexpr uint32_t kStreamClosed = 0x5;
inline constexpr uint32_t kFrameSizeError = 0x6;
inline constexpr uint32_t kRefusedStream = 0x7;
inline constexpr uint32_t kCompressionError = 0x9;
inline constexpr uint32_t kHttp11Required = 0xd;

// The facts of one attempt's stream. Filled on the thread that drives the transfer, from inside libcurl.
struct StreamFacts {
  bool seen = false;                 // the request's HEADERS went out on an observed HTTP/2 connection
  int32_t stream_id = 0;
  bool request_ended = false;        // ... and its last frame (END_STREAM): the whole request was written
  bool closed = false;               // the stream was closed, with close_code
  uint32_t close_code = kNoError;
  // The client reset the stream itself (RST_STREAM sent), with this code: nghttp2 resets a stream whose
  // response breaks HTTP/2 with PROTOCOL_ERROR, libcurl one it abandons (a failed transfer) with another.
  bool reset_by_client = false;
  uint32_t client_reset_code = kNoError;
  // nghttp2 ended the connection itself: > 0, the code of the GOAWAY it sent the server (the server broke
  // HTTP/2: a malformed frame, a bad SETTINGS value, a header block that would not decode); < 0, a fatal
  // nghttp2 library error (NGHTTP2_ERR_*) that stopped reading the connection.
  int connection_failure = 0;
};

// From now on, the facts of streams whose nghttp2 user data is `easy` (libcurl's easy handle) are kept.
// Thread-safe, as are all four functions.
void watch(const void* easy);
// Forgets `easy`: before its handle is freed, since the address may be given to another.
void unwatch(const void* easy);
// Clears the facts of `easy` for its next attempt.
void clear(const void* easy);
// The facts of `easy`'s current attempt.
StreamFacts facts(const void* easy);

// Whether libcurl's nghttp2 callbacks have been wrapped in this process (at least one HTTP/2 connection was
// set up through the observer).
bool active();

// Connection lifetime (docs/transport.md §10.1). libcurl checks a connection's age only while no transfer
// uses it, so a busy HTTP/2 connection would take new streams forever. A session opened by a watched easy
// handle whose lifetime is set takes no new stream once it is that old: nghttp2_session_check_request_allowed,
// which libcurl (7.88 as 8.x) asks before it multiplexes another transfer onto a connection, answers 0 for it
// from then on, as it does once a GOAWAY arrived. libcurl then puts new transfers on another connection,
// marks this one "no new requests" the next time it reads from it, and closes it once its streams finished.
// Nothing goes on the wire for it. The age is counted from the session's first frame (its SETTINGS, sent
// right after the TLS handshake), and the lifetime is that of the easy handle that opened the session's
// first stream. Thread-safe; forgotten by unwatch().
void set_lifetime(const void* easy, std::chrono::steady_clock::duration lifetime);
// How many sessions reached their lifetime while open and were refused a new stream since the process
// started: for tests and diagnostics.
uint64_t sessions_aged();

// The RFC 9113 name of an error code ("REFUSED_STREAM"), or "error 0x…" for another.
std::string error_name(uint32_t code);

}  // namespace humus::transport::h2
