#include "transport/system_roots.h"

#include <curl/curl.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>

namespace humus::transport {
namespace {

// Where the distributions keep one PEM bundle of the system's roots, the most common first: Debian, Ubuntu,
// Arch and Gentoo; Fedora and RHEL; openSUSE; OpenELEC; CentOS and RHEL 7 and later; Alpine and macOS-like
// layouts.
constexpr std::string_view kPlaces[] = {
    "/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/ca-bundle.pem",             "/etc/pki/tls/cacert.pem",
    "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem", "/etc/ssl/cert.pem",
};

bool readable(std::string_view path) { return !path.empty() && ::access(std::string(path).c_str(), R_OK) == 0; }

// libcurl's built-in bundle (CURLINFO_CAINFO, libcurl 7.84 and later); "" when it has none or does not say.
std::string builtin_bundle() {
  std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> e(curl_easy_init(), curl_easy_cleanup);
  char* path = nullptr;
  if (!e || curl_easy_getinfo(e.get(), CURLINFO_CAINFO, &path) != CURLE_OK || path == nullptr) return {};
  return path;
}

}  // namespace

std::string pick_ca_bundle(const char* env_file, std::string_view builtin, std::span<const std::string_view> places) {
  // A variable the operator set is followed even when the file is missing: verification then fails naming
  // the trust roots, where falling back quietly would trust roots the operator did not choose.
  if (env_file != nullptr && *env_file != '\0') return env_file;
  if (builtin.empty() || readable(builtin)) return {};
  for (std::string_view place : places) {
    if (readable(place)) return std::string(place);
  }
  return {};
}

const std::string& system_ca_bundle() {
  static const std::string bundle = pick_ca_bundle(std::getenv("SSL_CERT_FILE"), builtin_bundle(), kPlaces);
  return bundle;
}

}  // namespace humus::transport
