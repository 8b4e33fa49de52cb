/* The C side of the Go binding: see glue.h. */
#include "glue.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "_cgo_export.h"

/* Per OS thread: whether a blocking call runs on it, the first Go callback failure of that call, and the
 * call's state handle. A blocking call's callbacks run on its caller's thread (humus_client_do drives the
 * attempts there), which is also where the Go goroutine that made the call sits during the cgo call. */
static __thread int in_blocking_call;
static __thread uintptr_t blocking_call_error;
static __thread uintptr_t blocking_call_state;

uintptr_t humusgo_keep_callback_error(uintptr_t handle) {
  if (!in_blocking_call || blocking_call_error != 0) return handle;
  blocking_call_error = handle;
  return 0;
}

uintptr_t humusgo_current_call(void) { return in_blocking_call ? blocking_call_state : 0; }

/* Runs humus_client_do or, with `open`, humus_client_open, as inside a blocking call (see glue.h). */
static humus_status blocking_call(int open, humus_client *c, const humus_request *r, uintptr_t call_state,
                                  humus_response **out, humus_error **err, uintptr_t *callback_error) {
  /* Saved and restored: a callback may itself make a blocking call on another client. */
  const int outer_in = in_blocking_call;
  const uintptr_t outer_error = blocking_call_error;
  const uintptr_t outer_state = blocking_call_state;
  humus_status status;
  in_blocking_call = 1;
  blocking_call_error = 0;
  blocking_call_state = call_state;
  status = open ? humus_client_open(c, r, out, err) : humus_client_do(c, r, out, err);
  *callback_error = blocking_call_error;
  in_blocking_call = outer_in;
  blocking_call_error = outer_error;
  blocking_call_state = outer_state;
  return status;
}

humus_status humusgo_client_do(humus_client *c, const humus_request *r, uintptr_t call_state,
                               humus_response **out, humus_error **err, uintptr_t *callback_error) {
  return blocking_call(0, c, r, call_state, out, err, callback_error);
}

humus_status humusgo_client_open(humus_client *c, const humus_request *r, uintptr_t call_state,
                                 humus_response **out, humus_error **err, uintptr_t *callback_error) {
  return blocking_call(1, c, r, call_state, out, err, callback_error);
}

static void call_done(void *user_data, humus_status status, humus_response *resp, humus_error *err) {
  humusgoCallDone((uintptr_t)user_data, status, resp, err);
}

humus_status humusgo_client_submit(humus_client *c, const humus_request *r, uintptr_t handle, humus_call **call,
                                   humus_error **err) {
  return humus_client_submit(c, r, call_done, (void *)handle, call, err);
}

/* --- The completion queue (see glue.h) --------------------------------------------------------------- */

static pthread_once_t queue_once = PTHREAD_ONCE_INIT;
static int queue_fd = -1;
static int queue_errno;
static pthread_mutex_t queue_mu = PTHREAD_MUTEX_INITIALIZER;
static humusgo_completion *queue_items; /* guarded by queue_mu: a ring of queue_cap */
static size_t queue_cap, queue_head, queue_len; /* guarded by queue_mu */

static void queue_init(void) {
  queue_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (queue_fd < 0) queue_errno = errno;
}

int humusgo_completions_fd(void) {
  pthread_once(&queue_once, queue_init);
  if (queue_fd < 0) errno = queue_errno;
  return queue_fd;
}

/* Set while this thread runs a caller-driven loop for Go (humusgo_loop_run), which takes the queue right
 * after: its pushes need not wake the queue's reader. */
static __thread int driving_loop;

/* Appends under queue_mu; a full ring doubles (growth is rare: it settles at the most calls ever waiting). */
int humusgo_completions_push(const humusgo_completion *c) {
  int was_empty;
  pthread_mutex_lock(&queue_mu);
  if (queue_len == queue_cap) {
    size_t cap = queue_cap ? 2 * queue_cap : 256, i;
    humusgo_completion *items = malloc(cap * sizeof *items);
    if (items == NULL) {
      pthread_mutex_unlock(&queue_mu);
      return -1;
    }
    for (i = 0; i < queue_len; i++) items[i] = queue_items[(queue_head + i) % queue_cap];
    free(queue_items);
    queue_items = items;
    queue_cap = cap;
    queue_head = 0;
  }
  queue_items[(queue_head + queue_len) % queue_cap] = *c;
  was_empty = queue_len++ == 0;
  pthread_mutex_unlock(&queue_mu);
  if (was_empty && !driving_loop) {
    const uint64_t one = 1;
    /* Cannot fail short of a counter at 2^64 - 2: the reader drains it to 0 on every wake-up. */
    while (write(queue_fd, &one, sizeof one) < 0 && errno == EINTR) {
    }
  }
  return 0;
}

size_t humusgo_completions_take(humusgo_completion *out, size_t cap) {
  size_t n = 0;
  pthread_mutex_lock(&queue_mu);
  while (n < cap && queue_len > 0) {
    out[n++] = queue_items[queue_head];
    queue_head = (queue_head + 1) % queue_cap;
    queue_len--;
  }
  pthread_mutex_unlock(&queue_mu);
  return n;
}

humus_status humusgo_loop_run(humus_runtime *rt, int64_t *next_us, humusgo_completion *out, size_t cap,
                              size_t *taken, humus_error **err) {
  humus_status status;
  driving_loop = 1;
  status = humus_runtime_loop_run(rt, next_us, err);
  driving_loop = 0;
  *taken = humusgo_completions_take(out, cap);
  return status;
}

int humusgo_fd_readable(int fd) {
  struct pollfd p;
  p.fd = fd;
  p.events = POLLIN;
  p.revents = 0;
  return poll(&p, 1, 0) > 0;
}

static void call_done_queued(void *user_data, humus_status status, humus_response *resp, humus_error *err) {
  humusgo_completion c = {0};
  c.handle = (uintptr_t)user_data;
  c.kind = HUMUSGO_CALL_DONE;
  c.status = status;
  c.resp = resp;
  c.err = err;
  /* Out of memory for the ring: hand it to Go on this thread instead, as humusgo_client_submit does. */
  if (humusgo_completions_push(&c) != 0) humusgoCallDone(c.handle, status, resp, err);
}

humus_status humusgo_client_submit_queued(humus_client *c, const humus_request *r, uintptr_t handle,
                                          humus_call **call, humus_error **err) {
  return humus_client_submit(c, r, call_done_queued, (void *)handle, call, err);
}

humus_status humusgo_request_new(const char *buf, const uint32_t *offsets, size_t header_count, int has_context,
                                 const void *body, size_t body_len, int32_t retry, int has_timeout,
                                 int64_t timeout_ms, int32_t follow_redirects, humus_cancel *cancel,
                                 humus_request **out, humus_error **err) {
#define AT(i) (offsets[(i)] == HUMUSGO_NONE ? NULL : buf + offsets[(i)])
  humus_request *r = NULL;
  humus_status status = humus_request_new(AT(HUMUSGO_OFF_METHOD), AT(HUMUSGO_OFF_URL), &r, err);
  size_t i;
  if (status != HUMUS_OK) return status;
  for (i = 0; i < header_count && status == HUMUS_OK; i++) {
    const char *name = AT(HUMUSGO_OFF_HEADERS + 2 * i);
    const char *value = AT(HUMUSGO_OFF_HEADERS + 2 * i + 1);
    status = value == NULL ? humus_request_remove_header(r, name, err) : humus_request_set_header(r, name, value, err);
  }
  if (status == HUMUS_OK && offsets[HUMUSGO_OFF_IDEMPOTENCY_KEY] != HUMUSGO_NONE) {
    status = humus_request_set_idempotency_key(r, AT(HUMUSGO_OFF_IDEMPOTENCY_KEY), err);
  }
  if (status == HUMUS_OK && has_context) {
    status = humus_request_set_context(r, AT(HUMUSGO_OFF_TRACEPARENT), AT(HUMUSGO_OFF_TRACESTATE),
                                       AT(HUMUSGO_OFF_BAGGAGE), AT(HUMUSGO_OFF_REQUEST_ID),
                                       AT(HUMUSGO_OFF_AUTHORIZATION), err);
  }
  if (status == HUMUS_OK && retry != 0) status = humus_request_set_retry(r, retry, err);
  if (status == HUMUS_OK && has_timeout) status = humus_request_set_timeout_ms(r, timeout_ms, err);
  if (status == HUMUS_OK && follow_redirects >= 0) {
    status = humus_request_set_follow_redirects(r, follow_redirects, err);
  }
  /* These two have no err: their only failures (a bad handle, NULL data) cannot happen here. */
  if (status == HUMUS_OK && body_len > 0) status = humus_request_set_body(r, body, body_len);
  if (status == HUMUS_OK && cancel != NULL) status = humus_request_set_cancel(r, cancel);
  if (status != HUMUS_OK) {
    humus_request_free(r);
    return status;
  }
  *out = r;
  return HUMUS_OK;
#undef AT
}

void humusgo_response_read(humus_response *resp, humusgo_response_info *info, int with_body) {
  info->status = humus_response_status(resp);
  info->attempts = humus_response_attempts(resp);
  info->header_count = humus_response_header_count(resp);
  info->body = NULL;
  info->body_len = 0;
  if (with_body && humus_response_body(resp, &info->body, &info->body_len, NULL) != HUMUS_OK) {
    info->body = NULL;
    info->body_len = 0;
  }
  info->http_version = humus_response_http_version(resp);
  info->url = humus_response_url(resp);
  info->redirect_count = humus_response_redirect_count(resp);
  info->reason = humus_response_reason(resp);
}

void humusgo_response_headers(const humus_response *resp, humusgo_header *out, size_t n) {
  size_t i;
  for (i = 0; i < n; i++) {
    if (humus_response_header_at(resp, i, &out[i].name, &out[i].value) != HUMUS_OK) {
      out[i].name = "";
      out[i].value = "";
    }
    out[i].name_len = strlen(out[i].name);
    out[i].value_len = strlen(out[i].value);
  }
}

void humusgo_redirect_read(const humus_response *resp, size_t i, humusgo_redirect_info *info) {
  if (humus_response_redirect_at(resp, i, &info->status, &info->url) != HUMUS_OK) {
    info->status = 0;
    info->url = "";
  }
  info->reason = humus_response_redirect_reason(resp, i);
  info->http_version = humus_response_redirect_http_version(resp, i);
  info->header_count = humus_response_redirect_header_count(resp, i);
}

void humusgo_attempt_read(const humus_attempt *a, humusgo_attempt_info *info) {
  info->method = humus_attempt_method(a);
  info->status = humus_attempt_status(a);
  info->error = humus_attempt_error(a);
  info->error_message = humus_attempt_error_message(a);
  info->number = humus_attempt_number(a);
}

/* Borrowed strings with their lengths; an entry the accessors cannot give reads as "". */
static void fill_header(humusgo_header *h, const char *name, const char *value) {
  h->name = name != NULL ? name : "";
  h->value = value != NULL ? value : "";
  h->name_len = strlen(h->name);
  h->value_len = strlen(h->value);
}

void humusgo_redirect_headers(const humus_response *resp, size_t i, humusgo_header *out, size_t n) {
  size_t j;
  for (j = 0; j < n; j++) {
    const char *name = NULL;
    const char *value = NULL;
    (void)humus_response_redirect_header_at(resp, i, j, &name, &value); /* a failure leaves both NULL: "" */
    fill_header(&out[j], name, value);
  }
}

void humusgo_attempt_headers(const humus_attempt *a, humusgo_header *out, size_t n) {
  size_t i;
  for (i = 0; i < n; i++) fill_header(&out[i], humus_attempt_header_name(a, i), humus_attempt_header_value(a, i));
}

void humusgo_attempt_request_read(const humus_attempt_request *r, humusgo_attempt_request_info *info) {
  info->method = humus_attempt_request_method(r);
  info->url = humus_attempt_request_url(r);
  info->number = humus_attempt_request_number(r);
  info->header_count = humus_attempt_request_header_count(r);
}

void humusgo_attempt_request_headers(const humus_attempt_request *r, humusgo_header *out, size_t n) {
  size_t i;
  for (i = 0; i < n; i++) {
    fill_header(&out[i], humus_attempt_request_header_name(r, i), humus_attempt_request_header_value(r, i));
  }
}

/* --- Callback tables ------------------------------------------------------------------------------- */

static void destroy_handle(void *user_data) { humusgoDeleteHandle((uintptr_t)user_data); }

static humus_status body_read(void *user_data, void *buf, size_t cap, size_t *n) {
  return humusgoBodyRead((uintptr_t)user_data, buf, cap, n);
}

static humus_status body_rewind(void *user_data) { return humusgoBodyRewind((uintptr_t)user_data); }

static void body_destroy(void *user_data) { humusgoBodyDestroy((uintptr_t)user_data); }

humus_status humusgo_set_body_reader(humus_request *r, uintptr_t handle, int64_t length, int replayable,
                                     humus_error **err) {
  humus_body_reader table = HUMUS_BODY_READER_INIT;
  table.user_data = (void *)handle;
  table.length = length;
  table.read = body_read;
  table.rewind = replayable ? body_rewind : NULL;
  table.destroy = body_destroy;
  return humus_request_set_body_reader(r, &table, err);
}

static humus_status classify(void *user_data, const humus_attempt *attempt, humus_classification *out) {
  return humusgoClassify((uintptr_t)user_data, (humus_attempt *)attempt, out);
}

humus_status humusgo_set_classifier(humus_settings *s, uintptr_t handle, humus_error **err) {
  humus_classifier table = HUMUS_CLASSIFIER_INIT;
  table.classify = classify;
  table.user_data = (void *)handle;
  table.destroy = destroy_handle;
  return humus_settings_set_classifier(s, &table, err);
}

static humus_status trip(void *user_data, const humus_breaker_counts *counts, int32_t *open) {
  return humusgoTrip((uintptr_t)user_data, (humus_breaker_counts *)counts, open);
}

static humus_status probe(void *user_data, const humus_breaker_counts *counts, int32_t *decision) {
  return humusgoProbe((uintptr_t)user_data, (humus_breaker_counts *)counts, decision);
}

humus_status humusgo_set_breaker_policy(humus_settings *s, uintptr_t handle, humus_error **err) {
  humus_breaker_policy table = HUMUS_BREAKER_POLICY_INIT;
  table.trip = trip;
  table.probe = probe;
  table.user_data = (void *)handle;
  table.destroy = destroy_handle;
  return humus_settings_set_breaker_policy(s, &table, err);
}

static humus_status respond(void *user_data, const humus_mock_request *request, humus_mock_reply *reply) {
  return humusgoMockRespond((uintptr_t)user_data, (humus_mock_request *)request, reply);
}

humus_status humusgo_set_mock_transport(humus_runtime *rt, uintptr_t handle, humus_error **err) {
  humus_mock_transport table = HUMUS_MOCK_TRANSPORT_INIT;
  if (handle == 0) return humus_runtime_set_mock_transport(rt, NULL, err);
  table.respond = respond;
  table.user_data = (void *)handle;
  table.destroy = destroy_handle;
  return humus_runtime_set_mock_transport(rt, &table, err);
}

static humus_status attempt_before(void *user_data, humus_attempt_request *r) {
  return humusgoAttemptBefore((uintptr_t)user_data, r);
}

static void attempt_after(void *user_data, const humus_attempt *a) {
  humusgoAttemptAfter((uintptr_t)user_data, (humus_attempt *)a);
}

humus_status humusgo_set_attempt_hooks(humus_request *r, uintptr_t handle, int after, humus_error **err) {
  humus_attempt_hooks table = HUMUS_ATTEMPT_HOOKS_INIT;
  table.user_data = (void *)handle;
  table.before = attempt_before;
  table.after = after ? attempt_after : NULL;
  table.destroy = destroy_handle;
  return humus_request_set_attempt_hooks(r, &table, err);
}

static void span(void *user_data, const humus_span *s) { humusgoSpan((uintptr_t)user_data, (humus_span *)s); }

humus_status humusgo_set_span_sink(humus_runtime *rt, uintptr_t handle, humus_error **err) {
  humus_span_sink table = HUMUS_SPAN_SINK_INIT;
  if (handle == 0) return humus_runtime_set_span_sink(rt, NULL, err);
  table.span = span;
  table.user_data = (void *)handle;
  table.destroy = destroy_handle;
  return humus_runtime_set_span_sink(rt, &table, err);
}

static void log_record(void *user_data, const humus_log_record *r) {
  humusgoLogRecord((uintptr_t)user_data, (humus_log_record *)r);
}

humus_status humusgo_set_log_sink(humus_runtime *rt, uintptr_t handle, humus_error **err) {
  humus_log_sink table = HUMUS_LOG_SINK_INIT;
  if (handle == 0) return humus_runtime_set_log_sink(rt, NULL, err);
  table.record = log_record;
  table.user_data = (void *)handle;
  table.destroy = destroy_handle;
  return humus_runtime_set_log_sink(rt, &table, err);
}
