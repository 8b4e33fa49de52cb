#include "transport/curl_errors.h"

#include <nghttp2/nghttp2.h>
#include <openssl/x509.h>

#include <cerrno>
#include <cstring>

#include "transport/sockets.h"

namespace humus::transport {
namespace {

bool mentions(std::string_view detail, std::string_view what) { return detail.find(what) != std::string_view::npos; }

constexpr int kCurleTooLarge = 100;

// nghttp2's library errors that stop a connection's reading.
std::string nghttp2_error_text(int error) {
  switch (error) {
    case NGHTTP2_ERR_HEADER_COMP: return "a header block that does not decode";
    case NGHTTP2_ERR_FRAME_SIZE_ERROR: return "a frame over the allowed size";
    case NGHTTP2_ERR_FLOODED: return "a flood of frames";
    case -905: return "too many CONTINUATION frames";  // NGHTTP2_ERR_TOO_MANY_CONTINUATIONS, since nghttp2 1.61
    case NGHTTP2_ERR_CALLBACK_FAILURE: return "libcurl's HTTP/2 layer refused what the server sent";
    case NGHTTP2_ERR_NOMEM: return "out of memory";
    default: return "NGHTTP2_ERR " + std::to_string(error);
  }
}

// Under TLS 1.3 the server refuses a missing client certificate after the handshake, so the client sees it
// as a failed read (docs/libcurl-traps.md §19); under TLS 1.2 as a failed handshake. Both carry the alert's text.
bool is_client_certificate_refusal(std::string_view detail) {
  return mentions(detail, "certificate required") || mentions(detail, "alert bad certificate") ||
         mentions(detail, "alert unknown ca") || mentions(detail, "alert certificate unknown");
}

}  // namespace

Code map_curl_error(CURLcode code, std::string_view detail) {
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
      // A failed read that was the connection's (see describe_curl_failure for one that was not).
      return is_client_certificate_refusal(detail) ? Code::kTlsClientCert : Code::kConnectionLost;
    case CURLE_SEND_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
      return Code::kConnectionLost;
    // An HTTP/2 stream or connection that failed with nothing nghttp2 reported of it (http2_failure): lost.
    // Never "refused" on libcurl's word alone: libcurl 7.88 says the same of a GOAWAY that left the stream
    // unprocessed and of a connection the server broke after reading the request.
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
      return Code::kConnectionLost;
    case CURLE_OUT_OF_MEMORY: return Code::kNoMemory;
    case CURLE_URL_MALFORMAT:
      return Code::kInvalidArgument;
    case CURLE_UNSUPPORTED_PROTOCOL:
      // Requests are checked for http(s) before anything is sent: here it is a reply libcurl cannot read as
      // HTTP/1.x ("Received HTTP/0.9 when not allowed").
      return Code::kProtocol;
    default:
      // libcurl 8.6's CURLE_TOO_LARGE (100), known by number so that a library built against an older
      // libcurl's header still reads it right: a header line or block past libcurl's own limit.
      if (static_cast<int>(code) == kCurleTooLarge) return Code::kTooLarge;
      return Code::kProtocol;
  }
}

std::optional<TransportError> http2_failure(const h2::StreamFacts& f) {
  if (!f.seen) return std::nullopt;
  if (f.closed && !f.reset_by_client && f.close_code == h2::kRefusedStream) {
    return TransportError{Code::kStreamRefused,
                          "the server refused the HTTP/2 stream (REFUSED_STREAM, or a GOAWAY below it): it was "
                          "not processed"};
  }
  if (f.closed && !f.reset_by_client && f.close_code == h2::kHttp11Required) {
    return TransportError{Code::kStreamRefused,
                          "the server requires HTTP/1.1 (HTTP_1_1_REQUIRED): later attempts use HTTP/1.1"};
  }
  if (f.connection_failure > 0) {
    return TransportError{Code::kProtocol, "the server broke HTTP/2: the connection was ended with " +
                                               h2::error_name(static_cast<uint32_t>(f.connection_failure))};
  }
  if (f.connection_failure < 0) {
    return TransportError{Code::kProtocol, "the server broke HTTP/2: nghttp2 stopped reading the connection (" +
                                               nghttp2_error_text(f.connection_failure) + ")"};
  }
  if (!f.closed || f.close_code == h2::kNoError) return std::nullopt;
  const std::string name = h2::error_name(f.close_code);
  const bool protocol_code = f.close_code == h2::kProtocolError || f.close_code == h2::kFlowControlError ||
                             f.close_code == h2::kStreamClosed || f.close_code == h2::kFrameSizeError ||
                             f.close_code == h2::kCompressionError;
  if (f.reset_by_client) {
    // nghttp2 resets a stream whose response breaks HTTP/2 (an uppercase or connection-specific field, no or a
    // bad :status) with PROTOCOL_ERROR; libcurl resets one it gives up on (after a failure it reports itself)
    // with STREAM_CLOSED or CANCEL, which says nothing of the server.
    if (f.client_reset_code != h2::kProtocolError) return std::nullopt;
    return TransportError{Code::kProtocol, "the response broke HTTP/2: nghttp2 reset the stream with PROTOCOL_ERROR"};
  }
  if (protocol_code) {
    return TransportError{Code::kProtocol, "the server reset the HTTP/2 stream with " + name + ": it broke HTTP/2"};
  }
  return TransportError{Code::kConnectionLost, "the server reset the HTTP/2 stream (" + name + ")"};
}

namespace {

// A handshake the network cut: reset, EOF, a broken pipe. OpenSSL says "unexpected eof while reading" or
// SSL_ERROR_SYSCALL; the socket's errno says ECONNRESET or EPIPE.
bool is_cut_handshake(const CurlFailure& f) {
  return f.os_errno == ECONNRESET || f.os_errno == EPIPE || mentions(f.detail, "unexpected eof") ||
         mentions(f.detail, "SSL_ERROR_SYSCALL") || mentions(f.detail, "Connection reset") ||
         mentions(f.detail, "Broken pipe");
}

// Whether a failed read was the connection's end rather than bytes libcurl refused: a socket error of this
// attempt's, or the peer's end of the connection — over TLS, where a cut without close_notify is a failed
// read too (over plain TCP a cut body is CURLE_PARTIAL_FILE), and where libcurl 7.88 kept an earlier
// attempt's errno, which says nothing of this one.
bool connection_cut(const CurlFailure& f) {
  const bool fresh_socket_error = f.os_errno != 0 && f.os_errno != f.os_errno_before;
  const bool stale_errno = f.os_errno != 0 && f.os_errno == f.os_errno_before;
  return fresh_socket_error || ((f.tls || stale_errno) && f.peer_ended);
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
  if (f.code == CURLE_RECV_ERROR && f.headers_received && !is_client_certificate_refusal(f.detail) &&
      !connection_cut(f)) {
    // libcurl could not read the body the peer sent on a connection still up (a malformed chunk size: its
    // wording differs between libcurl versions): the peer broke HTTP, and would again.
    return {Code::kProtocol, "the response body could not be read as HTTP: " + detail};
  }
  return {map_curl_error(f.code, f.detail), detail};
}

}  // namespace humus::transport
