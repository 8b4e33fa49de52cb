// Version and status names: the parts of the C ABI that need no handle.
#include "humus_http.h"

#include "capi/guard.h"
#include "capi/text_out.h"
#include "transport/version_info.h"

using humus::capi::guard;
using humus::capi::null_argument;

extern "C" {

// The SONAME CMake gives the library is the header's ABI major (CMakeLists.txt HUMUS_ABI_VERSION).
static_assert(HUMUS_CMAKE_ABI_VERSION == HUMUS_ABI_VERSION, "CMakeLists.txt HUMUS_ABI_VERSION != the header's");

HUMUS_API int32_t humus_version_number(void) { return HUMUS_VERSION_NUMBER; }
HUMUS_API int32_t humus_abi_version(void) { return HUMUS_ABI_VERSION; }
HUMUS_API const char* humus_version(void) { return HUMUS_VERSION_STRING; }

HUMUS_API humus_status humus_version_info(char** out, size_t* len, humus_error** err) {
  return guard(err, [&]() -> humus_status {
    if (out == nullptr) return null_argument("humus_version_info", "out", err);
    return humus::capi::text_out(humus::transport::linked_versions_json(), out, len);
  });
}

HUMUS_API const char* humus_status_name(humus_status s) {
  switch (s) {
    case HUMUS_OK: return "HUMUS_OK";
    case HUMUS_E_INVALID_ARGUMENT: return "HUMUS_E_INVALID_ARGUMENT";
    case HUMUS_E_MISUSE: return "HUMUS_E_MISUSE";
    case HUMUS_E_PROGRAM: return "HUMUS_E_PROGRAM";
    case HUMUS_E_CROSS_ORIGIN: return "HUMUS_E_CROSS_ORIGIN";
    case HUMUS_E_NO_MEMORY: return "HUMUS_E_NO_MEMORY";
    case HUMUS_E_INTERNAL: return "HUMUS_E_INTERNAL";
    case HUMUS_E_CALLBACK: return "HUMUS_E_CALLBACK";
    case HUMUS_E_CONFIG: return "HUMUS_E_CONFIG";
    case HUMUS_E_REJECTED: return "HUMUS_E_REJECTED";
    case HUMUS_E_BULKHEAD_FULL: return "HUMUS_E_BULKHEAD_FULL";
    case HUMUS_E_TIMEOUT: return "HUMUS_E_TIMEOUT";
    case HUMUS_E_CANCELLED: return "HUMUS_E_CANCELLED";
    case HUMUS_E_CONNECT: return "HUMUS_E_CONNECT";
    case HUMUS_E_RESOLVE: return "HUMUS_E_RESOLVE";
    case HUMUS_E_CONNECTION_LOST: return "HUMUS_E_CONNECTION_LOST";
    case HUMUS_E_PROTOCOL: return "HUMUS_E_PROTOCOL";
    case HUMUS_E_STREAM_REFUSED: return "HUMUS_E_STREAM_REFUSED";
    case HUMUS_E_TOO_LARGE: return "HUMUS_E_TOO_LARGE";
    case HUMUS_E_RESOURCE: return "HUMUS_E_RESOURCE";
    case HUMUS_E_TLS: return "HUMUS_E_TLS";
    case HUMUS_E_TLS_CLIENT_CERT: return "HUMUS_E_TLS_CLIENT_CERT";
    default: return "HUMUS_E_UNKNOWN";
  }
}

}  // extern "C"
