/*
 * stream — a body streamed both ways, from C (docs/bodies.md §7).
 *
 *   stream BASE_URL PATH [UPLOAD_BYTES]
 *
 * With UPLOAD_BYTES, a POST whose body a humus_body_reader generates as it is sent (replayable: rewind
 * starts it over for another attempt); without, a GET. The call is opened with humus_client_open, which
 * returns once the response's headers are in, and its body read with humus_response_read, 16 KiB at a time,
 * so memory stays at one buffer whatever the size. Prints "status: N", "received: N bytes in M reads" and
 * the body's first line (at most 4 KiB). On failure `HUMUS_E_...: message` on stderr and exit 1; bad
 * usage exits 2.
 */
#include <humus_http.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The upload: `total` bytes of 'x', `sent` of them handed over so far. */
typedef struct {
  int64_t total;
  int64_t sent;
} upload;

/* On the thread that drives the attempt, one call at a time. */
static humus_status upload_read(void *user_data, void *buf, size_t cap, size_t *n) {
  upload *u = (upload *)user_data;
  const int64_t left = u->total - u->sent;
  const size_t take = left < (int64_t)cap ? (size_t)left : cap;
  memset(buf, 'x', take);
  u->sent += (int64_t)take;
  *n = take; /* 0: the end */
  return HUMUS_OK;
}

static humus_status upload_rewind(void *user_data) {
  ((upload *)user_data)->sent = 0;
  return HUMUS_OK;
}

int main(int argc, char **argv) {
  char settings_json[1024];
  char url[1024];
  char first_line[4097];
  size_t first_len = 0;
  int first_done = 0;
  static char buf[16 * 1024];
  upload body = {0, 0};
  humus_runtime *rt = NULL;
  humus_settings *settings = NULL;
  humus_client *client = NULL;
  humus_request *req = NULL;
  humus_response *resp = NULL;
  humus_error *err = NULL;
  uint64_t received = 0;
  unsigned reads = 0;
  int rc = 1;

  if (argc != 3 && argc != 4) {
    fprintf(stderr, "usage: stream BASE_URL PATH [UPLOAD_BYTES]\n");
    return 2;
  }
  if (argc == 4) body.total = strtoll(argv[3], NULL, 10);
  snprintf(settings_json, sizeof settings_json, "{\"base_url\": \"%s\", \"timeout\": \"30s\"}", argv[1]);
  snprintf(url, sizeof url, "%s%s", argv[1], argv[2]);
  if (humus_runtime_new(NULL, 0, &rt, &err) != HUMUS_OK ||
      humus_settings_from_json(settings_json, strlen(settings_json), &settings, &err) != HUMUS_OK ||
      humus_client_new(rt, settings, &client, &err) != HUMUS_OK ||
      humus_request_new(argc == 4 ? "POST" : "GET", url, &req, &err) != HUMUS_OK) {
    goto failed;
  }
  if (argc == 4) {
    humus_body_reader reader = HUMUS_BODY_READER_INIT;
    reader.user_data = &body; /* lives until main returns: no destroy needed */
    reader.length = body.total;
    reader.read = upload_read;
    reader.rewind = upload_rewind;
    if (humus_request_set_body_reader(req, &reader, &err) != HUMUS_OK) goto failed;
  }
  if (humus_client_open(client, req, &resp, &err) != HUMUS_OK) goto failed;
  for (;;) {
    size_t n = 0;
    size_t i;
    if (humus_response_read(resp, buf, sizeof buf, &n, &err) != HUMUS_OK) goto failed;
    if (n == 0) break; /* the end: the breaker counts the result now */
    reads++;
    for (i = 0; i < n && !first_done; i++) { /* the first line, across reads */
      if (buf[i] == '\n' || first_len == sizeof first_line - 1) {
        first_done = 1;
      } else {
        first_line[first_len++] = buf[i];
      }
    }
    received += n;
  }
  first_line[first_len] = '\0';
  printf("status: %d\nreceived: %llu bytes in %u reads\n%s\n", (int)humus_response_status(resp),
         (unsigned long long)received, reads, first_line);
  rc = 0;
  goto done;

failed:
  fprintf(stderr, "%s: %s\n", humus_status_name(humus_error_status(err)), humus_error_message(err));
done:
  humus_response_free(resp); /* before its client */
  humus_request_free(req);
  humus_client_free(client);
  humus_settings_free(settings);
  humus_runtime_free(rt);
  humus_error_free(err);
  return rc;
}
