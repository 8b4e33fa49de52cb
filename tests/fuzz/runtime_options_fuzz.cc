// humus_runtime_new's options JSON: never crashes; a runtime exactly when OK; the core's parser agrees.
#include <humus_http.h>

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "client/runtime.h"
#include "fuzz_check.h"

// S25: the libFuzzer target `runtime_options`; its corpus replays as the ctest fuzz.runtime_options.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const char* json = reinterpret_cast<const char*>(data);
  humus::Result<humus::client::RuntimeOptions> options =
      humus::client::runtime_options_from_json(std::string_view(json, size));
  humus_runtime* rt = nullptr;
  humus_error* err = nullptr;
  const humus_status st = humus_runtime_new(json, size, &rt, &err);
  FUZZ_CHECK((st == HUMUS_OK) == (rt != nullptr), "a runtime exactly when OK");
  FUZZ_CHECK((st == HUMUS_OK) == (err == nullptr), "an error exactly when not OK");
  FUZZ_CHECK(options.ok() == (st == HUMUS_OK), "the C ABI and the core agree");
  humus_runtime_free(rt);
  humus_error_free(err);
  return 0;
}
