// A plugin's entry point, called as the C ABI declares it: it fills a fresh table from the config text, which
// is then checked and adapted as humus_settings_set_classifier / _set_breaker_policy do. plugin/ found the
// symbol and reports what this file returns under "<key>.symbol" (plugin/plugin.h, EntryCall).
#include "capi/plugin_entry.h"

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "capi/breaker_policy_adapter.h"
#include "capi/classifier_adapter.h"
#include "humus_http.h"
#include "plugin/plugin.h"

namespace humus::capi {
namespace {

// Per kind of plugin: the table its entry point fills and the adapter that checks it.
template <typename Table>
struct EntryKind;
template <>
struct EntryKind<humus_classifier> {
  using Object = classify::Classifier;
  static constexpr uint32_t kNewest = HUMUS_CLASSIFIER_VERSION;
  static humus_classifier fresh() { return HUMUS_CLASSIFIER_INIT; }
  static Result<std::shared_ptr<const Object>> adapt(const humus_classifier& t) {
    return make_c_classifier(t);
  }
};
template <>
struct EntryKind<humus_breaker_policy> {
  using Object = breaker::Policy;
  static constexpr uint32_t kNewest = HUMUS_BREAKER_POLICY_VERSION;
  static humus_breaker_policy fresh() { return HUMUS_BREAKER_POLICY_INIT; }
  static Result<std::shared_ptr<const Object>> adapt(const humus_breaker_policy& t) {
    return make_c_policy(t);
  }
};

template <typename Table>
Result<std::shared_ptr<const typename EntryKind<Table>::Object>> call_entry(void* symbol,
                                                                           const std::string& config) {
  using K = EntryKind<Table>;
  using Entry = humus_status (*)(const char*, size_t, Table*, humus_error**);
  const auto entry = reinterpret_cast<Entry>(symbol);

  Table table = K::fresh();
  humus_error* reported = nullptr;
  humus_status rc = HUMUS_OK;
  try {
    rc = entry(config.c_str(), config.size(), &table, &reported);
  } catch (...) {
    // A C entry point cannot throw, but one written in C++ can: contained here, as for callbacks.
    humus_error_free(reported);
    return Status(Code::kConfig, "threw an exception");
  }
  if (rc != HUMUS_OK) {
    std::string rule = std::string("failed with ") + humus_status_name(rc);
    std::vector<std::string> fields;
    // Read through the accessors: a pointer that is no live error reads as none.
    if (const std::string_view said = humus_error_message(reported); !said.empty()) {
      rule += ": " + std::string(said);
    }
    for (size_t i = 0; i < humus_error_field_count(reported); ++i) {
      fields.emplace_back(humus_error_field(reported, i));
    }
    humus_error_free(reported);
    return Status(Code::kConfig, std::move(rule), std::move(fields));
  }
  humus_error_free(reported);  // an entry point that succeeded has nothing to say

  Result<std::shared_ptr<const typename K::Object>> adapted = K::adapt(table);
  if (!adapted.ok()) {
    // The plugin handed its table over: nobody else can release its user_data. Its destroy sits at the same
    // place in every version this library knows, so it is called when the version is one of them.
    if (table.version >= 1 && table.version <= K::kNewest && table.destroy != nullptr) {
      table.destroy(table.user_data);
    }
    return Status(Code::kConfig, "filled a table that is refused: " + adapted.status().message());
  }
  return adapted;
}

}  // namespace

void install_plugin_entry_points() {
  static const bool installed = [] {
    plugin::install_entry_points(plugin::EntryPoints{
        .classifier = call_entry<humus_classifier>,
        .breaker_policy = call_entry<humus_breaker_policy>,
    });
    return true;
  }();
  (void)installed;
}

}  // namespace humus::capi
