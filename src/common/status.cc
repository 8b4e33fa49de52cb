#include "common/status.h"

namespace humus {

// The names are the C ABI's enumerators, which humus_status_name returns from this table too.
const char* code_name(Code code) {
  switch (code) {
    case Code::kOk: return "HUMUS_OK";
    case Code::kInvalidArgument: return "HUMUS_E_INVALID_ARGUMENT";
    case Code::kMisuse: return "HUMUS_E_MISUSE";
    case Code::kProgram: return "HUMUS_E_PROGRAM";
    case Code::kCrossOrigin: return "HUMUS_E_CROSS_ORIGIN";
    case Code::kNoMemory: return "HUMUS_E_NO_MEMORY";
    case Code::kInternal: return "HUMUS_E_INTERNAL";
    case Code::kCallback: return "HUMUS_E_CALLBACK";
    case Code::kConfig: return "HUMUS_E_CONFIG";
    case Code::kRejected: return "HUMUS_E_REJECTED";
    case Code::kBulkheadFull: return "HUMUS_E_BULKHEAD_FULL";
    case Code::kTimeout: return "HUMUS_E_TIMEOUT";
    case Code::kCancelled: return "HUMUS_E_CANCELLED";
    case Code::kConnect: return "HUMUS_E_CONNECT";
    case Code::kResolve: return "HUMUS_E_RESOLVE";
    case Code::kConnectionLost: return "HUMUS_E_CONNECTION_LOST";
    case Code::kProtocol: return "HUMUS_E_PROTOCOL";
    case Code::kStreamRefused: return "HUMUS_E_STREAM_REFUSED";
    case Code::kTooLarge: return "HUMUS_E_TOO_LARGE";
    case Code::kResource: return "HUMUS_E_RESOURCE";
    case Code::kTls: return "HUMUS_E_TLS";
    case Code::kTlsClientCert: return "HUMUS_E_TLS_CLIENT_CERT";
  }
  return "HUMUS_E_UNKNOWN";  // a number cast from the C side that no Code names
}

}  // namespace humus
