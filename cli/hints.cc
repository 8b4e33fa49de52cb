#include "hints.h"

namespace humus::cli {

std::string hint_for(const humus_error* e, const FetchOptions& o) {
  if (humus_error_status(e) != HUMUS_E_TLS) return "";
  const std::string message = humus_error_message(e);
  // OpenSSL's words for a ClientHello answered by an HTTP/1.x response: the port speaks plain HTTP.
  if (message.find("wrong version number") != std::string::npos) {
    return "; the server answered in plain HTTP, not TLS: is the port an http:// one?";
  }
  // The client's words for a chain that ends at no root it trusts (src/transport: self-signed, unknown issuer).
  if (message.find("not trusted") != std::string::npos) {
    return o.cacert ? "; it is not signed by the CA of --cacert " + *o.cacert
                    : "; if you trust its CA, give it with --cacert FILE";
  }
  return "";
}

}  // namespace humus::cli
