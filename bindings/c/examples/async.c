/*
 * async — several GETs at once through humus_client_submit, from C (docs/bindings.md §17.1).
 *
 *   async BASE_URL PATH...
 *
 * Starts one asynchronous call per PATH on the runtime's event loop and returns to wait for them: each
 * outcome is delivered once, on the event-loop thread, to on_done, which must not block. Prints
 * "PATH: status N after M attempt(s)" per call in the order given, then "calls: N". A call that got no
 * response prints "PATH: HUMUS_E_...: message" and makes the exit status 1; bad usage exits 2.
 */
#define _POSIX_C_SOURCE 200809L

#include <humus_http.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Counts the calls still in flight; main waits on `done` until it reaches 0. */
typedef struct {
  pthread_mutex_t mu;
  pthread_cond_t done;
  int pending;
} waiter;

/* One call's outcome, filled in by on_done. */
typedef struct {
  waiter *w;
  humus_status outcome;
  int status;
  int attempts;
  char message[256];
} call_outcome;

/* On the event-loop thread: copies what main prints, frees what the outcome handed over, counts down. */
static void on_done(void *user_data, humus_status status, humus_response *resp, humus_error *err) {
  call_outcome *o = (call_outcome *)user_data;
  o->outcome = status;
  if (status == HUMUS_OK) {
    o->status = humus_response_status(resp);
    o->attempts = humus_response_attempts(resp);
  } else {
    snprintf(o->message, sizeof o->message, "%s", humus_error_message(err));
  }
  humus_response_free(resp);
  humus_error_free(err);
  pthread_mutex_lock(&o->w->mu);
  if (--o->w->pending == 0) pthread_cond_signal(&o->w->done);
  pthread_mutex_unlock(&o->w->mu);
}

static int fail(const char *what, const humus_error *err) {
  fprintf(stderr, "async: %s: %s: %s\n", what, humus_status_name(humus_error_status(err)),
          humus_error_message(err));
  return 1;
}

int main(int argc, char **argv) {
  const int calls = argc - 2;
  waiter w;
  call_outcome *outcomes;
  char settings_json[1024];
  humus_runtime *rt = NULL;
  humus_settings *settings = NULL;
  humus_client *client = NULL;
  humus_error *err = NULL;
  int rc = 0;
  int started = 0;
  int i;

  if (calls < 1) {
    fprintf(stderr, "usage: async BASE_URL PATH...\n");
    return 2;
  }
  outcomes = (call_outcome *)calloc((size_t)calls, sizeof *outcomes);
  if (outcomes == NULL) return 1;
  pthread_mutex_init(&w.mu, NULL);
  pthread_cond_init(&w.done, NULL);
  w.pending = 0;

  snprintf(settings_json, sizeof settings_json, "{\"base_url\": \"%s\", \"timeout\": \"10s\"}", argv[1]);
  if (humus_runtime_new(NULL, 0, &rt, &err) != HUMUS_OK ||
      humus_settings_from_json(settings_json, strlen(settings_json), &settings, &err) != HUMUS_OK ||
      humus_client_new(rt, settings, &client, &err) != HUMUS_OK) {
    rc = fail("setup", err);
    goto done;
  }
  for (i = 0; i < calls; i++) {
    char url[1024];
    humus_request *req = NULL;
    snprintf(url, sizeof url, "%s%s", argv[1], argv[i + 2]);
    outcomes[i].w = &w;
    pthread_mutex_lock(&w.mu);
    w.pending++;
    pthread_mutex_unlock(&w.mu);
    /* The request is copied by submit, so it is freed at once; no humus_call handle is kept (NULL). */
    if (humus_request_new("GET", url, &req, &err) != HUMUS_OK ||
        humus_client_submit(client, req, on_done, &outcomes[i], NULL, &err) != HUMUS_OK) {
      pthread_mutex_lock(&w.mu);
      w.pending--;
      pthread_mutex_unlock(&w.mu);
      humus_request_free(req);
      rc = fail(argv[i + 2], err);
      break;
    }
    humus_request_free(req);
    started++;
  }
  pthread_mutex_lock(&w.mu);
  while (w.pending > 0) pthread_cond_wait(&w.done, &w.mu);
  pthread_mutex_unlock(&w.mu);

  for (i = 0; i < started; i++) {
    if (outcomes[i].outcome == HUMUS_OK) {
      printf("%s: status %d after %d attempt(s)\n", argv[i + 2], outcomes[i].status, outcomes[i].attempts);
    } else {
      printf("%s: %s: %s\n", argv[i + 2], humus_status_name(outcomes[i].outcome), outcomes[i].message);
      rc = 1;
    }
  }
  printf("calls: %d\n", started);

done:
  humus_client_free(client); /* every call has delivered its outcome by now */
  humus_settings_free(settings);
  humus_runtime_free(rt);
  humus_error_free(err);
  pthread_cond_destroy(&w.done);
  pthread_mutex_destroy(&w.mu);
  free(outcomes);
  return rc;
}
