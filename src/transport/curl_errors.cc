#include "transport/curl_errors.h"

#include <openssl/x509.h>

#include <cerrno>
#include <cstring>

#include "transport/sockets.h"

namespace humus::transport {
namespace {

bool mentions(std::string_view detail, std::string_view what) { return detail.find(what) != std::string_view::npos; }

// Under TLS 1.3 the server refuses a missing client certificate after the handshake, so the client sees it
// as a failed read (docs/libcurl-traps.md §19); under TLS 1.2 as a failed handshake. Both carry the alert's text.
bool is_client_certificate_refusal(std::string_view detail) {
  return mentions(detail, "certificate required") || mentions(detail, "alert bad certificate") ||
         mentions(detail, "alert unknown ca") || mentions(detail, "alert certificate unknown");
}

// libcurl reports REFUSED_STREAM and a GOAWAY that left the stream unprocessed as generic HTTP/2 errors.
bool is_unprocessed_stream(std::string_view detail) {
  return mentions(detail, "REFUSED_STREAM") || mentions(detail, "was not processed") ||
         mentions(detail, "GOAWAY") || mentions(detail, "refused stream");
}

// nghttp2 refusing what the peer sent (a CONTINUATION flood, a broken header block, a flow-control or flooding
// violation): the peer broke HTTP/2, and would again. Its own failures (out of memory, a callback of the
// client's that stopped the transfer) are not the peer's.
bool is_http2_violation(std::string_view detail) {
  return mentions(detail, "nghttp2_session_mem_recv() returned") && !mentions(detail, "Out of memory") &&
         !mentions(detail, "callback function failed");
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
      if (is_http2_violation(detail)) return Code::kProtocol;
      // libcurl reports a malformed chunk ("Illegal or missing hexadecimal sequence in chunked-encoding",
      // "Too long hexadecimal number") as a failed read: the peer broke HTTP, and would again.
      if (mentions(detail, "chunked-encoding")) return Code::kProtocol;
      return Code::kConnectionLost;
    case CURLE_SEND_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
      return Code::kConnectionLost;
    case CURLE_HTTP2:
      if (is_http2_violation(detail)) return Code::kProtocol;
      // libcurl 7.88 reports a GOAWAY that left the stream unprocessed as a bare "Error in the HTTP2 framing
      // layer" (docs/libcurl-traps.md §19): before any header arrived, the request never reached the application.
      return !headers_received || is_unprocessed_stream(detail) ? Code::kStreamRefused : Code::kConnectionLost;
    case CURLE_HTTP2_STREAM:
      return is_unprocessed_stream(detail) ? Code::kStreamRefused : Code::kConnectionLost;
    case CURLE_OUT_OF_MEMORY: return Code::kNoMemory;
    case CURLE_URL_MALFORMAT:
      return Code::kInvalidArgument;
    case CURLE_UNSUPPORTED_PROTOCOL:
      // Requests are checked for http(s) before anything is sent: here it is a reply libcurl cannot read as
      // HTTP/1.x ("Received HTTP/0.9 when not allowed").
      return Code::kProtocol;
    default: return Code::kProtocol;
  }
}

namespace {

// A handshake the network cut: reset, EOF, a broken pipe. OpenSSL says "unexpected eof while reading" or
// SSL_ERROR_SYSCALL; the socket's errno says ECONNRESET or EPIPE.
bool is_cut_handshake(const CurlFailure& f) {
  return f.os_errno == ECONNRESET || f.os_errno == EPIPE || mentions(f.detail, "unexpected eof") ||
         mentions(f.detail, "SSL_ERROR_SYSCALL") || mentions(f.detail, "Connection reset") ||
         mentions(f.detail, "Broken pipe");
}

bool is_hostname_mismatch(long verify_result) {
  return verify_result == X509_V_ERR_HOSTNAME_MISMATCH || verify_result == X509_V_ERR_IP_ADDRESS_MISMATCH;
}

}  // namespace

TransportError describe_curl_failure(const CurlFailure& f) {
  const std::string detail(f.detail);
  if (is_local_shortage(f.os_errno) &&
      (f.socket_open_failed || f.code == CURLE_COULDNT_CONNECT || f.code == CURLE_COULDNT_RESOLVE_HOST)) {
    return {Code::kResource, "a local shortage stopped the attempt (" + std::string(std::strerror(f.os_errno)) +
                                 "): not the dependency's fault"};
  }
  if (f.code == CURLE_OUT_OF_MEMORY && !f.headers_received) {
    // libcurl refuses one header line over its own 100 KiB limit this way, before the header callback sees it.
    return {Code::kTooLarge, "a response header line passed libcurl's 100 KiB limit (max_response_headers): " +
                                 detail};
  }
  if (f.code == CURLE_SSL_CONNECT_ERROR && !is_client_certificate_refusal(f.detail) && is_cut_handshake(f)) {
    return {Code::kConnectionLost, "the connection was lost during the TLS handshake: " + detail};
  }
  if (f.code == CURLE_PEER_FAILED_VERIFICATION) {
    if (is_hostname_mismatch(f.verify_result)) {
      return {Code::kTls, "TLS: the server's certificate is not valid for host \"" + std::string(f.host) +
                              "\" (hostname mismatch)"};
    }
    const char* why = f.verify_result != 0 ? X509_verify_cert_error_string(f.verify_result) : detail.c_str();
    return {Code::kTls, "TLS: the server's certificate is not trusted (" + std::string(why) + ")"};
  }
  return {map_curl_error(f.code, f.detail, f.headers_received), detail};
}

}  // namespace humus::transport
