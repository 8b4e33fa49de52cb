/* A streamed body read ahead on the event loop into a bounded ring, for Go to copy out of (see glue.h).
 *
 * Why: a Read that blocks in C holds an OS thread per call and pays a thread hand-off each time it waits
 * (bench/HISTORY.md "The Go boundary"). Here the loop keeps the ring filled while Go copies the previous
 * bytes out, so Go crosses into C only for short calls, and waits — when it must — on a channel.
 *
 * Every field below is guarded by `mu`. Who runs what: on_headers and on_read on the event-loop thread;
 * humusgo_body_take and humusgo_body_close on a Go thread, one at a time. A read is issued with `mu` held,
 * from either side, and never once `closing` is set, so none is issued concurrently with the close that
 * frees the response (the C ABI's rule); humus_response_read_async only posts to the loop, so holding `mu`
 * across it cannot deadlock with on_read, which takes `mu` on the loop. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "_cgo_export.h"
#include "glue.h"

/* A read asks for at least this much room, so a nearly full ring waits for Go instead of reading in
 * crumbs; a small ring (a Content-Length below HUMUSGO_WHOLE_BODY) reads into any room it has. A read that
 * brings at least as much (one full receive buffer of the core's) says more is on its way. */
enum { kMinRoom = 16 * 1024, kFullRead = 16 * 1024 };
/* A body of at least this Content-Length gets the large ring. */
#define HUMUSGO_LARGE_BODY (1024 * 1024)

struct humusgo_body {
  pthread_mutex_t mu;
  humus_response *resp;
  uintptr_t handle; /* the Go side's, for the completions */
  int small;        /* the whole body fits: the headers reach Go once it is all in */
  int delivered;    /* the HUMUSGO_BODY_OPENED completion is queued */
  int pending;      /* a humus_response_read_async is in flight, into ring[tail] */
  int ended;        /* the body ended (status HUMUS_OK) or failed (status, err) */
  int closing;      /* Go closed it: the pending read's completion frees it */
  int waiting;      /* Go waits for one HUMUSGO_BODY_READY: 1 for a batch, 2 for any byte (see notify) */
  int flowing;      /* the last read was full: more is on its way */
  humus_status status;
  humus_error *err;
  size_t cap, head, len; /* the ring: `len` bytes from `head`, wrapping at `cap` */
  size_t min_room;
  unsigned char ring[];
};

static void on_read(void *user_data, humus_status status, size_t n, humus_error *err);

static void destroy(humusgo_body *b) {
  if (b->err != NULL) humus_error_free(b->err);
  pthread_mutex_destroy(&b->mu);
  free(b);
}

/* The contiguous free bytes at the ring's tail. */
static size_t room(const humusgo_body *b, size_t *tail) {
  *tail = (b->head + b->len) % b->cap;
  if (b->len == b->cap) return 0;
  return *tail >= b->head ? b->cap - *tail : b->head - *tail;
}

/* Issues the next read when the body goes on, none is in flight and the ring has room for one. */
static void read_more(humusgo_body *b) {
  size_t tail, free_bytes;
  humus_status st;
  if (b->pending || b->ended || b->closing) return;
  if (b->len == 0) b->head = 0; /* an empty ring reads into its whole length */
  free_bytes = room(b, &tail);
  if (free_bytes < b->min_room) return;
  b->pending = 1;
  st = humus_response_read_async(b->resp, b->ring + tail, free_bytes, on_read, b, &b->err);
  if (st != HUMUS_OK) {
    b->pending = 0;
    b->ended = 1;
    b->status = st;
  }
}

/* Queues a completion, or hands it to Go on this thread when the queue cannot grow (out of memory). */
static void tell_go(uintptr_t handle, int32_t kind, humus_status status, humus_error *err, humusgo_body *body) {
  humusgo_completion c = {0};
  c.handle = handle;
  c.kind = kind;
  c.status = status;
  c.err = err;
  c.body = body;
  if (humusgo_completions_push(&c) != 0) humusgoBodyEvent(handle, kind, status, err, body);
}

/* After the ring or the body's state changed: the headers, once, then a wake-up for a waiting Read.
 * Each wake-up costs Go a goroutine switch or two (and often a thread's), so while the body flows — full
 * reads, the loop reading on — a Read waits for half a ring; a short read (the socket was drained: a
 * trickle), the end, or a ring the loop stopped filling wakes it at once, as does a Read that waited long
 * enough (humusgo_body_hurry). */
static void notify(humusgo_body *b) {
  int batch_ready;
  if (!b->delivered) {
    if (b->small && !b->ended) return;
    b->delivered = 1;
    tell_go(b->handle, HUMUSGO_BODY_OPENED, HUMUS_OK, NULL, b);
    return;
  }
  if (!b->waiting || (b->len == 0 && !b->ended)) return;
  batch_ready = b->ended || !b->pending || !b->flowing || b->len >= b->cap / 2;
  if (b->waiting == 2 || batch_ready) {
    b->waiting = 0;
    tell_go(b->handle, HUMUSGO_BODY_READY, HUMUS_OK, NULL, b);
  }
}

static void on_read(void *user_data, humus_status status, size_t n, humus_error *err) {
  humusgo_body *b = user_data;
  pthread_mutex_lock(&b->mu);
  b->pending = 0;
  if (b->closing) {
    pthread_mutex_unlock(&b->mu);
    if (err != NULL) humus_error_free(err);
    destroy(b);
    return;
  }
  if (status != HUMUS_OK) {
    b->ended = 1;
    b->status = status;
    b->err = err;
  } else if (n == 0) {
    b->ended = 1;
  } else {
    b->len += n;
  }
  b->flowing = status == HUMUS_OK && n >= kFullRead;
  read_more(b);
  notify(b);
  pthread_mutex_unlock(&b->mu);
}

/* A Content-Length under HUMUSGO_WHOLE_BODY, or -1. */
static long long small_length(const humus_response *resp) {
  const char *v = humus_response_header(resp, "Content-Length");
  char *end = NULL;
  long long n;
  if (v == NULL || *v < '0' || *v > '9') return -1;
  n = strtoll(v, &end, 10);
  return end != NULL && *end == '\0' && n >= 0 && n < HUMUSGO_WHOLE_BODY ? n : -1;
}

/* A Content-Length of at least HUMUSGO_LARGE_BODY. */
static int large_length(const humus_response *resp) {
  const char *v = humus_response_header(resp, "Content-Length");
  return v != NULL && strtoll(v, NULL, 10) >= HUMUSGO_LARGE_BODY;
}

static void on_headers(void *user_data, humus_status status, humus_response *resp, humus_error *err) {
  humusgo_body *b;
  long long length;
  size_t cap;
  if (status != HUMUS_OK) {
    tell_go((uintptr_t)user_data, HUMUSGO_BODY_OPENED, status, err, NULL);
    return;
  }
  length = small_length(resp);
  /* A small ring has one byte more than the body: the read that finds the end needs room too. */
  cap = length >= 0 ? (size_t)length + 1 : large_length(resp) ? HUMUSGO_BODY_RING_LARGE : HUMUSGO_BODY_RING;
  b = calloc(1, sizeof *b + cap);
  if (b == NULL) {
    humus_response_free(resp); /* closes the body, counting its result as classified */
    tell_go((uintptr_t)user_data, HUMUSGO_BODY_OPENED, HUMUS_E_NO_MEMORY, NULL, NULL);
    return;
  }
  pthread_mutex_init(&b->mu, NULL);
  b->resp = resp;
  b->handle = (uintptr_t)user_data;
  b->small = length >= 0;
  b->cap = cap;
  b->min_room = length >= 0 ? 1 : kMinRoom;
  pthread_mutex_lock(&b->mu);
  read_more(b);
  notify(b);
  pthread_mutex_unlock(&b->mu);
}

humus_status humusgo_client_submit_open_queued(humus_client *c, const humus_request *r, uintptr_t handle,
                                               humus_call **call, humus_error **err) {
  return humus_client_submit_open(c, r, on_headers, (void *)handle, call, err);
}

int humusgo_body_take(humusgo_body *b, void *buf, size_t cap, int drop, size_t *n, humus_status *status,
                      humus_error **err) {
  size_t copied = 0;
  int result = HUMUSGO_TAKE_BYTES;
  pthread_mutex_lock(&b->mu);
  if (drop) { /* consumed unread: the tail, where a pending read lands, stays */
    b->head = (b->head + b->len) % b->cap;
    b->len = 0;
  }
  while (copied < cap && b->len > 0) {
    size_t piece = b->cap - b->head;
    if (piece > b->len) piece = b->len;
    if (piece > cap - copied) piece = cap - copied;
    memcpy((unsigned char *)buf + copied, b->ring + b->head, piece);
    copied += piece;
    b->head = (b->head + piece) % b->cap;
    b->len -= piece;
  }
  *n = copied;
  if (copied > 0 && b->len == 0 && b->ended && b->status == HUMUS_OK) {
    result = HUMUSGO_TAKE_LAST;
  } else if (copied == 0) {
    if (!b->ended) {
      b->waiting = 1;
      result = HUMUSGO_TAKE_WAIT;
    } else if (b->status == HUMUS_OK) {
      result = HUMUSGO_TAKE_END;
    } else {
      result = HUMUSGO_TAKE_FAILED;
      *status = b->status;
      *err = b->err;
      b->err = NULL;
    }
  }
  read_more(b);
  pthread_mutex_unlock(&b->mu);
  return result;
}

void humusgo_body_hurry(humusgo_body *b) {
  pthread_mutex_lock(&b->mu);
  if (b->waiting == 1) {
    b->waiting = 2;
    notify(b);
  }
  pthread_mutex_unlock(&b->mu);
}

void humusgo_body_close(humusgo_body *b) {
  int pending, ended;
  pthread_mutex_lock(&b->mu);
  b->closing = 1; /* from here on_read issues no read, so none runs concurrently with the close below */
  pending = b->pending;
  ended = b->ended;
  pthread_mutex_unlock(&b->mu);
  if (ended) {
    /* Its result is counted already (at the end, or the failure): nothing to wait for. */
    humus_response_free(b->resp);
  } else {
    /* Outside mu: it waits for the loop, where a pending read's on_read takes mu. It returns once the
     * result is counted, as a blocking body's close does; a pending read's on_read has run by then. */
    humus_response_close(b->resp);
  }
  if (!pending) destroy(b);
}

humus_response *humusgo_body_response(const humusgo_body *b) { return b->resp; }
