/*
 * retry_409_plugin — a classifier and a breaker policy written once in C, compiled as a shared object and
 * named in the settings JSON (docs/retries.md §5.4a), so C, Python, Go, Rust and the CLI all run this same
 * compiled rule with no callback into their own language:
 *
 *   "classify": {"plugin": "/abs/path/libretry_409_plugin.so", "symbol": "retry_409_classifier",
 *                "config": {"status": 409}}
 *   "breaker_policy": {"plugin": "/abs/path/libretry_409_plugin.so", "symbol": "consecutive_failures_policy",
 *                      "config": {"consecutive_failures": 2, "successes_to_close": 1}}
 *
 * retry_409_classifier is the ledger's rule: it answers 409 while another write to the account is in flight,
 * which is over by the next attempt. So a 409 (or the status "config" names) is retried — on a request safe
 * to send twice — and counts for the dependency, not against it; every other result is the default
 * classifier's (humus_classify_default).
 *
 * consecutive_failures_policy opens the breaker after "consecutive_failures" failures in a row (default 5)
 * and, half-open, closes after "successes_to_close" successful probes (default 3) or reopens on a failed one.
 *
 * Not linked with libhumus_http: the humus_* functions called here are those of the library that loads the
 * plugin. Build (the examples' CMakeLists.txt does the same):
 *   cc -std=c99 -shared -fPIC -o libretry_409_plugin.so retry_409_plugin.c $(pkg-config --cflags humus_http)
 *
 * The config is the JSON object of the settings, as compact text. This example reads only integer members
 * with a small scanner; a plugin with a richer config would use a JSON parser.
 */
#include <humus_http.h>
#include <stdlib.h>
#include <string.h>

#if defined(__GNUC__)
#define PLUGIN_EXPORT __attribute__((visibility("default")))
#else
#define PLUGIN_EXPORT
#endif

/* Reads the integer member `key` of the config object into *value; leaves *value alone when the member is
 * absent. Returns 0 on success, -1 when the member is there but is not an integer. */
static int config_int(const char *config, size_t len, const char *key, long *value) {
  const size_t key_len = strlen(key);
  size_t i;
  for (i = 0; i + key_len + 2 <= len; i++) {
    const char *p;
    const char *end = config + len;
    char *parsed_end;
    long parsed;
    if (config[i] != '"' || strncmp(config + i + 1, key, key_len) != 0 || config[i + 1 + key_len] != '"') {
      continue;
    }
    p = config + i + key_len + 2;
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
    if (p == end || *p != ':') continue; /* the key's text appeared inside a value */
    p++;
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
    if (p == end || (*p != '-' && (*p < '0' || *p > '9'))) return -1;
    parsed = strtol(p, &parsed_end, 10); /* config is NUL-terminated: strtol stops there at the latest */
    if (parsed_end < end && *parsed_end != ',' && *parsed_end != '}' && *parsed_end != ' ') return -1;
    *value = parsed;
    return 0;
  }
  return 0;
}

/* ---- The classifier ------------------------------------------------------------------------------------ */

typedef struct {
  int32_t status; /* the status that says "in flight, try again" */
} retry_status;

/* Runs on the thread that drives the attempt, possibly several at once: reads only its own user_data. */
static humus_status classify(void *user_data, const humus_attempt *attempt, humus_classification *out) {
  const retry_status *rule = (const retry_status *)user_data;
  if (humus_attempt_status(attempt) == rule->status) {
    out->retry = HUMUS_RETRY_AGAIN;
    out->breaker = HUMUS_BREAKER_SUCCESS;
    out->retry_after_ms = 0;
    return HUMUS_OK;
  }
  return humus_classify_default(attempt, out);
}

PLUGIN_EXPORT humus_status retry_409_classifier(const char *config_json, size_t config_len,
                                                humus_classifier *out, humus_error **err) {
  long status = 409;
  retry_status *rule;
  if (config_int(config_json, config_len, "status", &status) != 0 || status < 100 || status > 599) {
    return humus_error_new(HUMUS_E_CONFIG, "status: must be an integer from 100 to 599", "status", err);
  }
  rule = (retry_status *)malloc(sizeof *rule);
  if (rule == NULL)
    return humus_error_new(HUMUS_E_NO_MEMORY, "retry_409_classifier: out of memory", NULL, err);
  rule->status = (int32_t)status;
  out->version = HUMUS_CLASSIFIER_VERSION;
  out->classify = classify;
  out->user_data = rule;
  out->destroy = free; /* the library calls it once, when no settings or client uses the classifier */
  return HUMUS_OK;
}

/* ---- The breaker policy -------------------------------------------------------------------------------- */

typedef struct {
  uint64_t consecutive_failures;
  uint64_t successes_to_close;
} failure_streak;

/* Both run under the breaker's lock: fast, reading only their own user_data and the counts. */
static humus_status trip(void *user_data, const humus_breaker_counts *counts, int32_t *open) {
  const failure_streak *rule = (const failure_streak *)user_data;
  *open = counts->consecutive_failures >= rule->consecutive_failures ? 1 : 0;
  return HUMUS_OK;
}

static humus_status probe(void *user_data, const humus_breaker_counts *counts, int32_t *decision) {
  const failure_streak *rule = (const failure_streak *)user_data;
  if (counts->failures > 0) {
    *decision = HUMUS_PROBE_REOPEN;
  } else if (counts->consecutive_successes >= rule->successes_to_close) {
    *decision = HUMUS_PROBE_CLOSE;
  } else {
    *decision = HUMUS_PROBE_CONTINUE;
  }
  return HUMUS_OK;
}

PLUGIN_EXPORT humus_status consecutive_failures_policy(const char *config_json, size_t config_len,
                                                       humus_breaker_policy *out, humus_error **err) {
  long failures = 5;
  long successes = 3;
  failure_streak *rule;
  if (config_int(config_json, config_len, "consecutive_failures", &failures) != 0 || failures < 1) {
    return humus_error_new(HUMUS_E_CONFIG, "consecutive_failures: must be an integer >= 1",
                           "consecutive_failures", err);
  }
  if (config_int(config_json, config_len, "successes_to_close", &successes) != 0 || successes < 1) {
    return humus_error_new(HUMUS_E_CONFIG, "successes_to_close: must be an integer >= 1",
                           "successes_to_close", err);
  }
  rule = (failure_streak *)malloc(sizeof *rule);
  if (rule == NULL)
    return humus_error_new(HUMUS_E_NO_MEMORY, "consecutive_failures_policy: out of memory", NULL, err);
  rule->consecutive_failures = (uint64_t)failures;
  rule->successes_to_close = (uint64_t)successes;
  out->version = HUMUS_BREAKER_POLICY_VERSION;
  out->trip = trip;
  out->probe = probe;
  out->user_data = rule;
  out->destroy = free;
  return HUMUS_OK;
}
