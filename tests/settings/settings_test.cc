#include "settings/settings.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "capi/plugin_entry.h"
#include "settings/schema.h"

namespace humus::settings {
namespace {
namespace HUMUS_UNITY_ID {

using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::nanoseconds;
using std::chrono::seconds;

constexpr char kCaPem[] = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
constexpr char kKeyPem[] = "-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n";

bool has_field(const Status& s, std::string_view field) {
  return std::find(s.fields().begin(), s.fields().end(), field) != s.fields().end();
}

bool mentions(const Status& s, std::string_view text) { return s.message().find(text) != std::string::npos; }

Settings loaded(std::string_view json) {
  Result<Settings> r = from_json(json);
  EXPECT_TRUE(r.ok()) << json << "\n-> " << r.status().message();
  return r.ok() ? *r : Settings{};
}

Status load_error(std::string_view json) {
  Result<Settings> r = from_json(json);
  EXPECT_FALSE(r.ok()) << json;
  return r.status();
}

// ---- Defaults ---------------------------------------------------------------------------------------------

TEST(SettingsDefaults, EveryFieldHasTheSpecDefault) {
  const Settings s;
  EXPECT_EQ(s.base_url, "");
  EXPECT_EQ(s.timeout, seconds(10));
  EXPECT_EQ(s.attempt_timeout, seconds(5));
  EXPECT_EQ(s.connect_timeout, seconds(2));
  EXPECT_EQ(s.max_attempts, 3);
  EXPECT_EQ(s.backoff_base, milliseconds(100));
  EXPECT_EQ(s.backoff_max, seconds(2));
  EXPECT_EQ(s.retry_budget.policy, BudgetPolicy::kTokenBucket);
  EXPECT_EQ(s.retry_budget.tokens, 10);
  EXPECT_EQ(s.retry_budget.ratio, 0.1);
  EXPECT_EQ(s.retry_budget.min_per_second, 1u);
  EXPECT_EQ(s.retry_budget.window, seconds(10));
  EXPECT_EQ(s.breaker.window, 20u);
  EXPECT_EQ(s.breaker.open_for, seconds(10));
  EXPECT_EQ(s.breaker.probes, 1u);
  EXPECT_EQ(s.breaker.probe_timeout, seconds(10));
  EXPECT_EQ(s.policy_params.consecutive_failures, 5u);
  EXPECT_EQ(s.policy_params.failure_rate, 0.5);
  EXPECT_EQ(s.policy_params.min_results, 20u);
  EXPECT_EQ(s.policy_params.successes_to_close, 3u);
  EXPECT_EQ(s.bulkhead.max_concurrent, 50u);
  EXPECT_EQ(s.bulkhead.wait, milliseconds(500));
  EXPECT_FALSE(s.max_retry_after.has_value());
  EXPECT_EQ(effective_max_retry_after(s), seconds(2));
  EXPECT_EQ(s.max_idle_connections, 100u);
  EXPECT_EQ(s.idle_timeout, seconds(90));
  EXPECT_EQ(s.max_connection_lifetime, std::chrono::minutes(10));
  EXPECT_EQ(s.max_response_headers, 65536u);
  EXPECT_EQ(s.max_response_body, uint64_t{67108864});
  EXPECT_TRUE(s.decompress);
  EXPECT_FALSE(s.tls.has_value());
  EXPECT_EQ(TlsSettings{}.min_version, TlsVersion::kTls1_2);
  EXPECT_EQ(s.http_version, HttpVersion::kAuto);
  EXPECT_TRUE(s.headers.empty());
  EXPECT_FALSE(s.forward_authorization);
  EXPECT_FALSE(s.forward_scenario);
  EXPECT_EQ(s.classify_preset, "humus");
  EXPECT_EQ(s.classifier, nullptr);
  EXPECT_EQ(s.breaker_policy, nullptr);
}

TEST(SettingsDefaults, JsonWithOnlyBaseUrlGivesTheDefaults) {
  Settings expected;
  expected.base_url = "https://payments";
  EXPECT_EQ(loaded(R"({"base_url": "https://payments"})"), expected);
}

TEST(SettingsDefaults, MaxRetryAfterFollowsBackoffMaxUntilSet) {
  Settings s;
  s.backoff_max = seconds(7);
  EXPECT_EQ(effective_max_retry_after(s), seconds(7));
  s.max_retry_after = Duration::zero();
  EXPECT_EQ(effective_max_retry_after(s), Duration::zero());
}

TEST(SettingsDefaults, DefaultsWithABaseUrlAreValid) {
  Settings s;
  EXPECT_FALSE(validate(s, false).ok());  // base_url is required
  s.base_url = "https://payments";
  EXPECT_TRUE(validate(s, false).ok()) << validate(s, false).message();
  s.base_url = "http://payments";
  EXPECT_TRUE(validate(s, false).ok());
}

// ---- One check per field, boundaries ----------------------------------------------------------------------

void expect_ok(const Status& s) { EXPECT_TRUE(s.ok()) << s.message(); }

void expect_bad(const Status& s, std::string_view key) {
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), Code::kConfig);
  ASSERT_EQ(s.fields().size(), 1u) << s.message();
  EXPECT_EQ(s.fields()[0], key);
  EXPECT_EQ(s.message().rfind(std::string(key) + ": ", 0), 0u) << s.message();
}

TEST(SettingsChecks, Timeout) {
  expect_ok(check_timeout(nanoseconds(1)));
  expect_ok(check_timeout(hours(1)));
  expect_bad(check_timeout(hours(1) + nanoseconds(1)), "timeout");
  expect_bad(check_timeout(Duration::zero()), "timeout");
  expect_bad(check_timeout(-seconds(1)), "timeout");
  EXPECT_EQ(check_timeout(Duration::zero()).message(), "timeout: must be > 0 and <= 1h, got 0s");
}

// S17
TEST(SettingsChecks, PositiveDurations) {
  const std::pair<Status (*)(Duration), const char*> checks[] = {
      {check_attempt_timeout, "attempt_timeout"},
      {check_connect_timeout, "connect_timeout"},
      {check_backoff_base, "backoff_base"},
      {check_backoff_max, "backoff_max"},
      {check_retry_budget_window, "retry_budget.window"},
      {check_breaker_open_for, "breaker.open_for"},
      {check_breaker_probe_timeout, "breaker.probe_timeout"},
      {check_idle_timeout, "idle_timeout"},
  };
  for (const auto& [check, key] : checks) {
    expect_ok(check(nanoseconds(1)));
    expect_ok(check(hours(1000)));
    expect_bad(check(Duration::zero()), key);
    expect_bad(check(-nanoseconds(1)), key);
  }
  EXPECT_EQ(check_breaker_open_for(Duration::zero()).message(), "breaker.open_for: must be > 0, got 0s");
}

TEST(SettingsChecks, NonNegativeDurations) {
  expect_ok(check_bulkhead_wait(Duration::zero()));
  expect_ok(check_bulkhead_wait(seconds(1)));
  expect_bad(check_bulkhead_wait(-nanoseconds(1)), "bulkhead.wait");
  expect_ok(check_max_retry_after(Duration::zero()));
  expect_bad(check_max_retry_after(-seconds(5)), "max_retry_after");
  EXPECT_EQ(check_max_retry_after(-seconds(5)).message(), "max_retry_after: must be >= 0, got -5s");
}

TEST(SettingsChecks, MaxAttempts) {
  expect_bad(check_max_attempts(0), "max_attempts");
  expect_ok(check_max_attempts(1));
  expect_ok(check_max_attempts(10));
  expect_bad(check_max_attempts(11), "max_attempts");
  expect_bad(check_max_attempts(-1), "max_attempts");
  EXPECT_EQ(check_max_attempts(11).message(), "max_attempts: must be between 1 and 10, got 11");
}

TEST(SettingsChecks, BreakerWindowAndProbes) {
  expect_bad(check_breaker_window(0), "breaker.window");
  expect_ok(check_breaker_window(1));
  expect_ok(check_breaker_window(10000));
  expect_bad(check_breaker_window(10001), "breaker.window");
  expect_bad(check_breaker_probes(0), "breaker.probes");
  expect_ok(check_breaker_probes(1));
  expect_ok(check_breaker_probes(4294967295));
  expect_bad(check_breaker_probes(4294967296), "breaker.probes");
}

TEST(SettingsChecks, RetryBudget) {
  expect_ok(check_retry_budget_policy("token_bucket"));
  expect_ok(check_retry_budget_policy("ratio"));
  expect_bad(check_retry_budget_policy("tokenbucket"), "retry_budget.policy");
  expect_bad(check_retry_budget_tokens(0), "retry_budget.tokens");
  expect_bad(check_retry_budget_tokens(-1), "retry_budget.tokens");
  expect_bad(check_retry_budget_tokens(std::numeric_limits<double>::infinity()), "retry_budget.tokens");
  expect_bad(check_retry_budget_tokens(std::nan("")), "retry_budget.tokens");
  expect_ok(check_retry_budget_tokens(0.5));
  expect_ok(check_retry_budget_tokens(10));
  expect_bad(check_retry_budget_ratio(0), "retry_budget.ratio");
  expect_ok(check_retry_budget_ratio(0.001));
  expect_ok(check_retry_budget_ratio(1));
  expect_bad(check_retry_budget_ratio(1.01), "retry_budget.ratio");
  expect_bad(check_retry_budget_ratio(-0.1), "retry_budget.ratio");
  expect_bad(check_retry_budget_ratio(std::nan("")), "retry_budget.ratio");
  EXPECT_EQ(check_retry_budget_ratio(1.01).message(), "retry_budget.ratio: must be > 0 and <= 1, got 1.01");
  EXPECT_EQ(check_retry_budget_ratio(0).message(), "retry_budget.ratio: must be > 0 and <= 1, got 0");
  expect_ok(check_retry_budget_min_per_second(0));
  expect_bad(check_retry_budget_min_per_second(-1), "retry_budget.min_per_second");
}

TEST(SettingsChecks, TripAndProbe) {
  expect_bad(check_trip_consecutive_failures(0), "trip.consecutive_failures");
  expect_ok(check_trip_consecutive_failures(1));
  expect_bad(check_trip_failure_rate(0), "trip.failure_rate");
  expect_ok(check_trip_failure_rate(1));
  expect_bad(check_trip_failure_rate(1.5), "trip.failure_rate");
  expect_bad(check_trip_min_results(0), "trip.min_results");
  expect_ok(check_trip_min_results(1));
  expect_bad(check_probe_successes_to_close(0), "probe.successes_to_close");
  expect_ok(check_probe_successes_to_close(1));
}

TEST(SettingsChecks, BulkheadAndConnections) {
  expect_bad(check_bulkhead_max_concurrent(0), "bulkhead.max_concurrent");
  expect_ok(check_bulkhead_max_concurrent(1));
  expect_bad(check_bulkhead_max_concurrent(-5), "bulkhead.max_concurrent");
  expect_ok(check_max_idle_connections(0));
  expect_bad(check_max_idle_connections(-1), "max_idle_connections");
  expect_bad(check_max_idle_connections(4294967296), "max_idle_connections");
}

TEST(SettingsChecks, Enumerations) {
  for (const char* v : {"auto", "1.1", "2"}) expect_ok(check_http_version(v));
  for (const char* v : {"", "AUTO", "2.0", "3", "h2"}) expect_bad(check_http_version(v), "http_version");
  for (const char* v : {"humus", "jfast", "strict"}) expect_ok(check_classify(v));
  for (const char* v : {"", "default", "Humus"}) expect_bad(check_classify(v), "classify");
  expect_ok(check_tls_min_version("1.2"));
  expect_ok(check_tls_min_version("1.3"));
  for (const char* v : {"1.0", "1.1", "1"}) {
    expect_bad(check_tls_min_version(v), "tls.min_version");
    EXPECT_TRUE(mentions(check_tls_min_version(v), "below 1.2")) << v;
  }
  expect_bad(check_tls_min_version("TLSv1.2"), "tls.min_version");
}

TEST(SettingsChecks, BaseUrl) {
  expect_ok(check_base_url("https://payments"));
  expect_ok(check_base_url("http://payments:8080/api/v1"));
  expect_ok(check_base_url("https://[::1]:8443"));
  expect_ok(check_base_url("HTTPS://PAYMENTS"));
  expect_bad(check_base_url(""), "base_url");
  expect_bad(check_base_url("/relative"), "base_url");
  expect_bad(check_base_url("payments:8443"), "base_url");
  expect_bad(check_base_url("ftp://files"), "base_url");
  expect_bad(check_base_url("http:///path"), "base_url");
  EXPECT_TRUE(mentions(check_base_url("ftp://files"), "http or https"));
  const Status userinfo = check_base_url("https://svc:hunter2@payments/");
  expect_bad(userinfo, "base_url");
  EXPECT_EQ(userinfo.message(),
            "base_url: user-info is not allowed (a password would sit in settings and every error)");
  EXPECT_FALSE(mentions(userinfo, "hunter2"));
  EXPECT_FALSE(mentions(check_base_url("https://svc:hunter2@pay ments/"), "hunter2"));
}

TEST(SettingsChecks, Headers) {
  expect_ok(check_header("X-Api-Version", "2024-01-01"));
  expect_ok(check_header("x!#$%&'*+-.^_`|~9", "tab\tis fine"));
  const Status injected = check_header("X-Evil", "a\r\nSet-Cookie: x=1");
  expect_bad(injected, "headers.X-Evil");
  EXPECT_TRUE(mentions(injected, "X-Evil"));
  EXPECT_TRUE(mentions(injected, "header injection"));
  EXPECT_FALSE(mentions(injected, "Set-Cookie"));  // values are never repeated
  expect_bad(check_header("X-Lf", "a\nb"), "headers.X-Lf");
  expect_bad(check_header("X-Nul", std::string_view("a\0b", 3)), "headers.X-Nul");
  expect_bad(check_header("Bad Name", "v"), "headers.Bad Name");
  expect_bad(check_header("Bad:Name", "v"), "headers.Bad:Name");
  expect_bad(check_header("", "v"), "headers.");
  Headers dup;
  dup.add("X-A", "1");
  dup.add("x-a", "2");
  expect_bad(check_headers(dup), "headers.x-a");
}

TEST(SettingsChecks, Tls) {
  TlsSettings t;
  expect_ok(check_tls(t));  // system roots
  t.ca_file = "/etc/ca.pem";
  expect_ok(check_tls(t));
  t.ca_pem = kCaPem;
  Status both = check_tls(t);
  EXPECT_FALSE(both.ok());
  EXPECT_TRUE(has_field(both, "tls.ca_file"));
  EXPECT_TRUE(has_field(both, "tls.ca_pem"));

  TlsSettings cert_only;
  cert_only.cert_file = "/etc/client.pem";
  expect_bad(check_tls(cert_only), "tls.cert_file");
  EXPECT_TRUE(mentions(check_tls(cert_only), "needs its key"));
  TlsSettings key_only;
  key_only.key_pem = kKeyPem;
  expect_bad(check_tls(key_only), "tls.key_pem");
  TlsSettings mtls;
  mtls.cert_pem = kCaPem;
  mtls.key_pem = kKeyPem;
  mtls.min_version = TlsVersion::kTls1_3;
  expect_ok(check_tls(mtls));
  TlsSettings not_pem;
  not_pem.ca_pem = "/etc/ca.pem";  // a path where the PEM text belongs
  expect_bad(check_tls(not_pem), "tls.ca_pem");
  TlsSettings nul;
  nul.ca_file = std::string("/etc/ca\0.pem", 12);
  expect_bad(check_tls(nul), "tls.ca_file");
}

// ---- from_json: every problem at once ---------------------------------------------------------------------

TEST(SettingsFromJson, FiveBadFieldsAreAllReported) {
  const Status s = load_error(R"({
    "base_url": "https://payments",
    "timeout": "0s",
    "max_attempts": 11,
    "breaker": {"window": 0},
    "retry_budget": {"ratio": 1.5},
    "tls": {"min_version": "1.0"}
  })");
  EXPECT_EQ(s.code(), Code::kConfig);
  const std::vector<std::string> expected = {"timeout", "max_attempts", "breaker.window",
                                             "retry_budget.ratio", "tls.min_version"};
  EXPECT_EQ(s.fields(), expected) << s.message();
  // One "; "-separated part per problem, each starting with its key.
  size_t parts = 1;
  for (size_t at = s.message().find("; "); at != std::string::npos; at = s.message().find("; ", at + 2))
    ++parts;
  EXPECT_EQ(parts, 5u) << s.message();
  for (const std::string& key : expected) EXPECT_TRUE(mentions(s, key + ": ")) << key;
}

TEST(SettingsFromJson, MisspeltTopLevelKeyNamesTheNearest) {
  const Status s = load_error(R"({"base_url": "https://payments", "timout": "5s"})");
  EXPECT_EQ(s.code(), Code::kConfig);
  EXPECT_EQ(s.fields(), std::vector<std::string>{"timout"});
  EXPECT_EQ(s.message(), "unknown key \"timout\" (did you mean \"timeout\"?)");
}

TEST(SettingsFromJson, MisspeltNestedKeysNameTheNearest) {
  const Status s = load_error(R"({"base_url": "https://payments", "breaker": {"windwo": 5},
                                  "retry_budget": {"polcy": "ratio"}, "tls": {"ca_fiel": "/x"},
                                  "Max_Attempts": 2, "attempt-timeout": "1s"})");
  EXPECT_TRUE(has_field(s, "breaker.windwo"));
  EXPECT_TRUE(mentions(s, "unknown key \"breaker.windwo\" (did you mean \"breaker.window\"?)"))
      << s.message();
  EXPECT_TRUE(mentions(s, "(did you mean \"retry_budget.policy\"?)"));
  EXPECT_TRUE(mentions(s, "(did you mean \"tls.ca_file\"?)"));
  EXPECT_TRUE(mentions(s, "(did you mean \"max_attempts\"?)"));
  EXPECT_TRUE(mentions(s, "(did you mean \"attempt_timeout\"?)"));
  EXPECT_EQ(s.fields().size(), 5u);
}

TEST(SettingsFromJson, KeyAtTheWrongLevelAndFarOffKeys) {
  Status s = load_error(R"({"base_url": "https://payments", "window": 10})");
  EXPECT_TRUE(mentions(s, "(did you mean \"retry_budget.window\" or \"breaker.window\"?)")) << s.message();
  s = load_error(R"({"base_url": "https://p", "probes": 2})");
  EXPECT_TRUE(mentions(s, "(did you mean \"probe\" or \"breaker.probes\"?)")) << s.message();
  s = load_error(R"({"base_url": "https://payments", "zzzzzzzz": 1})");
  EXPECT_TRUE(mentions(s, "unknown key \"zzzzzzzz\" (valid keys: base_url, timeout,")) << s.message();
  s = load_error(R"({"base_url": "https://payments", "bulkhead": {"qqqq": 1}})");
  EXPECT_TRUE(mentions(s, "(valid keys of bulkhead: max_concurrent, wait, mode, min, max, algorithm)")) << s.message();
}

TEST(SettingsFromJson, WrongTypesAreNamed) {
  const Status s = load_error(R"({
    "base_url": 42, "timeout": 5, "max_attempts": "3", "breaker": [], "forward_scenario": "yes",
    "headers": {"X-A": 1}, "retry_budget": {"tokens": "10"}, "bulkhead": {"max_concurrent": 2.5},
    "classify": null, "tls": "on", "trip": {"failure_rate": "half"}
  })");
  const std::vector<std::string> expected = {
      "base_url",         "timeout",     "max_attempts",        "breaker",
      "forward_scenario", "headers.X-A", "retry_budget.tokens", "bulkhead.max_concurrent",
      "classify",         "tls",         "trip.failure_rate"};
  EXPECT_EQ(s.fields(), expected) << s.message();
  EXPECT_TRUE(mentions(s, "base_url: must be a string, got 42"));
  EXPECT_TRUE(mentions(s, "timeout: must be a duration string such as \"250ms\" or \"5s\", got 5"));
  EXPECT_TRUE(mentions(s, "max_attempts: must be an integer, got a string"));
  EXPECT_TRUE(mentions(s, "breaker: must be an object, got an array"));
  EXPECT_TRUE(mentions(s, "forward_scenario: must be true or false"));
  EXPECT_TRUE(mentions(s, "bulkhead.max_concurrent: must be an integer, got 2.5"));
  EXPECT_TRUE(mentions(s, "classify: must be a string, got null"));
}

TEST(SettingsFromJson, BadDurationsAndNumbers) {
  const Status s = load_error(R"({"base_url": "https://payments", "timeout": "5", "backoff_base": "-1s",
                                  "idle_timeout": "soon", "max_attempts": 99999999999999999999,
                                  "breaker": {"window": -3}, "retry_budget": {"tokens": 0}})");
  const std::vector<std::string> expected = {"timeout",      "backoff_base",   "idle_timeout",
                                             "max_attempts", "breaker.window", "retry_budget.tokens"};
  EXPECT_EQ(s.fields(), expected) << s.message();
  EXPECT_TRUE(mentions(s, "timeout: invalid duration \"5\": missing unit"));
  EXPECT_TRUE(mentions(s, "breaker.window: must be between 1 and 10000, got -3"));
}

TEST(SettingsFromJson, NotAnObjectOrNotJson) {
  for (const char* doc : {"[]", "\"https://payments\"", "42", "null", "true"}) {
    const Status s = load_error(doc);
    EXPECT_EQ(s.code(), Code::kConfig);
    EXPECT_TRUE(mentions(s, "settings: must be a JSON object")) << s.message();
  }
  for (const char* doc :
       {"", "{", "{\"base_url\": }", "{'a': 1}", "{\"a\":1,}", "{} {}", "{\"timeout\": \"5s\"", "\xff"}) {
    const Status s = load_error(doc);
    EXPECT_EQ(s.code(), Code::kConfig);
    EXPECT_TRUE(mentions(s, "settings: not valid JSON")) << s.message();
    EXPECT_TRUE(s.fields().empty());
  }
}

TEST(SettingsFromJson, SyntaxErrorsDoNotEchoTheText) {
  const Status s = load_error(R"({"tls": {"key_pem": "-----BEGIN PRIVATE KEY-----SECRET" )");
  EXPECT_TRUE(mentions(s, "line 1")) << s.message();
  EXPECT_FALSE(mentions(s, "SECRET")) << s.message();
}

TEST(SettingsFromJson, BaseUrlIsRequired) {
  const Status s = load_error(R"({"timeout": "5s"})");
  EXPECT_EQ(s.fields(), std::vector<std::string>{"base_url"});
  EXPECT_TRUE(mentions(s, "base_url: required"));
  EXPECT_EQ(load_error("{}").fields(), std::vector<std::string>{"base_url"});
}

TEST(SettingsFromJson, BaseUrlShapes) {
  EXPECT_EQ(loaded(R"({"base_url": "https://payments:8443/v1"})").base_url, "https://payments:8443/v1");
  EXPECT_EQ(loaded(R"({"base_url": "http://payments"})").base_url, "http://payments");
  for (const char* url : {"https://user:pw@payments", "/v1", "ftp://payments", "payments", ""}) {
    const Status s = load_error(std::string(R"({"base_url": ")") + url + "\"}");
    EXPECT_EQ(s.fields(), std::vector<std::string>{"base_url"}) << url << ": " << s.message();
  }
}

TEST(SettingsFromJson, DuplicateKeysAreRefused) {
  const Status s = load_error(R"({"base_url": "https://payments", "timeout": "1s", "timeout": "2s",
                                  "breaker": {"window": 5, "window": 6}})");
  EXPECT_TRUE(has_field(s, "timeout"));
  EXPECT_TRUE(has_field(s, "breaker.window"));
  EXPECT_TRUE(mentions(s, "duplicate key \"breaker.window\"")) << s.message();
}

TEST(SettingsFromJson, EveryField) {
  const Settings s = loaded(R"({
    "base_url": "https://payments:8443/api",
    "timeout": "30s", "attempt_timeout": "1.5s", "connect_timeout": "250ms", "max_attempts": 5,
    "backoff_base": "50ms", "backoff_max": "1m",
    "retry_budget": {"policy": "ratio", "ratio": 0.3, "min_per_second": 4, "window": "30s"},
    "breaker": {"window": 100, "open_for": "20s", "probes": 2, "probe_timeout": "3s"},
    "trip": {"consecutive_failures": 7, "failure_rate": 0.25, "min_results": 40},
    "probe": {"successes_to_close": 2},
    "bulkhead": {"max_concurrent": 8, "wait": "0s"},
    "max_retry_after": "10s", "max_idle_connections": 0, "idle_timeout": "5m",
    "tls": {"ca_file": "/etc/ca.pem", "cert_file": "/etc/c.pem", "key_file": "/etc/k.pem", "min_version": "1.3"},
    "http_version": "1.1",
    "headers": {"X-Api-Version": "2", "User-Agent": "billing/1.0"},
    "forward_authorization": true, "forward_scenario": true, "classify": "jfast"
  })");
  EXPECT_EQ(s.timeout, seconds(30));
  EXPECT_EQ(s.attempt_timeout, milliseconds(1500));
  EXPECT_EQ(s.connect_timeout, milliseconds(250));
  EXPECT_EQ(s.max_attempts, 5);
  EXPECT_EQ(s.backoff_base, milliseconds(50));
  EXPECT_EQ(s.backoff_max, seconds(60));
  EXPECT_EQ(s.retry_budget.policy, BudgetPolicy::kRatio);
  EXPECT_EQ(s.retry_budget.ratio, 0.3);
  EXPECT_EQ(s.retry_budget.min_per_second, 4u);
  EXPECT_EQ(s.retry_budget.window, seconds(30));
  EXPECT_EQ(s.breaker.window, 100u);
  EXPECT_EQ(s.breaker.open_for, seconds(20));
  EXPECT_EQ(s.breaker.probes, 2u);
  EXPECT_EQ(s.breaker.probe_timeout, seconds(3));
  EXPECT_EQ(s.policy_params.consecutive_failures, 7u);
  EXPECT_EQ(s.policy_params.failure_rate, 0.25);
  EXPECT_EQ(s.policy_params.min_results, 40u);
  EXPECT_EQ(s.policy_params.successes_to_close, 2u);
  EXPECT_EQ(s.bulkhead.max_concurrent, 8u);
  EXPECT_EQ(s.bulkhead.wait, Duration::zero());
  EXPECT_EQ(s.max_retry_after, seconds(10));
  EXPECT_EQ(s.max_idle_connections, 0u);
  EXPECT_EQ(s.idle_timeout, std::chrono::minutes(5));
  ASSERT_TRUE(s.tls.has_value());
  EXPECT_EQ(s.tls->ca_file, "/etc/ca.pem");
  EXPECT_EQ(s.tls->cert_file, "/etc/c.pem");
  EXPECT_EQ(s.tls->key_file, "/etc/k.pem");
  EXPECT_EQ(s.tls->min_version, TlsVersion::kTls1_3);
  EXPECT_EQ(s.http_version, HttpVersion::kHttp1_1);
  ASSERT_EQ(s.headers.size(), 2u);
  EXPECT_EQ(s.headers.fields()[0].first, "X-Api-Version");  // document order kept
  EXPECT_EQ(*s.headers.find("user-agent"), "billing/1.0");
  EXPECT_TRUE(s.forward_authorization);
  EXPECT_TRUE(s.forward_scenario);
  EXPECT_EQ(s.classify_preset, "jfast");
}

TEST(SettingsFromJson, RetryBudgetPolicies) {
  // The ratio policy's own default share is 0.2; the token bucket's credit is 0.1.
  Settings s = loaded(R"({"base_url": "https://p", "retry_budget": {"policy": "ratio"}})");
  EXPECT_EQ(s.retry_budget.policy, BudgetPolicy::kRatio);
  EXPECT_EQ(s.retry_budget.ratio, kRatioPolicyDefaultRatio);
  EXPECT_EQ(s.retry_budget.min_per_second, 1u);
  EXPECT_EQ(s.retry_budget.window, seconds(10));
  s = loaded(R"({"base_url": "https://p", "retry_budget": {"tokens": 20}})");
  EXPECT_EQ(s.retry_budget.policy, BudgetPolicy::kTokenBucket);
  EXPECT_EQ(s.retry_budget.tokens, 20);
  EXPECT_EQ(s.retry_budget.ratio, 0.1);
  s = loaded(
      R"({"base_url": "https://p", "retry_budget": {"policy": "token_bucket", "tokens": 2.5, "ratio": 1}})");
  EXPECT_EQ(s.retry_budget.tokens, 2.5);
  EXPECT_EQ(s.retry_budget.ratio, 1.0);

  // A key the chosen policy does not use would be silently ignored: refused instead.
  Status bad = load_error(R"({"base_url": "https://p", "retry_budget": {"policy": "ratio", "tokens": 5}})");
  EXPECT_EQ(bad.fields(), std::vector<std::string>{"retry_budget.tokens"});
  EXPECT_TRUE(mentions(bad, "not used by policy \"ratio\"")) << bad.message();
  bad = load_error(R"({"base_url": "https://p", "retry_budget": {"window": "5s"}})");
  EXPECT_EQ(bad.fields(), std::vector<std::string>{"retry_budget.window"});
  bad = load_error(R"({"base_url": "https://p", "retry_budget": {"policy": "leaky", "window": "5s"}})");
  EXPECT_EQ(bad.fields(), std::vector<std::string>{"retry_budget.policy"});  // no guess about the rest
}

TEST(SettingsFromJson, Tls) {
  Settings s = loaded(R"({"base_url": "https://p", "tls": {}})");
  ASSERT_TRUE(s.tls.has_value());
  EXPECT_EQ(*s.tls, TlsSettings{});
  s = loaded(R"({"base_url": "https://p", "tls": null})");
  EXPECT_FALSE(s.tls.has_value());

  Status bad =
      load_error(R"({"base_url": "https://p", "tls": {"ca_file": "/a", "cert_pem": "x", "cert_file": "/c",
                                                             "min_version": "1.1", "key_file": ""}})");
  EXPECT_EQ(bad.fields(),
            (std::vector<std::string>{"tls.cert_pem", "tls.min_version", "tls.key_file", "tls.cert_file"}))
      << bad.message();
  EXPECT_TRUE(mentions(bad, "tls.cert_pem: must be PEM text"));
  EXPECT_TRUE(has_field(bad, "tls.cert_file"));  // no key
  EXPECT_TRUE(has_field(bad, "tls.min_version"));
  EXPECT_TRUE(has_field(bad, "tls.key_file"));  // empty
  EXPECT_TRUE(mentions(bad, "tls.min_version: versions below 1.2 are refused"));
  EXPECT_TRUE(mentions(bad, "tls.cert_file: a client certificate needs its key"));

  const std::string both = std::string(R"({"base_url": "https://p", "tls": {"ca_file": "/a", "ca_pem": ")") +
                           "-----BEGIN CERTIFICATE-----\\nx\\n-----END CERTIFICATE-----" + R"("}})";
  bad = load_error(both);
  EXPECT_EQ(bad.fields(), (std::vector<std::string>{"tls.ca_file", "tls.ca_pem"})) << bad.message();
  EXPECT_TRUE(mentions(bad, "tls: tls.ca_file and tls.ca_pem are both given"));
}

// S11
TEST(SettingsFromJson, HeaderInjectionIsRefusedNamingTheHeader) {
  const Status s = load_error(
      R"({"base_url": "https://p", "headers": {"X-Ok": "fine", "X-Evil": "1\r\nHost: attacker", "Bad Name": "v",
           "x-ok": "again"}})");
  const std::vector<std::string> expected = {"headers.X-Evil", "headers.Bad Name", "headers.x-ok"};
  EXPECT_EQ(s.fields(), expected) << s.message();
  EXPECT_TRUE(mentions(s, "headers.X-Evil: header \"X-Evil\": value contains a control character"));
  EXPECT_FALSE(mentions(s, "attacker"));
  const Status nul = load_error(R"({"base_url": "https://p", "headers": {"X-Nul": "a\u0000b"}})");
  EXPECT_EQ(nul.fields(), std::vector<std::string>{"headers.X-Nul"});
}

// ---- Rules across fields ----------------------------------------------------------------------------------

TEST(SettingsCrossFields, FromCodeTheyAreProgramErrors) {
  Settings s;
  s.base_url = "http://payments";
  s.backoff_base = seconds(1);
  s.backoff_max = milliseconds(500);
  s.timeout = seconds(2);
  s.attempt_timeout = seconds(3);
  s.connect_timeout = seconds(4);
  s.tls = TlsSettings{};
  s.http_version = HttpVersion::kHttp2;
  const Status p = validate(s, false);
  EXPECT_EQ(p.code(), Code::kProgram);
  for (const char* f : {"backoff_max", "backoff_base", "attempt_timeout", "timeout", "connect_timeout", "tls",
                        "base_url", "http_version"}) {
    EXPECT_TRUE(has_field(p, f)) << f << ": " << p.message();
  }
  EXPECT_TRUE(mentions(p, "backoff_max: must be >= backoff_base (1s), got 500ms")) << p.message();
  EXPECT_TRUE(mentions(p, "attempt_timeout: must be <= timeout (2s), got 3s"));
  EXPECT_TRUE(mentions(p, "connect_timeout: must be <= attempt_timeout (3s), got 4s"));
  EXPECT_TRUE(mentions(p, "tls: given for an http base_url"));
  EXPECT_EQ(validate(s, true).code(), Code::kConfig);
  EXPECT_EQ(validate(s, true).message(), p.message());
}

TEST(SettingsCrossFields, FromJsonTheyAreConfigErrorsWithTheOthers) {
  const Status s = load_error(R"({"base_url": "http://payments", "backoff_base": "1s", "backoff_max": "500ms",
                                  "timeout": "2s", "attempt_timeout": "3s", "tls": {}, "max_attempts": 0})");
  EXPECT_EQ(s.code(), Code::kConfig);
  for (const char* f :
       {"max_attempts", "backoff_max", "backoff_base", "attempt_timeout", "timeout", "tls", "base_url"}) {
    EXPECT_TRUE(has_field(s, f)) << f << ": " << s.message();
  }
  // connect_timeout's default 2s is within attempt_timeout's 3s.
  EXPECT_FALSE(has_field(s, "connect_timeout"));
}

TEST(SettingsCrossFields, ConnectTimeoutAgainstAttemptTimeout) {
  const Status s =
      load_error(R"({"base_url": "https://p", "attempt_timeout": "1s", "connect_timeout": "2s"})");  // 2s > 1s
  EXPECT_EQ(s.fields(), (std::vector<std::string>{"connect_timeout", "attempt_timeout"}));
}

TEST(SettingsCrossFields, EqualValuesAreFine) {
  loaded(R"({"base_url": "https://p", "timeout": "1s", "attempt_timeout": "1s", "connect_timeout": "1s",
             "backoff_base": "1s", "backoff_max": "1s"})");
}

TEST(SettingsCrossFields, HttpsWithoutTlsUsesSystemRoots) {
  // docs/transport.md §10.3: system roots when no CA is given; only tls on an http URL is a mistake.
  EXPECT_FALSE(loaded(R"({"base_url": "https://payments"})").tls.has_value());
  loaded(R"({"base_url": "https://payments", "tls": {"min_version": "1.3"}})");
  loaded(R"({"base_url": "http://payments", "tls": null})");
}

TEST(SettingsCrossFields, ARuleIsSkippedWhenOneOfItsFieldsIsAlreadyBad) {
  const Status s = load_error(R"({"base_url": "https://p", "backoff_base": "0s", "backoff_max": "1ms"})");
  EXPECT_EQ(s.fields(), std::vector<std::string>{"backoff_base"}) << s.message();
  const Status t = load_error(R"({"base_url": "ftp://p", "tls": {}})");
  EXPECT_EQ(t.fields(), std::vector<std::string>{"base_url"}) << t.message();
}

TEST(SettingsCrossFields, NullCallbacksAreNotAnError) {
  Settings s;
  s.base_url = "https://p";
  EXPECT_TRUE(validate(s, false).ok());
}

TEST(SettingsValidate, FieldChecksToo) {
  Settings s;
  s.base_url = "https://p";
  s.max_attempts = 0;
  s.breaker.window = 0;
  s.policy_params.consecutive_failures = std::numeric_limits<uint64_t>::max();  // huge is fine
  s.headers.add("X-Evil", "a\nb");
  s.classify_preset = "nope";
  const Status p = validate(s, false);
  EXPECT_EQ(p.code(), Code::kProgram);
  EXPECT_EQ(p.fields(),
            (std::vector<std::string>{"max_attempts", "breaker.window", "headers.X-Evil", "classify"}))
      << p.message();
}

// ---- to_json ----------------------------------------------------------------------------------------------

TEST(SettingsToJson, DefaultsPinnedShape) {
  Settings s;
  s.base_url = "https://payments";
  EXPECT_EQ(to_json(s),
            R"({"base_url":"https://payments","timeout":"10s","attempt_timeout":"5s","connect_timeout":"2s",)"
            R"("max_attempts":3,"backoff_base":"100ms","backoff_max":"2s",)"
            R"("retry_budget":{"policy":"token_bucket","tokens":10,"ratio":0.1},)"
            R"("breaker":{"window":20,"open_for":"10s","probes":1,"probe_timeout":"10s"},)"
            R"("trip":{"consecutive_failures":5,"failure_rate":0.5,"min_results":20},)"
            R"("probe":{"successes_to_close":3},)"
            R"("bulkhead":{"max_concurrent":50,"wait":"500ms","mode":"fixed","min":4,"max":200,"algorithm":"gradient2"},)"
            R"("max_retry_after":null,"max_idle_connections":100,"idle_timeout":"90s",)"
            R"("max_connection_lifetime":"10m","max_response_headers":65536,"max_response_body":67108864,)"
            R"("decompress":true,"tls":null,)"
            R"("http_version":"auto","headers":{},"forward_authorization":false,"forward_scenario":false,)"
            R"("deadline_format":"ms","min_attempt_time":"0s","classify":"humus"})");
}

TEST(SettingsToJson, RoundTrip) {
  Settings s;
  s.base_url = "https://[::1]:8443/base";
  s.timeout = milliseconds(12345);
  s.attempt_timeout = std::chrono::microseconds(1500);
  s.connect_timeout = nanoseconds(999);
  s.max_attempts = 10;
  s.backoff_base = milliseconds(1);
  s.backoff_max = std::chrono::minutes(2);
  s.retry_budget = {BudgetPolicy::kRatio, 10, 0.05, 0, seconds(3)};
  s.breaker = {10000, hours(2), 7, milliseconds(750), milliseconds(1500)};
  s.policy_params = {1, 1.0, 1, 1, 0.25};
  s.bulkhead = {1, Duration::zero()};
  s.max_retry_after = Duration::zero();
  s.max_idle_connections = 0;
  s.idle_timeout = nanoseconds(1);
  s.max_connection_lifetime = hours(24);
  s.max_response_headers = 4096;
  s.max_response_body = uint64_t{1} << 40;
  s.decompress = false;
  s.tls = TlsSettings{"", kCaPem, "/c.pem", "", "", kKeyPem, TlsVersion::kTls1_3};
  s.http_version = HttpVersion::kHttp2;
  s.headers.add("X-B", "2");
  s.headers.add("X-A", "\"quoted\" \\ \xc3\xa9");
  s.forward_authorization = true;
  s.forward_scenario = true;
  s.deadline_header = "X-Request-Timeout";
  s.deadline_format = DeadlineFormat::kGrpc;
  s.min_attempt_time = milliseconds(20);
  s.classify_preset = "strict";
  ASSERT_TRUE(validate(s, false).ok()) << validate(s, false).message();
  const std::string json = to_json(s);
  const Result<Settings> back = from_json(json);
  ASSERT_TRUE(back.ok()) << json << "\n" << back.status().message();
  EXPECT_EQ(*back, s) << json;
  EXPECT_EQ(to_json(*back), json);

  Settings defaults;
  defaults.base_url = "http://p";
  EXPECT_EQ(*from_json(to_json(defaults)), defaults);
  Settings token_bucket = defaults;
  token_bucket.retry_budget.tokens = 0.75;
  token_bucket.retry_budget.ratio = 1.0 / 3.0;
  EXPECT_EQ(*from_json(to_json(token_bucket)), token_bucket);
}

TEST(SettingsToJson, CallbacksAreNotPartOfJsonButCompareByIdentity) {
  Settings a;
  Settings b;
  EXPECT_EQ(a, b);
  b.headers.add("X", "1");
  EXPECT_FALSE(a == b);
  b = a;
  b.policy_params.successes_to_close = 4;
  EXPECT_FALSE(a == b);
}

// ---- check_field (humus_settings_check) -------------------------------------------------------------------

TEST(SettingsCheckField, SingleValues) {
  EXPECT_TRUE(check_field("timeout", "\"5s\"").ok());
  EXPECT_TRUE(check_field("breaker.window", "20").ok());
  EXPECT_TRUE(check_field("retry_budget.ratio", "1").ok());
  EXPECT_TRUE(check_field("tls.min_version", "\"1.3\"").ok());
  EXPECT_TRUE(check_field("max_retry_after", "null").ok());
  EXPECT_TRUE(check_field("headers.X-Api", "\"v\"").ok());
  EXPECT_TRUE(check_field("base_url", " \"https://p\" ").ok());
  EXPECT_TRUE(check_field("breaker", R"({"window": 5, "probes": 2})").ok());
  expect_bad(check_field("timeout", "\"0s\""), "timeout");
  expect_bad(check_field("breaker.window", "10001"), "breaker.window");
  expect_bad(check_field("retry_budget.ratio", "1.01"), "retry_budget.ratio");
  expect_bad(check_field("retry_budget.tokens", "0"), "retry_budget.tokens");
  expect_bad(check_field("max_attempts", "\"3\""), "max_attempts");
  expect_bad(check_field("headers.X-Evil", "\"a\\r\\nb\""), "headers.X-Evil");
  expect_bad(check_field("tls", R"({"cert_file": "/c"})"), "tls.cert_file");
  expect_bad(check_field("base_url", "\"https://u:p@h\""), "base_url");
  EXPECT_EQ(check_field("timeout", "\"0s\"").message(), "timeout: must be > 0 and <= 1h, got 0s");
}

TEST(SettingsCheckField, UnknownKeysAndBadJson) {
  Status s = check_field("timout", "\"5s\"");
  EXPECT_EQ(s.fields(), std::vector<std::string>{"timout"});
  EXPECT_EQ(s.message(), "unknown key \"timout\" (did you mean \"timeout\"?)");
  s = check_field("breaker.windw", "5");
  EXPECT_EQ(s.fields(), std::vector<std::string>{"breaker.windw"});
  EXPECT_TRUE(mentions(s, "did you mean \"breaker.window\"")) << s.message();
  s = check_field("timeout.x", "1");
  EXPECT_EQ(s.fields(), std::vector<std::string>{"timeout.x"});
  EXPECT_EQ(check_field("", "1").code(), Code::kConfig);
  s = check_field("timeout", "\"5s");
  EXPECT_EQ(s.code(), Code::kConfig);
  EXPECT_TRUE(mentions(s, "timeout: not valid JSON")) << s.message();
  EXPECT_EQ(check_field("timeout", "").code(), Code::kConfig);
}

// ---- Robustness -------------------------------------------------------------------------------------------

constexpr char kFullDocument[] = R"({
  "base_url": "https://payments:8443/api", "timeout": "30s", "attempt_timeout": "1.5s",
  "connect_timeout": "250ms", "max_attempts": 5, "backoff_base": "50ms", "backoff_max": "1m",
  "retry_budget": {"policy": "ratio", "ratio": 0.3, "min_per_second": 4, "window": "30s"},
  "breaker": {"window": 100, "open_for": "20s", "probes": 2, "probe_timeout": "3s"},
  "trip": {"consecutive_failures": 7, "failure_rate": 0.25, "min_results": 40},
  "probe": {"successes_to_close": 2}, "bulkhead": {"max_concurrent": 8, "wait": "0s"},
  "max_retry_after": "10s", "max_idle_connections": 0, "idle_timeout": "5m",
  "tls": {"ca_pem": "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n", "min_version": "1.3"},
  "http_version": "2", "headers": {"X-Api-Version": "2", "User-Agent": "billing/1.0 \u00e9"},
  "forward_authorization": true, "forward_scenario": false, "classify": "strict"
})";

TEST(SettingsRobustness, EveryTruncatedPrefixIsRefusedWithoutCrashing) {
  const std::string doc = kFullDocument;
  ASSERT_TRUE(from_json(doc).ok()) << from_json(doc).status().message();
  for (size_t n = 0; n < doc.size(); ++n) {
    const Result<Settings> r = from_json(std::string_view(doc).substr(0, n));
    ASSERT_FALSE(r.ok()) << n;
    EXPECT_EQ(r.status().code(), Code::kConfig);
  }
}

// S25
TEST(SettingsRobustness, EverySingleByteCorruptionIsHandled) {
  const std::string doc = kFullDocument;
  for (size_t i = 0; i < doc.size(); ++i) {
    for (const char c : {'\0', '"', '}', '\\', '\xff', '1'}) {
      std::string mutated = doc;
      mutated[i] = c;
      const Result<Settings> r = from_json(mutated);
      if (!r.ok()) {
        EXPECT_EQ(r.status().code(), Code::kConfig);
      }
      if (i % 7 == 0) (void)check_field("breaker", std::string_view(mutated).substr(i / 2));
    }
  }
}

TEST(SettingsRobustness, DeepNestingAndHugeValues) {
  const std::string deep = "{\"base_url\":" + std::string(100000, '[') + std::string(100000, ']') + "}";
  EXPECT_EQ(from_json(deep).status().code(), Code::kConfig);
  const std::string long_key = "{\"" + std::string(100000, 'k') + "\": 1}";
  EXPECT_EQ(from_json(long_key).status().code(), Code::kConfig);
  EXPECT_EQ(from_json(R"({"base_url": "https://p", "retry_budget": {"tokens": 1e400}})").status().code(),
            Code::kConfig);
  EXPECT_EQ(
      from_json(R"({"base_url": "https://p", "breaker": {"window": -9223372036854775809}})").status().code(),
      Code::kConfig);
}

}  // namespace HUMUS_UNITY_ID
}  // namespace
}  // namespace humus::settings

namespace humus::settings {
namespace {
namespace HUMUS_UNITY_ID {

TEST(SettingsFromJsonDefaults, DefaultsLeftOutAreCappedByTheValuesGiven) {
  Result<Settings> s = from_json(R"({"base_url": "http://payments", "timeout": "2s"})");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->attempt_timeout, std::chrono::seconds(2));
  EXPECT_EQ(s->connect_timeout, std::chrono::seconds(2));
  s = from_json(R"({"base_url": "http://payments", "timeout": "1s", "attempt_timeout": "500ms"})");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->connect_timeout, std::chrono::milliseconds(500));
  s = from_json(R"({"base_url": "http://payments", "backoff_max": "50ms"})");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->backoff_base, std::chrono::milliseconds(50));
}

TEST(SettingsFromJsonDefaults, ValuesGivenAreStillCheckedAgainstEachOther) {
  Result<Settings> s = from_json(R"({"base_url": "http://payments", "timeout": "2s", "attempt_timeout": "3s"})");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), Code::kConfig);
}

}  // namespace HUMUS_UNITY_ID
}  // namespace
}  // namespace humus::settings

namespace humus::settings {
namespace {
namespace HUMUS_UNITY_ID {

// ---- The four keys added as one schema line each ------------------------------------------------------------

TEST(SettingsNewKeys, BoundsAndMessages) {
  Status s = check_field("max_connection_lifetime", "\"999ms\"");
  expect_bad(s, "max_connection_lifetime");
  EXPECT_EQ(s.message(), "max_connection_lifetime: must be between 1s and 24h, got 999ms");
  expect_ok(check_field("max_connection_lifetime", "\"1s\""));
  expect_ok(check_field("max_connection_lifetime", "\"24h\""));
  expect_bad(check_field("max_connection_lifetime", "\"24h1ns\""), "max_connection_lifetime");
  expect_bad(check_field("max_connection_lifetime", "600"), "max_connection_lifetime");  // not a duration

  expect_ok(check_field("max_response_headers", "4096"));
  expect_ok(check_field("max_response_headers", "1048576"));
  s = check_field("max_response_headers", "4095");
  EXPECT_EQ(s.message(), "max_response_headers: must be between 4096 and 1048576, got 4095");
  expect_bad(check_field("max_response_headers", "1048577"), "max_response_headers");
  expect_bad(check_field("max_response_headers", "\"64KiB\""), "max_response_headers");
  expect_bad(check_field("max_response_headers", "65536.5"), "max_response_headers");

  expect_ok(check_field("max_response_body", "1024"));
  expect_ok(check_field("max_response_body", "1099511627776"));
  expect_bad(check_field("max_response_body", "1023"), "max_response_body");
  s = check_field("max_response_body", "1099511627777");
  EXPECT_EQ(s.message(), "max_response_body: must be between 1024 and 1099511627776, got 1099511627777");

  expect_ok(check_field("decompress", "false"));
  s = check_field("decompress", "\"no\"");
  expect_bad(s, "decompress");
  EXPECT_EQ(s.message(), "decompress: must be true or false, got a string");
}

TEST(SettingsNewKeys, LoadedValidatedAndCompared) {
  const Settings s = loaded(R"({"base_url": "https://p", "max_connection_lifetime": "30m",
                                "max_response_headers": 8192, "max_response_body": 2048, "decompress": false})");
  EXPECT_EQ(s.max_connection_lifetime, std::chrono::minutes(30));
  EXPECT_EQ(s.max_response_headers, 8192u);
  EXPECT_EQ(s.max_response_body, 2048u);
  EXPECT_FALSE(s.decompress);
  Settings other = s;
  EXPECT_EQ(other, s);
  other.decompress = true;
  EXPECT_FALSE(other == s);
  other = s;
  other.max_response_body = 4096;
  EXPECT_FALSE(other == s);

  Settings bad;
  bad.base_url = "https://p";
  bad.max_connection_lifetime = std::chrono::milliseconds(10);
  bad.max_response_headers = 100;
  bad.max_response_body = uint64_t{1} << 41;
  const Status p = validate(bad, false);
  EXPECT_EQ(p.fields(),
            (std::vector<std::string>{"max_connection_lifetime", "max_response_headers", "max_response_body"}))
      << p.message();
  const Status all = load_error(R"({"base_url": "https://p", "max_response_headers": 1, "decompress": 1,
                                    "max_conection_lifetime": "1m"})");
  EXPECT_EQ(all.fields(),
            (std::vector<std::string>{"max_response_headers", "decompress", "max_conection_lifetime"}));
  EXPECT_TRUE(mentions(all, "did you mean \"max_connection_lifetime\"")) << all.message();
}

// ---- Plugins (docs/retries.md §5.4a): the example plugin, found through HUMUS_TEST_PLUGIN ------------

std::string example_plugin() {
  const char* path = std::getenv("HUMUS_TEST_PLUGIN");
  return path != nullptr ? path : "";
}

TEST(SettingsPlugin, LoadsWritesBackAndComparesByWhatIsNamed) {
  const std::string plugin = example_plugin();
  ASSERT_FALSE(plugin.empty()) << "HUMUS_TEST_PLUGIN must name the example plugin (ctest sets it)";
  capi::install_plugin_entry_points();  // the example's entry points are C: the C ABI calls them
  const std::string doc = R"({"base_url": "http://p", "classify": {"plugin": ")" + plugin +
                          R"(", "symbol": "retry_409_classifier", "config": {"status": 409}},
      "breaker_policy": {"plugin": ")" +
                          plugin + R"(", "symbol": "consecutive_failures_policy"}})";
  Result<Settings> a = from_json(doc);
  ASSERT_TRUE(a.ok()) << a.status().message();
  ASSERT_TRUE(a->classify_plugin && a->classifier && a->breaker_policy_plugin && a->breaker_policy);
  EXPECT_EQ(a->classify_plugin->config, R"({"status":409})");
  EXPECT_EQ(a->breaker_policy_plugin->config, "{}");
  // Two loads make two tables, yet name the same plugin: equal, and equal to what to_json writes back.
  Result<Settings> b = from_json(doc);
  ASSERT_TRUE(b.ok());
  EXPECT_NE(a->classifier, b->classifier);
  EXPECT_EQ(*a, *b);
  const std::string text = to_json(*a);
  EXPECT_NE(text.find(R"("classify":{"plugin":")"), std::string::npos) << text;
  Result<Settings> again = from_json(text);
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(*again, *a);
  EXPECT_TRUE(validate(*a, true).ok());
  // Another config is other settings.
  Settings other = *a;
  other.classify_plugin->config = R"({"status":423})";
  EXPECT_FALSE(other == *a);
  // Without a plugin, breaker_policy stays out of the text: what existing readers of to_json see is
  // unchanged.
  Settings plain;
  plain.base_url = "http://p";
  EXPECT_EQ(to_json(plain).find("breaker_policy"), std::string::npos);
}

TEST(SettingsPlugin, ShapeProblemsAreNamedBeforeAnythingIsOpened) {
  const Status s = load_error(R"({"base_url": "http://p", "classify": {"plugin": 1, "config": []},
                                  "breaker_policy": "built-in"})");
  EXPECT_EQ(s.fields(), (std::vector<std::string>{"classify.plugin", "classify.config", "breaker_policy"}))
      << s.message();
  EXPECT_TRUE(mentions(s, "breaker_policy: must be a plugin object")) << s.message();
  const Status empty = load_error(R"({"base_url": "http://p", "breaker_policy": {}})");
  EXPECT_EQ(empty.fields(), (std::vector<std::string>{"breaker_policy.plugin", "breaker_policy.symbol"}))
      << empty.message();
  EXPECT_TRUE(from_json(R"({"base_url": "http://p", "breaker_policy": null})").ok());
  EXPECT_TRUE(check_field("breaker_policy", "null").ok());
  EXPECT_EQ(check_field("classify", R"({"plugin": "x.so", "symbol": "s"})").fields(),
            (std::vector<std::string>{"classify.plugin"}));
}

TEST(SettingsPlugin, TheSchemaDeclaresBothKeys) {
  const std::string schema = schema::schema_json();
  EXPECT_NE(
      schema.find(R"("key":"breaker_policy","kind":"plugin","default":null,"plugin":true,"nullable":true)"),
      std::string::npos)
      << schema;
  EXPECT_NE(schema.find(R"("choices":["humus","jfast","strict"],"plugin":true)"), std::string::npos)
      << schema;
}

}  // namespace HUMUS_UNITY_ID
}  // namespace
}  // namespace humus::settings
