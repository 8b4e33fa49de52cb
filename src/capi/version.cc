// Version and status names: the parts of the C ABI that need no handle.
#include "humus_http.h"

#include <string_view>

#include "capi/guard.h"
#include "capi/text_out.h"
#include "common/status.h"
#include "transport/version_info.h"

using humus::capi::guard;
using humus::capi::null_argument;

extern "C" {

// The SONAME CMake gives the library is the header's ABI major (CMakeLists.txt HUMUS_ABI_VERSION).
static_assert(HUMUS_CMAKE_ABI_VERSION == HUMUS_ABI_VERSION, "CMakeLists.txt HUMUS_ABI_VERSION != the header's");
// The core states its version from CMake's project version (the User-Agent, humus_version_info).
static_assert(std::string_view(HUMUS_CMAKE_VERSION_STRING) == HUMUS_VERSION_STRING,
              "CMakeLists.txt project VERSION != the header's HUMUS_VERSION_STRING");

HUMUS_API int32_t humus_version_number(void) { return HUMUS_VERSION_NUMBER; }
HUMUS_API int32_t humus_abi_version(void) { return HUMUS_ABI_VERSION; }
HUMUS_API const char* humus_version(void) { return HUMUS_VERSION_STRING; }

HUMUS_API humus_status humus_version_info(char** out, size_t* len, humus_error** err) {
  return guard(err, [&]() -> humus_status {
    if (out == nullptr) return null_argument("humus_version_info", "out", err);
    return humus::capi::text_out(humus::transport::linked_versions_json(), out, len);
  });
}

// One table of names, the core's: its Codes carry the header's numbers (abi_numbers.cc).
HUMUS_API const char* humus_status_name(humus_status s) { return humus::code_name(static_cast<humus::Code>(s)); }

}  // extern "C"
