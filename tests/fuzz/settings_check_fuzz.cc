// humus_settings_check (docs/settings.md §3.1): a key path, then '\n', then the JSON value. Never crashes; a failure
// always names a field; "headers.<name>" reaches the header check.
#include <humus_http.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_check.h"
#include "plugin/plugin.h"

// An input may name a plugin (docs/retries.md §5.4a): a file it names must never run, so none is opened.
extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  humus::plugin::forbid_loading("the fuzz target opens no plugin (an input must never name code to run)");
  return 0;
}

// S25: the libFuzzer target `settings_check`; its corpus replays as the ctest fuzz.settings_check.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto [key_part, value] = humus::fuzz::split_once(
      std::string_view(reinterpret_cast<const char*>(data), size), '\n');
  const std::string key(key_part);  // a NUL inside ends the C string early, as it would for any C caller
  humus_error* err = nullptr;
  const humus_status st = humus_settings_check(key.c_str(), value.data(), value.size(), &err);
  FUZZ_CHECK((st == HUMUS_OK) == (err == nullptr), "an error exactly when not OK");
  if (err != nullptr) {
    FUZZ_CHECK(humus_error_message(err) != nullptr, "an error has a message");
    for (size_t i = 0; i < humus_error_field_count(err); ++i) {
      FUZZ_CHECK(humus_error_field(err, i) != nullptr, "every field is named");
    }
  }
  humus_error_free(err);
  return 0;
}
