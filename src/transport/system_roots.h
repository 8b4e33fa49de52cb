// The system's trust roots, for a client given no CA (docs/transport.md §10.3). libcurl looks for them where
// the machine that built it keeps them; a libcurl that travels — the Python wheel carries its own, built on
// Debian — may run where that file does not exist, and every HTTPS call would then fail verification. So
// when libcurl's built-in bundle is missing, the bundle is looked for where the Linux distributions keep one.
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace humus::transport {

// The bundle file to give libcurl (CURLOPT_CAINFO) for the system's roots, or "" when libcurl's own default
// stands: SSL_CERT_FILE when set (OpenSSL's convention), else nothing when libcurl's built-in bundle is
// readable, else the first readable file of the distributions' places. Computed once; thread-safe.
const std::string& system_ca_bundle();

// The rule above on given inputs (system_ca_bundle's testable part): `env_file` is SSL_CERT_FILE's value
// (nullptr: unset), `builtin` libcurl's default ("" when unknown), `places` the candidates in order.
std::string pick_ca_bundle(const char* env_file, std::string_view builtin, std::span<const std::string_view> places);

}  // namespace humus::transport
