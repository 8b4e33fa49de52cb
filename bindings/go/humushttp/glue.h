/*
 * The C side of the Go binding (glue.c): callback tables whose functions call the Go trampolines of
 * callbacks.go, and a few functions that do in one cgo crossing what would otherwise take many.
 *
 * Every `uintptr_t handle` is a runtime/cgo.Handle: an integer, never a Go pointer, so C may keep it.
 */
#ifndef HUMUSGO_GLUE_H
#define HUMUSGO_GLUE_H

#include <humus_http.h>
#include <stddef.h>
#include <stdint.h>

/* An absent string in the offsets of humusgo_request_new. */
#define HUMUSGO_NONE UINT32_MAX

/* Positions in the offsets array of humusgo_request_new; the headers' (name, value) pairs follow. */
enum {
  HUMUSGO_OFF_METHOD = 0,
  HUMUSGO_OFF_URL,
  HUMUSGO_OFF_IDEMPOTENCY_KEY,
  HUMUSGO_OFF_TRACEPARENT,
  HUMUSGO_OFF_TRACESTATE,
  HUMUSGO_OFF_BAGGAGE,
  HUMUSGO_OFF_REQUEST_ID,
  HUMUSGO_OFF_AUTHORIZATION,
  HUMUSGO_OFF_HEADERS
};

/* Builds a request from NUL-terminated strings at `offsets` into `buf` (Go memory, read during the call only):
 * method, url, then the optional parts, then `header_count` (name, value) pairs, in order; a pair whose value
 * is HUMUSGO_NONE is humus_request_remove_header of its name. `has_context` says whether
 * humus_request_set_context is called. `retry` 0 leaves the default; `has_timeout` sets timeout_ms;
 * `follow_redirects` 0 or 1 is humus_request_set_follow_redirects, -1 leaves the default (follow).
 * On failure *err is set, except after humus_request_set_body or humus_request_set_cancel, which have no err
 * and whose status then says everything. */
humus_status humusgo_request_new(const char *buf, const uint32_t *offsets, size_t header_count, int has_context,
                                 const void *body, size_t body_len, int32_t retry, int has_timeout,
                                 int64_t timeout_ms, int32_t follow_redirects, humus_cancel *cancel,
                                 humus_request **out, humus_error **err);

/* humus_client_do, marking this thread as inside a blocking call so Go callbacks it runs can hand back their
 * failure (*callback_error: a handle to the first one, or 0) and see the call's state (`call_state`, a
 * handle or 0) to cancel it at once when its context ended inside the callback. */
humus_status humusgo_client_do(humus_client *c, const humus_request *r, uintptr_t call_state,
                               humus_response **out, humus_error **err, uintptr_t *callback_error);
/* As humusgo_client_do, with humus_client_open: the response comes back at its headers, its body unread. */
humus_status humusgo_client_open(humus_client *c, const humus_request *r, uintptr_t call_state,
                                 humus_response **out, humus_error **err, uintptr_t *callback_error);

/* Makes the request's body a stream read by the Go trampolines of `handle` (humus_request_set_body_reader):
 * `length` bytes or -1 when unknown; `replayable` installs the rewind. Its destroy closes the Go body and
 * deletes the handle; on failure both are the caller's. */
humus_status humusgo_set_body_reader(humus_request *r, uintptr_t handle, int64_t length, int replayable,
                                     humus_error **err);

/* humus_client_submit with the Go completion trampoline; `handle` identifies the Go call. The completion
 * runs Go on the event-loop thread: the design for a virtual-clock runtime, whose completions must see the
 * loop's time (completions.go). */
humus_status humusgo_client_submit(humus_client *c, const humus_request *r, uintptr_t handle, humus_call **call,
                                   humus_error **err);

/* What a queued completion tells Go. */
enum {
  HUMUSGO_CALL_DONE = 0, /* a call of humusgo_client_submit_queued ended: status, resp, err */
  HUMUSGO_BODY_OPENED,   /* a call of humusgo_client_submit_open_queued has its headers: status, err, resp */
  HUMUSGO_BODY_READY     /* a body read ahead may have bytes for Go (body_pump.c): resp */
};

/* One event, as the event-loop thread queued it for Go. */
typedef struct humusgo_completion {
  uintptr_t handle;
  int32_t kind; /* HUMUSGO_CALL_DONE, ... */
  humus_status status;
  humus_response *resp; /* HUMUSGO_BODY_OPENED with HUMUS_OK: the open body, read ahead, Go's to free */
  humus_error *err;
} humusgo_completion;

/* The process's completion queue: its eventfd (nonblocking, close-on-exec), made on the first call; -1 with
 * errno set when it cannot be made. Becomes readable when the queue goes from empty to not empty. Any thread. */
int humusgo_completions_fd(void);
/* humus_client_submit whose completion only appends to the queue (no Go runs on the event-loop thread); the
 * queue's reader (completions.go) takes it with humusgo_completions_take. humusgo_completions_fd must have
 * succeeded first. */
humus_status humusgo_client_submit_queued(humus_client *c, const humus_request *r, uintptr_t handle,
                                          humus_call **call, humus_error **err);
/* humus_runtime_loop_run, then humusgo_completions_take into `out` (*taken of them): a caller-driven loop's
 * run and the completions it queued in one cgo crossing (loop_driver.go). Completions queued during the run
 * do not make the eventfd readable: the caller delivers them (and takes again while *taken == cap). */
humus_status humusgo_loop_run(humus_runtime *rt, int64_t *next_us, humusgo_completion *out, size_t cap,
                              size_t *taken, humus_error **err);
/* Whether `fd` polls readable now, without waiting or consuming anything (poll with a zero timeout): the
 * loop driver's check after Go's netpoller armed its wait, since arming forgets an edge that came before. */
int humusgo_fd_readable(int fd);
/* Appends to the queue and makes the eventfd readable when the queue was empty (except inside
 * humusgo_loop_run); -1 when out of memory. */
int humusgo_completions_push(const humusgo_completion *c);
/* Moves up to `cap` queued completions, oldest first, into `out` and returns how many; fewer than `cap` means
 * the queue is now empty, so the next completion makes the eventfd readable again. Any thread. */
size_t humusgo_completions_take(humusgo_completion *out, size_t cap);

/* --- A body read ahead on the event loop (body_pump.c) -----------------------------------------------
 *
 * humus_client_submit_open, then humus_response_read_ahead: the library reads the body on the event-loop
 * thread into a bounded ring of its own while the ring has room, and Go copies out of it with
 * humus_response_take, a short cgo call that never blocks. A Read that finds the ring empty waits on a
 * channel (no OS thread held), woken by one HUMUSGO_BODY_READY completion. */

/* humus_client_submit_open whose headers come to Go as one HUMUSGO_BODY_OPENED completion for `handle`, the
 * body read ahead from then on. A body the ring holds whole (a Content-Length under 256 KiB) comes to Go
 * once all of it is in (or failed), as a first HUMUSGO_BODY_READY instead: a small answer then costs one
 * hand-off, as a buffered one does. humusgo_completions_fd must have succeeded first. */
humus_status humusgo_client_submit_open_queued(humus_client *c, const humus_request *r, uintptr_t handle,
                                               humus_call **call, humus_error **err);

/* Called by a Go callback that failed: keeps `handle` as this blocking call's failure and returns 0, or
 * returns `handle` (for the caller to delete) when this thread is in no blocking call or one is kept. */
uintptr_t humusgo_keep_callback_error(uintptr_t handle);
/* The call-state handle of the blocking call this thread is in, or 0. */
uintptr_t humusgo_current_call(void);

/* Callback tables whose user_data is `handle`; its destroy deletes the handle. On failure the handle is the
 * caller's to delete, as the C ABI says. */
humus_status humusgo_set_classifier(humus_settings *s, uintptr_t handle, humus_error **err);
humus_status humusgo_set_breaker_policy(humus_settings *s, uintptr_t handle, humus_error **err);
humus_status humusgo_set_mock_transport(humus_runtime *rt, uintptr_t handle, humus_error **err);
/* The runtime's span and log sinks; handle 0 removes the sink. */
humus_status humusgo_set_span_sink(humus_runtime *rt, uintptr_t handle, humus_error **err);
humus_status humusgo_set_log_sink(humus_runtime *rt, uintptr_t handle, humus_error **err);

/* A response's scalars, read in one crossing. Strings live as long as the response. The body is read only
 * with `with_body` (a buffered response); a streamed one's stays on its connection (body NULL, 0). */
typedef struct humusgo_response_info {
  int32_t status;
  int32_t attempts;
  size_t header_count;
  const void *body;
  size_t body_len;
  const char *http_version;
  const char *url;
  size_t redirect_count; /* humus_response_redirect_count: read each with humusgo_redirect_read */
  const char *reason;    /* humus_response_reason */
} humusgo_response_info;
void humusgo_response_read(humus_response *resp, humusgo_response_info *info, int with_body);
/* One response header: borrowed strings with their lengths, so Go copies them without a strlen call each. */
typedef struct humusgo_header {
  const char *name;
  size_t name_len;
  const char *value;
  size_t value_len;
} humusgo_header;
/* The first `n` headers (n <= humus_response_header_count), in the order received. */
void humusgo_response_headers(const humus_response *resp, humusgo_header *out, size_t n);

/* Redirect `i`'s head (humus_response_redirect_at and the humus_response_redirect_* accessors), read in one
 * crossing; an `i` out of range reads as status 0 and "". Strings live as long as the response. */
typedef struct humusgo_redirect_info {
  int32_t status;
  const char *url;
  const char *reason;
  const char *http_version;
  size_t header_count;
} humusgo_redirect_info;
void humusgo_redirect_read(const humus_response *resp, size_t i, humusgo_redirect_info *info);
/* The first `n` headers of redirect `i` (n <= its header_count), in the order received. */
void humusgo_redirect_headers(const humus_response *resp, size_t i, humusgo_header *out, size_t n);

/* One attempt as a classifier sees it, read in one crossing. Strings live for the callback. */
typedef struct humusgo_attempt_info {
  const char *method;
  int32_t status;
  humus_status error;
  const char *error_message;
  int32_t number;
} humusgo_attempt_info;
void humusgo_attempt_read(const humus_attempt *a, humusgo_attempt_info *info);
/* The first `n` response headers of an attempt (n <= humus_attempt_header_count), in the order received. */
void humusgo_attempt_headers(const humus_attempt *a, humusgo_header *out, size_t n);

/* One attempt's request as an attempt hook's `before` sees it, read in one crossing. Strings live for the
 * callback (until a header is set). */
typedef struct humusgo_attempt_request_info {
  const char *method;
  const char *url;
  int32_t number;
  size_t header_count;
} humusgo_attempt_request_info;
void humusgo_attempt_request_read(const humus_attempt_request *r, humusgo_attempt_request_info *info);
/* The first `n` headers the attempt is to send (n <= humus_attempt_request_header_count), in order. */
void humusgo_attempt_request_headers(const humus_attempt_request *r, humusgo_header *out, size_t n);
/* Gives the request an attempt-hooks table of its own (humus_request_set_attempt_hooks) calling the Go
 * trampolines of `handle` (hooks.go): `before` always, `after` when `after` is set. Its destroy deletes the
 * handle; on failure the handle is the caller's to delete. */
humus_status humusgo_set_attempt_hooks(humus_request *r, uintptr_t handle, int after, humus_error **err);

#endif /* HUMUSGO_GLUE_H */
