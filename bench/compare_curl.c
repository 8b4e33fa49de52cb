/* Raw libcurl, the anchor of bench/compare.py: what a careful libcurl user gets, with nothing of humus_http.
 *
 *   compare_curl easy|easy-wire|multi URL CONCURRENCY SECONDS WARMUP_SECONDS [--ca F] [--connect-to H:P:A:P] [--h2]
 *
 * easy: one easy handle reused, curl_easy_perform in a loop (CONCURRENCY must be 1). easy-wire: the same, asked
 * for the request humus_http puts on the wire, with its User-Agent and its Accept-Encoding (every coding this
 * libcurl decodes) lines in the header list, as its transport sends them: what libcurl alone costs for those
 * bytes, which it formats a character at a time (the floor under c-do's extra cost). multi: curl_multi on one
 * thread with CONCURRENCY transfers kept in flight, a finished handle re-added at once. The body is appended
 * to a growing buffer, as a caller that keeps it would. After WARMUP_SECONDS (connections opened, TLS done,
 * not counted) it runs for SECONDS and prints one JSON line: requests, errors, wall and CPU seconds of this
 * process. It never judges the numbers (bench/README.md). */
#include <curl/curl.h>
#include <humus_http.h> /* HUMUS_VERSION_STRING only: nothing of the library is linked */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

typedef struct {
  char *data;
  size_t len, cap;
} buffer;

static size_t append(char *p, size_t size, size_t count, void *user) {
  buffer *b = user;
  size_t n = size * count;
  if (b->len + n > b->cap) {
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + n) cap *= 2;
    char *d = realloc(b->data, cap);
    if (d == NULL) return 0;
    b->data = d;
    b->cap = cap;
  }
  memcpy(b->data + b->len, p, n);
  b->len += n;
  return n;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double cpu_s(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

typedef struct {
  const char *url, *ca, *connect_to;
  int h2;
} target;

static struct curl_slist *connect_list;

static void configure(CURL *e, const target *t, buffer *body) {
  curl_easy_setopt(e, CURLOPT_URL, t->url);
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_PROXY, "");
  curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
  curl_easy_setopt(e, CURLOPT_PIPEWAIT, 1L);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, append);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, body);
  curl_easy_setopt(e, CURLOPT_HTTP_VERSION, t->h2 ? (long)CURL_HTTP_VERSION_2TLS : (long)CURL_HTTP_VERSION_1_1);
  if (t->ca != NULL) curl_easy_setopt(e, CURLOPT_CAINFO, t->ca);
  if (connect_list != NULL) curl_easy_setopt(e, CURLOPT_CONNECT_TO, connect_list);
}

/* The header lines humus_http's transport (curl_easy.cc) adds to a GET that names none of them, and libcurl's
 * own decoding switched on, as it is there. */
static struct curl_slist *wire_lines;

static void configure_wire(CURL *e) {
  const int bits = curl_version_info(CURLVERSION_NOW)->features;
  char codings[64] = "";
  if (bits & CURL_VERSION_LIBZ) strcat(codings, "deflate, gzip");
  if (bits & CURL_VERSION_BROTLI) strcat(codings, codings[0] ? ", br" : "br");
  if (bits & CURL_VERSION_ZSTD) strcat(codings, codings[0] ? ", zstd" : "zstd");
  char accept[96];
  snprintf(accept, sizeof accept, "Accept-Encoding: %s", codings);
  if (codings[0]) wire_lines = curl_slist_append(wire_lines, accept);
  wire_lines = curl_slist_append(wire_lines, "Expect:");
  wire_lines = curl_slist_append(wire_lines, "User-Agent: humus_http/" HUMUS_VERSION_STRING);
  wire_lines = curl_slist_append(wire_lines, "Content-Type:");
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, wire_lines);
  curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");
}

static int ok(CURL *e, CURLcode rc) {
  long code = 0;
  curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &code);
  return rc == CURLE_OK && code == 200;
}

/* Runs until `until` (monotonic seconds); counts into *requests and *errors. */
static void run_easy(CURL *e, buffer *body, double until, long *requests, long *errors) {
  while (now_s() < until) {
    body->len = 0;
    CURLcode rc = curl_easy_perform(e);
    ++*requests;
    if (!ok(e, rc)) ++*errors;
  }
}

typedef struct {
  CURL *easy;
  buffer body;
} slot;

static void run_multi(CURLM *m, slot *slots, int n, double until, long *requests, long *errors) {
  int in_flight = 0;
  for (int i = 0; i < n; i++) {
    slots[i].body.len = 0;
    curl_multi_add_handle(m, slots[i].easy);
    in_flight++;
  }
  int stopping = 0;
  while (in_flight > 0) {
    int running = 0;
    curl_multi_perform(m, &running);
    int queued = 0;
    CURLMsg *msg;
    while ((msg = curl_multi_info_read(m, &queued)) != NULL) {
      if (msg->msg != CURLMSG_DONE) continue;
      CURL *e = msg->easy_handle;
      CURLcode rc = msg->data.result;
      slot *s = NULL;
      curl_easy_getinfo(e, CURLINFO_PRIVATE, (char **)&s);
      ++*requests;
      if (!ok(e, rc)) ++*errors;
      curl_multi_remove_handle(m, e);
      in_flight--;
      if (!stopping && now_s() >= until) stopping = 1;
      if (!stopping) {
        s->body.len = 0;
        curl_multi_add_handle(m, e);
        in_flight++;
      }
    }
    if (in_flight > 0) curl_multi_poll(m, NULL, 0, 1000, NULL);
  }
}

int main(int argc, char **argv) {
  if (argc < 6) {
    fprintf(stderr, "usage: compare_curl easy|easy-wire|multi URL CONCURRENCY SECONDS WARMUP [--ca F] [--connect-to X] [--h2]\n");
    return 2;
  }
  const char *mode = argv[1];
  target t = {argv[2], NULL, NULL, 0};
  int conc = atoi(argv[3]);
  double seconds = atof(argv[4]), warmup = atof(argv[5]);
  for (int i = 6; i < argc; i++) {
    if (strcmp(argv[i], "--ca") == 0 && i + 1 < argc) t.ca = argv[++i];
    else if (strcmp(argv[i], "--connect-to") == 0 && i + 1 < argc) t.connect_to = argv[++i];
    else if (strcmp(argv[i], "--h2") == 0) t.h2 = 1;
    else {
      fprintf(stderr, "compare_curl: unknown flag %s\n", argv[i]);
      return 2;
    }
  }
  curl_global_init(CURL_GLOBAL_DEFAULT);
  if (t.connect_to != NULL) connect_list = curl_slist_append(NULL, t.connect_to);
  long requests = 0, errors = 0, warm_requests = 0, warm_errors = 0;
  double w0, c0, w1, c1;
  if (strcmp(mode, "easy") == 0 || strcmp(mode, "easy-wire") == 0) {
    CURL *e = curl_easy_init();
    buffer body = {0};
    configure(e, &t, &body);
    if (strcmp(mode, "easy-wire") == 0) configure_wire(e);
    run_easy(e, &body, now_s() + warmup, &warm_requests, &warm_errors);
    w0 = now_s(), c0 = cpu_s();
    run_easy(e, &body, w0 + seconds, &requests, &errors);
    w1 = now_s(), c1 = cpu_s();
    curl_easy_cleanup(e);
    free(body.data);
  } else if (strcmp(mode, "multi") == 0) {
    CURLM *m = curl_multi_init();
    curl_multi_setopt(m, CURLMOPT_MAXCONNECTS, (long)conc * 2);
    slot *slots = calloc((size_t)conc, sizeof *slots);
    for (int i = 0; i < conc; i++) {
      slots[i].easy = curl_easy_init();
      configure(slots[i].easy, &t, &slots[i].body);
      curl_easy_setopt(slots[i].easy, CURLOPT_PRIVATE, &slots[i]);
    }
    run_multi(m, slots, conc, now_s() + warmup, &warm_requests, &warm_errors);
    w0 = now_s(), c0 = cpu_s();
    run_multi(m, slots, conc, w0 + seconds, &requests, &errors);
    w1 = now_s(), c1 = cpu_s();
    for (int i = 0; i < conc; i++) {
      curl_easy_cleanup(slots[i].easy);
      free(slots[i].body.data);
    }
    free(slots);
    curl_multi_cleanup(m);
  } else {
    fprintf(stderr, "compare_curl: unknown mode %s\n", mode);
    return 2;
  }
  printf("{\"requests\": %ld, \"errors\": %ld, \"wall_s\": %.6f, \"cpu_s\": %.6f}\n", requests, errors + warm_errors,
         w1 - w0, c1 - c0);
  curl_slist_free_all(connect_list);
  curl_slist_free_all(wire_lines);
  curl_global_cleanup();
  return 0;
}
