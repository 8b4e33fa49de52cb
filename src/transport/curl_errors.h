// libcurl's result codes mapped onto the project's error kinds. Only transport/ sees CURLcode.
#pragma once

#include <curl/curl.h>

#include <string_view>

#include "common/status.h"

namespace humus::transport {

// `detail` is libcurl's error buffer: some kinds (a refused client certificate under TLS 1.3, a refused
// HTTP/2 stream) are only told apart by it. A code this table does not know (a newer libcurl) maps to
// kProtocol, which the default classifier does not retry. `headers_received`: whether the response's headers
// had arrived, which tells an HTTP/2 stream the server never processed from one that broke mid-response.
Code map_curl_error(CURLcode code, std::string_view detail, bool headers_received);

}  // namespace humus::transport
