// Which HTTP a client speaks (docs/transport.md §10.2): one type from the http_version setting to the
// transport's libcurl option.
#pragma once

namespace humus::transport {

// auto: HTTP/2 then HTTP/1.1 by ALPN for https; plain http is always HTTP/1.1 (no h2c).
enum class HttpVersion { kAuto, kHttp1_1, kHttp2 };  // JSON "auto", "1.1", "2"

}  // namespace humus::transport
