#include "transport/curl_errors.h"

namespace humus::transport {
namespace {

bool mentions(std::string_view detail, std::string_view what) { return detail.find(what) != std::string_view::npos; }

// Under TLS 1.3 the server refuses a missing client certificate after the handshake, so the client sees it
// as a failed read (SPEC §19); under TLS 1.2 as a failed handshake. Both carry the alert's text.
bool is_client_certificate_refusal(std::string_view detail) {
  return mentions(detail, "certificate required") || mentions(detail, "alert bad certificate") ||
         mentions(detail, "alert unknown ca") || mentions(detail, "alert certificate unknown");
}

// libcurl reports REFUSED_STREAM and a GOAWAY that left the stream unprocessed as generic HTTP/2 errors.
bool is_unprocessed_stream(std::string_view detail) {
  return mentions(detail, "REFUSED_STREAM") || mentions(detail, "was not processed") ||
         mentions(detail, "GOAWAY") || mentions(detail, "refused stream");
}

}  // namespace

Code map_curl_error(CURLcode code, std::string_view detail, bool headers_received) {
  switch (code) {
    case CURLE_OK: return Code::kOk;
    case CURLE_COULDNT_RESOLVE_HOST: return Code::kResolve;
    case CURLE_COULDNT_CONNECT: return Code::kConnect;
    case CURLE_OPERATION_TIMEDOUT: return Code::kTimeout;
    case CURLE_SSL_CONNECT_ERROR:
      return is_client_certificate_refusal(detail) ? Code::kTlsClientCert : Code::kTls;
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_SSL_INVALIDCERTSTATUS:
    case CURLE_SSL_CRL_BADFILE:
    case CURLE_SSL_ENGINE_INITFAILED:
    case CURLE_SSL_ENGINE_NOTFOUND:
    case CURLE_SSL_ENGINE_SETFAILED:
    case CURLE_SSL_SHUTDOWN_FAILED:
    case CURLE_USE_SSL_FAILED:
      return Code::kTls;
    case CURLE_RECV_ERROR:
      if (is_client_certificate_refusal(detail)) return Code::kTlsClientCert;
      return Code::kConnectionLost;
    case CURLE_SEND_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
      return Code::kConnectionLost;
    case CURLE_HTTP2:
      // libcurl 7.88 reports a GOAWAY that left the stream unprocessed as a bare "Error in the HTTP2 framing
      // layer" (SPEC §19): before any header arrived, the request never reached the application.
      return !headers_received || is_unprocessed_stream(detail) ? Code::kStreamRefused : Code::kConnectionLost;
    case CURLE_HTTP2_STREAM:
      return is_unprocessed_stream(detail) ? Code::kStreamRefused : Code::kConnectionLost;
    case CURLE_OUT_OF_MEMORY: return Code::kNoMemory;
    case CURLE_URL_MALFORMAT:
    case CURLE_UNSUPPORTED_PROTOCOL:
      return Code::kInvalidArgument;
    default: return Code::kProtocol;
  }
}

}  // namespace humus::transport
