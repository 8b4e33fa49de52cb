#include "transport/version_info.h"

#include <curl/curl.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string_view>
#include <vector>

#include "transport/curl_easy.h"

namespace humus::transport {
namespace {

struct Feature {
  int bit;
  std::string_view name;
};

// curl -V's names, lowercased. Only bits libcurl 7.80 defines; a newer libcurl's extra bits are not named.
constexpr Feature kFeatures[] = {
    {CURL_VERSION_IPV6, "ipv6"},
    {CURL_VERSION_SSL, "ssl"},
    {CURL_VERSION_LIBZ, "libz"},
    {CURL_VERSION_NTLM, "ntlm"},
    {CURL_VERSION_ASYNCHDNS, "asynchdns"},
    {CURL_VERSION_SPNEGO, "spnego"},
    {CURL_VERSION_LARGEFILE, "largefile"},
    {CURL_VERSION_IDN, "idn"},
    {CURL_VERSION_TLSAUTH_SRP, "tls-srp"},
    {CURL_VERSION_HTTP2, "http2"},
    {CURL_VERSION_GSSAPI, "gss-api"},
    {CURL_VERSION_KERBEROS5, "kerberos"},
    {CURL_VERSION_UNIX_SOCKETS, "unixsockets"},
    {CURL_VERSION_PSL, "psl"},
    {CURL_VERSION_HTTPS_PROXY, "https-proxy"},
    {CURL_VERSION_BROTLI, "brotli"},
    {CURL_VERSION_ALTSVC, "alt-svc"},
    {CURL_VERSION_HTTP3, "http3"},
    {CURL_VERSION_ZSTD, "zstd"},
    {CURL_VERSION_HSTS, "hsts"},
    {CURL_VERSION_GSASL, "gsasl"},
};

}  // namespace

const std::string& decodable_codings() {
  static const std::string codings = [] {
    ensure_curl_global();
    const int bits = curl_version_info(CURLVERSION_NOW)->features;
    std::string out;
    const auto add = [&out](const char* coding) { out += out.empty() ? coding : std::string(", ") + coding; };
    if ((bits & CURL_VERSION_LIBZ) != 0) {
      add("deflate");
      add("gzip");
    }
    if ((bits & CURL_VERSION_BROTLI) != 0) add("br");
    if ((bits & CURL_VERSION_ZSTD) != 0) add("zstd");
    return out;
  }();
  return codings;
}

std::string linked_versions_json() {
  ensure_curl_global();
  const curl_version_info_data* info = curl_version_info(CURLVERSION_NOW);
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  j["humus_http"] = HUMUS_CMAKE_VERSION_STRING;
  j["libcurl"] = info->version != nullptr ? info->version : "unknown";
  const auto add = [&](const char* key, const char* value) {
    if (value != nullptr && *value != '\0') j[key] = value;
  };
  add("ssl", info->ssl_version);
  add("zlib", info->libz_version);
  // Members past the first ones exist only from the "age" that added them (curl_version_info(3)).
  if (info->age >= CURLVERSION_FIFTH) add("brotli", info->brotli_version);
  if (info->age >= CURLVERSION_EIGHTH) add("zstd", info->zstd_version);
  if (info->age >= CURLVERSION_SIXTH) add("nghttp2", info->nghttp2_version);
  if (info->age >= CURLVERSION_SECOND) add("libidn2", info->libidn);
  std::vector<std::string> features;
  for (const Feature& f : kFeatures) {
    if ((info->features & f.bit) != 0) features.emplace_back(f.name);
  }
  std::sort(features.begin(), features.end());
  j["features"] = features;
  return j.dump();
}

}  // namespace humus::transport
