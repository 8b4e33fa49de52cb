// libcurl's result codes mapped onto the project's error kinds. Only transport/ sees CURLcode.
#pragma once

#include <curl/curl.h>

#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"
#include "transport/h2_observer.h"

namespace humus::transport {

// The kind of a libcurl result code. `detail` is libcurl's error buffer: a refused client certificate under
// TLS 1.3 is only told apart by it. A code this table does not know (a newer libcurl) maps to kProtocol,
// which the default classifier does not retry. HTTP/2 failures are not told apart here but by what nghttp2
// reported (http2_failure): libcurl gives them two or three codes whose texts change between versions.
Code map_curl_error(CURLcode code, std::string_view detail);

// What a failed transfer left to go by.
struct CurlFailure {
  CURLcode code = CURLE_OK;
  std::string_view detail;       // libcurl's error buffer (or its text for the code)
  bool headers_received = false;
  int os_errno = 0;              // the socket's errno (CURLINFO_OS_ERRNO), or why opening one failed
  int os_errno_before = 0;       // CURLINFO_OS_ERRNO when the attempt began (libcurl 7.88 never clears it)
  bool socket_open_failed = false;
  bool tls = false;              // over TLS
  bool peer_ended = false;       // the peer had ended the connection when libcurl closed it (EOF or error)
  long verify_result = 0;        // CURLINFO_SSL_VERIFYRESULT: OpenSSL's X509_V_* code
  std::string_view host;         // the origin's host, for a hostname mismatch's message
};

struct TransportError {
  Code code;
  std::string message;
};

// How an attempt's HTTP/2 stream failed, by what nghttp2 reported of it (docs/transport.md §10.9): the server
// refused it (REFUSED_STREAM, or a GOAWAY below it: not processed, safe to send again whatever the method),
// asked for HTTP/1.1, reset it, or broke HTTP/2 so that nghttp2 ended the connection. Nothing when nghttp2
// reported nothing of the stream (an HTTP/1.x transfer, or a connection lost under it): the caller goes by the
// result code then.
std::optional<TransportError> http2_failure(const h2::StreamFacts& facts);

// The kind and the message the caller gets (docs/transport.md §10.7): a local shortage is kResource
// whatever libcurl called it; a TLS handshake cut by the network is a dropped connection, not a certificate
// problem; an untrusted certificate and a hostname mismatch have messages of their own.
TransportError describe_curl_failure(const CurlFailure& f);

}  // namespace humus::transport
