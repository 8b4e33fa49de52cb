/*
 * dlopen — the C ABI through dlopen/dlsym alone (docs/bindings.md §17.4): the way a binding, or a program that
 * wants humus_http only when it is installed, loads the library at run time. This program does not link
 * libhumus_http: the header is included for its types and constants only, and every call goes through a
 * pointer from dlsym (a direct call would fail to link). It checks the loaded library's version against the
 * header's first, then makes one real call.
 *
 *   dlopen LIBRARY URL     LIBRARY: a path to libhumus_http.so.1; URL: an http origin, "http://127.0.0.1:PORT"
 *
 * Prints "dlopen: ok" and exits 0, or says what failed and exits 1. The tests run it against the test
 * server's plain listener (ctest capi.dlopen_real_call).
 */
#define _POSIX_C_SOURCE 200809L

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "humus_http.h"

/* The functions this test calls, as pointers. LOAD checks at compile time that each matches the header's
 * declaration (an assignment inside sizeof, which is never evaluated and so references no symbol). */
typedef int32_t (*version_number_fn)(void);
typedef const char *(*version_fn)(void);
typedef const char *(*status_name_fn)(humus_status);
typedef humus_status (*error_status_fn)(const humus_error *);
typedef const char *(*error_message_fn)(const humus_error *);
typedef size_t (*error_field_count_fn)(const humus_error *);
typedef void (*error_free_fn)(humus_error *);
typedef humus_status (*runtime_new_fn)(const char *, size_t, humus_runtime **, humus_error **);
typedef void (*runtime_free_fn)(humus_runtime *);
typedef humus_status (*settings_from_json_fn)(const char *, size_t, humus_settings **, humus_error **);
typedef void (*settings_free_fn)(humus_settings *);
typedef humus_status (*client_new_fn)(humus_runtime *, const humus_settings *, humus_client **,
                                      humus_error **);
typedef void (*client_free_fn)(humus_client *);
typedef humus_status (*request_new_fn)(const char *, const char *, humus_request **, humus_error **);
typedef void (*request_free_fn)(humus_request *);
typedef humus_status (*client_do_fn)(humus_client *, const humus_request *, humus_response **,
                                     humus_error **);
typedef int32_t (*response_int_fn)(const humus_response *);
typedef humus_status (*response_body_fn)(humus_response *, const void **, size_t *, humus_error **);
typedef void (*response_free_fn)(humus_response *);

static struct {
  version_number_fn version_number;
  version_fn version;
  status_name_fn status_name;
  error_status_fn error_status;
  error_message_fn error_message;
  error_field_count_fn error_field_count;
  error_free_fn error_free;
  runtime_new_fn runtime_new;
  runtime_free_fn runtime_free;
  settings_from_json_fn settings_from_json;
  settings_free_fn settings_free;
  client_new_fn client_new;
  client_free_fn client_free;
  request_new_fn request_new;
  request_free_fn request_free;
  client_do_fn client_do;
  response_int_fn response_status;
  response_int_fn response_attempts;
  response_body_fn response_body;
  response_free_fn response_free;
} api;

/* Copies dlsym's object pointer into a function pointer without the conversion ISO C leaves undefined
 * (POSIX guarantees the representations agree). */
static int load(void *lib, const char *name, void *slot, size_t slot_size) {
  void *sym = dlsym(lib, name);
  if (sym == NULL || slot_size != sizeof sym) {
    fprintf(stderr, "dlopen: dlsym(%s) failed: %s\n", name, sym == NULL ? dlerror() : "pointer size differs");
    return 0;
  }
  memcpy(slot, &sym, slot_size);
  return 1;
}
#define LOAD(field, symbol) \
  ((void)sizeof(api.field = symbol), load(lib, #symbol, &api.field, sizeof api.field))

static int load_all(void *lib) {
  return LOAD(version_number, humus_version_number) && LOAD(version, humus_version) &&
         LOAD(status_name, humus_status_name) && LOAD(error_status, humus_error_status) &&
         LOAD(error_message, humus_error_message) && LOAD(error_field_count, humus_error_field_count) &&
         LOAD(error_free, humus_error_free) && LOAD(runtime_new, humus_runtime_new) &&
         LOAD(runtime_free, humus_runtime_free) && LOAD(settings_from_json, humus_settings_from_json) &&
         LOAD(settings_free, humus_settings_free) && LOAD(client_new, humus_client_new) &&
         LOAD(client_free, humus_client_free) && LOAD(request_new, humus_request_new) &&
         LOAD(request_free, humus_request_free) && LOAD(client_do, humus_client_do) &&
         LOAD(response_status, humus_response_status) && LOAD(response_attempts, humus_response_attempts) &&
         LOAD(response_body, humus_response_body) && LOAD(response_free, humus_response_free);
}

/* Reports a failed call with its status name and message; frees the error. */
static int call_failed(const char *what, humus_status status, humus_error *err) {
  fprintf(stderr, "dlopen: %s failed: %s: %s\n", what, api.status_name(status),
          err != NULL ? api.error_message(err) : "(no error object)");
  api.error_free(err);
  return 0;
}

static int check_version(void) {
  const int32_t loaded = api.version_number();
  if (loaded / 10000 != HUMUS_VERSION_MAJOR) {
    fprintf(stderr, "dlopen: ABI major %d loaded, %d expected (version %d, header %d)\n",
            (int)(loaded / 10000), HUMUS_VERSION_MAJOR, (int)loaded, HUMUS_VERSION_NUMBER);
    return 0;
  }
  if (loaded != HUMUS_VERSION_NUMBER || strcmp(api.version(), HUMUS_VERSION_STRING) != 0) {
    fprintf(stderr, "dlopen: library version %d (\"%s\"), this test was built against %d (\"%s\")\n",
            (int)loaded, api.version(), HUMUS_VERSION_NUMBER, HUMUS_VERSION_STRING);
    return 0;
  }
  return 1;
}

static int check_status_names(void) {
  const char *name = api.status_name(HUMUS_E_CONFIG);
  if (name == NULL || strcmp(name, "HUMUS_E_CONFIG") != 0) {
    fprintf(stderr, "dlopen: humus_status_name(HUMUS_E_CONFIG) is \"%s\"\n", name ? name : "(null)");
    return 0;
  }
  name = api.status_name(987654);
  if (name == NULL || strcmp(name, "HUMUS_E_UNKNOWN") != 0) {
    fprintf(stderr, "dlopen: humus_status_name(987654) is \"%s\"\n", name ? name : "(null)");
    return 0;
  }
  return 1;
}

/* A bad config travels back as HUMUS_E_CONFIG in an error object naming the key. */
static int check_config_error(void) {
  static const char bad[] = "{\"base_url\": \"http://127.0.0.1:1\", \"timout\": \"1s\"}";
  humus_settings *settings = NULL;
  humus_error *err = NULL;
  const humus_status status = api.settings_from_json(bad, sizeof bad - 1, &settings, &err);
  int ok = status == HUMUS_E_CONFIG && settings == NULL && err != NULL &&
           api.error_status(err) == HUMUS_E_CONFIG && api.error_field_count(err) >= 1;
  if (!ok) {
    fprintf(stderr, "dlopen: a misspelt key gave %s, not HUMUS_E_CONFIG with a field\n",
            api.status_name(status));
  }
  api.settings_free(settings);
  api.error_free(err);
  return ok;
}

/* Whether the `len` bytes at `data` (not NUL-terminated) contain `needle`. */
static int contains(const void *data, size_t len, const char *needle) {
  const char *bytes = data;
  const size_t n = strlen(needle);
  size_t i;
  for (i = 0; i + n <= len; i++) {
    if (memcmp(bytes + i, needle, n) == 0) return 1;
  }
  return 0;
}

/* One real GET against the test server's plain listener: 200 at the first attempt, the server's echo. */
static int check_real_call(const char *base_url) {
  char json[512];
  char url[512];
  humus_runtime *rt = NULL;
  humus_settings *settings = NULL;
  humus_client *client = NULL;
  humus_request *req = NULL;
  humus_response *resp = NULL;
  humus_error *err = NULL;
  const void *body = NULL;
  size_t body_len = 0;
  humus_status status;
  int ok = 0;

  const int json_len = snprintf(json, sizeof json, "{\"base_url\": \"%s\", \"timeout\": \"10s\"}", base_url);
  const int url_len = snprintf(url, sizeof url, "%s/dlopen", base_url);
  if (json_len < 0 || (size_t)json_len >= sizeof json || url_len < 0 || (size_t)url_len >= sizeof url) {
    fprintf(stderr, "dlopen: URL too long\n");
    return 0;
  }
  if ((status = api.runtime_new(NULL, 0, &rt, &err)) != HUMUS_OK) {
    call_failed("humus_runtime_new", status, err);
  } else if ((status = api.settings_from_json(json, strlen(json), &settings, &err)) != HUMUS_OK) {
    call_failed("humus_settings_from_json", status, err);
  } else if ((status = api.client_new(rt, settings, &client, &err)) != HUMUS_OK) {
    call_failed("humus_client_new", status, err);
  } else if ((status = api.request_new("GET", url, &req, &err)) != HUMUS_OK) {
    call_failed("humus_request_new", status, err);
  } else if ((status = api.client_do(client, req, &resp, &err)) != HUMUS_OK) {
    call_failed("humus_client_do", status, err);
  } else if ((status = api.response_body(resp, &body, &body_len, &err)) != HUMUS_OK) {
    call_failed("humus_response_body", status, err);
  } else if (api.response_status(resp) != 200 || api.response_attempts(resp) != 1) {
    fprintf(stderr, "dlopen: GET %s gave status %d after %d attempt(s), expected 200 after 1\n", url,
            (int)api.response_status(resp), (int)api.response_attempts(resp));
  } else if (!contains(body, body_len, "\"path\": \"/dlopen\"")) {
    /* The server's default answer is a JSON echo of the request. */
    fprintf(stderr, "dlopen: GET %s: the body is not the server's echo (%u bytes)\n", url,
            (unsigned)body_len);
  } else {
    ok = 1;
  }
  api.response_free(resp);
  api.request_free(req);
  api.client_free(client);
  api.settings_free(settings);
  api.runtime_free(rt);
  return ok;
}

int main(int argc, char **argv) {
  void *lib;
  int ok;
  if (argc != 3) {
    fprintf(stderr, "usage: dlopen_test LIBRARY URL\n");
    return 2;
  }
  lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) {
    fprintf(stderr, "dlopen: cannot load %s: %s\n", argv[1], dlerror());
    return 1;
  }
  ok = load_all(lib) && check_version() && check_status_names() && check_config_error() &&
       check_real_call(argv[2]);
  if (dlclose(lib) != 0) {
    fprintf(stderr, "dlopen: dlclose failed: %s\n", dlerror());
    ok = 0;
  }
  if (!ok) return 1;
  printf("dlopen: ok\n");
  return 0;
}
