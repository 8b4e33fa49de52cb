#include "settings/schema.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <type_traits>

#include "common/duration.h"
#include "common/headers.h"
#include "common/text.h"
#include "transport/url.h"

namespace humus::settings::schema {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr int64_t kUint32Max = std::numeric_limits<uint32_t>::max();
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

// ---- Reaching a member, and its value as a Value
// -----------------------------------------------------------

constexpr std::string_view kPolicyNames[] = {"token_bucket", "ratio"};  // BudgetPolicy's order
constexpr std::string_view kHttpVersionNames[] = {"auto", "1.1", "2"};  // HttpVersion's order
constexpr std::string_view kTlsVersionNames[] = {"1.2", "1.3"};         // TlsVersion's order
constexpr std::string_view kClassifyNames[] = {"humus", "jfast", "strict"};
constexpr std::string_view kDeadlineFormatNames[] = {"ms", "grpc"};  // DeadlineFormat's order
constexpr std::string_view kBulkheadModeNames[] = {"fixed", "adaptive"};  // BulkheadMode's order
constexpr std::string_view kAlgorithmNames[] = {"gradient2", "aimd"};    // bulkhead::Algorithm's order

std::span<const std::string_view> names_of(BudgetPolicy) { return kPolicyNames; }
std::span<const std::string_view> names_of(HttpVersion) { return kHttpVersionNames; }
std::span<const std::string_view> names_of(TlsVersion) { return kTlsVersionNames; }
std::span<const std::string_view> names_of(DeadlineFormat) { return kDeadlineFormatNames; }
std::span<const std::string_view> names_of(BulkheadMode) { return kBulkheadModeNames; }
std::span<const std::string_view> names_of(Algorithm) { return kAlgorithmNames; }

// An optional object on the way (tls) is made on write and read as its defaults while absent.
template <typename T>
T& step(T& x) {
  return x;
}
template <typename T>
T& step(std::optional<T>& x) {
  return x ? *x : x.emplace();
}
template <typename T>
const T& step(const std::optional<T>& x) {
  static const T kNone{};
  return x ? *x : kNone;
}

template <auto M, auto... Rest, typename S>
auto& reach(S& s) {
  if constexpr (sizeof...(Rest) == 0) {
    return s.*M;
  } else {
    return reach<Rest...>(step(s.*M));
  }
}

Value to_value(Duration d) { return d; }
Value to_value(const std::optional<Duration>& d) { return d ? Value(*d) : Value(); }
Value to_value(double x) { return x; }
Value to_value(const std::optional<double>& x) { return x ? Value(*x) : Value(); }
Value to_value(bool b) { return b; }
Value to_value(const std::string& s) { return s; }
template <typename T>
  requires(std::is_integral_v<T> && !std::is_same_v<T, bool>)
Value to_value(T n) {
  // Counts past int64's range are as valid as any large count.
  if constexpr (std::is_unsigned_v<T> && sizeof(T) >= sizeof(int64_t)) {
    return static_cast<int64_t>(std::min<uint64_t>(n, kInt64Max));
  } else {
    return static_cast<int64_t>(n);
  }
}
template <typename E>
  requires std::is_enum_v<E>
Value to_value(E e) {
  const auto names = names_of(e);
  const auto i = static_cast<size_t>(e);
  return i < names.size() ? std::string(names[i]) : std::string();
}

void from_value(const Value& v, Duration& out) { out = std::get<Duration>(v); }
void from_value(const Value& v, std::optional<Duration>& out) {
  if (std::holds_alternative<Duration>(v)) {
    out = std::get<Duration>(v);
  } else {
    out.reset();
  }
}
void from_value(const Value& v, double& out) { out = std::get<double>(v); }
void from_value(const Value& v, std::optional<double>& out) {
  if (std::holds_alternative<double>(v)) {
    out = std::get<double>(v);
  } else {
    out.reset();
  }
}
void from_value(const Value& v, bool& out) { out = std::get<bool>(v); }
void from_value(const Value& v, std::string& out) { out = std::get<std::string>(v); }
template <typename T>
  requires(std::is_integral_v<T> && !std::is_same_v<T, bool>)
void from_value(const Value& v, T& out) {
  out = static_cast<T>(std::get<int64_t>(v));  // the check bounded it to T's range
}
template <typename E>
  requires std::is_enum_v<E>
void from_value(const Value& v, E& out) {
  const auto names = names_of(out);
  const auto at = std::find(names.begin(), names.end(), std::get<std::string>(v));
  out = static_cast<E>(at - names.begin());  // the check made it one of the names
}

template <auto... M>
Value read_member(const Settings& s) {
  return to_value(reach<M...>(s));
}
template <auto... M>
void write_member(Settings& s, const Value& v) {
  from_value(v, reach<M...>(s));
}

// ---- Checks of one kind beyond its bounds
// ------------------------------------------------------------------

bool contains_nul(std::string_view s) { return s.find('\0') != std::string_view::npos; }

// deadline_header: empty (off) or a header name a request could carry (the rules of "headers").
Status check_deadline_header(std::string_view key, const Value& v) {
  const std::string& name = std::get<std::string>(v);
  if (name.empty()) return Status();
  if (std::string why = header_problem(name, "0"); !why.empty()) return problem(key, why);
  return Status();
}

Status check_base_url(std::string_view key, const Value& v) {
  const std::string& url = std::get<std::string>(v);
  // The URL itself is never repeated: it may carry a password.
  if (url.empty()) return problem(key, "required (an absolute http or https URL)");
  Result<transport::Url> parsed = transport::parse_url(url);
  if (!parsed.ok())
    return problem(key, "must be an absolute http or https URL (" + parsed.status().message() + ")");
  if (parsed->scheme != "http" && parsed->scheme != "https") {
    return problem(key, "scheme must be http or https, got " + quote_for_message(parsed->scheme));
  }
  if (Result<transport::ClientUrl> named = transport::ClientUrl::from(std::move(parsed).value()); !named.ok()) {
    return problem(key, named.status().message() + " (a password would sit in settings and every error)");
  }
  return Status();
}

// A path as libcurl will take it: a C string, so a NUL would silently cut it.
Status check_tls_path(std::string_view key, const Value& v) {
  const std::string& path = std::get<std::string>(v);
  if (path.empty()) return problem(key, "must not be empty (leave the key out for none)");
  if (contains_nul(path)) return problem(key, "must not contain a NUL byte");
  return Status();
}

// Catches a path or base64 pasted where PEM text belongs; the transport parses the real thing.
Status check_pem(std::string_view key, std::string_view pem, bool is_key) {
  if (pem.empty()) return problem(key, "must not be empty (leave the key out for none)");
  if (contains_nul(pem)) return problem(key, "must not contain a NUL byte");
  const bool looks_right = is_key ? pem.find("-----BEGIN ") != std::string_view::npos &&
                                        pem.find("PRIVATE KEY-----") != std::string_view::npos
                                  : pem.find("-----BEGIN CERTIFICATE-----") != std::string_view::npos;
  if (!looks_right) {
    return problem(key, is_key ? "must be PEM text with a \"-----BEGIN ... PRIVATE KEY-----\" block"
                               : "must be PEM text with a \"-----BEGIN CERTIFICATE-----\" block");
  }
  return Status();
}
Status check_cert_pem(std::string_view key, const Value& v) {
  return check_pem(key, std::get<std::string>(v), false);
}
Status check_key_pem(std::string_view key, const Value& v) {
  return check_pem(key, std::get<std::string>(v), true);
}

Status refuse_old_tls(std::string_view key, const Value& v) {
  const std::string& version = std::get<std::string>(v);
  if (version == "1.0" || version == "1.1" || version == "1") {
    return problem(key, "versions below 1.2 are refused, got " + quote_for_message(version));
  }
  return Status();
}

// The rules inside the tls object: one source per thing, certificate and key together.
void check_tls_combination(const Settings& s, Problems& p) {
  const TlsSettings& tls = *s.tls;
  const auto one_source = [&](std::string_view what, const std::string& file, const std::string& pem) {
    if (file.empty() || pem.empty()) return;
    const std::string f = "tls." + std::string(what) + "_file";
    const std::string m = "tls." + std::string(what) + "_pem";
    p.add(Status(Code::kConfig, "tls: " + f + " and " + m + " are both given (give one)", {f, m}));
  };
  one_source("ca", tls.ca_file, tls.ca_pem);
  one_source("cert", tls.cert_file, tls.cert_pem);
  one_source("key", tls.key_file, tls.key_pem);
  const bool has_cert = !tls.cert_file.empty() || !tls.cert_pem.empty();
  const bool has_key = !tls.key_file.empty() || !tls.key_pem.empty();
  if (has_cert && !has_key) {
    p.add(problem(tls.cert_file.empty() ? "tls.cert_pem" : "tls.cert_file",
                  "a client certificate needs its key (tls.key_file or tls.key_pem)"));
  }
  if (has_key && !has_cert) {
    p.add(problem(tls.key_file.empty() ? "tls.key_pem" : "tls.key_file",
                  "a client key needs its certificate (tls.cert_file or tls.cert_pem)"));
  }
}

// share.name: a POSIX shared-memory name of the project's (docs/shared.md §22.1).
Status check_share_name(std::string_view key, const Value& v) {
  const std::string& name = std::get<std::string>(v);
  bool ok = !name.empty() && name.size() <= 64 && name.front() != '.';
  for (const char c : name) {
    ok = ok && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                c == '-' || c == '.');
  }
  if (ok) return Status();
  return problem(key, "a segment name is 1 to 64 letters, digits, '_', '-' or '.', not starting with '.', got \"" +
                          name + "\"");
}

bool has_share(const Settings& s) { return s.share.has_value(); }
void reset_share(Settings& s, bool present) {
  if (present) {
    s.share.emplace();
  } else {
    s.share.reset();
  }
}
void check_share_object(const Settings& s, Problems& p) {
  if (s.share->name.empty()) p.add(problem("share.name", "required when share is given"));
}

// bulkhead.min <= bulkhead.max, unless one of them already failed its own check.
void check_bulkhead_bounds(const Settings& s, Problems& p) {
  if (p.about("bulkhead.min") || p.about("bulkhead.max") || s.bulkhead.min <= s.bulkhead.max) return;
  p.add(Status(Code::kConfig,
               "bulkhead.min: must be <= bulkhead.max (" + std::to_string(s.bulkhead.max) + "), got " +
                   std::to_string(s.bulkhead.min),
               {"bulkhead.min", "bulkhead.max"}));
}

// hedge.delay: a duration or "pNN" (docs/retries.md §6.8).
Status check_hedge_delay(std::string_view key, const Value& v) {
  Result<HedgeDelay> d = parse_hedge_delay(std::get<std::string>(v));
  if (!d.ok()) return problem(key, d.status().message());
  return Status();
}

bool has_hedge(const Settings& s) { return s.hedge.has_value(); }
void reset_hedge(Settings& s, bool present) {
  if (present) {
    s.hedge.emplace();
  } else {
    s.hedge.reset();
  }
}

bool has_tls(const Settings& s) { return s.tls.has_value(); }
void reset_tls(Settings& s, bool present) {
  if (present) {
    s.tls.emplace();
  } else {
    s.tls.reset();
  }
}

// The plugins (docs/retries.md §5.4a): what the settings name is kept beside the callback loaded from it.
Status load_classify_plugin(const plugin::Spec& spec, Settings& s) {
  Result<std::shared_ptr<const classify::Classifier>> loaded = plugin::load_classifier(spec);
  if (!loaded.ok()) return loaded.status();
  s.classifier = std::move(loaded).value();
  s.classify_plugin = spec;
  return Status();
}
Status load_breaker_policy_plugin(const plugin::Spec& spec, Settings& s) {
  Result<std::shared_ptr<const breaker::Policy>> loaded = plugin::load_breaker_policy(spec);
  if (!loaded.ok()) return loaded.status();
  s.breaker_policy = std::move(loaded).value();
  s.breaker_policy_plugin = spec;
  return Status();
}
bool has_breaker_policy_plugin(const Settings& s) { return s.breaker_policy_plugin.has_value(); }
// null: the built-in policy (a policy set by code is no key of the document, and is dropped with it too).
void reset_breaker_policy(Settings& s, bool /*present*/) {
  s.breaker_policy_plugin.reset();
  s.breaker_policy.reset();
}

bool token_bucket(const Settings& s) { return s.retry_budget.policy == BudgetPolicy::kTokenBucket; }
bool ratio_policy(const Settings& s) { return s.retry_budget.policy == BudgetPolicy::kRatio; }

// Which retry_budget keys each policy takes (the others would be silently ignored: refused instead), and the
// ratio policy's own default share.
void check_budget_keys(const std::vector<std::string>& given, const std::string& path, Settings& s,
                       Problems& p) {
  if (p.about(path + ".policy")) return;  // which keys apply is unknown
  std::string takes;
  for (const Field* f : children(path)) {
    if (f->applies == nullptr || f->applies(s)) {
      if (f->kind == Kind::kEnum) continue;  // the policy itself
      takes += (takes.empty() ? "" : ", ") + std::string(f->key.substr(path.size() + 1));
    }
  }
  const std::string policy = std::get<std::string>(to_value(s.retry_budget.policy));
  for (const std::string& key : given) {
    const Field* f = find(path + "." + key);
    if (f != nullptr && f->applies != nullptr && !f->applies(s)) {
      p.add(problem(f->key, "not used by policy \"" + policy + "\" (it takes " + takes + ")"));
    }
  }
  if (ratio_policy(s) && std::find(given.begin(), given.end(), "ratio") == given.end()) {
    s.retry_budget.ratio = kRatioPolicyDefaultRatio;
  }
}

// ---- The table -----------------------------------------------------------------------------------------

template <auto... M>
constexpr Field duration(std::string_view key, std::string_view doc, Duration min, bool min_exclusive,
                         Duration max = Duration::max()) {
  return {.key = key,
          .kind = Kind::kDuration,
          .doc = doc,
          .min = min.count(),
          .max = max.count(),
          .min_exclusive = min_exclusive,
          .get = read_member<M...>,
          .set = write_member<M...>};
}
template <auto... M>
constexpr Field count(std::string_view key, std::string_view doc, int64_t min, int64_t max,
                      Kind kind = Kind::kCount) {
  return {.key = key,
          .kind = kind,
          .doc = doc,
          .min = min,
          .max = max,
          .get = read_member<M...>,
          .set = write_member<M...>};
}
template <auto... M>
constexpr Field bytes(std::string_view key, std::string_view doc, int64_t min, int64_t max) {
  return count<M...>(key, doc, min, max, Kind::kBytes);
}
template <auto... M>
constexpr Field scalar(std::string_view key, Kind kind, std::string_view doc,
                       std::span<const std::string_view> choices = {}) {
  return {.key = key,
          .kind = kind,
          .doc = doc,
          .choices = choices,
          .get = read_member<M...>,
          .set = write_member<M...>};
}
constexpr Field object(std::string_view key, std::string_view doc) {
  return {.key = key, .kind = Kind::kObject, .doc = doc};
}
template <auto M>
constexpr Field tls_string(std::string_view key, std::string_view doc,
                           Status (*extra)(std::string_view, const Value&)) {
  Field f = scalar<&Settings::tls, M>(key, Kind::kString, doc);
  f.extra = extra;
  f.omit_unset = true;  // empty: not given
  return f;
}
constexpr Field only_if(Field f, bool (*applies)(const Settings&)) {
  f.applies = applies;
  return f;
}

constexpr Duration kZero = Duration::zero();
using S = Settings;
using B = RetryBudgetSettings;
using P = humus::breaker::DefaultPolicyParams;

// docs/settings.md §3's order: to_json writes it, and "valid keys" lists it.
constexpr Field kFields[] = {
    [] {
      Field f = scalar<&S::base_url>("base_url", Kind::kString, "absolute http/https URL of the dependency");
      f.extra = check_base_url;
      f.required = true;
      return f;
    }(),
    duration<&S::timeout>("timeout", "the whole call, attempts and waits included", kZero, true, hours(1)),
    duration<&S::attempt_timeout>("attempt_timeout", "one attempt, dial to response headers; <= timeout",
                                  kZero, true),
    duration<&S::connect_timeout>("connect_timeout", "connecting; <= attempt_timeout", kZero, true),
    count<&S::max_attempts>("max_attempts", "attempts per call (1 turns retries off)", 1, 10),
    duration<&S::backoff_base>("backoff_base", "the first retry's jitter cap", kZero, true),
    duration<&S::backoff_max>("backoff_max", "the largest jitter cap; >= backoff_base", kZero, true),
    [] {
      Field f = object("retry_budget", "the retry budget shared by the client's calls (docs/retries.md §6.4)");
      f.after_load = check_budget_keys;
      return f;
    }(),
    scalar<&S::retry_budget, &B::policy>("retry_budget.policy", Kind::kEnum, "which budget", kPolicyNames),
    only_if(scalar<&S::retry_budget, &B::tokens>("retry_budget.tokens", Kind::kNumber,
                                                 "token_bucket: capacity; retries stop at half"),
            token_bucket),
    scalar<&S::retry_budget, &B::ratio>(
        "retry_budget.ratio", Kind::kShare,
        "token_bucket: tokens per success; ratio: share of recent requests (default 0.2 there)"),
    only_if(count<&S::retry_budget, &B::min_per_second>(
                "retry_budget.min_per_second", "ratio: retries always allowed per second", 0, kUint32Max),
            ratio_policy),
    only_if(duration<&S::retry_budget, &B::window>("retry_budget.window",
                                                   "ratio: how far back requests count", kZero, true),
            ratio_policy),
    object("breaker", "the circuit breaker (docs/breaker.md §9)"),
    count<&S::breaker, &BreakerSettings::window>("breaker.window", "results the policy sees", 1, 10000),
    duration<&S::breaker, &BreakerSettings::open_for>("breaker.open_for", "how long an open breaker rejects",
                                                      kZero, true),
    count<&S::breaker, &BreakerSettings::probes>("breaker.probes", "probes in flight at once in half-open", 1,
                                                 kUint32Max),
    duration<&S::breaker, &BreakerSettings::probe_timeout>("breaker.probe_timeout",
                                                           "a probe's slot is freed after this", kZero, true),
    [] {
      Field f = duration<&S::breaker, &BreakerSettings::slow_call_duration>(
          "breaker.slow_call_duration", "a longer attempt is also counted slow; null: none is", kZero, true);
      f.nullable = true;
      f.omit_unset = true;  // off: left out of to_json, which stays as it was before the key existed
      return f;
    }(),
    object("trip", "the built-in trip policy's parameters"),
    count<&S::policy_params, &P::consecutive_failures>(
        "trip.consecutive_failures", "open after this many failures in a row", 1, kInt64Max),
    scalar<&S::policy_params, &P::failure_rate>("trip.failure_rate", Kind::kShare,
                                                "... or once this share of the window failed"),
    count<&S::policy_params, &P::min_results>("trip.min_results", "... with at least this many results", 1,
                                              kUint32Max),
    [] {
      Field f = scalar<&S::policy_params, &P::slow_call_rate>(
          "trip.slow_call_rate", Kind::kShare, "... or once this share of the window was slow; null: never");
      f.nullable = true;
      f.omit_unset = true;
      return f;
    }(),
    object("probe", "the built-in probe policy's parameters"),
    count<&S::policy_params, &P::successes_to_close>(
        "probe.successes_to_close", "successful probes that close a half-open breaker", 1, kInt64Max),
    {.key = "breaker_policy",
     .kind = Kind::kPlugin,
     .doc = "a plugin's trip/probe policy (docs/retries.md §5.4a); null: the built-in one",
     .nullable = true,
     .present = has_breaker_policy_plugin,
     .reset = reset_breaker_policy,
     .plugin = &S::breaker_policy_plugin,
     .load_plugin = load_breaker_policy_plugin},
    [] {
      Field f = object("bulkhead", "calls in flight at once (docs/bulkhead.md §11)");
      f.check_object = check_bulkhead_bounds;
      return f;
    }(),
    count<&S::bulkhead, &BulkheadSettings::max_concurrent>(
        "bulkhead.max_concurrent", "calls in flight at once; adaptive: the first limit, within min..max", 1,
        kUint32Max),
    duration<&S::bulkhead, &BulkheadSettings::wait>("bulkhead.wait", "how long a call waits for a slot",
                                                    kZero, false),
    scalar<&S::bulkhead, &BulkheadSettings::mode>(
        "bulkhead.mode", Kind::kEnum, "fixed: max_concurrent; adaptive: the limit moves with latency (§11.1)",
        kBulkheadModeNames),
    count<&S::bulkhead, &BulkheadSettings::min>("bulkhead.min", "adaptive: the lowest limit", 1, kUint32Max),
    count<&S::bulkhead, &BulkheadSettings::max>("bulkhead.max", "adaptive: the highest limit; >= min", 1,
                                                kUint32Max),
    scalar<&S::bulkhead, &BulkheadSettings::algorithm>(
        "bulkhead.algorithm", Kind::kEnum, "adaptive: what moves the limit", kAlgorithmNames),
    [] {
      Field f = duration<&S::max_retry_after>(
          "max_retry_after", "a longer Retry-After is not waited; null: backoff_max", kZero, false);
      f.nullable = true;
      return f;
    }(),
    count<&S::max_idle_connections>("max_idle_connections", "idle connections kept", 0, kUint32Max),
    duration<&S::idle_timeout>("idle_timeout", "how long an idle connection is kept", kZero, true),
    duration<&S::max_connection_lifetime>(
        "max_connection_lifetime", "an older connection takes no new request", seconds(1), false, hours(24)),
    bytes<&S::max_response_headers>("max_response_headers", "response header bytes (and 200 fields)", 4096,
                                    int64_t{1} << 20),
    bytes<&S::max_response_body>("max_response_body", "a buffered body's decoded bytes", 1024,
                                 int64_t{1} << 40),
    scalar<&S::decompress>("decompress", Kind::kBool, "ask for compressed bodies and decode them"),
    [] {
      Field f = object("tls", "TLS for https (docs/transport.md §10.3); null: the system's roots");
      f.nullable = true;
      f.present = has_tls;
      f.reset = reset_tls;
      f.check_object = check_tls_combination;
      return f;
    }(),
    tls_string<&TlsSettings::ca_file>("tls.ca_file", "trust roots: a PEM file", check_tls_path),
    tls_string<&TlsSettings::ca_pem>("tls.ca_pem", "trust roots: PEM text", check_cert_pem),
    tls_string<&TlsSettings::cert_file>("tls.cert_file", "client certificate (mTLS): a PEM file",
                                        check_tls_path),
    tls_string<&TlsSettings::cert_pem>("tls.cert_pem", "client certificate (mTLS): PEM text", check_cert_pem),
    tls_string<&TlsSettings::key_file>("tls.key_file", "the certificate's key: a PEM file", check_tls_path),
    tls_string<&TlsSettings::key_pem>("tls.key_pem", "the certificate's key: PEM text", check_key_pem),
    [] {
      Field f = scalar<&S::tls, &TlsSettings::min_version>("tls.min_version", Kind::kEnum,
                                                           "the lowest TLS version", kTlsVersionNames);
      f.extra = refuse_old_tls;
      return f;
    }(),
    scalar<&S::http_version>("http_version", Kind::kEnum, "auto: HTTP/2 then HTTP/1.1 by ALPN for https",
                             kHttpVersionNames),
    {.key = "headers", .kind = Kind::kMap, .doc = "sent with every request"},
    scalar<&S::forward_authorization>("forward_authorization", Kind::kBool,
                                      "pass on the call context's bearer token"),
    scalar<&S::forward_scenario>("forward_scenario", Kind::kBool,
                                 "keep the fault scenario in the baggage sent"),
    [] {
      Field f = scalar<&S::deadline_header>("deadline_header", Kind::kString,
                                            "send each attempt's time left in this header; empty: none");
      f.extra = check_deadline_header;
      f.omit_unset = true;  // off: left out of to_json
      return f;
    }(),
    scalar<&S::deadline_format>("deadline_format", Kind::kEnum,
                                "how deadline_header spells it: \"ms\" 1500, \"grpc\" 1500m", kDeadlineFormatNames),
    duration<&S::min_attempt_time>("min_attempt_time", "an attempt with less of the call left is not started",
                                   kZero, false),
    [] {
      Field f = object("share", "one breaker, budget and bulkhead per host (docs/shared.md §22); null: per client");
      f.nullable = true;
      f.present = has_share;
      f.reset = reset_share;
      f.check_object = check_share_object;
      f.omit_unset = true;  // off: left out of to_json, which stays as it was before the key existed
      return f;
    }(),
    [] {
      Field f = scalar<&S::share, &ShareSettings::name>("share.name", Kind::kString,
                                                        "the segment's name: the file /dev/shm/humus_http.NAME");
      f.extra = check_share_name;
      f.omit_unset = true;
      return f;
    }(),
    [] {
      Field f = object("hedge", "hedged requests (docs/retries.md §6.8); null: none");
      f.nullable = true;
      f.present = has_hedge;
      f.reset = reset_hedge;
      f.omit_unset = true;  // off: left out of to_json, which stays as it was before the key existed
      return f;
    }(),
    [] {
      Field f = scalar<&S::hedge, &HedgeSettings::delay>(
          "hedge.delay", Kind::kString, "wait before another copy: a duration, or \"p50\"..\"p99\" of recent latencies");
      f.extra = check_hedge_delay;
      return f;
    }(),
    count<&S::hedge, &HedgeSettings::max>("hedge.max", "copies of a request in flight at once", 2, 4),
    [] {
      Field f = scalar<&S::classify_preset>(
          "classify", Kind::kEnum, "the classifier: a preset (docs/retries.md §5.5) or a plugin (§5.4a)",
          kClassifyNames);
      f.plugin = &S::classify_plugin;
      f.load_plugin = load_classify_plugin;
      return f;
    }(),
};

// docs/settings.md §3.2, in the order they are reported.
constexpr Rule kRules[] = {
    {"backoff_max", false, "backoff_base"},
    {"attempt_timeout", true, "timeout"},
    {"connect_timeout", true, "attempt_timeout"},
};

std::string join_choices(std::span<const std::string_view> choices) {
  std::string out;
  for (size_t i = 0; i < choices.size(); ++i) {
    if (i > 0) out += i + 1 == choices.size() ? " or " : ", ";
    out += "\"" + std::string(choices[i]) + "\"";
  }
  return out;
}

std::string format_bound(int64_t ns) { return ns == 0 ? "0" : format_duration(Duration(ns)); }

// The integer check's message names only the bound that matters for a range without a real upper end.
Status check_range(std::string_view key, int64_t n, int64_t lo, int64_t hi) {
  if (n >= lo && n <= hi) return Status();
  const std::string got = ", got " + std::to_string(n);
  if (hi == kInt64Max || (hi == kUint32Max && n < lo))
    return problem(key, "must be >= " + std::to_string(lo) + got);
  if (hi == kUint32Max) return problem(key, "must be <= " + std::to_string(hi) + got);
  return problem(key, "must be between " + std::to_string(lo) + " and " + std::to_string(hi) + got);
}

}  // namespace

// ---- Public ----------------------------------------------------------------------------------------------

Status problem(std::string_view key, const std::string& rule) {
  return Status(Code::kConfig, std::string(key) + ": " + rule, {std::string(key)});
}

std::string join_path(std::string_view parent, std::string_view key) {
  if (parent.empty()) return std::string(key);
  std::string out(parent);
  out += '.';
  out += key;
  return out;
}

std::string_view leaf(std::string_view key) {
  const size_t dot = key.rfind('.');
  return dot == std::string_view::npos ? key : key.substr(dot + 1);
}

Json value_json(const Field& f, const Value& v) {
  if (std::holds_alternative<std::monostate>(v)) return nullptr;
  switch (f.kind) {
    case Kind::kDuration:
      return format_duration(std::get<Duration>(v));
    case Kind::kCount:
    case Kind::kBytes:
      return std::get<int64_t>(v);
    case Kind::kNumber:
    case Kind::kShare: {
      // A whole number as a JSON integer (10, not 10.0).
      const double x = std::get<double>(v);
      if (std::isfinite(x) && x == std::floor(x) && std::fabs(x) < 9007199254740992.0)
        return static_cast<int64_t>(x);
      return x;
    }
    case Kind::kBool:
      return std::get<bool>(v);
    default:
      return std::get<std::string>(v);
  }
}

std::string describe(const Json& v) {
  switch (v.type()) {
    case Json::value_t::null:
      return "null";
    case Json::value_t::boolean:
      return v.get<bool>() ? "true" : "false";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
    case Json::value_t::number_float:
      return v.dump();
    case Json::value_t::string:
      return "a string";
    case Json::value_t::array:
      return "an array";
    case Json::value_t::object:
      return "an object";
    default:
      return "an unsupported value";
  }
}

std::optional<Value> read_value(const Field& f, const Json& v, Problems& p) {
  const std::string key(f.key);
  switch (f.kind) {
    case Kind::kDuration: {
      if (!v.is_string()) {
        const std::string hint = v.is_number() ? " (a duration is a string with a unit)" : "";
        p.add(key,
              key + ": must be a duration string such as \"250ms\" or \"5s\", got " + describe(v) + hint);
        return std::nullopt;
      }
      Result<Duration> d = parse_duration(v.get_ref<const std::string&>());
      if (!d.ok()) {
        p.add(key, key + ": " + d.status().message());
        return std::nullopt;
      }
      return *d;
    }
    case Kind::kCount:
    case Kind::kBytes:
      if (v.is_number_unsigned()) {
        const auto u = v.get<uint64_t>();
        if (u <= static_cast<uint64_t>(kInt64Max)) return static_cast<int64_t>(u);
        p.add(key, key + ": too large, got " + v.dump());
        return std::nullopt;
      }
      if (v.is_number_integer()) return v.get<int64_t>();
      p.add(key, key + ": must be an integer, got " + describe(v));
      return std::nullopt;
    case Kind::kNumber:
    case Kind::kShare:
      if (v.is_number()) return v.get<double>();
      p.add(key, key + ": must be a number, got " + describe(v));
      return std::nullopt;
    case Kind::kBool:
      if (v.is_boolean()) return v.get<bool>();
      p.add(key, key + ": must be true or false, got " + describe(v));
      return std::nullopt;
    default:
      if (v.is_string()) return v.get<std::string>();
      p.add(key, key + ": must be a string, got " + describe(v));
      return std::nullopt;
  }
}

void Problems::add(const std::string& field, const std::string& message) {
  messages_.push_back(message);
  add_field(field);
}
void Problems::add(const Status& status) {
  if (status.ok()) return;
  messages_.push_back(status.message());
  for (const std::string& f : status.fields()) add_field(f);
}
bool Problems::check(const Status& status) {
  add(status);
  return status.ok();
}
bool Problems::about(std::string_view field) const {
  return std::find(fields_.begin(), fields_.end(), field) != fields_.end();
}
Status Problems::status(Code code) const {
  if (messages_.empty()) return Status();
  std::string message;
  for (const std::string& m : messages_) {
    if (!message.empty()) message += "; ";
    message += m;
  }
  return Status(code, std::move(message), fields_);
}
// The document itself (a syntax error) has no key to name.
void Problems::add_field(const std::string& field) {
  if (!field.empty() && !about(field)) fields_.push_back(field);
}

std::string_view kind_name(Kind kind) {
  constexpr std::string_view kNames[] = {"duration", "count", "bytes",  "number", "share", "enum",
                                         "string",   "bool",  "object", "map",    "plugin"};
  return kNames[static_cast<size_t>(kind)];
}

std::span<const Field> fields() { return kFields; }
std::span<const Rule> rules() { return kRules; }

const Field* find(std::string_view key) {
  for (const Field& f : kFields) {
    if (f.key == key) return &f;
  }
  return nullptr;
}

std::vector<const Field*> children(std::string_view parent) {
  std::vector<const Field*> out;
  for (const Field& f : kFields) {
    std::string_view rest = f.key;
    if (!parent.empty()) {
      if (rest.size() <= parent.size() + 1 || rest.substr(0, parent.size()) != parent ||
          rest[parent.size()] != '.')
        continue;
      rest.remove_prefix(parent.size() + 1);
    }
    if (rest.find('.') == std::string_view::npos) out.push_back(&f);
  }
  return out;
}

std::string format_number(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  // Whole numbers as integers ("0", not "0.0"); others in the shortest form that reads back the same.
  if (x == std::floor(x) && std::fabs(x) < 1e15) return std::to_string(static_cast<int64_t>(x));
  return Json(x).dump();
}

Status check(const Field& f, const Value& v) {
  if (std::holds_alternative<std::monostate>(v)) return Status();  // unset: nothing to check
  if (f.extra != nullptr) {
    if (Status st = f.extra(f.key, v); !st.ok()) return st;
  }
  switch (f.kind) {
    case Kind::kDuration: {
      const int64_t n = std::get<Duration>(v).count();
      if ((f.min_exclusive ? n > f.min : n >= f.min) && n <= f.max) return Status();
      std::string rule =
          f.min_exclusive ? "must be > " + format_bound(f.min) : "must be >= " + format_bound(f.min);
      if (f.max != kInt64Max) {
        rule = f.min_exclusive ? rule + " and <= " + format_bound(f.max)
                               : "must be between " + format_bound(f.min) + " and " + format_bound(f.max);
      }
      return problem(f.key, rule + ", got " + format_duration(std::get<Duration>(v)));
    }
    case Kind::kCount:
    case Kind::kBytes:
      return check_range(f.key, std::get<int64_t>(v), f.min, f.max);
    case Kind::kNumber: {
      const double x = std::get<double>(v);
      if (x > 0 && std::isfinite(x)) return Status();
      return problem(f.key, "must be > 0, got " + format_number(x));
    }
    case Kind::kShare: {
      const double x = std::get<double>(v);  // NaN fails every comparison and so is refused too
      if (x > 0 && x <= 1) return Status();
      return problem(f.key, "must be > 0 and <= 1, got " + format_number(x));
    }
    case Kind::kEnum: {
      const std::string& s = std::get<std::string>(v);
      if (std::find(f.choices.begin(), f.choices.end(), s) != f.choices.end()) return Status();
      return problem(f.key, "must be " + join_choices(f.choices) + ", got " + quote_for_message(s));
    }
    default:
      return Status();
  }
}

Status check(std::string_view key, const Value& value) { return check(*find(key), value); }

std::string schema_json() {
  const Settings defaults;
  Json keys = Json::array();
  for (const Field& f : kFields) {
    Json k = Json::object();
    k["key"] = f.key;
    k["kind"] = kind_name(f.kind);
    if (f.kind == Kind::kObject || f.kind == Kind::kPlugin) {
      k["default"] = f.nullable ? Json(nullptr) : Json::object();
    } else if (f.kind == Kind::kMap) {
      k["default"] = Json::object();
    } else {
      const Value v = f.get(defaults);
      k["default"] =
          f.required || (f.omit_unset && std::holds_alternative<std::string>(v) && std::get<std::string>(v).empty())
              ? Json(nullptr)
              : value_json(f, v);
    }
    if (f.kind == Kind::kDuration || f.kind == Kind::kCount || f.kind == Kind::kBytes) {
      const bool is_duration = f.kind == Kind::kDuration;
      k["min"] = is_duration ? Json(format_duration(Duration(f.min))) : Json(f.min);
      k["min_exclusive"] = f.min_exclusive;
      if (f.max != kInt64Max) k["max"] = is_duration ? Json(format_duration(Duration(f.max))) : Json(f.max);
    } else if (f.kind == Kind::kShare) {
      k["min"] = 0;
      k["min_exclusive"] = true;
      k["max"] = 1;
    } else if (f.kind == Kind::kNumber) {
      k["min"] = 0;
      k["min_exclusive"] = true;
    } else if (f.kind == Kind::kEnum) {
      k["choices"] = Json(std::vector<std::string>(f.choices.begin(), f.choices.end()));
    }
    if (f.plugin != nullptr) k["plugin"] = true;
    if (f.nullable) k["nullable"] = true;
    if (f.required) k["required"] = true;
    k["doc"] = f.doc;
    keys.push_back(std::move(k));
  }
  Json doc = Json::object();
  doc["version"] = 1;
  doc["keys"] = std::move(keys);
  return doc.dump();
}

}  // namespace humus::settings::schema
