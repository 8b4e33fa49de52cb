// The document side of the settings: walking JSON and Settings along the schema (settings/schema.cc), which
// alone knows the keys, their kinds, bounds and messages.
#include "settings/settings.h"

#include <algorithm>
#include <initializer_list>
#include <limits>
#include <utility>
#include <vector>

#include "common/duration.h"
#include "common/text.h"
#include "settings/json_text.h"
#include "settings/schema.h"
#include "transport/url.h"

namespace humus::settings {
namespace {

using schema::Field;
using schema::join_path;
using schema::Json;
using schema::Kind;
using schema::leaf;
using schema::problem;
using schema::Problems;
using schema::Value;

// ---- Unknown keys ----------------------------------------------------------------------------------------

char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

// Optimal string alignment distance, case-insensitive: a swapped pair of letters counts as one edit.
size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = lower(a[i - 1]) == lower(b[j - 1]) ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && lower(a[i - 1]) == lower(b[j - 2]) && lower(a[i - 2]) == lower(b[j - 1])) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

std::string unknown_key_message(std::string_view parent, std::string_view key) {
  const std::vector<const Field*> keys = schema::children(parent);
  std::string message = "unknown key " + quote_for_message(join_path(parent, key));
  // The nearest key of this object, if it is near enough to be a slip of the keyboard.
  const Field* nearest = nullptr;
  size_t best = std::numeric_limits<size_t>::max();
  if (key.size() <= 256) {  // bounds the quadratic distance on hostile input
    for (const Field* f : keys) {
      const size_t d = edit_distance(key, leaf(f->key));
      if (d < best) {
        best = d;
        nearest = f;
      }
    }
  }
  std::string candidates;
  if (nearest != nullptr && best <= std::max<size_t>(2, key.size() / 3))
    candidates = quote_for_message(nearest->key);
  // A key of another object put at the wrong level ("window" at the top): every object that has it.
  if (parent.empty()) {
    for (const Field& f : schema::fields()) {
      if (f.key.find('.') == std::string_view::npos || leaf(f.key) != key) continue;
      if (!candidates.empty()) candidates += " or ";
      candidates += quote_for_message(f.key);
    }
  }
  if (!candidates.empty()) return message + " (did you mean " + candidates + "?)";
  message += " (valid keys";
  if (!parent.empty()) message += " of " + std::string(parent);
  message += ":";
  for (size_t i = 0; i < keys.size(); ++i) message += (i == 0 ? " " : ", ") + std::string(leaf(keys[i]->key));
  return message + ")";
}

void add_unknown_key(std::string_view parent, std::string_view key, Problems& p) {
  p.add(join_path(parent, key), unknown_key_message(parent, key));
}

// ---- Loading ---------------------------------------------------------------------------------------------

bool load_object(std::string_view parent, const Json& v, Settings& s, Problems& p);

void load_headers(const Json& v, const std::string& k, Settings& s, Problems& p) {
  if (!v.is_object()) {
    p.add(k, k + ": must be an object of header names to string values, got " + schema::describe(v));
    return;
  }
  for (const auto& item : v.items()) {
    const std::string path = join_path(k, item.key());
    if (!item.value().is_string()) {
      p.add(path, path + ": must be a string, got " + schema::describe(item.value()));
      continue;
    }
    const std::string& value = item.value().get_ref<const std::string&>();
    if (!p.check(check_header(item.key(), value))) continue;
    if (s.headers.contains(item.key())) {
      p.add(path, path + ": given twice (header names are case-insensitive)");
      continue;
    }
    s.headers.add(item.key(), value);
  }
}

// {"plugin": PATH, "symbol": NAME, "config": {...}} (docs/retries.md §5.4a): read strictly, then loaded, so
// a file that cannot be opened or a symbol that is missing fails the load naming the key.
void load_plugin(const Field& f, const Json& v, Settings& s, Problems& p) {
  constexpr std::string_view kKeys[] = {"plugin", "symbol", "config"};
  const std::string key(f.key);
  plugin::Spec spec;
  bool readable = true;
  for (const auto& item : v.items()) {
    const std::string path = join_path(key, item.key());
    const Json& value = item.value();
    if (item.key() == "plugin" || item.key() == "symbol") {
      if (value.is_string()) {
        (item.key() == "plugin" ? spec.path : spec.symbol) = value.get<std::string>();
        continue;
      }
      p.add(path, path + ": must be a string, got " + schema::describe(value));
    } else if (item.key() == "config") {
      if (value.is_object()) {
        spec.config = value.dump(-1, ' ', false, Json::error_handler_t::replace);
        continue;
      }
      p.add(path, path + ": must be an object (handed to the entry point as JSON text), got " +
                      schema::describe(value));
    } else {
      std::string message = "unknown key " + quote_for_message(path);
      const auto near = std::find_if(std::begin(kKeys), std::end(kKeys), [&](std::string_view k) {
        return item.key().size() <= 256 && edit_distance(item.key(), k) <= 2;
      });
      message += near != std::end(kKeys) ? " (did you mean " + quote_for_message(join_path(key, *near)) + "?)"
                                         : " (valid keys of " + key + ": plugin, symbol, config)";
      p.add(path, message);
    }
    readable = false;
  }
  if (!readable || !p.check(plugin::check_spec(key, spec))) return;
  p.add(f.load_plugin(spec, s));
}

// Reads `v` for the key `f` into `s`, adding every problem to `p`.
void load_value(const Field& f, const Json& v, Settings& s, Problems& p) {
  const std::string key(f.key);
  if (f.plugin != nullptr && v.is_object()) return load_plugin(f, v, s, p);
  if (v.is_null() &&
      f.nullable) {  // to_json writes null for "none" (tls) and "follows another" (max_retry_after)
    if (f.reset != nullptr) {
      f.reset(s, false);
    } else {
      f.set(s, Value());
    }
    return;
  }
  if (f.kind == Kind::kMap) return load_headers(v, key, s, p);
  if (f.kind == Kind::kPlugin) {
    constexpr std::string_view kShape = R"({"plugin": PATH, "symbol": NAME, "config": {...}})";
    p.add(key,
          key + ": must be a plugin object " + std::string(kShape) + " or null, got " + schema::describe(v));
    return;
  }
  if (f.kind == Kind::kObject) {
    if (!v.is_object()) {
      p.add(key, key + ": must be an object, got " + schema::describe(v));
      return;
    }
    if (f.reset != nullptr) f.reset(s, true);
    load_object(f.key, v, s, p);
    if (f.check_object != nullptr) f.check_object(s, p);
    if (f.after_load != nullptr) {
      std::vector<std::string> given;
      for (const auto& item : v.items()) given.push_back(item.key());
      f.after_load(given, key, s, p);
    }
    return;
  }
  if (std::optional<Value> value = schema::read_value(f, v, p); value && p.check(schema::check(f, *value))) {
    f.set(s, *value);
  }
}

// Runs the loader of every key of the object `v` (known to be an object); unknown keys are problems.
bool load_object(std::string_view parent, const Json& v, Settings& s, Problems& p) {
  for (const auto& item : v.items()) {
    const Field* found = schema::find(join_path(parent, item.key()));
    if (found == nullptr || item.key().find('.') != std::string::npos) {
      add_unknown_key(parent, item.key(), p);
    } else {
      load_value(*found, item.value(), s, p);
    }
  }
  return true;
}

// ---- Walking settings along the schema -------------------------------------------------------------------

bool present(const Field& f, const Settings& s) { return f.present == nullptr || f.present(s); }

bool unset(const Field& f, const Value& v) {
  return std::holds_alternative<std::monostate>(v) ||
         (f.omit_unset && std::holds_alternative<std::string>(v) && std::get<std::string>(v).empty());
}

const std::optional<plugin::Spec>& plugin_of(const Field& f, const Settings& s) { return s.*(f.plugin); }

void check_keys(std::string_view parent, const Settings& s, Problems& p) {
  for (const Field* f : schema::children(parent)) {
    if (f->plugin != nullptr && plugin_of(*f, s)) p.add(plugin::check_spec(f->key, *plugin_of(*f, s)));
    if (f->kind == Kind::kPlugin) continue;
    if (f->kind == Kind::kMap) {
      p.add(check_headers(s.headers));
    } else if (f->kind == Kind::kObject) {
      if (!present(*f, s)) continue;
      check_keys(f->key, s, p);
      if (f->check_object != nullptr) f->check_object(s, p);
    } else if (const Value v = f->get(s); !unset(*f, v)) {
      p.add(schema::check(*f, v));
    }
  }
}

bool equal_keys(std::string_view parent, const Settings& a, const Settings& b) {
  for (const Field* f : schema::children(parent)) {
    if (f->plugin != nullptr && plugin_of(*f, a) != plugin_of(*f, b)) return false;
    if (f->kind == Kind::kPlugin) continue;
    if (f->kind == Kind::kMap) {
      if (a.headers.fields() != b.headers.fields()) return false;
    } else if (f->kind == Kind::kObject) {
      if (present(*f, a) != present(*f, b)) return false;
      if (present(*f, a) && !equal_keys(f->key, a, b)) return false;
    } else if (f->get(a) != f->get(b)) {
      return false;
    }
  }
  return true;
}

Json keys_json(std::string_view parent, const Settings& s) {
  Json j = Json::object();
  for (const Field* f : schema::children(parent)) {
    const std::string name(leaf(f->key));
    if (f->applies != nullptr && !f->applies(s)) continue;
    if (f->plugin != nullptr && plugin_of(*f, s)) {  // written back as it was given
      const plugin::Spec& spec = *plugin_of(*f, s);
      Json config = Json::parse(spec.config, nullptr, /*allow_exceptions=*/false);
      if (config.is_discarded()) config = Json::object();  // only code can set text that is not JSON
      j[name] = Json{{"plugin", spec.path}, {"symbol", spec.symbol}, {"config", std::move(config)}};
      continue;
    }
    if (f->kind == Kind::kPlugin) continue;  // none: the built-in policy, and the key is left out
    if (f->kind == Kind::kMap) {
      Json headers = Json::object();
      for (const auto& [header, value] : s.headers.fields()) headers[header] = value;
      j[name] = std::move(headers);
    } else if (f->kind == Kind::kObject) {
      // An absent object is null, or left out when it is off by being absent (share: docs/shared.md §22).
      if (present(*f, s)) {
        j[name] = keys_json(f->key, s);
      } else if (!f->omit_unset) {
        j[name] = nullptr;
      }
    } else if (const Value v = f->get(s); !(f->omit_unset && unset(*f, v))) {
      j[name] = schema::value_json(*f, v);
    }
  }
  return j;
}

Duration duration_of(const Settings& s, std::string_view key) {
  return std::get<Duration>(schema::find(key)->get(s));
}

// ---- Rules across fields (docs/settings.md §3.2) ---------------------------------------------------------------------

// A rule is skipped when one of its fields failed its own check: its value then says nothing. Only the field
// checks count: two rules sharing a field (attempt_timeout) are both reported.
void check_cross_fields(const Settings& s, Problems& p) {
  const Problems checked = p;
  const auto fine = [&](std::initializer_list<std::string_view> fields) {
    return std::none_of(fields.begin(), fields.end(), [&](std::string_view f) { return checked.about(f); });
  };
  for (const schema::Rule& r : schema::rules()) {
    const Duration a = duration_of(s, r.key);
    const Duration b = duration_of(s, r.other);
    if (!fine({r.key, r.other}) || (r.at_most ? a <= b : a >= b)) continue;
    const std::string key(r.key);
    const std::string other(r.other);
    p.add(Status(Code::kConfig,
                 key + ": must be " + (r.at_most ? "<= " : ">= ") + other + " (" + format_duration(b) +
                     "), got " + format_duration(a),
                 {key, other}));
  }
  // docs/shared.md §22.3: the host-wide bulkhead counts permits against one cap every process agrees on.
  if (s.share && s.bulkhead.mode == BulkheadMode::kAdaptive && fine({"bulkhead.mode", "share"})) {
    p.add(Status(Code::kConfig,
                 "bulkhead.mode: \"adaptive\" cannot be shared (share's bulkhead is a fixed host-wide cap): use "
                 "\"fixed\", or drop share",
                 {"bulkhead.mode", "share"}));
  }
  // docs/retries.md §6.8: every hedge is an attempt, counted against max_attempts, and waits less than the call.
  if (s.hedge && fine({"hedge.delay", "hedge.max", "max_attempts", "timeout"})) {
    if (s.max_attempts < 2) {
      p.add(Status(Code::kConfig, "hedge: needs max_attempts >= 2 (every hedge is an attempt), got " +
                                      std::to_string(s.max_attempts),
                   {"hedge", "max_attempts"}));
    }
    const Result<HedgeDelay> d = parse_hedge_delay(s.hedge->delay);
    if (d.ok() && d->fixed && *d->fixed >= s.timeout) {
      p.add(Status(Code::kConfig,
                   "hedge.delay: must be < timeout (" + format_duration(s.timeout) + "), got " +
                       format_duration(*d->fixed),
                   {"hedge.delay", "timeout"}));
    }
  }
  if (!fine({"base_url"}) || s.base_url.empty()) return;
  const Result<transport::Url> url = transport::parse_url(s.base_url);
  if (!url.ok() || url->scheme != "http") return;
  // docs/settings.md §3's table reads "tls: none = plain text", yet §10.3 says an https client verifies against the
  // system roots "when none is given": an https base_url without a tls object is therefore valid (system
  // roots), and the only TLS rule across fields left to enforce is the converse: tls on a plain-text URL.
  if (s.tls && fine({"tls"})) {
    p.add(Status(Code::kConfig,
                 "tls: given for an http base_url, which never uses it (use https, or drop tls)",
                 {"tls", "base_url"}));
  }
  // docs/transport.md §10.2: http is HTTP/1.1 only (no h2c), so asking for HTTP/2 there could not be honoured.
  if (s.http_version == HttpVersion::kHttp2 && fine({"http_version"})) {
    p.add(Status(Code::kConfig, "http_version: \"2\" needs an https base_url (no HTTP/2 over plain text)",
                 {"http_version", "base_url"}));
  }
}

// A default the document left out never contradicts a value it set: {"timeout": "2s"} alone means an
// attempt may take up to 2 s, not a configuration error about the 5 s default attempt_timeout. Only
// defaults are capped; two values the document sets are checked against each other as they are.
void cap_unset_defaults(const Json& doc, Settings& s) {
  for (const schema::Rule& r : schema::rules()) {
    const std::string_view smaller = r.at_most ? r.key : r.other;
    const std::string_view larger = r.at_most ? r.other : r.key;
    if (doc.contains(std::string(smaller))) continue;
    const Field& f = *schema::find(smaller);
    f.set(s, std::min(duration_of(s, smaller), duration_of(s, larger)));
  }
}

}  // namespace

// ---- Public ----------------------------------------------------------------------------------------------

bool operator==(const Settings& a, const Settings& b) {
  // equal_keys compared what the settings name of a plugin; a callback set by code has only its identity.
  return equal_keys("", a, b) && (a.classify_plugin || a.classifier == b.classifier) &&
         (a.breaker_policy_plugin || a.breaker_policy == b.breaker_policy) &&
         a.attempt_hooks == b.attempt_hooks;
}

Duration effective_max_retry_after(const Settings& s) { return s.max_retry_after.value_or(s.backoff_max); }

Result<HedgeDelay> parse_hedge_delay(std::string_view text) {
  HedgeDelay d;
  if (text.size() == 3 && text[0] == 'p' && text[1] >= '0' && text[1] <= '9' && text[2] >= '0' && text[2] <= '9') {
    d.percentile = (text[1] - '0') * 10 + (text[2] - '0');
    if (d.percentile >= 50) return d;
  } else if (Result<Duration> fixed = parse_duration(text); fixed.ok() && *fixed > Duration::zero()) {
    d.fixed = *fixed;
    return d;
  }
  return Status(Code::kConfig, "must be a duration > 0 (\"50ms\") or a percentile \"p50\" to \"p99\", got " +
                                   quote_for_message(text));
}

Status check_base_url(std::string_view url) { return schema::check("base_url", std::string(url)); }
Status check_timeout(Duration d) { return schema::check("timeout", d); }
Status check_attempt_timeout(Duration d) { return schema::check("attempt_timeout", d); }
Status check_connect_timeout(Duration d) { return schema::check("connect_timeout", d); }
Status check_max_attempts(int64_t n) { return schema::check("max_attempts", n); }
Status check_backoff_base(Duration d) { return schema::check("backoff_base", d); }
Status check_backoff_max(Duration d) { return schema::check("backoff_max", d); }
Status check_retry_budget_policy(std::string_view p) {
  return schema::check("retry_budget.policy", std::string(p));
}
Status check_retry_budget_tokens(double tokens) { return schema::check("retry_budget.tokens", tokens); }
Status check_retry_budget_ratio(double ratio) { return schema::check("retry_budget.ratio", ratio); }
Status check_retry_budget_min_per_second(int64_t n) {
  return schema::check("retry_budget.min_per_second", n);
}
Status check_retry_budget_window(Duration d) { return schema::check("retry_budget.window", d); }
Status check_breaker_window(int64_t n) { return schema::check("breaker.window", n); }
Status check_breaker_open_for(Duration d) { return schema::check("breaker.open_for", d); }
Status check_breaker_probes(int64_t n) { return schema::check("breaker.probes", n); }
Status check_breaker_probe_timeout(Duration d) { return schema::check("breaker.probe_timeout", d); }
Status check_trip_consecutive_failures(int64_t n) { return schema::check("trip.consecutive_failures", n); }
Status check_trip_failure_rate(double rate) { return schema::check("trip.failure_rate", rate); }
Status check_trip_min_results(int64_t n) { return schema::check("trip.min_results", n); }
Status check_probe_successes_to_close(int64_t n) { return schema::check("probe.successes_to_close", n); }
Status check_bulkhead_max_concurrent(int64_t n) { return schema::check("bulkhead.max_concurrent", n); }
Status check_bulkhead_wait(Duration d) { return schema::check("bulkhead.wait", d); }
Status check_max_retry_after(Duration d) { return schema::check("max_retry_after", d); }
Status check_max_idle_connections(int64_t n) { return schema::check("max_idle_connections", n); }
Status check_idle_timeout(Duration d) { return schema::check("idle_timeout", d); }
Status check_tls_min_version(std::string_view v) { return schema::check("tls.min_version", std::string(v)); }
Status check_http_version(std::string_view v) { return schema::check("http_version", std::string(v)); }
Status check_classify(std::string_view preset) { return schema::check("classify", std::string(preset)); }

Status check_tls(const TlsSettings& tls) {
  Settings scratch;
  scratch.tls = tls;
  Problems p;
  check_keys("tls", scratch, p);
  schema::find("tls")->check_object(scratch, p);
  return p.status(Code::kConfig);
}

Status check_header(std::string_view name, std::string_view value) {
  const std::string key = join_path("headers", name);
  if (std::string why = header_problem(name, value); !why.empty()) return problem(key, why);
  return Status();
}

Status check_headers(const Headers& headers) {
  Problems p;
  const auto& fields = headers.fields();
  for (size_t i = 0; i < fields.size(); ++i) {
    if (!p.check(check_header(fields[i].first, fields[i].second))) continue;
    for (size_t j = 0; j < i; ++j) {
      if (equals_ignore_case(fields[j].first, fields[i].first)) {
        p.add(problem(join_path("headers", fields[i].first),
                      "given twice (header names are case-insensitive)"));
        break;
      }
    }
  }
  return p.status(Code::kConfig);
}

Status check_field(std::string_view dotted_key, std::string_view value_json) {
  Problems p;
  const std::string key(dotted_key);
  const size_t dot = dotted_key.find('.');
  const std::string_view head = dotted_key.substr(0, dot);
  const std::string_view rest =
      dot == std::string_view::npos ? std::string_view() : dotted_key.substr(dot + 1);

  const Field* top = head.empty() ? nullptr : schema::find(head);
  if (top == nullptr) {
    add_unknown_key("", head, p);
    return p.status(Code::kConfig);
  }
  Json value;
  if (!parse_document(value_json, key, value, p)) return p.status(Code::kConfig);
  Settings scratch;
  if (dot == std::string_view::npos) {
    load_value(*top, value, scratch, p);
  } else if (top->kind == Kind::kMap) {  // "headers.<name>": one header, any name
    if (value.is_string()) {
      p.add(check_header(rest, value.get_ref<const std::string&>()));
    } else {
      p.add(key, key + ": must be a string, got " + schema::describe(value));
    }
  } else if (top->kind != Kind::kObject) {
    p.add(key, "unknown key " + quote_for_message(key) + " (" + std::string(head) + " is not an object)");
  } else if (const Field* child = schema::find(dotted_key); child != nullptr) {
    load_value(*child, value, scratch, p);
  } else {
    add_unknown_key(head, rest, p);
  }
  return p.status(Code::kConfig);
}

Status validate(const Settings& s, bool from_config) {
  Problems p;
  check_keys("", s, p);
  check_cross_fields(s, p);
  return p.status(from_config ? Code::kConfig : Code::kProgram);
}

Result<Settings> from_json(std::string_view json) {
  Problems p;
  Json doc;
  if (!parse_document(json, "", doc, p)) return p.status(Code::kConfig);
  if (!doc.is_object()) {
    return Status(Code::kConfig, "settings: must be a JSON object, got " + schema::describe(doc));
  }
  Settings s;
  load_object("", doc, s, p);
  if (!doc.contains("base_url")) p.add(check_base_url(""));
  cap_unset_defaults(doc, s);
  check_cross_fields(s, p);
  if (!p.empty()) return p.status(Code::kConfig);
  return s;
}

std::string to_json(const Settings& s) {
  // Strings set by code may hold invalid UTF-8: replaced rather than thrown over.
  return keys_json("", s).dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace humus::settings
