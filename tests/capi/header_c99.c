/* The public header must compile as strict C99 (-pedantic -Werror) and stand alone. */
#include "humus_http.h"

int humus_header_c99_probe(void);
int humus_header_c99_probe(void) {
  humus_classifier classifier = HUMUS_CLASSIFIER_INIT;
  humus_breaker_policy policy = HUMUS_BREAKER_POLICY_INIT;
  humus_classification c = {HUMUS_RETRY_DONE, HUMUS_BREAKER_SUCCESS, 0};
  return (int)classifier.version + (int)policy.version + c.retry + HUMUS_VERSION_NUMBER * 0;
}
