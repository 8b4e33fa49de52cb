#include "settings/settings.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <span>
#include <utility>
#include <vector>

#include "common/duration.h"
#include "common/text.h"
#include "transport/url.h"

namespace humus::settings {
namespace {

// ordered_json keeps the document's key order: problems are reported, and to_json writes, in a stable order.
using Json = nlohmann::ordered_json;

constexpr int64_t kUint32Max = std::numeric_limits<uint32_t>::max();
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
// The schema is three levels deep; far deeper input is refused before the parser builds it.
constexpr int kMaxDepth = 64;

// ---- Messages --------------------------------------------------------------------------------------------

std::string format_number(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  // Whole numbers as integers ("0", not "0.0"); others in the shortest form that reads back the same.
  if (x == std::floor(x) && std::fabs(x) < 1e15) return std::to_string(static_cast<int64_t>(x));
  return Json(x).dump();
}

// What a value of the wrong type was, without repeating strings (they may be secrets).
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

// Every problem of one load or check, in order; each bad key listed once in fields().
class Problems {
 public:
  void add(const std::string& field, const std::string& message) {
    messages_.push_back(message);
    add_field(field);
  }
  void add(const Status& status) {
    if (status.ok()) return;
    messages_.push_back(status.message());
    for (const std::string& f : status.fields()) add_field(f);
  }
  // Adds a failed check; true when it passed.
  bool check(const Status& status) {
    add(status);
    return status.ok();
  }
  [[nodiscard]] bool about(std::string_view field) const {
    return std::find(fields_.begin(), fields_.end(), field) != fields_.end();
  }
  [[nodiscard]] bool empty() const { return messages_.empty(); }

  [[nodiscard]] Status status(Code code) const {
    if (messages_.empty()) return Status();
    std::string message;
    for (const std::string& m : messages_) {
      if (!message.empty()) message += "; ";
      message += m;
    }
    return Status(code, std::move(message), fields_);
  }

 private:
  // The document itself (a syntax error) has no key to name.
  void add_field(const std::string& field) {
    if (!field.empty() && !about(field)) fields_.push_back(field);
  }

  std::vector<std::string> messages_;
  std::vector<std::string> fields_;
};

// ---- Checks shared by several fields ---------------------------------------------------------------------

Status check_positive(std::string_view key, Duration d) {
  if (d > Duration::zero()) return Status();
  return problem(key, "must be > 0, got " + format_duration(d));
}

Status check_non_negative(std::string_view key, Duration d) {
  if (d >= Duration::zero()) return Status();
  return problem(key, "must be >= 0, got " + format_duration(d));
}

Status check_range(std::string_view key, int64_t n, int64_t lo, int64_t hi) {
  if (n >= lo && n <= hi) return Status();
  const std::string got = ", got " + std::to_string(n);
  if (hi == kInt64Max || (hi == kUint32Max && n < lo))
    return problem(key, "must be >= " + std::to_string(lo) + got);
  if (hi == kUint32Max) return problem(key, "must be <= " + std::to_string(hi) + got);
  return problem(key, "must be between " + std::to_string(lo) + " and " + std::to_string(hi) + got);
}

// (0, 1]; NaN fails every comparison and so is refused too.
Status check_share(std::string_view key, double x) {
  if (x > 0 && x <= 1) return Status();
  return problem(key, "must be > 0 and <= 1, got " + format_number(x));
}

bool contains_nul(std::string_view s) { return s.find('\0') != std::string_view::npos; }

// A path as libcurl will take it: a C string, so a NUL would silently cut it.
Status check_tls_path(std::string_view key, std::string_view path) {
  if (path.empty()) return problem(key, "must not be empty (leave the key out for none)");
  if (contains_nul(path)) return problem(key, "must not contain a NUL byte");
  return Status();
}

// Catches a path or base64 pasted where PEM text belongs; the transport parses the real thing.
Status check_tls_pem(std::string_view key, std::string_view pem, bool is_key) {
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

// The rules inside the tls object: one source per thing, certificate and key together.
void check_tls_combination(const TlsSettings& tls, Problems& p) {
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

// ---- Names of enumerations -------------------------------------------------------------------------------

const char* policy_name(BudgetPolicy p) { return p == BudgetPolicy::kRatio ? "ratio" : "token_bucket"; }

const char* http_version_name(HttpVersion v) {
  switch (v) {
    case HttpVersion::kHttp1_1:
      return "1.1";
    case HttpVersion::kHttp2:
      return "2";
    default:
      return "auto";
  }
}

const char* tls_version_name(TlsVersion v) { return v == TlsVersion::kTls1_3 ? "1.3" : "1.2"; }

std::optional<BudgetPolicy> parse_policy(std::string_view s) {
  if (s == "token_bucket") return BudgetPolicy::kTokenBucket;
  if (s == "ratio") return BudgetPolicy::kRatio;
  return std::nullopt;
}

std::optional<HttpVersion> parse_http_version(std::string_view s) {
  if (s == "auto") return HttpVersion::kAuto;
  if (s == "1.1") return HttpVersion::kHttp1_1;
  if (s == "2") return HttpVersion::kHttp2;
  return std::nullopt;
}

std::optional<TlsVersion> parse_tls_version(std::string_view s) {
  if (s == "1.2") return TlsVersion::kTls1_2;
  if (s == "1.3") return TlsVersion::kTls1_3;
  return std::nullopt;
}

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

// ---- The schema: one loader per key ----------------------------------------------------------------------

// Reads `value` for the key at `path` into `out`, adding every problem to `problems`.
using Loader = void (*)(const Json& value, const std::string& path, Settings& out, Problems& problems);

struct Key {
  std::string_view name;
  Loader load;
  std::span<const Key> children = {};  // the keys of an object-valued key (empty for headers: names are free)
};

std::string unknown_key_message(std::string_view parent, std::string_view key, std::span<const Key> keys);

void add_unknown_key(std::string_view parent, std::string_view key, std::span<const Key> keys, Problems& p) {
  p.add(join_path(parent, key), unknown_key_message(parent, key, keys));
}

// Runs the loader of every key of the object `v`; unknown keys are problems. False if `v` is no object.
bool load_object(const Json& v, const std::string& path, std::span<const Key> keys, Settings& s,
                 Problems& p) {
  if (!v.is_object()) {
    p.add(path, path + ": must be an object, got " + describe(v));
    return false;
  }
  for (const auto& item : v.items()) {
    const Key* found = nullptr;
    for (const Key& k : keys) {
      if (k.name == item.key()) found = &k;
    }
    if (found == nullptr) {
      add_unknown_key(path, item.key(), keys, p);
    } else {
      found->load(item.value(), join_path(path, found->name), s, p);
    }
  }
  return true;
}

std::optional<Duration> read_duration(const Json& v, const std::string& path, Problems& p) {
  if (!v.is_string()) {
    std::string hint = v.is_number() ? " (a duration is a string with a unit)" : "";
    p.add(path, path + ": must be a duration string such as \"250ms\" or \"5s\", got " + describe(v) + hint);
    return std::nullopt;
  }
  Result<Duration> d = parse_duration(v.get_ref<const std::string&>());
  if (!d.ok()) {
    p.add(path, path + ": " + d.status().message());
    return std::nullopt;
  }
  return *d;
}

std::optional<int64_t> read_integer(const Json& v, const std::string& path, Problems& p) {
  if (v.is_number_unsigned()) {
    const auto u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(kInt64Max)) {
      p.add(path, path + ": too large, got " + v.dump());
      return std::nullopt;
    }
    return static_cast<int64_t>(u);
  }
  if (v.is_number_integer()) return v.get<int64_t>();
  p.add(path, path + ": must be an integer, got " + describe(v));
  return std::nullopt;
}

std::optional<double> read_number(const Json& v, const std::string& path, Problems& p) {
  if (v.is_number()) return v.get<double>();
  p.add(path, path + ": must be a number, got " + describe(v));
  return std::nullopt;
}

const std::string* read_string(const Json& v, const std::string& path, Problems& p) {
  if (v.is_string()) return &v.get_ref<const std::string&>();
  p.add(path, path + ": must be a string, got " + describe(v));
  return nullptr;
}

void read_bool(const Json& v, const std::string& path, Problems& p, bool& out) {
  if (v.is_boolean()) {
    out = v.get<bool>();
  } else {
    p.add(path, path + ": must be true or false, got " + describe(v));
  }
}

void duration_into(const Json& v, const std::string& path, Status (*check)(Duration), Problems& p,
                   Duration& out) {
  if (std::optional<Duration> d = read_duration(v, path, p); d && p.check(check(*d))) out = *d;
}

template <typename T>
void integer_into(const Json& v, const std::string& path, Status (*check)(int64_t), Problems& p, T& out) {
  // The check bounds the value to T's range before the cast.
  if (std::optional<int64_t> n = read_integer(v, path, p); n && p.check(check(*n))) out = static_cast<T>(*n);
}

void number_into(const Json& v, const std::string& path, Status (*check)(double), Problems& p, double& out) {
  if (std::optional<double> x = read_number(v, path, p); x && p.check(check(*x))) out = *x;
}

TlsSettings& tls_of(Settings& s) { return s.tls ? *s.tls : s.tls.emplace(); }

void tls_path_into(const Json& v, const std::string& path, Problems& p, std::string& out) {
  if (const std::string* str = read_string(v, path, p); str && p.check(check_tls_path(path, *str)))
    out = *str;
}

void tls_pem_into(const Json& v, const std::string& path, bool is_key, Problems& p, std::string& out) {
  if (const std::string* str = read_string(v, path, p); str && p.check(check_tls_pem(path, *str, is_key)))
    out = *str;
}

constexpr Key kRetryBudgetKeys[] = {
    {"policy",
     [](const Json& v, const std::string& k, Settings& s, Problems& p) {
       if (const std::string* str = read_string(v, k, p); str && p.check(check_retry_budget_policy(*str))) {
         s.retry_budget.policy = *parse_policy(*str);
       }
     }},
    {"tokens", [](const Json& v, const std::string& k, Settings& s,
                  Problems& p) { number_into(v, k, check_retry_budget_tokens, p, s.retry_budget.tokens); }},
    {"ratio", [](const Json& v, const std::string& k, Settings& s,
                 Problems& p) { number_into(v, k, check_retry_budget_ratio, p, s.retry_budget.ratio); }},
    {"min_per_second",
     [](const Json& v, const std::string& k, Settings& s, Problems& p) {
       integer_into(v, k, check_retry_budget_min_per_second, p, s.retry_budget.min_per_second);
     }},
    {"window", [](const Json& v, const std::string& k, Settings& s,
                  Problems& p) { duration_into(v, k, check_retry_budget_window, p, s.retry_budget.window); }},
};

constexpr Key kBreakerKeys[] = {
    {"window", [](const Json& v, const std::string& k, Settings& s,
                  Problems& p) { integer_into(v, k, check_breaker_window, p, s.breaker.window); }},
    {"open_for", [](const Json& v, const std::string& k, Settings& s,
                    Problems& p) { duration_into(v, k, check_breaker_open_for, p, s.breaker.open_for); }},
    {"probes", [](const Json& v, const std::string& k, Settings& s,
                  Problems& p) { integer_into(v, k, check_breaker_probes, p, s.breaker.probes); }},
    {"probe_timeout",
     [](const Json& v, const std::string& k, Settings& s, Problems& p) {
       duration_into(v, k, check_breaker_probe_timeout, p, s.breaker.probe_timeout);
     }},
};

constexpr Key kTripKeys[] = {
    {"consecutive_failures",
     [](const Json& v, const std::string& k, Settings& s, Problems& p) {
       integer_into(v, k, check_trip_consecutive_failures, p, s.policy_params.consecutive_failures);
     }},
    {"failure_rate",
     [](const Json& v, const std::string& k, Settings& s, Problems& p) {
       number_into(v, k, check_trip_failure_rate, p, s.policy_params.failure_rate);
     }},
    {"min_results",
     [](const Json& v, const std::string& k, Settings& s, Problems& p) {
       integer_into(v, k, check_trip_min_results, p, s.policy_params.min_results);
     }},
};

constexpr Key kProbeKeys[] = {
    {"successes_to_close",
     [](const Json& v, const std::string& k, Settings& s, Problems& p) {
       integer_into(v, k, check_probe_successes_to_close, p, s.policy_params.successes_to_close);
     }},
};

constexpr Key kBulkheadKeys[] = {
    {"max_concurrent",
     [](const Json& v, const std::string& k, Settings& s, Problems& p) {
       integer_into(v, k, check_bulkhead_max_concurrent, p, s.bulkhead.max_concurrent);
     }},
    {"wait", [](const Json& v, const std::string& k, Settings& s,
                Problems& p) { duration_into(v, k, check_bulkhead_wait, p, s.bulkhead.wait); }},
};

constexpr Key kTlsKeys[] = {
    {"ca_file", [](const Json& v, const std::string& k, Settings& s,
                   Problems& p) { tls_path_into(v, k, p, tls_of(s).ca_file); }},
    {"ca_pem", [](const Json& v, const std::string& k, Settings& s,
                  Problems& p) { tls_pem_into(v, k, false, p, tls_of(s).ca_pem); }},
    {"cert_file", [](const Json& v, const std::string& k, Settings& s,
                     Problems& p) { tls_path_into(v, k, p, tls_of(s).cert_file); }},
    {"cert_pem", [](const Json& v, const std::string& k, Settings& s,
                    Problems& p) { tls_pem_into(v, k, false, p, tls_of(s).cert_pem); }},
    {"key_file", [](const Json& v, const std::string& k, Settings& s,
                    Problems& p) { tls_path_into(v, k, p, tls_of(s).key_file); }},
    {"key_pem", [](const Json& v, const std::string& k, Settings& s,
                   Problems& p) { tls_pem_into(v, k, true, p, tls_of(s).key_pem); }},
    {"min_version",
     [](const Json& v, const std::string& k, Settings& s, Problems& p) {
       if (const std::string* str = read_string(v, k, p); str && p.check(check_tls_min_version(*str))) {
         tls_of(s).min_version = *parse_tls_version(*str);
       }
     }},
};

// Which retry_budget keys each policy takes (the others would be silently ignored: refused instead).
bool budget_key_applies(BudgetPolicy policy, std::string_view key) {
  if (key == "policy" || key == "ratio") return true;
  if (policy == BudgetPolicy::kTokenBucket) return key == "tokens";
  return key == "min_per_second" || key == "window";
}

void load_retry_budget(const Json& v, const std::string& k, Settings& s, Problems& p) {
  if (!load_object(v, k, kRetryBudgetKeys, s, p)) return;
  if (p.about(k + ".policy")) return;  // which keys apply is unknown
  const BudgetPolicy policy = s.retry_budget.policy;
  for (const auto& item : v.items()) {
    const bool known = std::any_of(std::begin(kRetryBudgetKeys), std::end(kRetryBudgetKeys),
                                   [&](const Key& key) { return key.name == item.key(); });
    if (known && !budget_key_applies(policy, item.key())) {
      p.add(problem(
          join_path(k, item.key()),
          std::string("not used by policy \"") + policy_name(policy) + "\" (it takes " +
              (policy == BudgetPolicy::kTokenBucket ? "tokens, ratio" : "ratio, min_per_second, window") +
              ")"));
    }
  }
  if (policy == BudgetPolicy::kRatio && !v.contains("ratio")) s.retry_budget.ratio = kRatioPolicyDefaultRatio;
}

void load_tls(const Json& v, const std::string& k, Settings& s, Problems& p) {
  if (v.is_null()) {  // to_json writes null for "no tls"
    s.tls.reset();
    return;
  }
  s.tls.emplace();
  if (load_object(v, k, kTlsKeys, s, p)) check_tls_combination(*s.tls, p);
}

void load_headers(const Json& v, const std::string& k, Settings& s, Problems& p) {
  if (!v.is_object()) {
    p.add(k, k + ": must be an object of header names to string values, got " + describe(v));
    return;
  }
  for (const auto& item : v.items()) {
    const std::string path = join_path(k, item.key());
    if (!item.value().is_string()) {
      p.add(path, path + ": must be a string, got " + describe(item.value()));
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

constexpr Key kTopKeys[] = {
    {"base_url",
     [](const Json& v, const std::string& k, Settings& s, Problems& p) {
       if (const std::string* str = read_string(v, k, p); str && p.check(check_base_url(*str)))
         s.base_url = *str;
     }},
    {"timeout", [](const Json& v, const std::string& k, Settings& s,
                   Problems& p) { duration_into(v, k, check_timeout, p, s.timeout); }},
    {"attempt_timeout",
     [](const Json& v, const std::string& k, Settings& s, Problems& p) {
       duration_into(v, k, check_attempt_timeout, p, s.attempt_timeout);
     }},
    {"connect_timeout",
     [](const Json& v, const std::string& k, Settings& s, Problems& p) {
       duration_into(v, k, check_connect_timeout, p, s.connect_timeout);
     }},
    {"max_attempts", [](const Json& v, const std::string& k, Settings& s,
                        Problems& p) { integer_into(v, k, check_max_attempts, p, s.max_attempts); }},
    {"backoff_base", [](const Json& v, const std::string& k, Settings& s,
                        Problems& p) { duration_into(v, k, check_backoff_base, p, s.backoff_base); }},
    {"backoff_max", [](const Json& v, const std::string& k, Settings& s,
                       Problems& p) { duration_into(v, k, check_backoff_max, p, s.backoff_max); }},
    {"retry_budget", load_retry_budget, kRetryBudgetKeys},
    {"breaker",
     [](const Json& v, const std::string& k, Settings& s, Problems& p) {
       load_object(v, k, kBreakerKeys, s, p);
     },
     kBreakerKeys},
    {"trip",
     [](const Json& v, const std::string& k, Settings& s, Problems& p) {
       load_object(v, k, kTripKeys, s, p);
     },
     kTripKeys},
    {"probe",
     [](const Json& v, const std::string& k, Settings& s, Problems& p) {
       load_object(v, k, kProbeKeys, s, p);
     },
     kProbeKeys},
    {"bulkhead",
     [](const Json& v, const std::string& k, Settings& s, Problems& p) {
       load_object(v, k, kBulkheadKeys, s, p);
     },
     kBulkheadKeys},
    {"max_retry_after",
     [](const Json& v, const std::string& k, Settings& s, Problems& p) {
       if (v.is_null()) {  // to_json writes null while it follows backoff_max
         s.max_retry_after.reset();
         return;
       }
       if (std::optional<Duration> d = read_duration(v, k, p); d && p.check(check_max_retry_after(*d))) {
         s.max_retry_after = *d;
       }
     }},
    {"max_idle_connections",
     [](const Json& v, const std::string& k, Settings& s, Problems& p) {
       integer_into(v, k, check_max_idle_connections, p, s.max_idle_connections);
     }},
    {"idle_timeout", [](const Json& v, const std::string& k, Settings& s,
                        Problems& p) { duration_into(v, k, check_idle_timeout, p, s.idle_timeout); }},
    {"tls", load_tls, kTlsKeys},
    {"http_version",
     [](const Json& v, const std::string& k, Settings& s, Problems& p) {
       if (const std::string* str = read_string(v, k, p); str && p.check(check_http_version(*str))) {
         s.http_version = *parse_http_version(*str);
       }
     }},
    {"headers", load_headers},
    {"forward_authorization", [](const Json& v, const std::string& k, Settings& s,
                                 Problems& p) { read_bool(v, k, p, s.forward_authorization); }},
    {"forward_scenario", [](const Json& v, const std::string& k, Settings& s,
                            Problems& p) { read_bool(v, k, p, s.forward_scenario); }},
    {"classify",
     [](const Json& v, const std::string& k, Settings& s, Problems& p) {
       if (const std::string* str = read_string(v, k, p); str && p.check(check_classify(*str))) {
         s.classify_preset = *str;
       }
     }},
};

std::string unknown_key_message(std::string_view parent, std::string_view key, std::span<const Key> keys) {
  std::string message = "unknown key " + quote_for_message(join_path(parent, key));
  // The nearest key of this object, if it is near enough to be a slip of the keyboard.
  const Key* nearest = nullptr;
  size_t best = std::numeric_limits<size_t>::max();
  if (key.size() <= 256) {  // bounds the quadratic distance on hostile input
    for (const Key& k : keys) {
      const size_t d = edit_distance(key, k.name);
      if (d < best) {
        best = d;
        nearest = &k;
      }
    }
  }
  std::string candidates;
  if (nearest != nullptr && best <= std::max<size_t>(2, key.size() / 3)) {
    candidates = quote_for_message(join_path(parent, nearest->name));
  }
  // A key of another object put at the wrong level ("window" at the top): every object that has it.
  if (parent.empty()) {
    for (const Key& top : kTopKeys) {
      for (const Key& child : top.children) {
        if (child.name != key) continue;
        if (!candidates.empty()) candidates += " or ";
        candidates += quote_for_message(join_path(top.name, child.name));
      }
    }
  }
  if (!candidates.empty()) return message + " (did you mean " + candidates + "?)";
  message += " (valid keys";
  if (!parent.empty()) message += " of " + std::string(parent);
  message += ":";
  for (size_t i = 0; i < keys.size(); ++i) message += (i == 0 ? " " : ", ") + std::string(keys[i].name);
  return message + ")";
}

// ---- Parsing JSON text -----------------------------------------------------------------------------------

// The parser's reason for refusing the text, without its "last read" excerpt (which may hold a secret).
class SyntaxErrorCatcher final : public nlohmann::json_sax<Json> {
 public:
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return true; }
  bool key(string_t&) override { return true; }
  bool end_object() override { return true; }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& ex) override {
    std::string what = ex.what();
    if (const size_t start = what.find("] "); start != std::string::npos) what.erase(0, start + 2);
    if (const size_t cut = what.find("; last read"); cut != std::string::npos) what.erase(cut);
    reason = what;
    return false;
  }

  std::string reason = "not valid JSON";
};

// Nesting depth of the text, counted outside strings; stops counting past kMaxDepth.
bool too_deep(std::string_view text) {
  int depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > kMaxDepth) return true;
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return false;
}

// Parses `text` into `out`. Syntax errors make it return false with one problem named after `root`; keys
// given twice in one object are problems too (the parser alone would keep the last one silently).
bool parse_document(std::string_view text, const std::string& root, Json& out, Problems& p) {
  const std::string what = root.empty() ? "settings" : root;
  if (too_deep(text)) {
    p.add(root, what + ": not valid JSON: nested deeper than " + std::to_string(kMaxDepth) + " levels");
    return false;
  }
  struct Frame {
    bool object;
    std::string key;
    std::set<std::string> seen;
  };
  std::vector<Frame> frames;
  Problems duplicates;
  const Json::parser_callback_t on_event = [&](int, Json::parse_event_t event, Json& parsed) {
    switch (event) {
      case Json::parse_event_t::object_start:
        frames.push_back({true, {}, {}});
        break;
      case Json::parse_event_t::array_start:
        frames.push_back({false, {}, {}});
        break;
      case Json::parse_event_t::object_end:
      case Json::parse_event_t::array_end:
        if (!frames.empty()) frames.pop_back();
        break;
      case Json::parse_event_t::key:
        if (!frames.empty() && frames.back().object && parsed.is_string()) {
          Frame& frame = frames.back();
          frame.key = parsed.get_ref<const std::string&>();
          if (!frame.seen.insert(frame.key).second) {
            std::string path = root;
            for (size_t i = 0; i + 1 < frames.size(); ++i) {
              if (frames[i].object) path = join_path(path, frames[i].key);
            }
            path = join_path(path, frame.key);
            duplicates.add(path, "duplicate key " + quote_for_message(path) + " (only one may be given)");
          }
        }
        break;
      default:
        break;
    }
    return true;
  };
  out = Json::parse(text.begin(), text.end(), on_event, /*allow_exceptions=*/false);
  if (out.is_discarded()) {
    SyntaxErrorCatcher catcher;
    (void)Json::sax_parse(text.begin(), text.end(), &catcher);
    p.add(root, what + ": not valid JSON: " + catcher.reason);
    return false;
  }
  p.add(duplicates.status(Code::kConfig));
  return true;
}

// ---- Rules across fields (SPEC §3.2) ---------------------------------------------------------------------

// A rule is skipped when one of its fields failed its own check: its value then says nothing. Only the field
// checks count: two rules sharing a field (attempt_timeout) are both reported.
void check_cross_fields(const Settings& s, Problems& p) {
  const Problems checked = p;
  const auto fine = [&](std::initializer_list<std::string_view> fields) {
    return std::none_of(fields.begin(), fields.end(), [&](std::string_view f) { return checked.about(f); });
  };
  if (fine({"backoff_base", "backoff_max"}) && s.backoff_max < s.backoff_base) {
    p.add(Status(Code::kConfig,
                 "backoff_max: must be >= backoff_base (" + format_duration(s.backoff_base) + "), got " +
                     format_duration(s.backoff_max),
                 {"backoff_max", "backoff_base"}));
  }
  if (fine({"timeout", "attempt_timeout"}) && s.attempt_timeout > s.timeout) {
    p.add(Status(Code::kConfig,
                 "attempt_timeout: must be <= timeout (" + format_duration(s.timeout) + "), got " +
                     format_duration(s.attempt_timeout),
                 {"attempt_timeout", "timeout"}));
  }
  if (fine({"attempt_timeout", "connect_timeout"}) && s.connect_timeout > s.attempt_timeout) {
    p.add(Status(Code::kConfig,
                 "connect_timeout: must be <= attempt_timeout (" + format_duration(s.attempt_timeout) +
                     "), got " + format_duration(s.connect_timeout),
                 {"connect_timeout", "attempt_timeout"}));
  }
  if (!fine({"base_url"}) || s.base_url.empty()) return;
  const Result<transport::Url> url = transport::parse_url(s.base_url);
  if (!url.ok() || url->scheme != "http") return;
  // SPEC §3's table reads "tls: none = plain text", yet §10.3 says an https client verifies against the
  // system roots "when none is given": an https base_url without a tls object is therefore valid (system
  // roots), and the only TLS rule across fields left to enforce is the converse: tls on a plain-text URL.
  if (s.tls && fine({"tls"})) {
    p.add(Status(Code::kConfig,
                 "tls: given for an http base_url, which never uses it (use https, or drop tls)",
                 {"tls", "base_url"}));
  }
  // SPEC §10.2: http is HTTP/1.1 only (no h2c), so asking for HTTP/2 there could not be honoured.
  if (s.http_version == HttpVersion::kHttp2 && fine({"http_version"})) {
    p.add(Status(Code::kConfig, "http_version: \"2\" needs an https base_url (no HTTP/2 over plain text)",
                 {"http_version", "base_url"}));
  }
}

void check_every_field(const Settings& s, Problems& p) {
  p.add(check_base_url(s.base_url));
  p.add(check_timeout(s.timeout));
  p.add(check_attempt_timeout(s.attempt_timeout));
  p.add(check_connect_timeout(s.connect_timeout));
  p.add(check_max_attempts(s.max_attempts));
  p.add(check_backoff_base(s.backoff_base));
  p.add(check_backoff_max(s.backoff_max));
  p.add(check_retry_budget_tokens(s.retry_budget.tokens));
  p.add(check_retry_budget_ratio(s.retry_budget.ratio));
  p.add(check_retry_budget_min_per_second(s.retry_budget.min_per_second));
  p.add(check_retry_budget_window(s.retry_budget.window));
  p.add(check_breaker_window(s.breaker.window));
  p.add(check_breaker_open_for(s.breaker.open_for));
  p.add(check_breaker_probes(s.breaker.probes));
  p.add(check_breaker_probe_timeout(s.breaker.probe_timeout));
  // Counts past int64's range are as valid as any large count.
  const auto clamp = [](uint64_t n) { return static_cast<int64_t>(std::min<uint64_t>(n, kInt64Max)); };
  p.add(check_trip_consecutive_failures(clamp(s.policy_params.consecutive_failures)));
  p.add(check_trip_failure_rate(s.policy_params.failure_rate));
  p.add(check_trip_min_results(s.policy_params.min_results));
  p.add(check_probe_successes_to_close(clamp(s.policy_params.successes_to_close)));
  p.add(check_bulkhead_max_concurrent(s.bulkhead.max_concurrent));
  p.add(check_bulkhead_wait(s.bulkhead.wait));
  if (s.max_retry_after) p.add(check_max_retry_after(*s.max_retry_after));
  p.add(check_max_idle_connections(s.max_idle_connections));
  p.add(check_idle_timeout(s.idle_timeout));
  if (s.tls) p.add(check_tls(*s.tls));
  p.add(check_headers(s.headers));
  p.add(check_classify(s.classify_preset));
}

// A count written as a JSON integer when it is one (10, not 10.0).
Json number_json(double x) {
  if (std::isfinite(x) && x == std::floor(x) && std::fabs(x) < 9007199254740992.0)
    return Json(static_cast<int64_t>(x));
  return Json(x);
}

}  // namespace

// ---- Public ----------------------------------------------------------------------------------------------

bool operator==(const Settings& a, const Settings& b) {
  const auto& pa = a.policy_params;
  const auto& pb = b.policy_params;
  return a.base_url == b.base_url && a.timeout == b.timeout && a.attempt_timeout == b.attempt_timeout &&
         a.connect_timeout == b.connect_timeout && a.max_attempts == b.max_attempts &&
         a.backoff_base == b.backoff_base && a.backoff_max == b.backoff_max &&
         a.retry_budget == b.retry_budget && a.breaker == b.breaker &&
         pa.consecutive_failures == pb.consecutive_failures && pa.failure_rate == pb.failure_rate &&
         pa.min_results == pb.min_results && pa.successes_to_close == pb.successes_to_close &&
         a.bulkhead == b.bulkhead && a.max_retry_after == b.max_retry_after &&
         a.max_idle_connections == b.max_idle_connections && a.idle_timeout == b.idle_timeout &&
         a.tls == b.tls && a.http_version == b.http_version && a.headers.fields() == b.headers.fields() &&
         a.forward_authorization == b.forward_authorization && a.forward_scenario == b.forward_scenario &&
         a.classify_preset == b.classify_preset && a.classifier == b.classifier &&
         a.breaker_policy == b.breaker_policy;
}

Duration effective_max_retry_after(const Settings& s) { return s.max_retry_after.value_or(s.backoff_max); }

Status check_base_url(std::string_view url) {
  constexpr std::string_view kKey = "base_url";
  // The URL itself is never repeated: it may carry a password.
  if (url.empty()) return problem(kKey, "required (an absolute http or https URL)");
  const Result<transport::Url> parsed = transport::parse_url(url);
  if (!parsed.ok())
    return problem(kKey, "must be an absolute http or https URL (" + parsed.status().message() + ")");
  if (parsed->scheme != "http" && parsed->scheme != "https") {
    return problem(kKey, "scheme must be http or https, got " + quote_for_message(parsed->scheme));
  }
  if (parsed->has_userinfo) {
    return problem(kKey, "user-info is not allowed (a password would sit in settings and every error)");
  }
  return Status();
}

Status check_timeout(Duration d) {
  if (d > Duration::zero() && d <= std::chrono::hours(1)) return Status();
  return problem("timeout", "must be > 0 and <= 1h, got " + format_duration(d));
}
Status check_attempt_timeout(Duration d) { return check_positive("attempt_timeout", d); }
Status check_connect_timeout(Duration d) { return check_positive("connect_timeout", d); }
Status check_max_attempts(int64_t n) { return check_range("max_attempts", n, 1, 10); }
Status check_backoff_base(Duration d) { return check_positive("backoff_base", d); }
Status check_backoff_max(Duration d) { return check_positive("backoff_max", d); }

Status check_retry_budget_policy(std::string_view policy) {
  if (parse_policy(policy)) return Status();
  return problem("retry_budget.policy", "must be \"token_bucket\" or \"ratio\", got " + quote_for_message(policy));
}
Status check_retry_budget_tokens(double tokens) {
  if (tokens > 0 && std::isfinite(tokens)) return Status();
  return problem("retry_budget.tokens", "must be > 0, got " + format_number(tokens));
}
Status check_retry_budget_ratio(double ratio) { return check_share("retry_budget.ratio", ratio); }
Status check_retry_budget_min_per_second(int64_t n) {
  return check_range("retry_budget.min_per_second", n, 0, kUint32Max);
}
Status check_retry_budget_window(Duration d) { return check_positive("retry_budget.window", d); }

Status check_breaker_window(int64_t n) { return check_range("breaker.window", n, 1, 10000); }
Status check_breaker_open_for(Duration d) { return check_positive("breaker.open_for", d); }
Status check_breaker_probes(int64_t n) { return check_range("breaker.probes", n, 1, kUint32Max); }
Status check_breaker_probe_timeout(Duration d) { return check_positive("breaker.probe_timeout", d); }

Status check_trip_consecutive_failures(int64_t n) {
  return check_range("trip.consecutive_failures", n, 1, kInt64Max);
}
Status check_trip_failure_rate(double rate) { return check_share("trip.failure_rate", rate); }
Status check_trip_min_results(int64_t n) { return check_range("trip.min_results", n, 1, kUint32Max); }
Status check_probe_successes_to_close(int64_t n) {
  return check_range("probe.successes_to_close", n, 1, kInt64Max);
}

Status check_bulkhead_max_concurrent(int64_t n) {
  return check_range("bulkhead.max_concurrent", n, 1, kUint32Max);
}
Status check_bulkhead_wait(Duration d) { return check_non_negative("bulkhead.wait", d); }
Status check_max_retry_after(Duration d) { return check_non_negative("max_retry_after", d); }
Status check_max_idle_connections(int64_t n) { return check_range("max_idle_connections", n, 0, kUint32Max); }
Status check_idle_timeout(Duration d) { return check_positive("idle_timeout", d); }

Status check_tls_min_version(std::string_view version) {
  if (parse_tls_version(version)) return Status();
  if (version == "1.0" || version == "1.1" || version == "1") {
    return problem("tls.min_version", "versions below 1.2 are refused, got " + quote_for_message(version));
  }
  return problem("tls.min_version", "must be \"1.2\" or \"1.3\", got " + quote_for_message(version));
}

Status check_tls(const TlsSettings& tls) {
  Problems p;
  // Empty means "not given" in the struct, so only given values are checked one by one.
  if (!tls.ca_file.empty()) p.add(check_tls_path("tls.ca_file", tls.ca_file));
  if (!tls.ca_pem.empty()) p.add(check_tls_pem("tls.ca_pem", tls.ca_pem, false));
  if (!tls.cert_file.empty()) p.add(check_tls_path("tls.cert_file", tls.cert_file));
  if (!tls.cert_pem.empty()) p.add(check_tls_pem("tls.cert_pem", tls.cert_pem, false));
  if (!tls.key_file.empty()) p.add(check_tls_path("tls.key_file", tls.key_file));
  if (!tls.key_pem.empty()) p.add(check_tls_pem("tls.key_pem", tls.key_pem, true));
  if (tls.min_version != TlsVersion::kTls1_2 && tls.min_version != TlsVersion::kTls1_3) {
    p.add(problem("tls.min_version", "must be TLS 1.2 or 1.3"));
  }
  check_tls_combination(tls, p);
  return p.status(Code::kConfig);
}

Status check_http_version(std::string_view version) {
  if (parse_http_version(version)) return Status();
  return problem("http_version", "must be \"auto\", \"1.1\" or \"2\", got " + quote_for_message(version));
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

Status check_classify(std::string_view preset) {
  if (preset == "humus" || preset == "jfast" || preset == "strict") return Status();
  return problem("classify", "must be \"humus\", \"jfast\" or \"strict\", got " + quote_for_message(preset));
}

Status check_field(std::string_view dotted_key, std::string_view value_json) {
  Problems p;
  const std::string key(dotted_key);
  const size_t dot = dotted_key.find('.');
  const std::string_view head = dotted_key.substr(0, dot);
  const std::string_view rest =
      dot == std::string_view::npos ? std::string_view() : dotted_key.substr(dot + 1);

  const Key* top = nullptr;
  for (const Key& k : kTopKeys) {
    if (k.name == head) top = &k;
  }
  if (top == nullptr) {
    add_unknown_key("", head, kTopKeys, p);
    return p.status(Code::kConfig);
  }
  Json value;
  if (!parse_document(value_json, key, value, p)) return p.status(Code::kConfig);
  Settings scratch;
  if (dot == std::string_view::npos) {
    top->load(value, key, scratch, p);
  } else if (head == "headers") {  // "headers.<name>": one header, any name
    if (value.is_string()) {
      p.add(check_header(rest, value.get_ref<const std::string&>()));
    } else {
      p.add(key, key + ": must be a string, got " + describe(value));
    }
  } else {
    const Key* child = nullptr;
    for (const Key& k : top->children) {
      if (k.name == rest) child = &k;
    }
    if (child != nullptr) {
      child->load(value, key, scratch, p);
    } else if (top->children.empty()) {
      p.add(key, "unknown key " + quote_for_message(key) + " (" + std::string(head) + " is not an object)");
    } else {
      add_unknown_key(head, rest, top->children, p);
    }
  }
  return p.status(Code::kConfig);
}

Status validate(const Settings& s, bool from_config) {
  Problems p;
  check_every_field(s, p);
  check_cross_fields(s, p);
  return p.status(from_config ? Code::kConfig : Code::kProgram);
}

// A default the document left out never contradicts a value it set: {"timeout": "2s"} alone means an
// attempt may take up to 2 s, not a configuration error about the 5 s default attempt_timeout. Only
// defaults are capped; two values the document sets are checked against each other as they are.
void cap_unset_defaults(const Json& doc, Settings& s) {
  if (!doc.contains("attempt_timeout")) s.attempt_timeout = std::min(s.attempt_timeout, s.timeout);
  if (!doc.contains("connect_timeout")) s.connect_timeout = std::min(s.connect_timeout, s.attempt_timeout);
  if (!doc.contains("backoff_base")) s.backoff_base = std::min(s.backoff_base, s.backoff_max);
}

Result<Settings> from_json(std::string_view json) {
  Problems p;
  Json doc;
  if (!parse_document(json, "", doc, p)) return p.status(Code::kConfig);
  if (!doc.is_object()) return Status(Code::kConfig, "settings: must be a JSON object, got " + describe(doc));
  Settings s;
  load_object(doc, "", kTopKeys, s, p);
  if (!doc.contains("base_url")) p.add(check_base_url(""));
  cap_unset_defaults(doc, s);
  check_cross_fields(s, p);
  if (!p.empty()) return p.status(Code::kConfig);
  return s;
}

std::string to_json(const Settings& s) {
  Json j = Json::object();
  j["base_url"] = s.base_url;
  j["timeout"] = format_duration(s.timeout);
  j["attempt_timeout"] = format_duration(s.attempt_timeout);
  j["connect_timeout"] = format_duration(s.connect_timeout);
  j["max_attempts"] = s.max_attempts;
  j["backoff_base"] = format_duration(s.backoff_base);
  j["backoff_max"] = format_duration(s.backoff_max);

  Json budget = Json::object();
  budget["policy"] = policy_name(s.retry_budget.policy);
  if (s.retry_budget.policy == BudgetPolicy::kTokenBucket) {
    budget["tokens"] = number_json(s.retry_budget.tokens);
    budget["ratio"] = number_json(s.retry_budget.ratio);
  } else {
    budget["ratio"] = number_json(s.retry_budget.ratio);
    budget["min_per_second"] = s.retry_budget.min_per_second;
    budget["window"] = format_duration(s.retry_budget.window);
  }
  j["retry_budget"] = std::move(budget);

  Json breaker = Json::object();
  breaker["window"] = s.breaker.window;
  breaker["open_for"] = format_duration(s.breaker.open_for);
  breaker["probes"] = s.breaker.probes;
  breaker["probe_timeout"] = format_duration(s.breaker.probe_timeout);
  j["breaker"] = std::move(breaker);

  Json trip = Json::object();
  trip["consecutive_failures"] = s.policy_params.consecutive_failures;
  trip["failure_rate"] = number_json(s.policy_params.failure_rate);
  trip["min_results"] = s.policy_params.min_results;
  j["trip"] = std::move(trip);
  Json probe = Json::object();
  probe["successes_to_close"] = s.policy_params.successes_to_close;
  j["probe"] = std::move(probe);

  Json bulkhead = Json::object();
  bulkhead["max_concurrent"] = s.bulkhead.max_concurrent;
  bulkhead["wait"] = format_duration(s.bulkhead.wait);
  j["bulkhead"] = std::move(bulkhead);

  j["max_retry_after"] = s.max_retry_after ? Json(format_duration(*s.max_retry_after)) : Json(nullptr);
  j["max_idle_connections"] = s.max_idle_connections;
  j["idle_timeout"] = format_duration(s.idle_timeout);

  if (s.tls) {
    Json tls = Json::object();
    const std::pair<const char*, const std::string*> sources[] = {
        {"ca_file", &s.tls->ca_file},   {"ca_pem", &s.tls->ca_pem},     {"cert_file", &s.tls->cert_file},
        {"cert_pem", &s.tls->cert_pem}, {"key_file", &s.tls->key_file}, {"key_pem", &s.tls->key_pem},
    };
    for (const auto& [name, value] : sources) {
      if (!value->empty()) tls[name] = *value;
    }
    tls["min_version"] = tls_version_name(s.tls->min_version);
    j["tls"] = std::move(tls);
  } else {
    j["tls"] = nullptr;
  }

  j["http_version"] = http_version_name(s.http_version);
  Json headers = Json::object();
  for (const auto& [name, value] : s.headers.fields()) headers[name] = value;
  j["headers"] = std::move(headers);
  j["forward_authorization"] = s.forward_authorization;
  j["forward_scenario"] = s.forward_scenario;
  j["classify"] = s.classify_preset;
  // Strings set by code may hold invalid UTF-8: replaced rather than thrown over.
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace humus::settings
