#include "exit_codes.h"

#include <algorithm>
#include <cctype>
#include <string_view>

namespace humus::cli::exit_code {
namespace {

bool mentions(std::string_view text, std::string_view what) {
  const auto it = std::search(text.begin(), text.end(), what.begin(), what.end(), [](char a, char b) {
    return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
  });
  return it != text.end();
}

// HUMUS_E_TLS covers both of curl's TLS exits. The C ABI has one status for them, so the message (libcurl's
// or the client's own, e.g. for a CN-only certificate) tells a refused server certificate from a handshake
// that failed for another reason (a protocol version, a cipher).
bool is_certificate_verification(std::string_view message) {
  return mentions(message, "certificate") || mentions(message, "subject name") ||
         mentions(message, "subjectAltName") || mentions(message, "host name");
}

}  // namespace

int for_call_error(const humus_error* e) {
  if (e == nullptr) return kFailure;
  switch (humus_error_status(e)) {
    case HUMUS_E_INVALID_ARGUMENT:
    case HUMUS_E_CROSS_ORIGIN:
      return kUsage;
    case HUMUS_E_CONFIG:
      return kConfig;
    case HUMUS_E_REJECTED:
      return kRejected;
    case HUMUS_E_BULKHEAD_FULL:
      return kBulkheadFull;
    case HUMUS_E_TIMEOUT:
      return kTimeout;
    case HUMUS_E_CONNECT:
      return kConnect;
    case HUMUS_E_RESOLVE:
      return kResolve;
    case HUMUS_E_CONNECTION_LOST:
      return kConnectionLost;
    case HUMUS_E_PROTOCOL:
      return kProtocol;
    case HUMUS_E_STREAM_REFUSED:
      return kHttp2;
    case HUMUS_E_TOO_LARGE:
      return kTooLarge;
    case HUMUS_E_RESOURCE:
      return kResource;
    case HUMUS_E_TLS:
      return is_certificate_verification(humus_error_message(e)) ? kTlsVerify : kTlsHandshake;
    case HUMUS_E_TLS_CLIENT_CERT:
      return kTlsHandshake;
    default:
      return kFailure;
  }
}

std::string help_table() {
  return R"(Exit status (curl's numbers where the failure is the same):
    0  the call got a response (any status, unless --fail)
    1  another failure (an internal error, out of memory)
    2  bad command line: an unknown flag, a missing or bad value, a header the client refuses, a URL outside
       the origin of the --settings base_url (the message names the flag or value)
    3  the URL is malformed
    6  the host name did not resolve
    7  could not connect
    8  the server broke HTTP
   16  HTTP/2 stream refused or dropped unprocessed, on every attempt
   22  --fail, and the status was 400 or more
   23  could not write the output (-o, -O, -D, stdout, demo --plot), or -O found no file name in the URL
   26  could not read the body's file (-d, --data-binary, --data-urlencode, --json @FILE; -F NAME=@FILE)
   28  timed out: the call's deadline (--max-time) or its last attempt's timeout (--attempt-timeout)
   35  TLS handshake failed (protocol version, a client certificate the server refused or required)
   47  more redirects than --max-redirs allows (the next one is not made)
   56  the connection was lost (reset, or closed before a full response)
   58  --cert or --key could not be used
   63  the response's headers or body passed the client's limit (max_response_headers, max_response_body)
   60  the server's certificate is not trusted, or not for this host
   77  --cacert could not be used
   78  the --settings file is unreadable or refused (every bad key is named)
  120  rejected: the circuit breaker is open, nothing was sent (only after failures in this run: see --repeat)
  121  bulkhead full: no slot within bulkhead.wait, nothing was sent (see --concurrency)
  122  a local shortage (out of file descriptors, ports or socket buffers): not the server's fault
With --repeat, the status is that of the last call (in order) that failed.
)";
}

}  // namespace humus::cli::exit_code
