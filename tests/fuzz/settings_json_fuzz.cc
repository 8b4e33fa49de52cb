// humus_settings_from_json (docs/settings.md §3): never crashes whatever the bytes, and what it accepts survives its own
// JSON form: from_json(to_json(s)) == s.
#include <humus_http.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "plugin/plugin.h"
#include "settings/settings.h"

// An input may name a plugin (docs/retries.md §5.4a): a file it names must never run, so none is opened.
extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  humus::plugin::forbid_loading("the fuzz target opens no plugin (an input must never name code to run)");
  return 0;
}

// S25: the libFuzzer target `settings_json`; its corpus replays as the ctest fuzz.settings_json.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const char* json = reinterpret_cast<const char*>(data);
  humus_settings* s = nullptr;
  humus_error* err = nullptr;
  const humus_status st = humus_settings_from_json(json, size, &s, &err);
  FUZZ_CHECK((st == HUMUS_OK) == (s != nullptr), "a settings object exactly when OK");
  FUZZ_CHECK((st == HUMUS_OK) == (err == nullptr), "an error exactly when not OK");
  if (err != nullptr) FUZZ_CHECK(humus_error_message(err) != nullptr, "an error has a message");
  humus_settings_free(s);
  humus_error_free(err);

  humus::Result<humus::settings::Settings> parsed = humus::settings::from_json(std::string_view(json, size));
  FUZZ_CHECK(parsed.ok() == (st == HUMUS_OK), "the C ABI and the core agree");
  if (!parsed.ok()) return 0;
  const std::string again = humus::settings::to_json(*parsed);
  humus::Result<humus::settings::Settings> reparsed = humus::settings::from_json(again);
  FUZZ_CHECK(reparsed.ok(), again.c_str());
  FUZZ_CHECK(*reparsed == *parsed, again.c_str());
  return 0;
}
