/*
 * classify — a classifier callback from C (docs/retries.md §5.4).
 *
 *   classify BASE_URL PATH
 *
 * One GET of PATH through a client whose classifier says what the ledger's 409 means: another write to the
 * account is in flight, over by the next attempt, so the attempt is retried and counts for the dependency,
 * not against it. Everything else goes to the default classifier. Prints each attempt as the classifier saw
 * it ("attempt 1: 409 -> retry"), then "status: N" and "attempts: N". On failure `HUMUS_E_...: message` on
 * stderr and exit 1; bad usage exits 2. The same rule compiled as a plugin, named in the settings instead of
 * set by code, is retry_409_plugin.c.
 */
#include <humus_http.h>
#include <stdio.h>
#include <string.h>

/* Runs on the thread that drives the attempt (here the caller's, in humus_client_do), possibly on several at
 * once for concurrent calls: it keeps no state, and stdio locks each printf. */
static humus_status classify(void *user_data, const humus_attempt *a, humus_classification *out) {
  humus_status st;
  (void)user_data;
  if (humus_attempt_status(a) == 409) {
    out->retry = HUMUS_RETRY_AGAIN;
    out->breaker = HUMUS_BREAKER_SUCCESS;
    out->retry_after_ms = 0;
    st = HUMUS_OK;
  } else {
    st = humus_classify_default(a, out);
  }
  if (st == HUMUS_OK) {
    printf("attempt %d: %d -> %s\n", (int)humus_attempt_number(a), (int)humus_attempt_status(a),
           out->retry == HUMUS_RETRY_AGAIN ? "retry" : "done");
  }
  return st;
}

int main(int argc, char **argv) {
  char settings_json[1024];
  char url[1024];
  humus_classifier classifier = HUMUS_CLASSIFIER_INIT;
  humus_runtime *rt = NULL;
  humus_settings *settings = NULL;
  humus_client *client = NULL;
  humus_request *req = NULL;
  humus_response *resp = NULL;
  humus_error *err = NULL;
  int rc = 0;

  if (argc != 3) {
    fprintf(stderr, "usage: classify BASE_URL PATH\n");
    return 2;
  }
  /* Short waits between attempts: the example is about the verdict, not the backoff. */
  snprintf(settings_json, sizeof settings_json,
           "{\"base_url\": \"%s\", \"backoff_base\": \"10ms\", \"backoff_max\": \"50ms\"}", argv[1]);
  snprintf(url, sizeof url, "%s%s", argv[1], argv[2]);
  classifier.classify = classify; /* no user_data, so no destroy */
  if (humus_runtime_new(NULL, 0, &rt, &err) != HUMUS_OK ||
      humus_settings_from_json(settings_json, strlen(settings_json), &settings, &err) != HUMUS_OK ||
      humus_settings_set_classifier(settings, &classifier, &err) != HUMUS_OK ||
      humus_client_new(rt, settings, &client, &err) != HUMUS_OK ||
      humus_request_new("GET", url, &req, &err) != HUMUS_OK ||
      humus_client_do(client, req, &resp, &err) != HUMUS_OK) {
    fprintf(stderr, "%s: %s\n", humus_status_name(humus_error_status(err)), humus_error_message(err));
    rc = 1;
  } else {
    printf("status: %d\nattempts: %d\n", (int)humus_response_status(resp),
           (int)humus_response_attempts(resp));
  }
  humus_response_free(resp);
  humus_request_free(req);
  humus_client_free(client);
  humus_settings_free(settings);
  humus_runtime_free(rt);
  humus_error_free(err);
  return rc;
}
