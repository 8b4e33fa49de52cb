/*
 * get — one GET through humus_http, from C.
 *
 *   get URL [--ca FILE] [--resolve host:port:addr:port]...
 *
 * The client's base_url is the URL's scheme://host:port; --ca trusts FILE (PEM) for https; each --resolve
 * sends host:port's connections to addr:port while TLS still verifies the host name. Prints the status, the
 * attempts made and the body on stdout. On failure prints `HUMUS_E_...: message` on stderr and exits 1; bad
 * usage exits 2.
 */
#include <humus_http.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A growable NUL-terminated string for the JSON documents. `failed` sticks once an allocation fails. */
typedef struct {
  char *data;
  size_t len;
  size_t cap;
  int failed;
} buffer;

static void buffer_append(buffer *b, const char *s, size_t n) {
  if (b->failed) return;
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 128;
    char *grown;
    while (b->len + n + 1 > cap) cap *= 2;
    grown = realloc(b->data, cap);
    if (grown == NULL) {
      b->failed = 1;
      return;
    }
    b->data = grown;
    b->cap = cap;
  }
  memcpy(b->data + b->len, s, n);
  b->len += n;
  b->data[b->len] = '\0';
}

static void buffer_puts(buffer *b, const char *s) { buffer_append(b, s, strlen(s)); }

/* Appends `n` bytes of `s` as a JSON string literal, quotes included. */
static void buffer_json_string(buffer *b, const char *s, size_t n) {
  static const char hex[] = "0123456789abcdef";
  size_t i;
  buffer_puts(b, "\"");
  for (i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '"' || c == '\\') {
      char escaped[2];
      escaped[0] = '\\';
      escaped[1] = (char)c;
      buffer_append(b, escaped, 2);
    } else if (c < 0x20) {
      char escaped[6] = {'\\', 'u', '0', '0', 0, 0};
      escaped[4] = hex[c >> 4];
      escaped[5] = hex[c & 0xf];
      buffer_append(b, escaped, 6);
    } else {
      buffer_append(b, &s[i], 1);
    }
  }
  buffer_puts(b, "\"");
}

/* The length of "scheme://host[:port]" at the start of `url` (the library fills in a default port), or 0 when
 * the URL is not absolute http(s). A bracketed IPv6 host is accepted; nothing more is checked here: the
 * library checks the URL itself. */
static size_t origin_length(const char *url) {
  const char *authority;
  const char *end;
  if (strncmp(url, "http://", 7) == 0) {
    authority = url + 7;
  } else if (strncmp(url, "https://", 8) == 0) {
    authority = url + 8;
  } else {
    return 0;
  }
  end = authority;
  if (*end == '[') { /* skip the IPv6 address, whose colons are not the port's */
    const char *close = strchr(end, ']');
    end = close ? close + 1 : end + strlen(end);
  }
  while (*end != '\0' && *end != '/' && *end != '?' && *end != '#') end++;
  return end == authority ? 0 : (size_t)(end - url);
}

static int usage(const char *message) {
  fprintf(stderr, "get: %s\nusage: get URL [--ca FILE] [--resolve host:port:addr:port]...\n", message);
  return 2;
}

/* Every call below takes err, so a failure always has its error here. */
static int fail(const humus_error *err) {
  if (err == NULL) {
    fprintf(stderr, "HUMUS_E_INTERNAL: a call failed without an error\n");
  } else {
    fprintf(stderr, "%s: %s\n", humus_status_name(humus_error_status(err)), humus_error_message(err));
  }
  return 1;
}

int main(int argc, char **argv) {
  const char *url = NULL;
  const char *ca_file = NULL;
  buffer options = {NULL, 0, 0, 0};
  buffer settings_json = {NULL, 0, 0, 0};
  size_t origin_len = 0;
  int resolves = 0;
  int rc = 1;
  int i;
  humus_runtime *rt = NULL;
  humus_settings *settings = NULL;
  humus_client *client = NULL;
  humus_request *req = NULL;
  humus_response *resp = NULL;
  humus_error *err = NULL;
  const void *body = NULL;
  size_t body_len = 0;

  /* The runtime options: {"resolve": {"host:port": "addr:port", ...}}. */
  buffer_puts(&options, "{\"resolve\": {");
  for (i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--ca") == 0 && i + 1 < argc) {
      ca_file = argv[++i];
    } else if (strcmp(argv[i], "--resolve") == 0 && i + 1 < argc) {
      const char *entry = argv[++i];
      const char *colon = strchr(entry, ':');
      colon = colon ? strchr(colon + 1, ':') : NULL; /* the second colon ends host:port */
      if (colon == NULL || colon == entry || colon[1] == '\0') {
        rc = usage("--resolve takes host:port:addr:port");
        goto done;
      }
      if (resolves++ > 0) buffer_puts(&options, ", ");
      buffer_json_string(&options, entry, (size_t)(colon - entry));
      buffer_puts(&options, ": ");
      buffer_json_string(&options, colon + 1, strlen(colon + 1));
    } else if (argv[i][0] == '-' || url != NULL) {
      fprintf(stderr, "get: unexpected argument %s\n", argv[i]);
      rc = usage("one URL, then options");
      goto done;
    } else {
      url = argv[i];
    }
  }
  buffer_puts(&options, "}}");
  if (url != NULL) origin_len = origin_length(url);
  if (origin_len == 0) {
    rc = usage("an absolute http:// or https:// URL is needed");
    goto done;
  }

  /* The settings: {"base_url": "scheme://host:port", "tls": {"ca_file": FILE}}. */
  buffer_puts(&settings_json, "{\"base_url\": ");
  buffer_json_string(&settings_json, url, origin_len);
  if (ca_file != NULL) {
    buffer_puts(&settings_json, ", \"tls\": {\"ca_file\": ");
    buffer_json_string(&settings_json, ca_file, strlen(ca_file));
    buffer_puts(&settings_json, "}");
  }
  buffer_puts(&settings_json, "}");
  if (options.failed || settings_json.failed) {
    fprintf(stderr, "%s: out of memory\n", humus_status_name(HUMUS_E_NO_MEMORY));
    goto done;
  }

  if (humus_runtime_new(options.data, options.len, &rt, &err) != HUMUS_OK ||
      humus_settings_from_json(settings_json.data, settings_json.len, &settings, &err) != HUMUS_OK ||
      humus_client_new(rt, settings, &client, &err) != HUMUS_OK ||
      humus_request_new("GET", url, &req, &err) != HUMUS_OK ||
      humus_client_do(client, req, &resp, &err) != HUMUS_OK ||
      humus_response_body(resp, &body, &body_len, &err) != HUMUS_OK) {
    rc = fail(err);
    goto done;
  }
  printf("status: %d\nattempts: %d\n\n", (int)humus_response_status(resp),
         (int)humus_response_attempts(resp));
  if (body_len > 0) {
    fwrite(body, 1, body_len, stdout);
    if (((const char *)body)[body_len - 1] != '\n') putchar('\n');
  }
  rc = fflush(stdout) == 0 ? 0 : 1;

done:
  humus_response_free(resp);
  humus_request_free(req);
  humus_client_free(client);
  humus_settings_free(settings);
  humus_runtime_free(rt);
  humus_error_free(err);
  free(settings_json.data);
  free(options.data);
  return rc;
}
