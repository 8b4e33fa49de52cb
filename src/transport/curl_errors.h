// libcurl's result codes mapped onto the project's error kinds. Only transport/ sees CURLcode.
#pragma once

#include <curl/curl.h>

#include <string>
#include <string_view>

#include "common/status.h"

namespace humus::transport {

// `detail` is libcurl's error buffer: some kinds (a refused client certificate under TLS 1.3, a refused
// HTTP/2 stream) are only told apart by it. A code this table does not know (a newer libcurl) maps to
// kProtocol, which the default classifier does not retry. `headers_received`: whether the response's headers
// had arrived, which tells an HTTP/2 stream the server never processed from one that broke mid-response.
Code map_curl_error(CURLcode code, std::string_view detail, bool headers_received);

// What a failed transfer left to go by.
struct CurlFailure {
  CURLcode code = CURLE_OK;
  std::string_view detail;       // libcurl's error buffer (or its text for the code)
  bool headers_received = false;
  int os_errno = 0;              // the socket's errno (CURLINFO_OS_ERRNO), or why opening one failed
  bool socket_open_failed = false;
  long verify_result = 0;        // CURLINFO_SSL_VERIFYRESULT: OpenSSL's X509_V_* code
  std::string_view host;         // the origin's host, for a hostname mismatch's message
};

struct TransportError {
  Code code;
  std::string message;
};

// The kind and the message the caller gets (docs/transport.md §10.7): a local shortage is kResource
// whatever libcurl called it; a TLS handshake cut by the network is a dropped connection, not a certificate
// problem; an untrusted certificate and a hostname mismatch have messages of their own.
TransportError describe_curl_failure(const CurlFailure& f);

}  // namespace humus::transport
