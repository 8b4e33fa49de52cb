/*
 * humus_http — a resilient outbound HTTP client: the C ABI.
 *
 * This header is the whole contract. It includes only <stddef.h> and <stdint.h>; no libcurl, OpenSSL or C++
 * type appears in it. Handles are opaque. Every fallible function returns a humus_status (0 = HUMUS_OK) and
 * writes its outputs through pointers, only on success. Where a function takes `humus_error **err`, err may
 * be NULL; an error written there is the caller's to free with humus_error_free(). A failed synchronous call
 * also leaves a copy of its error in a thread-local slot (humus_last_error()).
 *
 * Structs passed in carry their version first and only ever grow at the end. Every callback table carries
 * `user_data` and an optional `destroy`, called exactly once when the library no longer needs user_data.
 *
 * Thread-safety is stated per function: "any thread" means concurrent calls are safe, including on the same
 * handle; "not concurrently" means calls on one handle must not overlap.
 */
#ifndef HUMUS_HTTP_H
#define HUMUS_HTTP_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(HUMUS_BUILDING_LIBRARY) && defined(__GNUC__)
#define HUMUS_API __attribute__((visibility("default")))
#else
#define HUMUS_API
#endif

/* ==== Version ==================================================================================== */

#define HUMUS_VERSION_MAJOR 0
#define HUMUS_VERSION_MINOR 1
#define HUMUS_VERSION_PATCH 0
#define HUMUS_VERSION_NUMBER (HUMUS_VERSION_MAJOR * 10000 + HUMUS_VERSION_MINOR * 100 + HUMUS_VERSION_PATCH)
#define HUMUS_VERSION_STRING "0.1.0"

/* The version of the library loaded at run time: MAJOR*10000 + MINOR*100 + PATCH. Any thread. */
HUMUS_API int32_t humus_version_number(void);
/* The same as a string such as "0.1.0"; static storage. Any thread. */
HUMUS_API const char *humus_version(void);

/* ==== Status codes =============================================================================== */

/* Numbers are pinned and append-only, grouped in ranges. */
typedef int32_t humus_status;
enum {
  HUMUS_OK = 0,

  /* 1–99: usage — the calling code did something wrong. */
  HUMUS_E_INVALID_ARGUMENT = 1, /* a bad argument: NULL where a value is needed, a bad header, a bad URL */
  HUMUS_E_MISUSE = 2,           /* a freed or wrong handle, a call in the wrong state or thread */
  HUMUS_E_PROGRAM = 3,          /* a fault in code: cross-field settings rules, a null callback (exit 1) */
  HUMUS_E_CROSS_ORIGIN = 4,     /* a request to another origin than the client's */
  HUMUS_E_NO_MEMORY = 5,        /* allocation failed */
  HUMUS_E_INTERNAL = 6,         /* a bug in humus_http; the message says where */
  HUMUS_E_CALLBACK = 7,         /* a user callback reported failure (a binding's exception or panic) */

  /* 100–199: configuration — an operator's mistake (a service maps it to exit 78). */
  HUMUS_E_CONFIG = 100,

  /* 200–299: resilience verdicts — the client decided not to (or no longer) wait. */
  HUMUS_E_REJECTED = 200,      /* the circuit breaker is open: nothing was sent */
  HUMUS_E_BULKHEAD_FULL = 201, /* no slot within bulkhead.wait: nothing was sent */
  HUMUS_E_TIMEOUT = 202,       /* the call's deadline (or an attempt's timeout) passed */
  HUMUS_E_CANCELLED = 203,     /* the caller cancelled the call */

  /* 300–399: transport — no response came. */
  HUMUS_E_CONNECT = 300,         /* connection refused or could not be made */
  HUMUS_E_RESOLVE = 301,         /* the host name did not resolve */
  HUMUS_E_CONNECTION_LOST = 302, /* reset or closed before a full response */
  HUMUS_E_PROTOCOL = 303,        /* the peer broke HTTP */
  HUMUS_E_STREAM_REFUSED = 304,  /* HTTP/2 stream refused or GOAWAY before processing: safe to resend */

  /* 400–499: TLS. */
  HUMUS_E_TLS = 400,             /* handshake failed: untrusted certificate, hostname mismatch, version */
  HUMUS_E_TLS_CLIENT_CERT = 401  /* the server refused or required a client certificate */
};

/* The enumerator's name, e.g. "HUMUS_E_CONFIG"; "HUMUS_E_UNKNOWN" for a
 * number this version does not know. Never NULL; static storage. Any thread. */
HUMUS_API const char *humus_status_name(humus_status s);

/* ==== Errors ===================================================================================== */

typedef struct humus_error humus_error;

/* Accessors of an error; all accept only a non-NULL error and never fail. Any thread, on an error no
 * other thread frees. */
HUMUS_API humus_status humus_error_status(const humus_error *e);
/* What was wrong, naming the setting, header or URL. Lives as long as the error. */
HUMUS_API const char *humus_error_message(const humus_error *e);
/* Attempts the failed call made (0 when it failed before any). */
HUMUS_API int32_t humus_error_attempts(const humus_error *e);
/* The names of the fields, keys or headers the error is about (every bad key of a config load). */
HUMUS_API size_t humus_error_field_count(const humus_error *e);
/* Field `i` (< humus_error_field_count), or NULL out of range. Lives as long as the error. */
HUMUS_API const char *humus_error_field(const humus_error *e, size_t i);
/* For HUMUS_E_REJECTED: how much longer the breaker stays open, in milliseconds; otherwise 0. */
HUMUS_API int64_t humus_error_retry_after_ms(const humus_error *e);
/* Frees an error; NULL is accepted. */
HUMUS_API void humus_error_free(humus_error *e);
/* The error of the last failed humus_* call on this thread, or NULL. Borrowed: valid until this thread's
 * next failing humus_* call. */
HUMUS_API const humus_error *humus_last_error(void);

/* ==== Settings =================================================================================== */

/* Settings of one dependency (SPEC §3). Not thread-safe: build them on one thread, then hand them over. */
typedef struct humus_settings humus_settings;

/* Parses the JSON form of SPEC §3 (durations as strings: "250ms", "5s", "1m"). Fields left out take their
 * defaults. Every bad field is reported at once: HUMUS_E_CONFIG with one field name per bad key
 * (humus_error_field), misspelt keys named with the nearest valid key. Rules across fields loaded here
 * (backoff_max < backoff_base, attempt_timeout > timeout, connect_timeout > attempt_timeout, https without
 * tls / http with tls) are HUMUS_E_CONFIG too. HUMUS_E_INVALID_ARGUMENT if json or out is NULL. Any thread. */
HUMUS_API humus_status humus_settings_from_json(const char *json, size_t len, humus_settings **out,
                                                humus_error **err);
/* A copy, callbacks shared. Any thread, with no thread changing `s`. */
HUMUS_API humus_status humus_settings_clone(const humus_settings *s, humus_settings **out, humus_error **err);
/* Frees settings; NULL is accepted. Callbacks' destroy runs once their last holder is freed. */
HUMUS_API void humus_settings_free(humus_settings *s);

/* Checks one value before building settings (SPEC §3.1): `key` is a JSON key path such as "timeout" or
 * "breaker.window"; `value_json` is the JSON value ("\"5s\"", "20"). HUMUS_OK when valid, else
 * HUMUS_E_CONFIG naming the key, or for an unknown key naming the nearest valid one. Any thread. */
HUMUS_API humus_status humus_settings_check(const char *key, const char *value_json, size_t len,
                                            humus_error **err);

/* The effective settings as JSON, defaults filled in, durations as strings. `*out` is NUL-terminated and the
 * caller's to free with humus_string_free(); `*len` (may be NULL) excludes the NUL. Any thread, with no
 * thread changing `s`. */
HUMUS_API humus_status humus_settings_to_json(const humus_settings *s, char **out, size_t *len,
                                              humus_error **err);
/* Frees a string the library returned; NULL is accepted. */
HUMUS_API void humus_string_free(char *str);

/* ==== Callbacks: classifier ====================================================================== */

/* What an attempt's result means (SPEC §5). retry_after_ms 0 means "none"; negative is invalid. */
enum { HUMUS_RETRY_DONE = 1, HUMUS_RETRY_AGAIN = 2 };
enum { HUMUS_BREAKER_SUCCESS = 1, HUMUS_BREAKER_FAILURE = 2, HUMUS_BREAKER_IGNORED = 3 };
typedef struct humus_classification {
  int32_t retry;          /* HUMUS_RETRY_*; 0 is invalid */
  int32_t breaker;        /* HUMUS_BREAKER_*; 0 is invalid */
  int64_t retry_after_ms; /* the dependency's Retry-After, 0 for none */
} humus_classification;

/* One attempt as a classifier sees it. Borrowed for the duration of the callback. */
typedef struct humus_attempt humus_attempt;
/* The request's method, e.g. "GET". */
HUMUS_API const char *humus_attempt_method(const humus_attempt *a);
/* The response status, or 0 when the attempt got no response. */
HUMUS_API int32_t humus_attempt_status(const humus_attempt *a);
/* A response header (case-insensitive name), or NULL if absent or no response. */
HUMUS_API const char *humus_attempt_header(const humus_attempt *a, const char *name);
/* The error kind when no response came (HUMUS_E_CONNECT, HUMUS_E_TIMEOUT, ...), else HUMUS_OK. */
HUMUS_API humus_status humus_attempt_error(const humus_attempt *a);
/* The error's message, or "" when there is none. */
HUMUS_API const char *humus_attempt_error_message(const humus_attempt *a);
/* 1 for the first attempt of a request. */
HUMUS_API int32_t humus_attempt_number(const humus_attempt *a);

/* The default classifier (SPEC §5.3), for a custom one to delegate to. Any thread. */
HUMUS_API humus_status humus_classify_default(const humus_attempt *a, humus_classification *out);
/* A named preset: "humus" (the default), "jfast", "strict" (SPEC §5.5). HUMUS_E_INVALID_ARGUMENT for an
 * unknown name. Any thread. */
HUMUS_API humus_status humus_classify_preset(const char *preset, const humus_attempt *a,
                                             humus_classification *out);

#define HUMUS_CLASSIFIER_VERSION 1
/* A custom classifier. `classify` runs on the thread that drives the attempt, possibly several at once: it
 * must be thread-safe. It returns HUMUS_OK with *out filled, or any other status to fail the call with
 * HUMUS_E_CALLBACK (a binding keeps its exception and re-raises it); the breaker counts that as a failure. */
typedef struct humus_classifier {
  uint32_t version; /* HUMUS_CLASSIFIER_VERSION */
  humus_status (*classify)(void *user_data, const humus_attempt *attempt, humus_classification *out);
  void *user_data;
  void (*destroy)(void *user_data); /* optional; called once when no client or settings uses it */
} humus_classifier;
#define HUMUS_CLASSIFIER_INIT {HUMUS_CLASSIFIER_VERSION, NULL, NULL, NULL}

/* Replaces the classifier of `s`. The table is copied. HUMUS_E_PROGRAM when `classifier` or its `classify`
 * is NULL (SPEC §3.3); HUMUS_E_INVALID_ARGUMENT for an unknown version. On failure `destroy` is not called:
 * the caller keeps user_data. Not concurrently on one settings. */
HUMUS_API humus_status humus_settings_set_classifier(humus_settings *s, const humus_classifier *classifier,
                                                     humus_error **err);

/* ==== Callbacks: breaker policy ================================================================== */

/* Counts a breaker policy sees (SPEC §9.3): since the state began, plus the last `window` results. */
typedef struct humus_breaker_counts {
  uint32_t version;              /* HUMUS_BREAKER_COUNTS_VERSION */
  int32_t state;                 /* HUMUS_CIRCUIT_* of the state these counts belong to */
  uint64_t successes;
  uint64_t failures;
  uint64_t consecutive_successes;
  uint64_t consecutive_failures;
  uint64_t timed_out_probes;
  uint32_t window_results;       /* results in the window, at most breaker.window */
  uint32_t window_failures;      /* failures among them */
} humus_breaker_counts;
#define HUMUS_BREAKER_COUNTS_VERSION 1

enum { HUMUS_CIRCUIT_CLOSED = 0, HUMUS_CIRCUIT_OPEN = 1, HUMUS_CIRCUIT_HALF_OPEN = 2 };
/* What a probe policy decides in half-open. */
enum { HUMUS_PROBE_CONTINUE = 0, HUMUS_PROBE_CLOSE = 1, HUMUS_PROBE_REOPEN = 2 };

#define HUMUS_BREAKER_POLICY_VERSION 1
/* A custom breaker policy. Both callbacks run under the breaker's lock on the thread that delivers a result:
 * they must be fast, thread-safe, and must not call the client. A status other than HUMUS_OK counts the
 * result as a failure and leaves the breaker consistent. */
typedef struct humus_breaker_policy {
  uint32_t version; /* HUMUS_BREAKER_POLICY_VERSION */
  /* In closed: set *open to 1 to open the breaker, 0 to stay closed. */
  humus_status (*trip)(void *user_data, const humus_breaker_counts *counts, int32_t *open);
  /* In half-open, after each probe's result: set *decision to a HUMUS_PROBE_*. */
  humus_status (*probe)(void *user_data, const humus_breaker_counts *counts, int32_t *decision);
  void *user_data;
  void (*destroy)(void *user_data); /* optional; called once when no client or settings uses it */
} humus_breaker_policy;
#define HUMUS_BREAKER_POLICY_INIT {HUMUS_BREAKER_POLICY_VERSION, NULL, NULL, NULL, NULL}

/* Replaces the trip/probe policy of `s` (the built-in one is parameterised by the JSON "trip" and "probe"
 * objects). The table is copied. HUMUS_E_PROGRAM when `policy`, `trip` or `probe` is NULL; on failure
 * `destroy` is not called. Not concurrently on one settings. */
HUMUS_API humus_status humus_settings_set_breaker_policy(humus_settings *s, const humus_breaker_policy *policy,
                                                         humus_error **err);

#ifdef __cplusplus
}
#endif

#endif /* HUMUS_HTTP_H */
