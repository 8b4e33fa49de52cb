// The settings schema (docs/settings.md §3): one table, one entry per key path, that every reader of the settings uses —
// loading (from_json), the per-field checks (check_field, humus_settings_check_field), to_json, equality,
// the rules across fields, every message, and the introspection document (humus_settings_schema_json).
// Adding a setting is one line in schema.cc plus its member in settings.h.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/status.h"
#include "settings/settings.h"

namespace humus::settings::schema {

// What a key holds, as its JSON form and its check see it (the names are those of the schema document).
enum class Kind {
  kDuration,  // "duration": a string with a unit ("250ms"); bounds in nanoseconds
  kCount,     // "count": a JSON integer within [min, max]
  kBytes,     // "bytes": a JSON integer count of bytes within [min, max]
  kNumber,    // "number": a finite JSON number > 0
  kShare,     // "share": a JSON number in (0, 1]
  kEnum,      // "enum": one of `choices`, a string
  kString,    // "string": free text, checked by `extra`
  kBool,      // "bool": true or false
  kObject,    // "object": the keys under "<key>." (nullable: null means none, as tls)
  kMap,       // "map": names of the caller's choosing to string values (headers)
  kPlugin,    // "plugin": {"plugin", "symbol", "config"} or null (breaker_policy, docs/retries.md §5.4a)
};

std::string_view kind_name(Kind kind);

// One value of a scalar key; monostate is "not set" (a nullable duration, an empty optional string).
using Value = std::variant<std::monostate, Duration, int64_t, double, bool, std::string>;

// Every problem of one load or check, in order; each bad key listed once in fields().
class Problems {
 public:
  void add(const std::string& field, const std::string& message);
  void add(const Status& status);
  // Adds a failed check; true when it passed.
  bool check(const Status& status);
  [[nodiscard]] bool about(std::string_view field) const;
  [[nodiscard]] bool empty() const { return messages_.empty(); }
  [[nodiscard]] Status status(Code code) const;

 private:
  void add_field(const std::string& field);

  std::vector<std::string> messages_;
  std::vector<std::string> fields_;
};

struct Field {
  std::string_view key;  // the key path: "timeout", "breaker.window", "tls.ca_file"
  Kind kind;
  std::string_view doc;  // one line for the schema document
  // Bounds of durations (nanoseconds), counts and bytes: min..max, min itself excluded when min_exclusive.
  int64_t min = 0;
  int64_t max = INT64_MAX;
  bool min_exclusive = false;
  std::span<const std::string_view> choices = {};  // kEnum
  // Reading and writing the member. Null for kObject and kMap. The default is what get() reads from a
  // default-constructed Settings: the member's initializer is the only copy of it.
  Value (*get)(const Settings&) = nullptr;
  void (*set)(Settings&, const Value&) = nullptr;
  // A check before the kind's own (base_url's URL rules, a TLS path or PEM, refused TLS versions).
  Status (*extra)(std::string_view key, const Value&) = nullptr;
  bool nullable = false;  // JSON null accepted: unset (max_retry_after) or none (tls)
  // For a nullable object: whether the settings hold one; making a fresh one (true) or none (false).
  bool (*present)(const Settings&) = nullptr;
  void (*reset)(Settings&, bool present) = nullptr;
  // Empty text or an unset value means "not given" (the tls sources, the slow-call keys): left out of to_json and
  // of the checks of settings.
  bool omit_unset = false;
  // The key is used only when this holds (retry_budget's keys per policy): left out of to_json otherwise.
  bool (*applies)(const Settings&) = nullptr;
  // After an object's keys loaded from JSON, with the keys given (retry_budget: keys per policy).
  void (*after_load)(const std::vector<std::string>& given, const std::string& path, Settings&,
                     Problems&) = nullptr;
  // An object's rules among its own keys, whenever its keys are checked (tls: one source per thing).
  void (*check_object)(const Settings&, Problems&) = nullptr;
  bool required = false;  // base_url
  // The plugin object {"plugin", "symbol", "config"} (docs/retries.md §5.4a): the kind itself (kPlugin), or
  // accepted besides the kind's own value (classify: a preset name or a plugin). The member that holds what
  // the settings name, and what loads it into the settings' callback.
  std::optional<plugin::Spec> Settings::*plugin = nullptr;
  Status (*load_plugin)(const plugin::Spec&, Settings&) = nullptr;
};

// A rule across two keys (docs/settings.md §3.2), written "<key> must be <=|>= <other>". A default of the smaller key
// that the document left out is capped by the larger instead of reported.
struct Rule {
  std::string_view key;
  bool at_most;  // key <= other; else key >= other
  std::string_view other;
};

std::span<const Field> fields();
std::span<const Rule> rules();
// The entry of a key path, or null.
const Field* find(std::string_view key);
// The entries directly under `parent` ("" for the top level), in table order.
std::vector<const Field*> children(std::string_view parent);

// A problem with one key: "<key>: <rule>", Code::kConfig, the key in fields().
Status problem(std::string_view key, const std::string& rule);
std::string join_path(std::string_view parent, std::string_view key);
// The last part of a key path ("window" of "breaker.window").
std::string_view leaf(std::string_view key);

// The kind's check and the entry's `extra` on one value: ok or Code::kConfig naming the key.
Status check(const Field& field, const Value& value);
Status check(std::string_view key, const Value& value);

// The JSON number form used in messages ("0", "1.01", "nan").
std::string format_number(double x);

// ordered_json keeps the document's key order: problems are reported, and to_json writes, in a stable order.
using Json = nlohmann::ordered_json;

// A value's JSON form, as to_json writes it (null for monostate).
Json value_json(const Field& field, const Value& value);
// The JSON value `v` read as the key's kind, unchecked; a problem named after the key when it is of the
// wrong type. Null is monostate (the caller decides whether the key is nullable).
std::optional<Value> read_value(const Field& field, const Json& v, Problems& p);
// What a value of the wrong type was, without repeating strings (they may be secrets).
std::string describe(const Json& v);

// The schema document of humus_settings_schema_json: {"version": 1, "keys": [{"key", "kind", "default",
// "doc", and per kind "min"/"max"/"min_exclusive" or "choices", "nullable", "required", "plugin"}]} in table
// order.
std::string schema_json();

}  // namespace humus::settings::schema
