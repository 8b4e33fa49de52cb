#pragma once
// The exit statuses of humus-http: curl's numbers where the failure is the same, the client's own above 100.

#include <humus_http.h>

#include <string>

namespace humus::cli::exit_code {

inline constexpr int kOk = 0;
inline constexpr int kFailure = 1;          // anything not listed below (an internal error, out of memory)
inline constexpr int kUsage = 2;            // curl's: a bad flag, value, header or command
inline constexpr int kUrl = 3;              // curl's CURLE_URL_MALFORMAT
inline constexpr int kResolve = 6;          // curl's CURLE_COULDNT_RESOLVE_HOST
inline constexpr int kConnect = 7;          // curl's CURLE_COULDNT_CONNECT
inline constexpr int kProtocol = 8;         // curl's CURLE_WEIRD_SERVER_REPLY
inline constexpr int kHttp2 = 16;           // curl's CURLE_HTTP2: stream refused / GOAWAY unprocessed
inline constexpr int kHttpError = 22;       // curl's CURLE_HTTP_RETURNED_ERROR, with --fail
inline constexpr int kWrite = 23;           // curl's CURLE_WRITE_ERROR: -o
inline constexpr int kRead = 26;            // curl's CURLE_READ_ERROR: -d @file, --data-binary @file
inline constexpr int kTimeout = 28;         // curl's CURLE_OPERATION_TIMEDOUT
inline constexpr int kTlsHandshake = 35;    // curl's CURLE_SSL_CONNECT_ERROR
inline constexpr int kTooManyRedirects = 47; // curl's CURLE_TOO_MANY_REDIRECTS: --max-redirs
inline constexpr int kConnectionLost = 56;  // curl's CURLE_RECV_ERROR
inline constexpr int kClientCertFile = 58;  // curl's CURLE_SSL_CERTPROBLEM: --cert / --key
inline constexpr int kTooLarge = 63;        // curl's CURLE_FILESIZE_EXCEEDED: past max_response_headers/_body
inline constexpr int kTlsVerify = 60;       // curl's CURLE_PEER_FAILED_VERIFICATION
inline constexpr int kCaFile = 77;          // curl's CURLE_SSL_CACERT_BADFILE: --cacert
inline constexpr int kConfig = 78;          // sysexits EX_CONFIG (docs/settings.md §3.1): the --settings file
inline constexpr int kRejected = 120;       // the circuit breaker is open: nothing was sent
inline constexpr int kBulkheadFull = 121;   // no bulkhead slot within bulkhead.wait: nothing was sent
inline constexpr int kResource = 122;       // a local shortage (file descriptors, ports): not the server's fault

// The exit status for a call that ended with `e` (a failed humus_client_do).
int for_call_error(const humus_error* e);

// The table printed by --help.
std::string help_table();

}  // namespace humus::cli::exit_code
