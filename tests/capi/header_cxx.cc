// The public header must compile as C++ and stand alone.
#include "humus_http.h"

int humus_header_cxx_probe();
int humus_header_cxx_probe() {
  humus_classifier classifier = HUMUS_CLASSIFIER_INIT;
  humus_breaker_policy policy = HUMUS_BREAKER_POLICY_INIT;
  return static_cast<int>(classifier.version + policy.version);
}
