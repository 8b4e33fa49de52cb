// Classifier and breaker-policy plugins (docs/retries.md §5.4a): a shared object named in the settings, whose
// entry point fills the same C callback table humus_settings_set_classifier / _set_breaker_policy take. Each
// path is opened once per process and stays open while anything made from it lives: a settings object, its
// clones, the clients built from them. This module opens the object and finds the entry point; calling it is
// the C ABI's part (its plugin_entry.cc), handed in through install_entry_points.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "breaker/policy.h"
#include "classify/classification.h"
#include "common/status.h"

namespace humus::plugin {

// What the settings name: "classify" or "breaker_policy": {"plugin": PATH, "symbol": NAME, "config": {...}}.
struct Spec {
  std::string path;           // the shared object, an absolute path
  std::string symbol;         // its entry point
  std::string config = "{}";  // the config object as compact JSON text, handed to the entry point

  bool operator==(const Spec&) const = default;
};

// The shape of a spec, before anything is opened: an absolute path without NUL, a symbol without NUL, not
// empty. Code::kConfig naming "<key>.plugin" or "<key>.symbol" (key: "classify" or "breaker_policy").
Status check_spec(std::string_view key, const Spec& spec);

// What an entry point makes of the config it is called with. `entry` is the plugin's symbol; `config` the
// spec's config text. A failure's message says what went wrong after "the entry point NAME " ("threw an
// exception", "failed with HUMUS_E_CONFIG: ...") and its fields are the entry point's own config fields, which
// the loader reports under "<key>.config."; Code::kNoMemory is reported as it is.
template <typename Object>
using EntryCall = Result<std::shared_ptr<const Object>> (*)(void* entry, const std::string& config);

// How each kind of entry point is called: the C ABI installs its own before it loads settings (the core
// cannot, knowing nothing of the C tables). Until then every load fails with Code::kConfig. Thread-safe.
struct EntryPoints {
  EntryCall<classify::Classifier> classifier = nullptr;
  EntryCall<breaker::Policy> breaker_policy = nullptr;
};
void install_entry_points(const EntryPoints& entry_points);

// Opens spec.path (or reuses the process's open handle of it), looks up spec.symbol and calls it through the
// installed EntryPoints, which check the table it filled exactly as humus_settings_set_classifier /
// _set_breaker_policy do. The result keeps the shared object open; the table's destroy runs before the object
// may close. Every failure is Code::kConfig: a file that cannot be opened names "<key>.plugin" with the
// loader's message; a missing symbol, an entry point that fails (its own error's message and fields, the
// latter under "<key>.config.") or a table that fails the checks names "<key>.symbol". Thread-safe; the entry
// point may run on several threads at once for different settings.
Result<std::shared_ptr<const classify::Classifier>> load_classifier(const Spec& spec);
Result<std::shared_ptr<const breaker::Policy>> load_breaker_policy(const Spec& spec);

// From now on every load fails with Code::kConfig naming "<key>.plugin" and saying `why`, and nothing is
// opened: for processes that read settings from untrusted bytes (the settings fuzz targets), where a named
// file must never run. Cannot be undone. Thread-safe.
void forbid_loading(std::string why);

}  // namespace humus::plugin
