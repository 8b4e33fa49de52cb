// Settings of one dependency (docs/settings.md §3): plain values with their defaults, a check per field (§3.1), the rules
// across fields (§3.2), and the JSON form every binding and the upstreams file use. Every key is declared
// once in settings/schema.cc, which all of these read; a new setting is a member here and a line there.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "breaker/policy.h"
#include "bulkhead/limit.h"
#include "classify/attempt_hooks.h"
#include "classify/classification.h"
#include "common/clock.h"
#include "common/headers.h"
#include "common/status.h"
#include "plugin/plugin.h"
#include "retry/budget.h"
#include "transport/http_version.h"

namespace humus::settings {

using retry::BudgetPolicy;       // JSON "token_bucket", "ratio" (docs/retries.md §6.4)
using transport::HttpVersion;    // JSON "auto", "1.1", "2"
enum class TlsVersion { kTls1_2, kTls1_3 };          // JSON "1.2", "1.3"; nothing older exists here
// How deadline_header spells an attempt's time left (docs/timeouts.md §8.4): JSON "ms" ("1500"), "grpc" ("1500m").
enum class DeadlineFormat { kMilliseconds, kGrpc };

// The bulkhead's limit (docs/bulkhead.md §11): JSON "fixed" (max_concurrent) or "adaptive" (moved by an algorithm).
enum class BulkheadMode { kFixed, kAdaptive };
using bulkhead::Algorithm;       // JSON "gradient2", "aimd" (docs/bulkhead.md §11.1)

// The ratio policy's default share (JSON "retry_budget": {"policy": "ratio"} without "ratio").
inline constexpr double kRatioPolicyDefaultRatio = 0.2;

struct RetryBudgetSettings {
  BudgetPolicy policy = BudgetPolicy::kTokenBucket;
  double tokens = 10;           // token_bucket: capacity, retries stop at <= half (gRPC's maxTokens)
  double ratio = 0.1;           // token_bucket: credit per success; ratio: share of recent requests
  uint32_t min_per_second = 1;  // ratio: retries always allowed per second
  Duration window = std::chrono::seconds(10);  // ratio: how far back requests count

  bool operator==(const RetryBudgetSettings&) const = default;
};

struct BreakerSettings {
  uint32_t window = 20;  // results the policy sees
  Duration open_for = std::chrono::seconds(10);
  uint32_t probes = 1;  // in flight at once in half-open
  Duration probe_timeout = std::chrono::seconds(10);
  std::optional<Duration> slow_call_duration;  // a longer attempt is also slow (§9.3a); unset: none is

  bool operator==(const BreakerSettings&) const = default;
};

struct BulkheadSettings {
  uint32_t max_concurrent = 50;  // fixed: the limit; adaptive: the first limit, clamped into [min, max]
  Duration wait = std::chrono::milliseconds(500);
  BulkheadMode mode = BulkheadMode::kFixed;
  uint32_t min = 4;    // adaptive: the limit never goes below ...
  uint32_t max = 200;  // ... nor above; min <= max
  Algorithm algorithm = Algorithm::kGradient2;

  bool operator==(const BulkheadSettings&) const = default;
};

// Empty strings mean "not given". Files are not opened here: settings are values; the transport reads them.
struct TlsSettings {
  std::string ca_file, ca_pem;      // trust roots; neither: the system's (docs/transport.md §10.3)
  std::string cert_file, cert_pem;  // client certificate (mTLS) ...
  std::string key_file, key_pem;    // ... and its key: both or neither
  TlsVersion min_version = TlsVersion::kTls1_2;

  bool operator==(const TlsSettings&) const = default;
};

// Host-wide sharing (docs/shared.md §22): the segment whose breaker, budget and bulkhead this client shares with
// every client of its origin and segment name on the host.
struct ShareSettings {
  std::string name;  // required: 1..64 of [A-Za-z0-9_.-], not starting with '.'

  bool operator==(const ShareSettings&) const = default;
};

// Hedged requests (docs/retries.md §6.8): after `delay` with no answer, another copy of a request that may be sent
// twice goes out; the first usable answer wins and the other copies are cancelled.
struct HedgeSettings {
  // A duration ("50ms"), or "pNN" (p50 to p99): that percentile of the latencies this client saw of its origin.
  std::string delay = "p95";
  int max = 2;  // copies in flight at once, the first included: 2 to 4

  bool operator==(const HedgeSettings&) const = default;
};

// hedge.delay read: a fixed delay, or a percentile (50..99) of the origin's recent latencies.
struct HedgeDelay {
  std::optional<Duration> fixed;
  int percentile = 0;  // when `fixed` is unset
};
// The delay a valid hedge.delay names; an error for any other text (the schema's check of the key).
Result<HedgeDelay> parse_hedge_delay(std::string_view text);

struct Settings {
  std::string base_url;  // required
  Duration timeout = std::chrono::seconds(10);
  Duration attempt_timeout = std::chrono::seconds(5);
  Duration connect_timeout = std::chrono::seconds(2);
  int max_attempts = 3;
  Duration backoff_base = std::chrono::milliseconds(100);
  Duration backoff_max = std::chrono::seconds(2);
  RetryBudgetSettings retry_budget;
  BreakerSettings breaker;
  humus::breaker::DefaultPolicyParams policy_params;  // JSON "trip" and "probe"
  BulkheadSettings bulkhead;
  std::optional<Duration> max_retry_after;  // unset: backoff_max (see effective_max_retry_after)
  uint32_t max_idle_connections = 100;
  Duration idle_timeout = std::chrono::seconds(90);
  Duration max_connection_lifetime = std::chrono::minutes(10);
  uint32_t max_response_headers = 64 * 1024;
  uint64_t max_response_body = uint64_t{64} << 20;
  bool decompress = true;
  std::optional<TlsSettings> tls;  // unset: https verifies against the system roots
  HttpVersion http_version = HttpVersion::kAuto;
  Headers headers;
  bool forward_authorization = false;
  bool forward_scenario = false;
  // Deadline propagation (docs/timeouts.md §8.4): each attempt tells the server its time left in this header
  // (empty: none is sent), and an attempt with less than min_attempt_time left of the call is not started.
  std::string deadline_header;
  DeadlineFormat deadline_format = DeadlineFormat::kMilliseconds;
  Duration min_attempt_time = Duration::zero();
  std::optional<ShareSettings> share;  // unset: this process's own breaker, budget and bulkhead
  std::optional<HedgeSettings> hedge;  // unset: no hedging (docs/retries.md §6.8)
  std::string classify_preset = "humus";  // JSON "classify" as a preset name
  // JSON "classify" / "breaker_policy" as a plugin (docs/retries.md §5.4a): what the settings name, loaded
  // into classifier / breaker_policy by from_json. Set exactly when that callback came from the plugin.
  std::optional<humus::plugin::Spec> classify_plugin;
  std::optional<humus::plugin::Spec> breaker_policy_plugin;
  // Set by code or loaded from a plugin; null means the preset / the built-in policy with policy_params.
  std::shared_ptr<const humus::classify::Classifier> classifier;
  std::shared_ptr<const humus::breaker::Policy> breaker_policy;
  // Set by code only (humus_settings_set_attempt_hooks); null: none. Copies share it, as the ones above.
  std::shared_ptr<const humus::classify::AttemptHooks> attempt_hooks;
};

// Key by key of the schema; callbacks set by code compare by identity, plugins by what the settings name
// (path, symbol and config): two loads of one document are equal.
bool operator==(const Settings& a, const Settings& b);

Duration effective_max_retry_after(const Settings& s);

// ---- One check per field (docs/settings.md §3.1), each the schema's check of that key. Each returns ok or Code::kConfig naming its JSON key in fields() and
// in the message with the rule and the value: "timeout: must be > 0 and <= 1h, got 0s".
Status check_base_url(std::string_view url);                // absolute http/https, host present, no user-info
Status check_timeout(Duration d);                           // > 0 and <= 1h
Status check_attempt_timeout(Duration d);                   // > 0 (<= timeout: a cross-field rule)
Status check_connect_timeout(Duration d);                   // > 0 (<= attempt_timeout: a cross-field rule)
Status check_max_attempts(int64_t n);                       // 1..10
Status check_backoff_base(Duration d);                      // > 0
Status check_backoff_max(Duration d);                       // > 0 (>= backoff_base: a cross-field rule)
Status check_retry_budget_policy(std::string_view policy);  // "token_bucket" | "ratio"
Status check_retry_budget_tokens(double tokens);            // > 0, finite
Status check_retry_budget_ratio(double ratio);              // (0, 1]
Status check_retry_budget_min_per_second(int64_t n);        // 0..2^32-1
Status check_retry_budget_window(Duration d);               // > 0
Status check_breaker_window(int64_t n);                     // 1..10000
Status check_breaker_open_for(Duration d);                  // > 0
Status check_breaker_probes(int64_t n);                     // 1..2^32-1
Status check_breaker_probe_timeout(Duration d);             // > 0
Status check_trip_consecutive_failures(int64_t n);          // >= 1
Status check_trip_failure_rate(double rate);                // (0, 1]
Status check_trip_min_results(int64_t n);                   // 1..2^32-1
Status check_probe_successes_to_close(int64_t n);           // >= 1
Status check_bulkhead_max_concurrent(int64_t n);            // 1..2^32-1
Status check_bulkhead_wait(Duration d);                     // >= 0
Status check_max_retry_after(Duration d);                   // >= 0
Status check_max_idle_connections(int64_t n);               // 0..2^32-1
Status check_idle_timeout(Duration d);                      // > 0
Status check_tls_min_version(std::string_view version);     // "1.2" | "1.3"; older ones refused by name
// The tls object as a whole: file and PEM of one thing both given, a certificate without its key (or the
// reverse), a PEM that is not PEM, a NUL in a path. Reports every problem at once.
Status check_tls(const TlsSettings& tls);
Status check_http_version(std::string_view version);  // "auto" | "1.1" | "2"
// An RFC 9110 token as name; no CR, LF or NUL in the value (header injection, docs/transport.md §10.5). The message names
// the header, never its value (it may be a credential).
Status check_header(std::string_view name, std::string_view value);
Status check_headers(const Headers& headers);    // each header, and no name twice (case-insensitively)
Status check_classify(std::string_view preset);  // "humus" | "jfast" | "strict"

// A JSON value for one key path ("timeout", "breaker.window", "tls", "headers.X-Api-Key"), as
// humus_settings_check_field takes it: parses `value_json` and runs that key's checks. Unknown keys are refused
// naming the nearest valid one. Code::kConfig on failure. Never throws.
Status check_field(std::string_view dotted_key, std::string_view value_json);

// Every field check plus the rules across fields (docs/settings.md §3.2), every problem in one Status whose fields()
// names each bad key. Code::kConfig when the settings came from configuration, else Code::kProgram (a fault
// in the code that built them). A null classifier or policy is not a problem here: null means the default.
Status validate(const Settings& s, bool from_config);

// The JSON form of docs/settings.md §3 (see to_json for its shape). Keys left out take their defaults; base_url is
// required. Every bad or unknown key, wrong type, duplicate key and broken cross-field rule is reported at
// once as Code::kConfig. Never throws, whatever the input.
Result<Settings> from_json(std::string_view json);

// Every field, defaults filled in, in the order of docs/settings.md §3, durations as format_duration writes them;
// "max_retry_after": null while it follows backoff_max and "tls": null when there is none; retry_budget
// carries only its policy's keys. from_json(to_json(s)) == s for everything but the callbacks.
std::string to_json(const Settings& s);

}  // namespace humus::settings
