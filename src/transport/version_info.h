// What the library was linked with at run time (SECURITY.md: a report names the versions it ran): libcurl's
// own account through curl_version_info, which is why it lives here, the only code that includes curl.h.
#pragma once

#include <string>

namespace humus::transport {

// One JSON object: {"humus_http": "0.1.0", "libcurl": "7.88.1", "ssl": "OpenSSL/3.0.x", "zlib": "1.2.13",
// "brotli": ..., "zstd": ..., "nghttp2": ..., "libidn2": ..., "features": ["alt-svc", "http2", ...]}. A
// library libcurl was built without is left out; features are sorted, lowercase, as curl -V names them.
// Thread-safe (curl_version_info only reads static data once libcurl is initialised; this initialises it).
std::string linked_versions_json();

// The Content-Encoding values the linked libcurl decodes, as it would list them in an Accept-Encoding header
// for CURLOPT_ACCEPT_ENCODING "" (libcurl 7.88: "deflate, gzip, br, zstd", each only when built in); empty
// when it decodes none. Computed once; thread-safe.
const std::string& decodable_codings();

}  // namespace humus::transport
