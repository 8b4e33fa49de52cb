/*
 * Classifier and breaker-policy plugins from C (docs/retries.md §5.4a), over real sockets against the test
 * server: bindings/c/examples/retry_409_plugin.c named in the settings JSON.
 *
 *   plugin_test PLUGIN URL     PLUGIN: the example plugin's absolute path; URL: the plain listener
 *
 * Prints one "ok: ..." line per check and "plugin: ok" at the end, exit 0; otherwise says what failed,
 * exit 1.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "humus_http.h"

static const char *plugin;
static const char *base;
static int failures;

static void check(int ok, const char *what, const humus_error *err) {
  if (ok) {
    printf("ok: %s\n", what);
    return;
  }
  failures++;
  printf("FAILED: %s (%s: %s)\n", what, humus_status_name(humus_error_status(err)), humus_error_message(err));
}

static int has_field(const humus_error *err, const char *field) {
  size_t i;
  for (i = 0; i < humus_error_field_count(err); i++) {
    if (strcmp(humus_error_field(err, i), field) == 0) return 1;
  }
  return 0;
}

/* The settings: base_url, then `rest` (JSON members with a leading comma, %s for the plugin path twice). */
static humus_status settings(const char *rest, humus_settings **out, humus_error **err) {
  char json[2048];
  char members[1536];
  snprintf(members, sizeof members, rest, plugin, plugin);
  snprintf(json, sizeof json, "{\"base_url\": \"%s\"%s}", base, members);
  return humus_settings_from_json(json, strlen(json), out, err);
}

/* One call: method, path and body (NULL: none). Returns the status, or 0 with *err when no response came. */
static int call(humus_client *c, const char *method, const char *path, const char *body, int *attempts,
                humus_error **err) {
  char url[512];
  humus_request *req = NULL;
  humus_response *resp = NULL;
  int status = 0;
  snprintf(url, sizeof url, "%s%s", base, path);
  if (humus_request_new(method, url, &req, err) == HUMUS_OK &&
      (body == NULL || humus_request_set_body(req, body, strlen(body)) == HUMUS_OK) &&
      humus_client_do(c, req, &resp, err) == HUMUS_OK) {
    status = humus_response_status(resp);
    if (attempts != NULL) *attempts = humus_response_attempts(resp);
  }
  humus_response_free(resp);
  humus_request_free(req);
  return status;
}

/* Scripts `path` on the test server through its control API (same origin, so the same client). */
static int script(humus_client *c, const char *path, const char *steps) {
  char body[512];
  humus_error *err = NULL;
  int status;
  snprintf(body, sizeof body, "{\"path\": \"%s\", \"steps\": %s}", path, steps);
  status = call(c, "POST", "/_control/script", body, NULL, &err);
  check(status == 200, "the test server took the script", err);
  humus_error_free(err);
  return status == 200;
}

/* A 409 then a 200: the plugin retries the 409 and counts both attempts as successes. */
static void classifier_retries_409(humus_runtime *rt) {
  humus_settings *s = NULL;
  humus_client *c = NULL;
  humus_error *err = NULL;
  humus_breaker_counts counts = HUMUS_BREAKER_COUNTS_INIT;
  int attempts = 0;
  int status;
  if (settings(", \"backoff_base\": \"1ms\", \"backoff_max\": \"5ms\", \"classify\": {\"plugin\": \"%s\", "
               "\"symbol\": \"retry_409_classifier\", \"config\": {\"status\": 409}}",
               &s, &err) != HUMUS_OK ||
      humus_client_new(rt, s, &c, &err) != HUMUS_OK) {
    check(0, "settings naming the classifier plugin load", err);
    goto done;
  }
  if (!script(c, "/ledger", "[{\"status\": 409}, {\"status\": 200, \"body\": \"paid\"}]")) goto done;
  status = call(c, "GET", "/ledger", NULL, &attempts, &err);
  check(status == 200 && attempts == 2, "a 409 is retried: 200 after 2 attempts", err);
  /* The script's POST, the 409 and the 200: three successes, no failure. */
  check(humus_client_breaker_counts(c, &counts) == HUMUS_OK && counts.successes == 3 && counts.failures == 0,
        "the 409 counted as a success", NULL);
done:
  humus_client_free(c);
  humus_settings_free(s);
  humus_error_free(err);
}

/* Without the plugin, the same answers end the call at the 409: the plugin is what retried it. */
static void default_returns_409(humus_runtime *rt) {
  humus_settings *s = NULL;
  humus_client *c = NULL;
  humus_error *err = NULL;
  int attempts = 0;
  if (settings("", &s, &err) != HUMUS_OK || humus_client_new(rt, s, &c, &err) != HUMUS_OK) {
    check(0, "plain settings load", err);
    goto done;
  }
  if (!script(c, "/ledger-default", "[{\"status\": 409}, {\"status\": 200}]")) goto done;
  check(call(c, "GET", "/ledger-default", NULL, &attempts, &err) == 409 && attempts == 1,
        "the default classifier returns the 409 after 1 attempt", err);
done:
  humus_client_free(c);
  humus_settings_free(s);
  humus_error_free(err);
}

/* The policy plugin opens after 2 failures in a row (the built-in policy would need 5). */
static void policy_opens_after_two(humus_runtime *rt) {
  humus_settings *s = NULL;
  humus_client *c = NULL;
  humus_error *err = NULL;
  int32_t state = -1;
  if (settings(", \"max_attempts\": 1, \"breaker_policy\": {\"plugin\": \"%s\", \"symbol\": "
               "\"consecutive_failures_policy\", \"config\": {\"consecutive_failures\": 2}}",
               &s, &err) != HUMUS_OK ||
      humus_client_new(rt, s, &c, &err) != HUMUS_OK) {
    check(0, "settings naming the policy plugin load", err);
    goto done;
  }
  if (!script(c, "/down", "[{\"status\": 503}]")) goto done;
  check(call(c, "GET", "/down", NULL, NULL, &err) == 503, "first 503", err);
  check(call(c, "GET", "/down", NULL, NULL, &err) == 503, "second 503", err);
  check(humus_client_breaker_state(c, &state) == HUMUS_OK && state == HUMUS_CIRCUIT_OPEN,
        "the plugin's policy opened the breaker after 2 failures", NULL);
  check(call(c, "GET", "/down", NULL, NULL, &err) == 0 && humus_error_status(err) == HUMUS_E_REJECTED,
        "the next call is rejected", err);
done:
  humus_client_free(c);
  humus_settings_free(s);
  humus_error_free(err);
}

/* to_json names the plugin as given; reading it back gives equal settings, and clones share the plugin. */
static void round_trip(void) {
  humus_settings *s = NULL;
  humus_settings *again = NULL;
  humus_error *err = NULL;
  char *text = NULL;
  size_t len = 0;
  if (settings(", \"classify\": {\"plugin\": \"%s\", \"symbol\": \"retry_409_classifier\"}", &s, &err) !=
          HUMUS_OK ||
      humus_settings_to_json(s, &text, &len, &err) != HUMUS_OK) {
    check(0, "to_json of plugin settings", err);
    goto done;
  }
  check(strstr(text, "\"classify\":{\"plugin\":") != NULL &&
            strstr(text, "\"symbol\":\"retry_409_classifier\"") && strstr(text, "\"config\":{}") != NULL,
        "to_json writes the plugin object back", NULL);
  check(strstr(text, "breaker_policy") == NULL, "to_json leaves breaker_policy out when there is none", NULL);
  check(humus_settings_from_json(text, len, &again, &err) == HUMUS_OK, "to_json's text loads again", err);
done:
  humus_string_free(text);
  humus_settings_free(again);
  humus_settings_free(s);
  humus_error_free(err);
}

/* Every failure is HUMUS_E_CONFIG naming the key, with the loader's (or the plugin's) message. */
static void refused(const char *what, const char *members, const char *field, const char *in_message) {
  humus_settings *s = NULL;
  humus_error *err = NULL;
  const humus_status st = settings(members, &s, &err);
  char line[256];
  snprintf(line, sizeof line, "%s: HUMUS_E_CONFIG naming %s", what, field);
  check(st == HUMUS_E_CONFIG && has_field(err, field) && strstr(humus_error_message(err), in_message) != NULL,
        line, err);
  humus_settings_free(s);
  humus_error_free(err);
}

static void failures_are_named(void) {
  refused("a missing file",
          ", \"classify\": {\"plugin\": \"/nonexistent/humus-plugin.so\", \"symbol\": \"x\"}",
          "classify.plugin", "No such file");
  refused("a missing symbol", ", \"classify\": {\"plugin\": \"%s\", \"symbol\": \"no_such_entry\"}",
          "classify.symbol", "no_such_entry");
  refused("a failing entry",
          ", \"classify\": {\"plugin\": \"%s\", \"symbol\": \"retry_409_classifier\", "
          "\"config\": {\"status\": 7}}",
          "classify.config.status", "status: must be an integer from 100 to 599");
  refused("a failing policy entry",
          ", \"breaker_policy\": {\"plugin\": \"%s\", \"symbol\": "
          "\"consecutive_failures_policy\", \"config\": {\"consecutive_failures\": 0}}",
          "breaker_policy.symbol", "HUMUS_E_CONFIG");
  refused("a relative path", ", \"classify\": {\"plugin\": \"libretry_409_plugin.so\", \"symbol\": \"x\"}",
          "classify.plugin", "absolute");
  refused("a misspelt key", ", \"classify\": {\"plugin\": \"%s\", \"symbl\": \"retry_409_classifier\"}",
          "classify.symbl", "did you mean \"classify.symbol\"");
}

/* humus_settings_check_field loads the plugin too: a missing symbol is caught before any settings exist. */
static void check_field(void) {
  char value[1024];
  humus_error *err = NULL;
  snprintf(value, sizeof value, "{\"plugin\": \"%s\", \"symbol\": \"retry_409_classifier\"}", plugin);
  check(humus_settings_check_field("classify", value, strlen(value), &err) == HUMUS_OK,
        "check_field accepts the plugin", err);
  humus_error_free(err);
  err = NULL;
  snprintf(value, sizeof value, "{\"plugin\": \"%s\", \"symbol\": \"nope\"}", plugin);
  check(humus_settings_check_field("breaker_policy", value, strlen(value), &err) == HUMUS_E_CONFIG &&
            has_field(err, "breaker_policy.symbol"),
        "check_field names breaker_policy.symbol", err);
  humus_error_free(err);
}

int main(int argc, char **argv) {
  humus_runtime *rt = NULL;
  humus_error *err = NULL;
  if (argc != 3) {
    fprintf(stderr, "usage: plugin_test PLUGIN URL\n");
    return 2;
  }
  plugin = argv[1];
  base = argv[2];
  if (humus_runtime_new(NULL, 0, &rt, &err) != HUMUS_OK) {
    check(0, "runtime", err);
    humus_error_free(err);
    return 1;
  }
  classifier_retries_409(rt);
  default_returns_409(rt);
  policy_opens_after_two(rt);
  round_trip();
  failures_are_named();
  check_field();
  humus_runtime_free(rt);
  if (failures > 0) {
    printf("plugin: %d check(s) failed\n", failures);
    return 1;
  }
  printf("plugin: ok\n");
  return 0;
}
