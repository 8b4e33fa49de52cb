/* humus_http through its C ABI, for bench/compare.py: the rows compared with compare_curl.c.
 *
 *   compare_humus do|do-traced|do-header|open|threads|submit|step URL CONCURRENCY SECONDS WARMUP_SECONDS
 *                 [--ca FILE] [--resolve HOST:PORT=ADDR:PORT] [--h2]
 *
 * do: humus_client_do in a loop, the request built once, the body read with humus_response_body (CONCURRENCY
 * must be 1); do-traced: the same with a span sink and a log sink that do nothing (what telemetry costs the
 * call path, docs/telemetry.md §13); do-header: do with no sink, the request carrying a traceparent header of
 * the same length (what libcurl's sending of that header costs: the floor under do-traced's extra); open: humus_client_open and humus_response_read to the end, 64 KiB at a
 * time (the streamed body, as Go's Do and Rust's Read use it); threads: CONCURRENCY threads each calling
 * humus_client_do on one shared client; submit: humus_client_submit with CONCURRENCY calls in flight, each
 * completion (on the event-loop thread) submitting the next; step: CONCURRENCY stepped calls
 * (humus_client_step_start) driven by one thread's poll() loop, as a binding with a poller of its own drives
 * them, each body read with humus_response_read_ready, each call ended starting the next. After
 * WARMUP_SECONDS it runs for SECONDS and
 * prints one JSON line: requests, errors, wall and CPU seconds of this process. It never judges the numbers. */
#include <humus_http.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

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

static void die(const char *what, humus_status st, humus_error *err) {
  fprintf(stderr, "compare_humus: %s: %s: %s\n", what, humus_status_name(st), err ? humus_error_message(err) : "");
  exit(1);
}

static humus_client *client;
static humus_request *request;

/* One blocking call; 1 when it failed. */
static int one_call(void) {
  humus_response *resp = NULL;
  humus_status st = humus_client_do(client, request, &resp, NULL);
  if (st != HUMUS_OK) return 1;
  const void *data = NULL;
  size_t len = 0;
  int bad = humus_response_body(resp, &data, &len, NULL) != HUMUS_OK || humus_response_status(resp) != 200;
  humus_response_free(resp);
  return bad;
}

/* One streamed call, the body read to its end; 1 when it failed. */
static int one_open_call(void) {
  humus_response *resp = NULL;
  if (humus_client_open(client, request, &resp, NULL) != HUMUS_OK) return 1;
  static char buf[64 * 1024];
  size_t n = 0;
  int bad = humus_response_status(resp) != 200;
  do {
    if (humus_response_read(resp, buf, sizeof buf, &n, NULL) != HUMUS_OK) {
      bad = 1;
      break;
    }
  } while (n > 0);
  humus_response_free(resp);
  return bad;
}

/* --- threads ---------------------------------------------------------------------------------------- */

static double until;
static atomic_long total_requests, total_errors;

static void *thread_loop(void *arg) {
  (void)arg;
  long requests = 0, errors = 0;
  while (now_s() < until) {
    errors += one_call();
    requests++;
  }
  atomic_fetch_add(&total_requests, requests);
  atomic_fetch_add(&total_errors, errors);
  return NULL;
}

static void run_threads(int n, double seconds) {
  pthread_t *tids = calloc((size_t)n, sizeof *tids);
  until = now_s() + seconds;
  for (int i = 0; i < n; i++) pthread_create(&tids[i], NULL, thread_loop, NULL);
  for (int i = 0; i < n; i++) pthread_join(tids[i], NULL);
  free(tids);
}

/* --- submit ----------------------------------------------------------------------------------------- */

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int in_flight; /* guarded by mu */

static void submit_one(void);

static void done(void *user, humus_status status, humus_response *resp, humus_error *err) {
  (void)user;
  const void *data = NULL;
  size_t len = 0;
  int bad = status != HUMUS_OK || humus_response_body(resp, &data, &len, NULL) != HUMUS_OK ||
            humus_response_status(resp) != 200;
  humus_response_free(resp);
  humus_error_free(err);
  atomic_fetch_add(&total_requests, 1);
  if (bad) atomic_fetch_add(&total_errors, 1);
  if (now_s() < until) {
    submit_one(); /* in_flight unchanged: this call's slot goes to the next */
    return;
  }
  pthread_mutex_lock(&mu);
  if (--in_flight == 0) pthread_cond_signal(&cv);
  pthread_mutex_unlock(&mu);
}

static void submit_one(void) {
  humus_error *err = NULL;
  humus_status st = humus_client_submit(client, request, done, NULL, NULL, &err);
  if (st != HUMUS_OK) die("humus_client_submit", st, err);
}

static void run_submit(int n, double seconds) {
  until = now_s() + seconds;
  pthread_mutex_lock(&mu);
  in_flight = n;
  pthread_mutex_unlock(&mu);
  for (int i = 0; i < n; i++) submit_one();
  pthread_mutex_lock(&mu);
  while (in_flight > 0) pthread_cond_wait(&cv, &mu);
  pthread_mutex_unlock(&mu);
}

static void ignore_span(void *user, const humus_span *span) {
  (void)user;
  (void)span;
}

static void ignore_record(void *user, const humus_log_record *record) {
  (void)user;
  (void)record;
}

/* --- step -------------------------------------------------------------------------------------------- */

/* One slot of calls in flight: its step until the headers, then its response until the body's end, and what
 * it waits for. */
struct stepped {
  int active;
  humus_step *step;
  humus_response *resp;
  int fd, events;
  int64_t ms;
};

static void count(int bad) {
  atomic_fetch_add(&total_requests, 1);
  if (bad) atomic_fetch_add(&total_errors, 1);
}

/* Runs the slot's call on as far as it goes without waiting: 1 once it ended (and was counted). */
static int step_on(struct stepped *c) {
  static char buf[64 * 1024];
  humus_error *err = NULL;
  humus_status st;
  if (c->resp == NULL) {
    st = humus_step_advance(c->step, &c->resp, &c->fd, &c->events, &c->ms, &err);
    if (st == HUMUS_OK && c->resp == NULL) return 0;
    humus_step_free(c->step);
    if (st != HUMUS_OK) {
      humus_error_free(err);
      count(1);
      return 1;
    }
  }
  size_t n = 0;
  while ((st = humus_response_read_ready(c->resp, buf, sizeof buf, &n, &c->fd, &c->ms, &err)) == HUMUS_OK && n > 0) {
  }
  if (st == HUMUS_OK && c->fd >= 0) {
    c->events = HUMUS_WAIT_READ;
    return 0;
  }
  count(st != HUMUS_OK || humus_response_status(c->resp) != 200);
  humus_error_free(err);
  humus_response_free(c->resp);
  return 1;
}

/* Starts calls in the slot until one has to wait, while time is left: 1 when one is in flight. */
static int step_next(struct stepped *c) {
  c->active = 0;
  while (now_s() < until) {
    humus_error *err = NULL;
    humus_status st = humus_client_step_start(client, request, &c->step, &err);
    if (st != HUMUS_OK) die("humus_client_step_start", st, err);
    c->resp = NULL;
    if (!step_on(c)) return c->active = 1;
  }
  return 0;
}

static void run_step(int n, double seconds) {
  until = now_s() + seconds;
  struct stepped *calls = calloc((size_t)n, sizeof *calls);
  struct pollfd *fds = calloc((size_t)n, sizeof *fds);
  int live = 0;
  for (int i = 0; i < n; i++) live += step_next(&calls[i]);
  while (live > 0) {
    int timeout = -1;
    for (int i = 0; i < n; i++) {
      const struct stepped *c = &calls[i];
      fds[i].fd = c->active ? c->fd : -1; /* poll skips a negative descriptor */
      fds[i].events = (short)(((c->events & HUMUS_WAIT_READ) ? POLLIN : 0) |
                              ((c->events & HUMUS_WAIT_WRITE) ? POLLOUT : 0));
      if (c->active && c->ms >= 0 && (timeout < 0 || c->ms < timeout)) timeout = (int)c->ms;
    }
    const int ready = poll(fds, (nfds_t)n, timeout);
    for (int i = 0; i < n; i++) {
      struct stepped *c = &calls[i];
      /* What polled, what waits for time alone, and everything once the shortest bound has passed. */
      if (!c->active || (ready > 0 && c->fd >= 0 && fds[i].revents == 0)) continue;
      if (step_on(c)) live += step_next(c) - 1;
    }
  }
  free(fds);
  free(calls);
}

static void run(const char *mode, int conc, double seconds) {
  if (strcmp(mode, "threads") == 0) {
    run_threads(conc, seconds);
  } else if (strcmp(mode, "submit") == 0) {
    run_submit(conc, seconds);
  } else if (strcmp(mode, "step") == 0) {
    run_step(conc, seconds);
  } else {
    double end = now_s() + seconds;
    long requests = 0, errors = 0;
    int (*call)(void) = strcmp(mode, "open") == 0 ? one_open_call : one_call;
    while (now_s() < end) {
      errors += call();
      requests++;
    }
    atomic_fetch_add(&total_requests, requests);
    atomic_fetch_add(&total_errors, errors);
  }
}

int main(int argc, char **argv) {
  if (argc < 6) {
    fprintf(stderr,
            "usage: compare_humus do|do-traced|do-header|open|threads|submit|step URL CONCURRENCY SECONDS WARMUP [--ca F] "
            "[--resolve X] [--h2]\n");
    return 2;
  }
  const char *mode = argv[1], *url = argv[2], *ca = NULL, *resolve = NULL;
  int conc = atoi(argv[3]), h2 = 0;
  double seconds = atof(argv[4]), warmup = atof(argv[5]);
  for (int i = 6; i < argc; i++) {
    if (strcmp(argv[i], "--ca") == 0 && i + 1 < argc) ca = argv[++i];
    else if (strcmp(argv[i], "--resolve") == 0 && i + 1 < argc) resolve = argv[++i];
    else if (strcmp(argv[i], "--h2") == 0) h2 = 1;
    else {
      fprintf(stderr, "compare_humus: unknown flag %s\n", argv[i]);
      return 2;
    }
  }
  if (strcmp(mode, "do") != 0 && strcmp(mode, "do-traced") != 0 && strcmp(mode, "do-header") != 0 &&
      strcmp(mode, "open") != 0 && strcmp(mode, "threads") != 0 && strcmp(mode, "submit") != 0 &&
      strcmp(mode, "step") != 0) {
    fprintf(stderr, "compare_humus: unknown mode %s\n", mode);
    return 2;
  }

  /* The origin of URL is the client's base_url; the settings are the defaults but for the protocol, the CA,
   * and a bulkhead wide enough for every call in flight. */
  const char *path = strchr(strstr(url, "://") + 3, '/');
  size_t origin_len = path ? (size_t)(path - url) : strlen(url);
  char runtime_json[512] = "", settings_json[1024];
  if (resolve != NULL) {
    const char *eq = strchr(resolve, '=');
    if (eq == NULL) {
      fprintf(stderr, "compare_humus: --resolve wants HOST:PORT=ADDR:PORT\n");
      return 2;
    }
    snprintf(runtime_json, sizeof runtime_json, "{\"resolve\": {\"%.*s\": \"%s\"}}", (int)(eq - resolve), resolve,
             eq + 1);
  }
  snprintf(settings_json, sizeof settings_json,
           "{\"base_url\": \"%.*s\", \"bulkhead\": {\"max_concurrent\": %d}, \"http_version\": \"%s\"%s%s%s}",
           (int)origin_len, url, conc > 50 ? conc : 50, h2 ? "2" : "1.1", ca ? ", \"tls\": {\"ca_file\": \"" : "",
           ca ? ca : "", ca ? "\"}" : "");

  humus_error *err = NULL;
  humus_runtime *rt = NULL;
  humus_status st = humus_runtime_new(runtime_json, strlen(runtime_json), &rt, &err);
  if (st != HUMUS_OK) die("humus_runtime_new", st, err);
  if (strcmp(mode, "do-traced") == 0) {
    humus_span_sink spans = HUMUS_SPAN_SINK_INIT;
    spans.span = ignore_span;
    humus_log_sink logs = HUMUS_LOG_SINK_INIT;
    logs.record = ignore_record;
    if ((st = humus_runtime_set_span_sink(rt, &spans, &err)) != HUMUS_OK) die("set_span_sink", st, err);
    if ((st = humus_runtime_set_log_sink(rt, &logs, &err)) != HUMUS_OK) die("set_log_sink", st, err);
  }
  humus_settings *s = NULL;
  if ((st = humus_settings_from_json(settings_json, strlen(settings_json), &s, &err)) != HUMUS_OK) {
    die("humus_settings_from_json", st, err);
  }
  if ((st = humus_client_new(rt, s, &client, &err)) != HUMUS_OK) die("humus_client_new", st, err);
  humus_settings_free(s);
  if ((st = humus_request_new("GET", url, &request, &err)) != HUMUS_OK) die("humus_request_new", st, err);
  if (strcmp(mode, "do-header") == 0 &&
      (st = humus_request_set_header(request, "traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
                                     &err)) != HUMUS_OK) {
    die("humus_request_set_header", st, err);
  }

  run(mode, conc, warmup);
  long warm_errors = atomic_exchange(&total_errors, 0);
  atomic_store(&total_requests, 0);
  double w0 = now_s(), c0 = cpu_s();
  run(mode, conc, seconds);
  double w1 = now_s(), c1 = cpu_s();
  printf("{\"requests\": %ld, \"errors\": %ld, \"wall_s\": %.6f, \"cpu_s\": %.6f}\n", atomic_load(&total_requests),
         atomic_load(&total_errors) + warm_errors, w1 - w0, c1 - c0);
  humus_request_free(request);
  humus_client_free(client);
  humus_runtime_free(rt);
  return 0;
}
