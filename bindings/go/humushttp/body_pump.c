/* The hand-offs of a body read ahead on the event loop (see glue.h): its headers and its wake-ups become
 * completions for Go. The ring itself is the library's (humus_response_read_ahead, humus_response_take), so
 * this file only decides when Go hears of a body: at once, or — for a body held whole — once all of it is in. */
#include "_cgo_export.h"
#include "glue.h"

/* Queues a completion, or hands it to Go on this thread when the queue cannot grow (out of memory). */
static void tell_go(uintptr_t handle, int32_t kind, humus_status status, humus_error *err, humus_response *resp) {
  humusgo_completion c = {0};
  c.handle = handle;
  c.kind = kind;
  c.status = status;
  c.err = err;
  c.resp = resp;
  if (humusgo_completions_push(&c) != 0) humusgoBodyEvent(handle, kind, status, err, resp);
}

/* A take may find something: for a body held whole, the first one is its headers' hand-off as well. */
static void on_ready(void *user_data, humus_response *resp) {
  tell_go((uintptr_t)user_data, HUMUSGO_BODY_READY, HUMUS_OK, NULL, resp);
}

static void on_headers(void *user_data, humus_status status, humus_response *resp, humus_error *err) {
  int whole = 0;
  if (status == HUMUS_OK) {
    status = humus_response_read_ahead(resp, 0, on_ready, user_data, &whole, &err);
    if (status != HUMUS_OK) {
      humus_response_free(resp); /* closes the body, counting its result as classified */
      resp = NULL;
    }
  }
  /* A small body reaches Go whole, with its headers: one hand-off for the call (its first ready). */
  if (status != HUMUS_OK || !whole) tell_go((uintptr_t)user_data, HUMUSGO_BODY_OPENED, status, err, resp);
}

humus_status humusgo_client_submit_open_queued(humus_client *c, const humus_request *r, uintptr_t handle,
                                               humus_call **call, humus_error **err) {
  return humus_client_submit_open(c, r, on_headers, (void *)handle, call, err);
}
