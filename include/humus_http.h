/*
 * humus_http — a resilient outbound HTTP client: the C ABI.
 *
 * This header is the whole contract. It includes only <stddef.h> and <stdint.h>; no libcurl, OpenSSL or C++
 * type appears in it. Handles are opaque. Every fallible function returns a humus_status (0 = HUMUS_OK) and
 * writes its outputs through pointers, only on success.
 *
 * Errors: every function that can fail takes `humus_error **err` (may be NULL); an error written there is
 * the caller's to free with humus_error_free(). The few that have no err say beside them why: their
 * signature is pinned, or the status they return says everything. An asynchronous call's outcome carries
 * its own error. So no caller needs humus_last_error(), kept only for callers of the first ABI.
 *
 * Handles: a NULL, freed or foreign pointer (not a live handle of the type the parameter names) given to any
 * function is not undefined behaviour: a function returning a status returns HUMUS_E_MISUSE naming the
 * parameter, one returning a value returns the neutral value documented beside it, a *_free does nothing (a
 * double free is harmless), and any other void function does nothing. The library keeps a registry of its
 * live handles and checks it before touching one, at the cost of one uncontended lock per call. A handle freed
 * while another thread uses it is still the caller's race, and a freed handle whose memory was reused for a
 * new handle of the same type is that new handle.
 *
 * Structs passed in carry their version first and only ever grow at the end; an older version is accepted
 * (members added after it read as absent), 0 or a version newer than the library's is refused with
 * HUMUS_E_INVALID_ARGUMENT naming the struct. A struct the library writes (humus_breaker_counts) is written
 * only up to the size of the version its caller set. No growable struct is embedded in another by value.
 * Every callback table carries `user_data` and an optional `destroy`, called exactly once when the library no
 * longer needs user_data.
 *
 * Thread-safety is stated per function: "any thread" means concurrent calls are safe, including on the same
 * handle; "not concurrently" means calls on one handle must not overlap.
 *
 * Examples (bindings/c/examples/, each built and run against the test server by the tests): get.c (one
 * call), async.c (humus_client_submit), classify.c (a classifier callback), stream.c (a body reader,
 * humus_client_open and humus_response_read), dlopen.c (the library through dlopen/dlsym alone) and
 * retry_409_plugin.c (a classifier and a breaker policy as a plugin named in the settings).
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
/* The ABI major: the SONAME's number (libhumus_http.so.1). A library of another ABI major cannot be used with
 * this header. Adding a function or growing a versioned struct keeps it; removing or changing an exported
 * function, or a struct's layout, takes the next one (CHANGELOG.md). */
#define HUMUS_ABI_VERSION 1

/* The version of the library loaded at run time: MAJOR*10000 + MINOR*100 + PATCH. Any thread. */
HUMUS_API int32_t humus_version_number(void);
/* The same as a string such as "0.1.0"; static storage. Any thread. */
HUMUS_API const char *humus_version(void);
/* The ABI major of the library loaded at run time (HUMUS_ABI_VERSION of its header); a binding checks it
 * equals its own at load. Any thread. */
HUMUS_API int32_t humus_abi_version(void);
/* What this library runs with, as JSON, read from the libcurl loaded at run time (curl_version_info), for bug
 * and security reports: {"humus_http": "0.1.0", "libcurl": "7.88.1", "ssl": "OpenSSL/3.0.x", "zlib": "1.2.13",
 * "brotli": "1.0.9", "zstd": "1.5.4", "nghttp2": "1.52.0", "libidn2": "2.3.3", "features": ["http2", "ssl",
 * "libz", ...]}. A library libcurl was built without is left out; "features" are curl -V's names in lowercase,
 * sorted. `*out` is NUL-terminated and the caller's to free with humus_string_free(); `*len` (may be NULL)
 * excludes the NUL. HUMUS_E_INVALID_ARGUMENT when out is NULL; HUMUS_E_NO_MEMORY. Any thread.
 * (Spelt with int32_t and struct humus_error because the Version section comes before their typedefs:
 * int32_t is humus_status, and struct humus_error is humus_error.) */
struct humus_error;
HUMUS_API int32_t humus_version_info(char **out, size_t *len, struct humus_error **err);

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
  HUMUS_E_TOO_LARGE = 305,       /* the response's headers or buffered body passed the client's own limit
                                    (max_response_headers, max_response_body): not retried, no breaker verdict */
  HUMUS_E_RESOURCE = 306,        /* a local shortage (file descriptors, ports, buffers, memory for sockets):
                                    not the dependency's fault, so not retried, no breaker verdict, no budget */

  /* 400–499: TLS. */
  HUMUS_E_TLS = 400,             /* handshake failed: untrusted certificate, hostname mismatch, version */
  HUMUS_E_TLS_CLIENT_CERT = 401  /* the server refused or required a client certificate */
};

/* The enumerator's name, e.g. "HUMUS_E_CONFIG"; "HUMUS_E_UNKNOWN" for a
 * number this version does not know. Never NULL; static storage. Any thread. */
HUMUS_API const char *humus_status_name(humus_status s);

/* ==== Errors ===================================================================================== */

typedef struct humus_error humus_error;

/* Accessors of an error; they never fail, and NULL (or a freed or foreign pointer) reads as "no error"
 * (HUMUS_OK, "", 0, no field). Any thread, on an error no other thread frees. */
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
/* The failed call's decision trace: a JSON array, one record per attempt (docs/trace.md), "[]" for an error
 * that no call made. `*json` is NUL-terminated and the caller's to free with humus_string_free(); `*len`
 * (may be NULL) excludes the NUL. HUMUS_E_INVALID_ARGUMENT for json NULL, HUMUS_E_MISUSE for a bad `e`,
 * HUMUS_E_NO_MEMORY. Any thread, on an error no other thread frees. */
HUMUS_API humus_status humus_error_trace(const humus_error *e, char **json, size_t *len);
/* Frees an error; NULL, a freed error and humus_last_error()'s are ignored. Not concurrently with a reader. */
HUMUS_API void humus_error_free(humus_error *e);
/* Makes an error, for code that reports through a `humus_error **err` of its own: a plugin's entry point
 * (see "Callbacks: plugins"). Writes a new error with `status`, `message` (NULL: "") and, unless `field` is
 * NULL, that one field name to *err, and returns `status`, so an entry point may end with
 * `return humus_error_new(HUMUS_E_CONFIG, "status: must be 100..599", "status", err);`. Nothing is written
 * for HUMUS_OK or a NULL err; *err is left NULL when the error cannot be allocated (the status is still
 * returned). The error is the receiver's to free with humus_error_free(). Any thread. */
HUMUS_API humus_status humus_error_new(humus_status status, const char *message, const char *field,
                                       humus_error **err);
/* Deprecated, kept for callers of the first ABI: the error of the last failed humus_* call on this thread,
 * or NULL. Borrowed: valid until this thread's next failing humus_* call. Every fallible function reports
 * through its own err (or its status says everything), so new code, and every binding, reads that instead:
 * a thread-local slot would make Go pin its OS thread around each call. Kept rather than removed because
 * removing an exported function takes a new ABI major, which one deprecated function does not justify: it
 * goes with the next major. Any thread. */
HUMUS_API const humus_error *humus_last_error(void);

/* ==== Settings =================================================================================== */

/* Settings of one dependency (docs/settings.md §3). Not thread-safe: build them on one thread, then hand them over. */
typedef struct humus_settings humus_settings;

/* Parses the JSON form of docs/settings.md §3 (durations as strings: "250ms", "5s", "1m"). Fields left out take their
 * defaults. Every bad field is reported at once: HUMUS_E_CONFIG with one field name per bad key
 * (humus_error_field), misspelt keys named with the nearest valid key. Rules across fields loaded here
 * (backoff_max < backoff_base, attempt_timeout > timeout, connect_timeout > attempt_timeout, a tls object
 * with an http base_url) are HUMUS_E_CONFIG too; an https base_url without tls trusts the system's roots.
 * HUMUS_E_INVALID_ARGUMENT if json or out is NULL. Any thread. */
HUMUS_API humus_status humus_settings_from_json(const char *json, size_t len, humus_settings **out,
                                                humus_error **err);
/* A copy, callbacks shared. Any thread, with no thread changing `s`. */
HUMUS_API humus_status humus_settings_clone(const humus_settings *s, humus_settings **out, humus_error **err);
/* Frees settings; NULL and freed settings are ignored. Callbacks' destroy runs once their last holder is freed. */
HUMUS_API void humus_settings_free(humus_settings *s);

/* Checks one value before building settings (docs/settings.md §3.1): `key` is a JSON key path such as "timeout" or
 * "breaker.window"; `value_json` is the JSON value ("\"5s\"", "20"). HUMUS_OK when valid, else
 * HUMUS_E_CONFIG naming the key, or for an unknown key naming the nearest valid one;
 * HUMUS_E_INVALID_ARGUMENT if key or value_json is NULL. Any thread. */
HUMUS_API humus_status humus_settings_check_field(const char *key, const char *value_json, size_t len,
                                                  humus_error **err);
/* The first name of humus_settings_check_field: the same function, kept as the ABI's first name for it
 * (docs/settings.md §3.1 and the fuzz target use it; removing it would take a new ABI major). */
HUMUS_API humus_status humus_settings_check(const char *key, const char *value_json, size_t len,
                                            humus_error **err);

/* The settings schema as JSON: {"version": 1, "keys": [...]}, one entry per key path in docs/settings.md §3's order, each
 * {"key": "breaker.window", "kind": "count", "default": 20, "min": 1, "min_exclusive": false, "max": 10000,
 * "doc": "..."}. Kinds: "duration" (bounds and default as duration strings), "count" and "bytes" (integers),
 * "number" (> 0), "share" (in (0, 1]), "enum" (with "choices"), "string", "bool", "object" (its keys follow
 * as "<key>.<name>"), "map" (names of the caller's choosing to strings: headers). "nullable": true when JSON
 * null is accepted, "required": true for base_url; "max" is absent when there is no upper bound. `*out` is
 * NUL-terminated and the caller's to free with humus_string_free(); `*len` (may be NULL) excludes the NUL.
 * HUMUS_E_INVALID_ARGUMENT if out is NULL. Any thread. */
HUMUS_API humus_status humus_settings_schema_json(char **out, size_t *len, humus_error **err);

/* The effective settings as JSON, defaults filled in, durations as strings. `*out` is NUL-terminated and the
 * caller's to free with humus_string_free(); `*len` (may be NULL) excludes the NUL. Any thread, with no
 * thread changing `s`. */
HUMUS_API humus_status humus_settings_to_json(const humus_settings *s, char **out, size_t *len,
                                              humus_error **err);
/* Frees a string the library returned; NULL is accepted. A string is no handle: only one this library
 * returned, and only once. */
HUMUS_API void humus_string_free(char *str);

/* ==== Callbacks: classifier ====================================================================== */

/* What an attempt's result means (docs/retries.md §5). retry_after_ms 0 means "none"; negative is invalid. */
enum { HUMUS_RETRY_DONE = 1, HUMUS_RETRY_AGAIN = 2 };
enum { HUMUS_BREAKER_SUCCESS = 1, HUMUS_BREAKER_FAILURE = 2, HUMUS_BREAKER_IGNORED = 3 };
typedef struct humus_classification {
  int32_t retry;          /* HUMUS_RETRY_*; 0 is invalid */
  int32_t breaker;        /* HUMUS_BREAKER_*; 0 is invalid */
  int64_t retry_after_ms; /* the dependency's Retry-After, 0 for none */
} humus_classification;

/* One attempt as a classifier sees it. Borrowed for the duration of the callback: kept past it, it reads as
 * no attempt (the accessors' neutral values below, and HUMUS_E_MISUSE from humus_classify_*). */
typedef struct humus_attempt humus_attempt;
/* The attempt accessors never fail; a bad attempt reads "", 0, NULL or HUMUS_OK. Any thread, during the
 * callback. The request's method, e.g. "GET". */
HUMUS_API const char *humus_attempt_method(const humus_attempt *a);
/* The response status, or 0 when the attempt got no response. */
HUMUS_API int32_t humus_attempt_status(const humus_attempt *a);
/* A response header (case-insensitive name), or NULL if absent or no response. */
HUMUS_API const char *humus_attempt_header(const humus_attempt *a, const char *name);
/* The response's headers in order (0 when no response came), and header `i`'s name and value (NULL out of
 * range), for a caller that lists them (an attempt hook's `after`). */
HUMUS_API size_t humus_attempt_header_count(const humus_attempt *a);
HUMUS_API const char *humus_attempt_header_name(const humus_attempt *a, size_t i);
HUMUS_API const char *humus_attempt_header_value(const humus_attempt *a, size_t i);
/* The error kind when no response came (HUMUS_E_CONNECT, HUMUS_E_TIMEOUT, ...), else HUMUS_OK. */
HUMUS_API humus_status humus_attempt_error(const humus_attempt *a);
/* The error's message, or "" when there is none. */
HUMUS_API const char *humus_attempt_error_message(const humus_attempt *a);
/* 1 for the first attempt of a request. */
HUMUS_API int32_t humus_attempt_number(const humus_attempt *a);

/* The default classifier (docs/retries.md §5.3), for a custom one to delegate to. HUMUS_E_MISUSE when `a` is not a
 * live attempt, HUMUS_E_INVALID_ARGUMENT for out NULL. No err: those statuses say everything. Any thread. */
HUMUS_API humus_status humus_classify_default(const humus_attempt *a, humus_classification *out);
/* A named preset: "humus" (the default), "jfast", "strict" (docs/retries.md §5.5). HUMUS_E_INVALID_ARGUMENT for an
 * unknown name (or NULL preset or out), HUMUS_E_MISUSE as humus_classify_default. No err: the caller has the
 * name it passed, and the statuses say everything else. Any thread. */
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
 * is NULL (docs/settings.md §3.3); HUMUS_E_INVALID_ARGUMENT naming humus_classifier for version 0 or newer than
 * HUMUS_CLASSIFIER_VERSION; HUMUS_E_MISUSE for a bad `s`. On failure `destroy` is not called: the caller
 * keeps user_data. Not concurrently on one settings. */
HUMUS_API humus_status humus_settings_set_classifier(humus_settings *s, const humus_classifier *classifier,
                                                     humus_error **err);
/* Example: bindings/c/examples/classify.c. The table may also come from a plugin the settings JSON names
 * ("Callbacks: plugins" below), which also replaces a plugin named before: the last one set wins. */

/* ==== Callbacks: attempt hooks =================================================================== */

/* Code run around every attempt (docs/retries.md §6.7): `before` just before an attempt goes to the transport,
 * `after` once it is back, before the classifier sees it. For a caller's own headers per attempt (a signature,
 * a fresh token), logging or counting attempts; not for deciding retries (that is the classifier's). */

/* One attempt's request as `before` sees it. Borrowed for the duration of the callback: kept past it, it
 * reads as no request (the accessors' neutral values below, and HUMUS_E_MISUSE from
 * humus_attempt_request_set_header). Not concurrently with humus_attempt_request_set_header on it. */
typedef struct humus_attempt_request humus_attempt_request;
/* The accessors never fail; a bad request reads "", 0 or NULL. During the callback. The method, e.g. "GET". */
HUMUS_API const char *humus_attempt_request_method(const humus_attempt_request *r);
/* The full URL of this attempt (a redirect hop's own). */
HUMUS_API const char *humus_attempt_request_url(const humus_attempt_request *r);
/* 1 for the first attempt of a request (a redirect hop starts again at 1, as humus_attempt_number). */
HUMUS_API int32_t humus_attempt_request_number(const humus_attempt_request *r);
/* The headers this attempt is to send, in order (configured, context and the request's own; the transport
 * adds Host, Content-Length and the like, and traceparent is set after `before` when a span sink is set). */
HUMUS_API size_t humus_attempt_request_header_count(const humus_attempt_request *r);
/* Header `i` (< humus_attempt_request_header_count): its name and value, or NULL out of range. Valid until
 * the callback returns or humus_attempt_request_set_header is called. */
HUMUS_API const char *humus_attempt_request_header_name(const humus_attempt_request *r, size_t i);
HUMUS_API const char *humus_attempt_request_header_value(const humus_attempt_request *r, size_t i);
/* Adds a header to this attempt, replacing every header of that name (case-insensitively); the next
 * attempt starts again from the call's own headers. Checked as humus_request_set_header is, and a header
 * the client owns (Host, Content-Length, Transfer-Encoding, Connection, ...) is refused too:
 * HUMUS_E_INVALID_ARGUMENT naming the header; HUMUS_E_MISUSE when `r` is not a live attempt request. Only from
 * the `before` callback that received `r`. */
HUMUS_API humus_status humus_attempt_request_set_header(humus_attempt_request *r, const char *name,
                                                        const char *value, humus_error **err);

#define HUMUS_ATTEMPT_HOOKS_VERSION 1
/* Hooks around every attempt. Both run on the thread that drives the attempt (the caller's for
 * humus_client_do / humus_client_open, the event-loop thread for humus_client_submit), possibly several at
 * once for different calls: they must be thread-safe, and must not block (on the loop thread they hold up
 * every call of the runtime). `before` runs for every attempt the breaker and the bulkhead let go, each
 * redirect hop's included, just before it is sent; it returns HUMUS_OK to send it, or any other status to
 * end the call with HUMUS_E_CALLBACK naming the hook and that status: the attempt is not sent, the breaker
 * gets no verdict (its permit is given back), no budget is charged, no retry follows (a binding keeps its
 * exception and re-raises it). `after` runs once per attempt that reached the transport, with the view a
 * classifier gets (status and headers, or the error), before the classifier. Either may be NULL, not both. */
typedef struct humus_attempt_hooks {
  uint32_t version; /* HUMUS_ATTEMPT_HOOKS_VERSION */
  void *user_data;
  humus_status (*before)(void *user_data, humus_attempt_request *request);
  void (*after)(void *user_data, const humus_attempt *attempt);
  void (*destroy)(void *user_data); /* optional; called once when no client, settings, request or call uses it */
} humus_attempt_hooks;
#define HUMUS_ATTEMPT_HOOKS_INIT {HUMUS_ATTEMPT_HOOKS_VERSION, NULL, NULL, NULL, NULL}

/* Replaces the attempt hooks of `s`, for every call of a client made from them. The table is copied; copies
 * of the settings (humus_settings_clone, the client's own) share it. HUMUS_E_PROGRAM when `hooks` is NULL or
 * both `before` and `after` are; HUMUS_E_INVALID_ARGUMENT naming humus_attempt_hooks for version 0 or newer
 * than HUMUS_ATTEMPT_HOOKS_VERSION; HUMUS_E_MISUSE for a bad `s`. On failure `destroy` is not called: the
 * caller keeps user_data. Not concurrently on one settings. */
HUMUS_API humus_status humus_settings_set_attempt_hooks(humus_settings *s, const humus_attempt_hooks *hooks,
                                                        humus_error **err);
/* The same for one request: its calls run these after the settings' hooks (for a binding whose hooks belong
 * to a call, not a client). Replaces hooks set on `r` before; calls already made with `r` keep theirs. The
 * statuses of humus_settings_set_attempt_hooks, HUMUS_E_MISUSE for a bad `r`. Not concurrently on one
 * request. (Spelt with struct humus_request because the Request section comes later: it is humus_request.) */
struct humus_request;
HUMUS_API humus_status humus_request_set_attempt_hooks(struct humus_request *r, const humus_attempt_hooks *hooks,
                                                       humus_error **err);

/* ==== Callbacks: breaker policy ================================================================== */

/* Counts a breaker policy sees (docs/breaker.md §9.3): since the state began, plus the last `window` results. Handed to
 * callbacks by pointer (version HUMUS_BREAKER_COUNTS_VERSION of the library: an older reader reads its
 * prefix); filled in by humus_client_breaker_counts up to the version its caller set. */
typedef struct humus_breaker_counts {
  uint32_t version;              /* HUMUS_BREAKER_COUNTS_VERSION; set by the caller of humus_client_breaker_counts */
  int32_t state;                 /* HUMUS_CIRCUIT_* of the state these counts belong to */
  uint64_t successes;
  uint64_t failures;
  uint64_t consecutive_successes;
  uint64_t consecutive_failures;
  uint64_t timed_out_probes;
  uint32_t window_results;       /* results in the window, at most breaker.window */
  uint32_t window_failures;      /* failures among them */
  /* Version 2: results whose attempt took longer than breaker.slow_call_duration (docs/breaker.md §9.3a), be
   * they successes or failures; always 0 while that setting is null. */
  uint64_t slow_results;         /* since the state began */
  uint32_t window_slow;          /* slow results in the window */
} humus_breaker_counts;
#define HUMUS_BREAKER_COUNTS_VERSION 2
#define HUMUS_BREAKER_COUNTS_INIT {HUMUS_BREAKER_COUNTS_VERSION, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}

enum { HUMUS_CIRCUIT_CLOSED = 0, HUMUS_CIRCUIT_OPEN = 1, HUMUS_CIRCUIT_HALF_OPEN = 2 };
/* What a probe policy decides in half-open. */
enum { HUMUS_PROBE_CONTINUE = 0, HUMUS_PROBE_CLOSE = 1, HUMUS_PROBE_REOPEN = 2 };

#define HUMUS_BREAKER_POLICY_VERSION 1
/* A custom breaker policy. Both callbacks run under the breaker's lock on the thread that delivers a result:
 * they must be fast, thread-safe, and must not call the client. A status other than HUMUS_OK counts the
 * result as a failure, leaves the breaker consistent, and ends the call with HUMUS_E_CALLBACK (no retry). */
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
 * objects). The table is copied. HUMUS_E_PROGRAM when `policy`, `trip` or `probe` is NULL;
 * HUMUS_E_INVALID_ARGUMENT naming humus_breaker_policy for version 0 or newer than
 * HUMUS_BREAKER_POLICY_VERSION; HUMUS_E_MISUSE for a bad `s`. On failure `destroy` is not called. Not
 * concurrently on one settings. */
HUMUS_API humus_status humus_settings_set_breaker_policy(humus_settings *s, const humus_breaker_policy *policy,
                                                         humus_error **err);

/* ==== Callbacks: plugins ========================================================================= */

/* A classifier or breaker policy compiled once as a shared object and named in the settings
 * (docs/retries.md §5.4a), so every language and the CLI run the same rule with no callback into Python, Go
 * or Rust:
 *   "classify":       {"plugin": "/abs/path.so", "symbol": "NAME", "config": {...}}
 *   "breaker_policy": {"plugin": "/abs/path.so", "symbol": "NAME", "config": {...}}
 * humus_settings_from_json (and humus_settings_check_field, and the upstreams document) opens the path with
 * dlopen, once per path in the process, and keeps it open while any settings or client made from it lives;
 * looks up NAME, calls it with the config object as JSON text (NUL-terminated; "{}" when not given), and
 * checks the table it filled exactly as humus_settings_set_classifier / _set_breaker_policy do. The library
 * owns the table from then on: its destroy runs once, when the last settings or client using it is freed
 * (also when the table is refused, if its version is known). A file that cannot be opened is HUMUS_E_CONFIG
 * naming "classify.plugin" (or "breaker_policy.plugin") with the loader's message; a missing symbol, an entry
 * point that fails (its error's message, and its fields under "classify.config.") or a refused table names
 * "classify.symbol". The plugin is not linked with libhumus_http: it calls the humus_* functions of the
 * library that loaded it, whose symbols are made global (RTLD_GLOBAL) when the first plugin is loaded.
 * The entry point may run on several threads at once (settings loaded concurrently); the callbacks follow
 * the tables' own rules. A plugin is code running in your process: name only paths your service's own
 * configuration names (SECURITY.md). bindings/c/examples/retry_409_plugin.c is an example of both. */
typedef humus_status (*humus_classifier_plugin_entry)(const char *config_json, size_t config_len,
                                                      humus_classifier *out, humus_error **err);
typedef humus_status (*humus_breaker_policy_plugin_entry)(const char *config_json, size_t config_len,
                                                          humus_breaker_policy *out, humus_error **err);

/* ==== Runtime ==================================================================================== */

/* Process-wide machinery shared by clients (docs/README.md §1): the clock, name overrides, the mock transport. */
typedef struct humus_runtime humus_runtime;

/* Options (JSON; NULL or empty for the defaults): {"resolve": {"host:port": "address:port"}, "faults": bool,
 * "clock": "real" | "virtual", "seed": n, "loop": "thread" | "caller"}. "loop": "caller" gives the runtime's
 * event loop no thread: the caller drives its asynchronous calls with humus_runtime_loop_fd and
 * humus_runtime_loop_run (a real clock only). "resolve" sends a name's connections to a local address while
 * TLS still verifies the name (docs/transport.md §10.6). A virtual clock advances on its own whenever every call in flight
 * waits only on timers (docs/testing-kit.md §16.1); it needs the mock transport; "seed" fixes its random draws.
 * "faults": true turns failure injection on (docs/failure-injection.md §14): a call whose baggage (call context or its own
 * baggage header) carries the member humus.fault=<point>=<action>[@<probability>]|… has its attempts to the
 * point "http:<host>:<port>" of its client fail as a lost connection ("abort"), wait before they are sent,
 * within attempt_timeout ("delay:<duration>"), or answered with an empty synthetic response
 * ("status:<code>"), each with the probability given (default 1, drawn from the runtime's random source).
 * These are real outcomes to the client: classified, retried, counted. The member is removed from the
 * baggage sent unless the setting forward_scenario is true; a member that cannot be read fails the call with
 * HUMUS_E_INVALID_ARGUMENT naming "baggage". With faults off (the default) baggage is neither read nor changed.
 * HUMUS_E_CONFIG naming every bad key. Any thread. */
HUMUS_API humus_status humus_runtime_new(const char *options_json, size_t len, humus_runtime **out,
                                         humus_error **err);
/* Frees a runtime; NULL and a freed runtime are ignored. Every client built from it must have been freed
 * first. Not concurrently with any other use of the runtime. */
HUMUS_API void humus_runtime_free(humus_runtime *rt);
/* Moves a virtual clock forward by `ms` (>= 0), waking the waits that come due. HUMUS_E_MISUSE on a real
 * clock or a bad `rt`. Any thread. */
HUMUS_API humus_status humus_runtime_advance_ms(humus_runtime *rt, int64_t ms, humus_error **err);
/* Milliseconds the runtime's clock has advanced since the runtime was made (virtual or real); -1 when `rt`
 * is not a live runtime. Any thread. */
HUMUS_API int64_t humus_runtime_elapsed_ms(humus_runtime *rt);

/* A caller-driven event loop ("loop": "caller"; docs/bindings.md §17.1). The asynchronous calls of the
 * runtime's clients (humus_client_submit, humus_client_submit_open, humus_response_read_async) then run on
 * whichever thread calls humus_runtime_loop_run, and their callbacks run inside it: a binding with a poller of
 * its own (Go's netpoller) waits there for the loop's sockets, timers and posted work, with no thread of the
 * library between it and its calls. Blocking calls are unchanged (they run on their callers' threads).
 * Functions that wait for the loop (humus_response_close, humus_client_free with calls in flight) drive it
 * themselves while they wait. */
/* A new descriptor (nonblocking, close-on-exec; the caller closes it) that polls readable whenever
 * humus_runtime_loop_run has something to do, except timers. Watch it edge- or level-triggered.
 * HUMUS_E_MISUSE when `rt` is not a live runtime or its loop is not "caller"; HUMUS_E_RESOURCE when no
 * descriptor is left. Any thread. */
HUMUS_API humus_status humus_runtime_loop_fd(humus_runtime *rt, int *fd, humus_error **err);
/* Runs what is ready — posted work, due timers, ready sockets — until nothing is, without waiting for I/O,
 * and sets *next_us to the microseconds until the next timer (-1: none; 0: call again at once). Call it when
 * the descriptor polls readable and when *next_us has passed. One thread at a time: a second caller waits
 * for the first. Not from inside one of the runtime's callbacks (HUMUS_E_MISUSE). HUMUS_E_MISUSE as
 * humus_runtime_loop_fd. Any thread. */
HUMUS_API humus_status humus_runtime_loop_run(humus_runtime *rt, int64_t *next_us, humus_error **err);

/* ==== Client ===================================================================================== */

/* One client per dependency (docs/README.md §1): its connections, breaker, retry budget and bulkhead. Thread-safe:
 * every function on a client may be called from any thread at once, except humus_client_free. */
typedef struct humus_client humus_client;

/* Builds a client; `s` is copied (callbacks shared). Rules across fields fail with HUMUS_E_PROGRAM naming the
 * fields (docs/settings.md §3.2); an unreadable TLS file with HUMUS_E_CONFIG naming its key; a virtual clock without a
 * mock transport with HUMUS_E_MISUSE. Any thread. */
HUMUS_API humus_status humus_client_new(humus_runtime *rt, const humus_settings *s, humus_client **out,
                                        humus_error **err);
/* Frees a client; NULL, a freed client and a client of an upstreams registry are ignored. Asynchronous calls
 * still in flight are cancelled and this returns after each has delivered its outcome. Called from inside a
 * callback (on the event-loop thread), the free is completed on that thread once those calls are done. No
 * blocking call may be in flight. */
HUMUS_API void humus_client_free(humus_client *c);
/* The breaker's state now (HUMUS_CIRCUIT_*), after any lazy open → half-open advance. HUMUS_E_MISUSE for a
 * bad `c`, HUMUS_E_INVALID_ARGUMENT for state NULL. No err: the signature is pinned (outside callers call it), and
 * those statuses say everything. Any thread. */
HUMUS_API humus_status humus_client_breaker_state(humus_client *c, int32_t *state);

/* The breaker's counts now (docs/breaker.md §9.3), after any lazy advance. The caller sets `counts->version` (start
 * from HUMUS_BREAKER_COUNTS_INIT); the library writes the members of that version only, so a caller built
 * against an older, smaller struct is safe. HUMUS_E_MISUSE for a bad `c`; HUMUS_E_INVALID_ARGUMENT for counts
 * NULL or its version 0 or newer than HUMUS_BREAKER_COUNTS_VERSION. No err: those statuses say everything.
 * Any thread. */
HUMUS_API humus_status humus_client_breaker_counts(humus_client *c, humus_breaker_counts *counts);
/* The retry budget's balance (docs/retries.md §6.4): tokens for the token bucket, retries still allowed in the window
 * for the ratio policy. HUMUS_E_MISUSE for a bad `c`, HUMUS_E_INVALID_ARGUMENT for tokens NULL. No err:
 * those statuses say everything. Any thread. */
HUMUS_API humus_status humus_client_budget_tokens(humus_client *c, double *tokens);
/* The bulkhead's limit now (docs/bulkhead.md §11): bulkhead.max_concurrent for a fixed bulkhead; for an adaptive one
 * the limit its algorithm last set, within bulkhead.min..bulkhead.max (§11.1). HUMUS_E_MISUSE for a bad `c`,
 * HUMUS_E_INVALID_ARGUMENT for limit NULL. No err: those statuses say everything. Any thread. */
HUMUS_API humus_status humus_client_bulkhead_limit(humus_client *c, uint32_t *limit);

/* ==== Request ==================================================================================== */

/* One call's request. Not thread-safe: build it on one thread; humus_client_do only reads it, so one request
 * may then be sent by several threads at once. */
typedef struct humus_request humus_request;

/* `method` is an RFC 9110 token, case-sensitive ("GET"); `url` absolute http/https. HUMUS_E_INVALID_ARGUMENT
 * naming "method" or "url". The origin is checked when the call is made (HUMUS_E_CROSS_ORIGIN). */
HUMUS_API humus_status humus_request_new(const char *method, const char *url, humus_request **out,
                                         humus_error **err);
/* Adds a header (repeat for several values). An invalid name or a value with CR, LF or NUL is refused with
 * HUMUS_E_INVALID_ARGUMENT naming the header (docs/transport.md §10.5). */
HUMUS_API humus_status humus_request_set_header(humus_request *r, const char *name, const char *value,
                                                humus_error **err);
/* Sends no header `name` (case-insensitive) unless one is set after this call: removes those set before, and
 * leaves out the ones the client would add itself — configured in the settings, from the call context, per
 * attempt (a span's traceparent, deadline_header) — and libcurl's own (Accept, User-Agent, Accept-Encoding; no
 * Accept-Encoding asked for: the body comes as sent, not decoded). A header of the name set afterwards is sent,
 * so curl's `-H 'Name:'` is this call, and its `-H 'Name;'` (an empty value) is humus_request_set_header with
 * "" (docs/transport.md §10.5). The names a caller may not set (Host, the framing and connection headers) may
 * not be removed either: HUMUS_E_INVALID_ARGUMENT naming the header, as humus_request_set_header refuses them;
 * HUMUS_E_MISUSE for a bad `r`, HUMUS_E_INVALID_ARGUMENT for name NULL. Not concurrently on one request. */
HUMUS_API humus_status humus_request_remove_header(humus_request *r, const char *name, humus_error **err);
/* Sets the body; the bytes are copied, so every attempt can replay them. HUMUS_E_MISUSE for a bad `r`,
 * HUMUS_E_INVALID_ARGUMENT for data NULL with len > 0. No err: the signature is pinned (outside callers call it),
 * and those statuses say everything. Not concurrently on one request. */
HUMUS_API humus_status humus_request_set_body(humus_request *r, const void *data, size_t len);
/* A request body the caller streams (docs/bodies.md §7) instead of one copied in. `read` fills at most `cap` bytes of
 * `buf` and sets *n (0: the end); any status but HUMUS_OK fails the attempt with HUMUS_E_CALLBACK. `rewind`
 * goes back to the first byte before another attempt (or libcurl's own resend); NULL makes the body not
 * replayable, so the call makes exactly one attempt whatever its method or retry mode. `destroy` (optional)
 * runs exactly once, when the request and every call sending it no longer need user_data. The callbacks
 * run on the thread that drives the attempt (the caller's for humus_client_do / humus_client_open, the
 * event-loop thread for humus_client_submit), one at a time: a request with a reader is sent by one call at
 * a time, and a reader without rewind serves one call (a second gets HUMUS_E_MISUSE). */
#define HUMUS_BODY_READER_VERSION 1
typedef struct humus_body_reader {
  uint32_t version; /* HUMUS_BODY_READER_VERSION */
  void *user_data;
  int64_t length;   /* bytes the body holds, or -1 when unknown (sent chunked on HTTP/1.1) */
  humus_status (*read)(void *user_data, void *buf, size_t cap, size_t *n);
  humus_status (*rewind)(void *user_data); /* NULL: not replayable */
  void (*destroy)(void *user_data);        /* optional */
} humus_body_reader;
#define HUMUS_BODY_READER_INIT {HUMUS_BODY_READER_VERSION, NULL, -1, NULL, NULL, NULL}

/* Makes `reader` the request's body (replacing a body set before; humus_request_set_body replaces it in
 * turn). The table is copied. HUMUS_E_MISUSE for a bad `r`; HUMUS_E_INVALID_ARGUMENT for reader NULL, a
 * version 0 or newer than HUMUS_BODY_READER_VERSION (naming humus_body_reader) or a length below -1;
 * HUMUS_E_PROGRAM when `read` is NULL. On failure `destroy` is not called. Not concurrently on one request. */
HUMUS_API humus_status humus_request_set_body_reader(humus_request *r, const humus_body_reader *reader,
                                                     humus_error **err);
/* Sets the Idempotency-Key header: the request becomes safe to send twice (docs/retries.md §4). */
HUMUS_API humus_status humus_request_set_idempotency_key(humus_request *r, const char *key, humus_error **err);

enum { HUMUS_RETRY_MODE_DEFAULT = 0, HUMUS_RETRY_MODE_FORBID = 1, HUMUS_RETRY_MODE_FORCE = 2 };
/* Per-call retry override (docs/retries.md §4): FORBID makes one attempt; FORCE vouches for a request the rules would
 * not retry (budget, deadline and breaker still apply). HUMUS_E_INVALID_ARGUMENT naming "retry" for another
 * value. Not concurrently on one request. */
HUMUS_API humus_status humus_request_set_retry(humus_request *r, int32_t mode, humus_error **err);
/* Whether the call follows redirects within the origin (docs/origin.md §2): 1, the default, follows up to 10;
 * 0 returns the first 3xx as the response, for the caller to decide (as Go's CheckRedirect does).
 * HUMUS_E_INVALID_ARGUMENT naming "follow_redirects" for another value. Not concurrently on one request. */
HUMUS_API humus_status humus_request_set_follow_redirects(humus_request *r, int32_t follow, humus_error **err);
/* The caller's bound on the whole call, in ms (> 0, <= 1 h); the call ends at the earlier of it and
 * `timeout`. HUMUS_E_INVALID_ARGUMENT naming "timeout" out of range. Not concurrently on one request. */
HUMUS_API humus_status humus_request_set_timeout_ms(humus_request *r, int64_t ms, humus_error **err);
/* The call context (docs/telemetry.md §12): what the request being served carries, passed on to the dependency — its
 * traceparent, tracestate and baggage, its X-Request-ID (sent only when given, never invented), and its
 * Authorization (sent only with the setting forward_authorization, and only a Bearer token). NULL or ""
 * leaves a part unset. Configured headers come first, these next, the request's own headers win. A value
 * with CR, LF or NUL is refused (HUMUS_E_INVALID_ARGUMENT naming it). Not concurrently on one request. */
HUMUS_API humus_status humus_request_set_context(humus_request *r, const char *traceparent, const char *tracestate,
                                                 const char *baggage, const char *request_id,
                                                 const char *authorization, humus_error **err);
/* Frees a request; NULL and a freed request are ignored. Calls made with it go on (they copied it). */
HUMUS_API void humus_request_free(humus_request *r);

/* ==== Cancel tokens ============================================================================== */

/* Ends calls early: the caller gave up. Thread-safe: trigger from any thread, at any time. */
typedef struct humus_cancel humus_cancel;
/* Calls made with `r` from now on — blocking (humus_client_do, humus_client_open and the reads of its body)
 * and asynchronous (humus_client_submit) — are cancelled by `c` (NULL removes it). The request and every
 * call made with it hold the token, so `c` may be freed before them. HUMUS_E_MISUSE for a bad `r` or `c`. No
 * err: that status says everything. Not concurrently on one request. */
HUMUS_API humus_status humus_request_set_cancel(humus_request *r, humus_cancel *c);
/* A new token. HUMUS_E_INVALID_ARGUMENT for out NULL, HUMUS_E_NO_MEMORY. No err: those statuses say
 * everything. Any thread. */
HUMUS_API humus_status humus_cancel_new(humus_cancel **out);
/* Cancels every call made with this token, now and later; nothing for a bad `c`. Any thread. */
HUMUS_API void humus_cancel_trigger(humus_cancel *c);
/* Frees the caller's handle on the token; NULL and a freed token are ignored. Requests and calls holding
 * the token keep it. Any thread. */
HUMUS_API void humus_cancel_free(humus_cancel *c);

/* ==== Calls and responses ======================================================================== */

typedef struct humus_response humus_response;

/* Makes one call on the calling thread: every attempt, wait and redirect (docs/retries.md §6), cancelled through the
 * request's token if it has one (humus_request_set_cancel).
 * HUMUS_OK with a response whatever its status (404, 500, the last 503: the caller decides, docs/retries.md §6.6);
 * otherwise the call got no response: HUMUS_E_REJECTED (breaker open; humus_error_retry_after_ms),
 * HUMUS_E_BULKHEAD_FULL, HUMUS_E_TIMEOUT, HUMUS_E_CANCELLED, HUMUS_E_CONNECT, HUMUS_E_RESOLVE,
 * HUMUS_E_CONNECTION_LOST, HUMUS_E_PROTOCOL, HUMUS_E_STREAM_REFUSED, HUMUS_E_TLS, HUMUS_E_TLS_CLIENT_CERT,
 * HUMUS_E_CROSS_ORIGIN, HUMUS_E_INVALID_ARGUMENT, HUMUS_E_CALLBACK, HUMUS_E_PROGRAM, and HUMUS_E_TOO_LARGE
 * when the body (decoded) passed max_response_body — not retried, no breaker verdict, and never more than
 * that limit in memory. The error carries the attempts made. Any thread.
 *
 * Bodies are decoded: the client asks for every coding this libcurl decodes (gzip, deflate, br, zstd) and
 * hands over the decoded bytes, with Content-Encoding and Content-Length removed from the headers (as Go's
 * Transport does). A request that sets its own Accept-Encoding (or Range), a HEAD, or the setting
 * decompress = false gets the bytes as sent. */
HUMUS_API humus_status humus_client_do(humus_client *c, const humus_request *r, humus_response **out,
                                       humus_error **err);

/* As humus_client_do — every attempt, wait and redirect; a response replaced by a retry has its body read
 * (up to 64 KiB) and closed first — but returns once the final response's headers are in, its body not read
 * yet: read it with humus_response_read. The call is not over until the body is read to its end or the
 * response freed: that is when the breaker counts its result (and its bulkhead slot and connection are
 * given back). The call's `timeout` bounds the reads too. The response must be freed before its client.
 * Statuses as humus_client_do. Any thread. */
HUMUS_API humus_status humus_client_open(humus_client *c, const humus_request *r, humus_response **out,
                                         humus_error **err);

/* The next bytes of the body: blocks until at least one byte (at most `cap`) is in `buf`, and sets *n; *n
 * == 0 at the end, which counts the result in the breaker as it was classified. The transfer is paused
 * while the caller does not read, so memory stays at one buffer whatever the body's size. A failure
 * mid-body — HUMUS_E_CONNECTION_LOST, HUMUS_E_TIMEOUT once the call's timeout passed, HUMUS_E_CANCELLED
 * through the request's cancel token — counts a breaker failure (nothing when cancelled), and every later
 * read fails the same way. Works on a response of humus_client_do too (reading its buffered body).
 * HUMUS_E_MISUSE for a bad `resp`; HUMUS_E_INVALID_ARGUMENT for buf or n NULL or cap 0. Not concurrently on
 * one response. */
HUMUS_API humus_status humus_response_read(humus_response *resp, void *buf, size_t cap, size_t *n,
                                           humus_error **err);
/* As humus_response_read, but never waits for the network: for a caller with a poller of its own (Go's
 * netpoller), so that no thread of its waits inside the library for a slow body. *n > 0: bytes read.
 * *n == 0 and *wait_fd == -1: the end. *n == 0 and *wait_fd >= 0: nothing has come yet — wait until the
 * descriptor polls readable, or at most *wait_ms milliseconds (the call's timeout; -1: no bound), then call
 * again. The descriptor is the transfer's own socket, lent: watch it, never read, write or close it; it may
 * differ between calls. A body that a wait on one socket cannot serve (a mock transport; a transfer that
 * must write first) is waited for inside the call, as humus_response_read does. A cancel token triggered
 * while the caller waits is seen by the next call. Errors as humus_response_read, and
 * HUMUS_E_INVALID_ARGUMENT for wait_fd or wait_ms NULL. Not concurrently on one response. */
HUMUS_API humus_status humus_response_read_ready(humus_response *resp, void *buf, size_t cap, size_t *n,
                                                 int *wait_fd, int64_t *wait_ms, humus_error **err);
/* Example of humus_client_open, humus_response_read and a humus_body_reader: bindings/c/examples/stream.c. */

/* Accessors: any thread, on a response no thread frees. Strings live as long as the response. A bad `resp`
 * reads as status 0, attempts 0, no header (NULL, count 0) and "" for strings. */
HUMUS_API int32_t humus_response_status(const humus_response *resp);
HUMUS_API int32_t humus_response_attempts(const humus_response *resp);
/* The call's decision trace, as humus_error_trace: one record per attempt, the response's own last. Rendered
 * on demand: a call whose trace nobody reads pays only for recording it. Errors: HUMUS_E_INVALID_ARGUMENT for
 * json NULL, HUMUS_E_MISUSE for a bad `resp`, HUMUS_E_NO_MEMORY, each also in *err when err is not NULL. */
HUMUS_API humus_status humus_response_trace(const humus_response *r, char **json, size_t *len, humus_error **err);
/* The first value of a header (case-insensitive), or NULL if absent. */
HUMUS_API const char *humus_response_header(const humus_response *resp, const char *name);
HUMUS_API size_t humus_response_header_count(const humus_response *resp);
/* Header `i` in the order received; HUMUS_E_INVALID_ARGUMENT when out of range or name/value NULL,
 * HUMUS_E_MISUSE for a bad `resp`. No err: those statuses say everything. */
HUMUS_API humus_status humus_response_header_at(const humus_response *resp, size_t i, const char **name,
                                                const char **value);
/* The whole body (bytes, not NUL-terminated; *data may be NULL when len is 0); after humus_response_read,
 * the bytes not read yet. A response of humus_client_open is read to its end first, bounded by
 * max_response_body: past it HUMUS_E_TOO_LARGE (no breaker verdict), or a read's failure. Not concurrently
 * on one response. */
HUMUS_API humus_status humus_response_body(humus_response *resp, const void **data, size_t *len,
                                           humus_error **err);
/* "1.1" or "2". */
HUMUS_API const char *humus_response_http_version(const humus_response *resp);
/* The reason phrase of the status line as the server sent it ("OK", "Not Found", a custom one), "" when it
 * sent none and always for HTTP/2, which has none. Bounded and made safe (docs/transport.md §10.7): at most
 * its first 256 bytes, each control byte (CR, LF, NUL, HTAB, any other C0, DEL) a space; other bytes as sent,
 * so not necessarily UTF-8. */
HUMUS_API const char *humus_response_reason(const humus_response *resp);
/* The URL of the last request, after redirects within the origin. */
HUMUS_API const char *humus_response_url(const humus_response *resp);
/* The redirects the call followed, oldest first (0 for a bad `resp`); redirect `i` is the 3xx status and the
 * URL of the request that got it (the string lives as long as the response). HUMUS_E_INVALID_ARGUMENT when `i`
 * is out of range or status/url NULL, HUMUS_E_MISUSE for a bad `resp`. No err: those statuses say everything. */
HUMUS_API size_t humus_response_redirect_count(const humus_response *resp);
HUMUS_API humus_status humus_response_redirect_at(const humus_response *resp, size_t i, int32_t *status,
                                                  const char **url);
/* The rest of redirect `i`'s head, as the final response's accessors give it: its reason phrase (as
 * humus_response_reason), its HTTP version ("1.1" or "2"), its headers in the order received (each bounded as
 * the final response's are, max_response_headers). A bad `resp` or `i` out of range reads as "" and count 0.
 * humus_response_redirect_header_at: header `j` of redirect `i`; HUMUS_E_INVALID_ARGUMENT naming "i" or "j"
 * when out of range, or for name/value NULL, HUMUS_E_MISUSE for a bad `resp`. No err: those statuses say
 * everything. Strings live as long as the response. Any thread, on a response no thread frees. */
HUMUS_API const char *humus_response_redirect_reason(const humus_response *resp, size_t i);
HUMUS_API const char *humus_response_redirect_http_version(const humus_response *resp, size_t i);
HUMUS_API size_t humus_response_redirect_header_count(const humus_response *resp, size_t i);
HUMUS_API humus_status humus_response_redirect_header_at(const humus_response *resp, size_t i, size_t j,
                                                         const char **name, const char **value);
/* Frees a response; NULL and a freed response are ignored. A response of humus_client_do is a plain value:
 * the breaker counted its attempt when it was classified, so it may outlive its client and runtime, and
 * freeing it counts nothing. A response of humus_client_open whose body was not read to its end is closed:
 * its connection is closed and the breaker counts the result as it was classified. One never freed holds a
 * half-open breaker's probe slot for at most breaker.probe_timeout. A response of humus_client_submit_open
 * is closed likewise, on the event-loop thread after the reads started before (a pending one completes
 * first with HUMUS_E_CANCELLED); the handle is invalid at once. A response of humus_client_submit, made on
 * the event-loop thread, is freed there too when freed on another thread while its runtime lives: its memory
 * goes back, soon after, to the thread that allocates the next responses. Any thread; not concurrently with
 * another function on the same response. */
HUMUS_API void humus_response_free(humus_response *resp);
/* humus_response_free that returns only once the body is closed and its result counted: for a response of
 * humus_client_submit_open it waits for the event loop to close it (the reads started before complete
 * first, as with humus_response_free), so a caller reading the breaker's counts next sees this result.
 * Called on the event-loop thread (from a callback), where it cannot wait, it is humus_response_free. The
 * caller must hold no lock that the runtime's callbacks take. Any thread; not concurrently with another
 * function on the same response. */
HUMUS_API void humus_response_close(humus_response *resp);

/* ==== Stepped calls ============================================================================= */

/* A call its caller drives one step at a time, for a binding with a poller of its own (Go's netpoller, tokio,
 * asyncio): no thread of the library runs it and no thread of the caller's waits inside the library for the
 * network, the bulkhead or a backoff. Each step runs the call's libcurl work on the calling thread, over a
 * connection of its own from the client's pool (a lane, as humus_client_open's), and says what to wait for
 * before the next one. Over HTTP/2 a stepped call's connection is its own too: calls that should share one
 * connection go through humus_client_submit. */
typedef struct humus_step humus_step;

/* What a step waits for (humus_step_advance's *wait_events). */
#define HUMUS_WAIT_READ 1  /* the descriptor polls readable */
#define HUMUS_WAIT_WRITE 2 /* the descriptor polls writable */

/* Starts a call of humus_client_open's, to be driven with humus_step_advance: every attempt, wait and redirect
 * and every rule of a blocking call (bulkhead, breaker, budget, attempt and call deadlines, the send guard,
 * body caps), cancelled through the request's token if it has one. Nothing is sent before the first advance.
 * `r` is read by each advance: it must not be changed or freed before the step is; the step must be freed
 * before its client. A client whose calls hedge, or whose runtime runs on a virtual clock, runs the whole
 * call inside the first advance, as humus_client_open. HUMUS_E_MISUSE for a bad c or r; HUMUS_E_INVALID_ARGUMENT for out NULL. Any thread. */
HUMUS_API humus_status humus_client_step_start(humus_client *c, const humus_request *r, humus_step **out,
                                               humus_error **err);

/* Runs the call on as far as it goes without waiting:
 * - HUMUS_OK with *out set: the final response's headers are in. It is humus_client_open's response (read
 *   its body with humus_response_read_ready or humus_response_read; free it before its client) and the step
 *   is spent: free it (before or after the response).
 * - HUMUS_OK with *out NULL: wait until *wait_fd polls for *wait_events — HUMUS_WAIT_READ, HUMUS_WAIT_WRITE,
 *   or both (either will do: a request body going out while an early answer may come) — or until *wait_ms
 *   milliseconds have passed, whichever comes first, then advance again; *wait_fd -1 (*wait_events 0): wait
 *   for the time alone (a backoff, a Retry-After); *wait_ms -1: no bound but the descriptor. Advancing earlier is harmless (the step
 *   says to wait again). The descriptor is lent: watch it, never read, write or close it; it may differ
 *   between steps (a socket of the attempt's, or the step's own wake-up for a bulkhead slot).
 * - any other status: the call ended without a response, as humus_client_open's would (same statuses, the
 *   attempts in the error); the step is spent: free it.
 * A cancel through the request's token while the caller waits is seen by the next advance: a binding ends its
 * wait when it triggers one. What one descriptor cannot name is waited for inside the advance, as
 * humus_client_open waits: libcurl waiting on several sockets at once (a connection to a name whose addresses
 * race), on its timer alone, or on a socket numbered FD_SETSIZE (1024) or above, which libcurl 7.88 cannot
 * report (a process with that many descriptors open). HUMUS_E_MISUSE for a bad or spent step;
 * HUMUS_E_INVALID_ARGUMENT for a NULL out or wait argument. Any thread, one advance at a time per step. */
HUMUS_API humus_status humus_step_advance(humus_step *s, humus_response **out, int *wait_fd, int *wait_events,
                                          int64_t *wait_ms, humus_error **err);

/* Frees the step. A call not over ends with nothing more sent: its attempt in flight is cut (its connection
 * closed), a wait for a bulkhead slot abandoned, and the attempt counts as cancelled. A response it returned
 * stays valid. NULL and a freed step are ignored. Any thread; not concurrently with an advance of the step. */
HUMUS_API void humus_step_free(humus_step *s);

/* ==== Asynchronous calls ======================================================================== */

/* A call in flight on the runtime's event loop (docs/bindings.md §17.1). */
typedef struct humus_call humus_call;

/* The outcome of an asynchronous call, delivered once on the runtime's event-loop thread: HUMUS_OK with
 * `resp`, or another status with `err` (as humus_client_do would return them). Both are the callback's to
 * free. It must not block: a humus_client_do made from it is refused with HUMUS_E_MISUSE. */
typedef void (*humus_call_done)(void *user_data, humus_status status, humus_response *resp, humus_error *err);

/* Starts the call and returns at once; the request is copied (free it whenever). Every rule of a blocking
 * call applies — bulkhead (its wait is a timer, no thread waits), breaker, retries, waits, deadline — and
 * concurrent calls share the client's connections (HTTP/2 multiplexes them on one). `call` (may be NULL)
 * receives a handle for humus_call_cancel, to free with humus_call_free. The request's cancel token
 * (humus_request_set_cancel) cancels it too, with the same outcome as humus_call_cancel; a token already
 * triggered ends it before anything is sent (HUMUS_E_CANCELLED, no attempt). HUMUS_E_MISUSE for a bad c or
 * r; HUMUS_E_INVALID_ARGUMENT when on_done is NULL. Any thread. */
HUMUS_API humus_status humus_client_submit(humus_client *c, const humus_request *r, humus_call_done on_done,
                                           void *user_data, humus_call **call, humus_error **err);
/* Example: bindings/c/examples/async.c. */
/* Cancels the call: it ends as soon as the event loop gets to it (HUMUS_E_CANCELLED, or the response
 * buffered before a retry). Nothing once it has ended — also after its client and runtime were freed: a
 * handle may outlive both — and nothing for a bad `call`. Any thread, including inside callbacks. */
HUMUS_API void humus_call_cancel(humus_call *call);
/* Releases the handle; the call itself goes on. NULL and a freed handle are ignored. Any thread. */
HUMUS_API void humus_call_free(humus_call *call);

/* Asynchronous streaming: asyncio, Rust futures and other event-loop runtimes read bodies with no thread
 * per call and no unbounded queue. humus_client_submit_open delivers the response once its headers are in;
 * its transfer then stays on the client's shared multi handle, paused (CURL_WRITEFUNC_PAUSE) while nobody
 * reads. Each humus_response_read_async lends the caller's buffer and unpauses the transfer on the
 * event-loop thread; libcurl's write callback fills that buffer and the transfer pauses again once it is
 * full, or once one write more is kept between reads. So at most one caller buffer and one libcurl write
 * are held per body. on_read runs on the loop thread with the bytes in place; the binding's runtime awaits
 * it (a future resolved through call_soon_threadsafe, a Waker), and freeing the response closes the body. */

/* Like humus_client_submit — every rule applies: bulkhead, breaker, attempts, waits, retries of a small body
 * read ahead (docs/bodies.md §7), redirects, the deadline, the request's cancel token — but `on_headers`
 * (humus_call_done's shape and rules) runs once the final response's headers are in, its body not read
 * yet: read it with humus_response_read_async only (humus_response_read and humus_response_body refuse it
 * with HUMUS_E_MISUSE). Its result is counted as for humus_client_open's: when the body is read to the end
 * or the response freed (as classified), a failure mid-body counts a breaker failure unless the caller
 * cancelled, and a half-open probe's slot is held by the open body for at most probe_timeout. The call's
 * `timeout` bounds the body's reads too; the request's cancel token (not humus_call_cancel, which ends only
 * the call before its headers) cancels them. The response must be freed before its client. HUMUS_E_MISUSE
 * for a bad c or r; HUMUS_E_INVALID_ARGUMENT when on_headers is NULL. Any thread. */
HUMUS_API humus_status humus_client_submit_open(humus_client *c, const humus_request *r, humus_call_done on_headers,
                                                void *user_data, humus_call **call, humus_error **err);

/* The outcome of one humus_response_read_async, on the runtime's event-loop thread: HUMUS_OK with `n` bytes
 * in the lent buffer (n == 0: the body ended, and its result was counted), or another status with `err`
 * (the callback's to free). The buffer is the caller's again once it runs. It may start the next read and
 * free the response; it must not block. */
typedef void (*humus_read_done)(void *user_data, humus_status status, size_t n, humus_error *err);

/* Reads the next bytes of a body from humus_client_submit_open into `buf` (at most `cap` > 0), lent until
 * `on_read` runs — exactly once, on the event-loop thread, never before this returns HUMUS_OK (on any other
 * status it never runs). A failure mid-body: HUMUS_E_CONNECTION_LOST and the like, counted as a breaker
 * failure; HUMUS_E_TIMEOUT when the call's `timeout` passes, also while the read is pending;
 * HUMUS_E_CANCELLED when the request's cancel token fires, ignored by the breaker; every later read fails the
 * same way. Freeing the response while a read is pending: the read completes with HUMUS_E_CANCELLED, then
 * the body closes and counts its result as classified; the buffer stays lent until on_read ran.
 * HUMUS_E_MISUSE for a bad resp, a response not from humus_client_submit_open, or a read already pending
 * (one at a time); HUMUS_E_INVALID_ARGUMENT when buf or on_read is NULL or cap is 0. Any thread, not
 * concurrently with humus_response_free of the same response; from on_read too. */
HUMUS_API humus_status humus_response_read_async(humus_response *resp, void *buf, size_t cap,
                                                 humus_read_done on_read, void *user_data, humus_error **err);

/* Read ahead (docs/bodies.md §7): for a binding whose readers are its own tasks (goroutines, futures) and
 * should cross into the library only to copy bytes. The library keeps reading a body from
 * humus_client_submit_open on the event loop into a bounded ring of its own, one read in flight while the
 * ring has room; humus_response_take copies out of it and never waits. With nothing to copy it says
 * HUMUS_TOOK_WAIT, and `ready` then runs exactly once, when a take may find something (bytes, the end or the
 * failure). While a large body flows, a waiting reader is woken once half the ring is in rather than per
 * read; a short read (a trickle), the end, or humus_response_hurry wake it at once. Every rule of
 * humus_response_read_async holds: the result counted at the end or the free, the call's timeout, the
 * request's cancel token. */

/* Runs on the event-loop thread (or inside humus_response_hurry, on its caller's): a take of `resp` may now
 * find something. It must not block; it may call humus_response_take, not humus_response_free. */
typedef void (*humus_body_ready)(void *user_data, humus_response *resp);

/* A body whose Content-Length is under this many bytes is held whole by humus_response_read_ahead. */
#define HUMUS_READ_AHEAD_WHOLE (256 * 1024)

/* Starts reading resp's body ahead into a ring of `ring_bytes` (0: 64 KiB, 256 KiB for a Content-Length of
 * 1 MiB or more, the length and one byte for one under HUMUS_READ_AHEAD_WHOLE), never more than its
 * Content-Length and one byte. With `whole` not NULL, a body whose Content-Length is under
 * HUMUS_READ_AHEAD_WHOLE is held whole and *whole set to 1 (else 0): `ready` then also runs once the whole
 * body is in (or failed), with no take waiting, so a caller may hand the response on only then and a small
 * answer costs one wake-up. With `whole` NULL every body's bytes are told as they come. From here the body is
 * read with humus_response_take only (humus_response_read_async is HUMUS_E_MISUSE); humus_response_free and
 * humus_response_close end it as for humus_response_read_async, and `ready` never runs once
 * humus_response_close returned, or once humus_response_free's close ran on the loop.
 * HUMUS_E_MISUSE for a bad resp, one not from humus_client_submit_open, or one with a read pending or read
 * ahead already; HUMUS_E_INVALID_ARGUMENT when ready is NULL. Any thread; a response's `ready` may run
 * before this returns. */
HUMUS_API humus_status humus_response_read_ahead(humus_response *resp, size_t ring_bytes, humus_body_ready ready,
                                                 void *user_data, int *whole, humus_error **err);

/* What humus_response_take found. */
#define HUMUS_TOOK_BYTES 0 /* *n > 0 bytes copied */
#define HUMUS_TOOK_LAST 1  /* *n > 0 bytes copied, the last of a body that ended well: no take needed for the end */
#define HUMUS_TOOK_END 2   /* nothing copied: the body ended well (its result is counted) */
#define HUMUS_TOOK_WAIT 3  /* nothing copied yet: `ready` runs exactly once when a take may find something */
/* humus_response_take's flags. */
/* First discard what was read ahead: the caller cancelled. The takes then end with HUMUS_E_CANCELLED, also
 * for a body that had ended well (what was dropped is missing); its result stays counted as it was. */
#define HUMUS_TAKE_DROP 1

/* Copies up to `cap` bytes of a body read ahead into `buf` and sets *took; never waits, never runs
 * `ready`. HUMUS_OK, or the body's failure (HUMUS_E_CONNECTION_LOST, HUMUS_E_TIMEOUT, HUMUS_E_CANCELLED ...)
 * with *n 0, *took HUMUS_TOOK_END and `err`, as every later take reports it. HUMUS_E_MISUSE for a bad resp
 * or one not read ahead; HUMUS_E_INVALID_ARGUMENT when buf, n or took is NULL or cap is 0. Any thread, once
 * humus_response_read_ahead has returned (a `ready` may come before that); one take at a time per response,
 * not concurrently with its free. */
HUMUS_API humus_status humus_response_take(humus_response *resp, void *buf, size_t cap, uint32_t flags, size_t *n,
                                           int32_t *took, humus_error **err);

/* The reader waiting since HUMUS_TOOK_WAIT is done waiting for a batch (say, after half a millisecond):
 * what the ring holds, or the next bytes, wake it now. Its one `ready` still comes — perhaps already did,
 * perhaps inside this call, on this thread. Nothing for a bad resp or one not read ahead. Any thread. */
HUMUS_API void humus_response_hurry(humus_response *resp);

/* ==== Callbacks: log sink ======================================================================== */

/* One log record (docs/telemetry.md §13.3). Only two kinds exist: a circuit breaker's state change
 * (event "humus.circuit.state_change": one per change, docs/breaker.md §9.5) and an upstreams notice
 * (event "humus.upstreams.base_url_override"). Errors are returned, never logged. Borrowed: every pointer
 * lives for the duration of the sink's call. Version 2: the counts are behind a pointer (version 1, handed
 * only to a version 1 sink, embedded them by value, so they could never grow). */
typedef struct humus_log_record {
  uint32_t version;             /* HUMUS_LOG_RECORD_VERSION */
  const char *event;            /* "humus.circuit.state_change" or "humus.upstreams.base_url_override" */
  const char *message;          /* one line for people, e.g. "circuit for https://payments:8443: closed -> open (...)" */
  const char *server_address;   /* the origin's host */
  int32_t server_port;          /* the origin's port, the scheme's default filled in */
  int32_t previous_state;       /* HUMUS_CIRCUIT_* the breaker left; -1 when the record is no state change */
  int32_t new_state;            /* HUMUS_CIRCUIT_* it entered; -1 when the record is no state change */
  const humus_breaker_counts *counts; /* at the change: the state left, including the result that caused it;
                                         never NULL (all zero for a record that is no state change) */
  int64_t time_unix_ms;         /* when the change took effect, on the runtime's clock's calendar */
  const char *upstream;         /* the upstream's name for upstreams records, else "" */
} humus_log_record;
#define HUMUS_LOG_RECORD_VERSION 2

/* Version 2 of the sink reads humus_log_record version 2; a sink declaring version 1 keeps getting version
 * 1's record layout. */
#define HUMUS_LOG_SINK_VERSION 2
/* Receives log records. `record` runs on the thread whose call caused the change (a caller's thread or the
 * event-loop thread), possibly on several threads at once for different clients: it must be thread-safe and
 * fast, and must not free a client or the runtime. Records of one breaker never overlap and arrive in order. */
typedef struct humus_log_sink {
  uint32_t version; /* HUMUS_LOG_SINK_VERSION */
  void (*record)(void *user_data, const humus_log_record *record);
  void *user_data;
  void (*destroy)(void *user_data); /* optional; called once when the runtime no longer uses the sink */
} humus_log_sink;
#define HUMUS_LOG_SINK_INIT {HUMUS_LOG_SINK_VERSION, NULL, NULL, NULL}

/* Installs (or with NULL removes) the runtime's log sink; the table is copied and affects every client of the
 * runtime at once. The previous sink's destroy runs once no record is being delivered to it. HUMUS_E_PROGRAM
 * when `record` is NULL; HUMUS_E_INVALID_ARGUMENT naming humus_log_sink for version 0 or newer than
 * HUMUS_LOG_SINK_VERSION; HUMUS_E_MISUSE for a bad `rt` (destroy is then not called). Any thread. */
HUMUS_API humus_status humus_runtime_set_log_sink(humus_runtime *rt, const humus_log_sink *sink, humus_error **err);

/* ==== Callbacks: span sink ======================================================================= */

/* One attribute of a span: a string or an integer. */
enum { HUMUS_ATTRIBUTE_STRING = 1, HUMUS_ATTRIBUTE_INT = 2 };
typedef struct humus_span_attribute {
  const char *key;           /* an OpenTelemetry attribute name, e.g. "http.response.status_code" */
  int32_t type;              /* HUMUS_ATTRIBUTE_* */
  const char *string_value;  /* HUMUS_ATTRIBUTE_STRING; NULL otherwise */
  int64_t int_value;         /* HUMUS_ATTRIBUTE_INT; 0 otherwise */
} humus_span_attribute;

/* OpenTelemetry status codes of a span. */
enum { HUMUS_SPAN_STATUS_UNSET = 0, HUMUS_SPAN_STATUS_ERROR = 2 };

/* One attempt's span (docs/telemetry.md §13.1), always of kind CLIENT: one per attempt sent (each retry and each redirect
 * has its own) and one per attempt the breaker rejected, which ends as it starts with error.type "rejected".
 * Its parent is the span of the call context's traceparent (humus_request_set_context, or a traceparent
 * header of the request); without one, every attempt of the call is a root span of one new trace. The
 * traceparent the attempt sends carries exactly this trace_id and span_id.
 * Attributes, in this order: url.full, server.address, server.port, http.request.method,
 * http.response.status_code (when an answer came), network.protocol.version ("1.1" or "2", when an answer
 * came), http.request.resend_count (the attempts of the call before this one, when > 0), error.type (when
 * the attempt failed: the status code "503" for 4xx/5xx, else the lowercase status name: "timeout",
 * "connection_lost", "rejected", …), humus.hedge (1, on a hedged copy: docs/retries.md §6.8). Status ERROR
 * for a 4xx/5xx answer or none. Borrowed: every pointer lives
 * for the duration of the sink's call. */
typedef struct humus_span {
  uint32_t version;                        /* HUMUS_SPAN_VERSION */
  const char *name;                        /* the method, e.g. "GET" */
  const char *trace_id;                    /* 32 lowercase hex digits */
  const char *span_id;                     /* 16 lowercase hex digits */
  const char *parent_span_id;              /* 16 lowercase hex digits, or "" for a root span */
  const char *tracestate;                  /* the caller's tracestate passed on, or "" */
  uint8_t trace_flags;                     /* the caller's, or 01 (sampled) for a new trace */
  int64_t start_unix_ns;                   /* on the runtime's clock's calendar */
  int64_t end_unix_ns;
  int32_t status;                          /* HUMUS_SPAN_STATUS_* */
  size_t attribute_count;
  const humus_span_attribute *attributes;
} humus_span;
#define HUMUS_SPAN_VERSION 1

#define HUMUS_SPAN_SINK_VERSION 1
/* Receives every attempt's span when it ends, on the thread that ended it (a caller's thread or the
 * event-loop thread), possibly on several threads at once: it must be thread-safe and fast, and must not free
 * a client or the runtime. A call's spans arrive in the order of its attempts. */
typedef struct humus_span_sink {
  uint32_t version; /* HUMUS_SPAN_SINK_VERSION */
  void (*span)(void *user_data, const humus_span *span);
  void *user_data;
  void (*destroy)(void *user_data); /* optional; called once when the runtime no longer uses the sink */
} humus_span_sink;
#define HUMUS_SPAN_SINK_INIT {HUMUS_SPAN_SINK_VERSION, NULL, NULL, NULL}

/* Installs (or with NULL removes) the runtime's span sink, for the calls that start afterwards; the table is
 * copied. Without a sink no span and no trace id is made, and the caller's traceparent and tracestate pass
 * through unchanged. The previous sink's destroy runs once no span is being delivered to it and no call
 * started under it is in flight. HUMUS_E_PROGRAM when `span` is NULL; HUMUS_E_INVALID_ARGUMENT naming
 * humus_span_sink for version 0 or newer than HUMUS_SPAN_SINK_VERSION; HUMUS_E_MISUSE for a bad `rt`
 * (destroy is then not called). Any thread. */
HUMUS_API humus_status humus_runtime_set_span_sink(humus_runtime *rt, const humus_span_sink *sink,
                                                   humus_error **err);

/* ==== Metrics ==================================================================================== */

/* The instruments of docs/telemetry.md §13.2, summed over the runtime's clients by origin (attributes server.address and
 * server.port): http.client.request.duration (histogram, s, one sample per attempt sent),
 * http.client.request.body.size (histogram, By, per attempt sent) — both also by the attempt's
 * http.request.method (a method RFC 9110 or RFC 5789 names, else "_OTHER"), http.response.status_code and
 * network.protocol.version (when it got an answer) and error.type (the status name in lowercase, "timeout",
 * for an attempt without an answer; the status code, "503", for an answer of 400 or more), at most 64 such
 * attribute sets per client, attempts beyond them in one series with otel.metric.overflow = true (an
 * OpenTelemetry SDK's cardinality limit); humus.circuit.state (gauge, breakers per
 * state, read at collection), humus.circuit.transitions (counter, by the state entered),
 * humus.circuit.calls (counter, by outcome success/failure/ignored/rejected: each admitted attempt as the
 * breaker counted it, each rejected one), humus.retry.decisions (counter, by decision done/again/throttled/
 * exhausted/expired/stopped: one "again" per retry and one other per request — a redirect is a request).
 * Counts of freed clients stay in the totals. Bucket bounds: durations 0.005, 0.01, 0.025, 0.05, 0.075, 0.1,
 * 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10 (OpenTelemetry's advice); body sizes 0, 5, 10, 25, 50, 75, 100, 250, 500,
 * 750, 1000, 2500, 5000, 7500, 10000 (the OpenTelemetry SDK's default). */

/* Prometheus text exposition format 0.0.4: http_client_request_duration_seconds and
 * http_client_request_body_size_bytes{http_request_method="GET",http_response_status_code="200",
 * network_protocol_version="1.1"} (and error_type, otel_metric_overflow), humus_circuit_state{humus_circuit_state="open"},
 * humus_circuit_transitions_total, humus_circuit_calls_total{humus_circuit_outcome=...},
 * humus_retry_decisions_total{humus_retry_decision=...}, each with server_address and server_port labels.
 * `*out` is NUL-terminated and the caller's to free with humus_string_free(); `*len` (may be NULL) excludes the
 * NUL. HUMUS_E_MISUSE for a bad `rt`, HUMUS_E_INVALID_ARGUMENT for out NULL. Any thread. */
HUMUS_API humus_status humus_runtime_metrics_prometheus(humus_runtime *rt, char **out, size_t *len, humus_error **err);
/* The same as JSON: {"metrics": [{"name", "unit", "type": "histogram"|"gauge"|"counter", "bounds" (histograms),
 * "points": [{"attributes": {"server.address", "server.port", and "humus.circuit.state" | "humus.circuit.outcome"
 * | "humus.retry.decision" or, for histograms, those of the attempts above (http.response.status_code a
 * number, otel.metric.overflow a boolean)}, "value" | "count", "sum", "bucket_counts" (per bucket, not
 * cumulative)}]}]}. A histogram has one point per attribute set an attempt had, so none before the first.
 * Ownership and statuses as humus_runtime_metrics_prometheus. Any thread. */
HUMUS_API humus_status humus_runtime_metrics_json(humus_runtime *rt, char **out, size_t *len, humus_error **err);

enum { HUMUS_METRIC_HISTOGRAM = 1, HUMUS_METRIC_GAUGE = 2, HUMUS_METRIC_COUNTER = 3 };
/* One data point of a collection. Borrowed for the duration of the sink's call. Members after bucket_counts
 * came with version 2: read them only when `version` is at least 2. */
typedef struct humus_metric_point {
  uint32_t version;               /* HUMUS_METRIC_POINT_VERSION */
  const char *name;               /* OpenTelemetry name, e.g. "humus.circuit.calls" */
  const char *unit;               /* "s", "By", "{breaker}", "{transition}", "{call}", "{decision}" */
  int32_t kind;                   /* HUMUS_METRIC_* */
  const char *server_address;
  int32_t server_port;
  const char *attribute_name;     /* gauges and counters: the third attribute ("humus.circuit.state", ...); NULL
                                     for histograms (see attribute_names) */
  const char *attribute_value;    /* its value ("open"), or NULL */
  uint64_t value;                 /* gauges and counters */
  uint64_t count;                 /* histograms: samples */
  double sum;                     /* histograms: sum of samples */
  size_t bound_count;             /* histograms: number of bounds (14 for durations, 15 for sizes); 0 otherwise */
  const double *bounds;           /* histograms: the bounds */
  const uint64_t *bucket_counts;  /* histograms: bound_count + 1 counts, per bucket (not cumulative) */
  /* Version 2: every attribute besides server.address and server.port, as text ("http.request.method" =
   * "GET", "http.response.status_code" = "200", "otel.metric.overflow" = "true"); for gauges and counters the
   * one in attribute_name and attribute_value. A histogram has one point per attribute set (version 1 had one
   * per origin: a reader of version-1 members only adds up the points of an origin). */
  size_t attribute_count;
  const char *const *attribute_names;
  const char *const *attribute_values;
} humus_metric_point;
#define HUMUS_METRIC_POINT_VERSION 2

/* The metric sink: called once per data point of a collection, on the collecting thread. Return HUMUS_OK to
 * go on; any other status stops the collection, which then fails with HUMUS_E_CALLBACK. */
typedef humus_status (*humus_metric_sink)(void *user_data, const humus_metric_point *point);

/* Collects the metrics now and hands each data point to `sink` (pull, like an OpenTelemetry observable
 * callback or a Prometheus collector: there is no background thread, and the gauge is read at collection).
 * `user_data` is only passed through. HUMUS_E_MISUSE for a bad `rt`; HUMUS_E_INVALID_ARGUMENT for sink NULL;
 * HUMUS_E_CALLBACK when the sink stopped it. Any thread. */
HUMUS_API humus_status humus_runtime_metrics_collect(humus_runtime *rt, humus_metric_sink sink, void *user_data,
                                                     humus_error **err);

/* ==== Readiness ================================================================================== */

/* A readiness report (docs/upstreams.md §15.2) of every live client of the runtime, in the order they were made:
 * {"status": "ok" | "degraded", "clients": [{"origin": "https://payments:8443", "state": "closed" | "open" |
 * "half_open", "retry_after_ms": n, "counts": {"successes", "failures", "consecutive_successes",
 * "consecutive_failures", "timed_out_probes", "window_results", "window_failures"}}]}. "degraded" when any
 * breaker is not closed; never "unavailable" (a dependency down does not make this service unready). Reading
 * advances a due open → half-open. Ownership and statuses as humus_runtime_metrics_prometheus. Any thread. */
HUMUS_API humus_status humus_runtime_readiness_json(humus_runtime *rt, char **out, size_t *len, humus_error **err);

/* ==== Upstreams ================================================================================== */

/* A registry of clients by name (docs/upstreams.md §15.1), built from one JSON document:
 *   {"upstreams": {"billing": {"base_url": "https://billing:8443", "timeout": "5s", ...}, ...}}
 * Each upstream's keys are the settings of humus_settings_from_json. HUMUS_HTTP_UPSTREAMS__<NAME>__BASE_URL
 * (NAME: the name in uppercase, '-' written '_') in the environment, read once here, wins over the file's
 * base_url; when both are given and differ, one log record (event "humus.upstreams.base_url_override",
 * `upstream` set) goes to the runtime's log sink. Every other key: the file wins. Thread-safe once built. */
typedef struct humus_upstreams humus_upstreams;

/* Builds every upstream's client on `rt`. HUMUS_E_CONFIG naming every problem at once with its path
 * ("upstreams.billing.timeout", "upstreams.billing.timout" for a misspelt key, with the nearest valid key in
 * the message), a key other than "upstreams", or a name other than letters, digits, '_' and '-';
 * HUMUS_E_PROGRAM for a rule across one upstream's fields (docs/settings.md §3.2). The runtime must outlive the registry.
 * Any thread. */
HUMUS_API humus_status humus_upstreams_from_json(humus_runtime *rt, const char *json, size_t len,
                                                 humus_upstreams **out, humus_error **err);
/* Frees the registry and its clients (as humus_client_free); NULL and a freed registry are ignored. Not
 * concurrently with any other use of the registry or its clients. */
HUMUS_API void humus_upstreams_free(humus_upstreams *u);
/* The client of upstream `name`, owned by the registry: valid until humus_upstreams_free, and not to be
 * freed by the caller. HUMUS_E_INVALID_ARGUMENT for an unknown name, the message listing the configured
 * ones. Any thread. */
HUMUS_API humus_status humus_upstreams_client(humus_upstreams *u, const char *name, humus_client **out,
                                              humus_error **err);
/* The number of upstreams (0 for a bad `u`), and the i-th name in sorted order (NULL past the end or for a
 * bad `u`). Borrowed from the registry. Any thread. */
HUMUS_API size_t humus_upstreams_count(const humus_upstreams *u);
HUMUS_API const char *humus_upstreams_name(const humus_upstreams *u, size_t i);
/* The readiness report of humus_runtime_readiness_json for the registry's clients, each with its "name".
 * Ownership and statuses as humus_runtime_metrics_prometheus. Any thread. */
HUMUS_API humus_status humus_upstreams_readiness_json(humus_upstreams *u, char **out, size_t *len,
                                                      humus_error **err);

/* ==== Shared state ============================================================================== */

/* The segments of share.name on this host (docs/shared.md §22.5), for tools: humus-http shared ls|show|reset.
 * Reading takes each slot's lock as a client does (a slot whose holder died is repaired on the way) and
 * changes nothing else; it never enters this process in a segment's process table. */

/* The segments on this host, sorted by name: {"segments": [{"name", "size" (bytes), "origins": [...],
 * "live_processes": n}]}; a file that is not a segment of this library's layout has "error" (its message)
 * instead of "origins" and "live_processes". Ownership and statuses as humus_runtime_metrics_prometheus.
 * Any thread. */
HUMUS_API humus_status humus_shared_list_json(char **out, size_t *len, humus_error **err);
/* Segment `name`'s state: {"name", "size", "version", "repairs", "live_processes", "processes": [{"pid",
 * "clients", "alive"}], "origins": [{"origin", "state": "closed" | "open" | "half_open", "generation",
 * "counts": {as humus_runtime_readiness_json}, "probes_in_flight", "budget": {"policy": "token_bucket" |
 * "ratio", "tokens"}, "bulkhead": {"in_flight", "max_concurrent"}}]}. HUMUS_E_INVALID_ARGUMENT when there is
 * no segment `name` or `name` is NULL; HUMUS_E_CONFIG for a bad name (1..64 of [A-Za-z0-9_.-], not starting
 * with '.') or another layout version. Ownership as humus_runtime_metrics_prometheus. Any thread. */
HUMUS_API humus_status humus_shared_show_json(const char *name, char **out, size_t *len, humus_error **err);
/* Removes segment `name` (/dev/shm/humus_http.<name>): processes attached keep their mapping until they
 * detach, and the next client naming it makes a new one. Statuses as humus_shared_show_json. Any thread. */
HUMUS_API humus_status humus_shared_remove(const char *name, humus_error **err);

/* ==== Testing: mock transport ==================================================================== */

/* A request as the mock transport's callback sees it; borrowed for the callback's duration. Its accessors
 * never fail: a bad `r` (also one kept past the callback) reads as "", NULL, or no body. Any thread, during
 * the callback. */
typedef struct humus_mock_request humus_mock_request;
HUMUS_API const char *humus_mock_request_method(const humus_mock_request *r);
HUMUS_API const char *humus_mock_request_url(const humus_mock_request *r);
/* The first value of a request header (case-insensitive), or NULL. */
HUMUS_API const char *humus_mock_request_header(const humus_mock_request *r, const char *name);
HUMUS_API void humus_mock_request_body(const humus_mock_request *r, const void **data, size_t *len);

/* What the mock answers; starts as 200 with no headers and an empty body. Borrowed for the callback's
 * duration; the setters do nothing for a bad `reply` (also one kept past the callback). Only from the
 * callback. */
typedef struct humus_mock_reply humus_mock_reply;
HUMUS_API void humus_mock_reply_set_status(humus_mock_reply *reply, int32_t status);
HUMUS_API void humus_mock_reply_add_header(humus_mock_reply *reply, const char *name, const char *value);
HUMUS_API void humus_mock_reply_set_body(humus_mock_reply *reply, const void *data, size_t len);
/* The attempt fails with this transport error (HUMUS_E_CONNECT, HUMUS_E_CONNECTION_LOST, ...). */
HUMUS_API void humus_mock_reply_set_error(humus_mock_reply *reply, humus_status error, const char *message);
/* Waits this long (on the runtime's clock) before answering; bounded by the attempt's timeout. */
HUMUS_API void humus_mock_reply_set_delay_ms(humus_mock_reply *reply, int64_t ms);
/* Never answers: the attempt times out. */
HUMUS_API void humus_mock_reply_set_hang(humus_mock_reply *reply);

#define HUMUS_MOCK_TRANSPORT_VERSION 1
/* Answers every attempt of the clients built afterwards from the runtime (docs/testing-kit.md §16.2). `respond` runs on the
 * thread that drives the attempt, possibly several at once; a status other than HUMUS_OK fails the attempt
 * with HUMUS_E_CALLBACK. */
typedef struct humus_mock_transport {
  uint32_t version; /* HUMUS_MOCK_TRANSPORT_VERSION */
  humus_status (*respond)(void *user_data, const humus_mock_request *request, humus_mock_reply *reply);
  void *user_data;
  void (*destroy)(void *user_data); /* optional; called once when no client or runtime uses it */
} humus_mock_transport;
#define HUMUS_MOCK_TRANSPORT_INIT {HUMUS_MOCK_TRANSPORT_VERSION, NULL, NULL, NULL}

/* Installs (or with NULL removes) the mock transport for clients built afterwards. HUMUS_E_PROGRAM when
 * `respond` is NULL; HUMUS_E_INVALID_ARGUMENT naming humus_mock_transport for version 0 or newer than
 * HUMUS_MOCK_TRANSPORT_VERSION; HUMUS_E_MISUSE for a bad `rt`. Any thread. */
HUMUS_API humus_status humus_runtime_set_mock_transport(humus_runtime *rt, const humus_mock_transport *mock,
                                                        humus_error **err);

/* ==== Testing: mock bodies that break off ======================================================== */

/* The reply's body breaks off after `after_bytes` bytes (at most the body's length) with `error`
 * (HUMUS_E_CONNECTION_LOST, ...; HUMUS_OK: it does not) and `message` (NULL: a default), as a reset
 * mid-body would. A streamed read (humus_client_open + humus_response_read) gets those bytes, then the
 * error; a buffered attempt (humus_client_do, humus_client_submit) fails with it. Only from the mock
 * transport's callback, on the reply it was given; a NULL, freed or foreign reply does nothing. */
HUMUS_API void humus_mock_reply_set_body_error(humus_mock_reply *reply, size_t after_bytes, humus_status error,
                                               const char *message);

#ifdef __cplusplus
}
#endif

#endif /* HUMUS_HTTP_H */
