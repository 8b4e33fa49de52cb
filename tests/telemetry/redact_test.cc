// S22: what a URL may show in telemetry (docs/telemetry.md §13.1).
#include "telemetry/redact.h"

#include <gtest/gtest.h>

namespace humus::telemetry {
namespace {
namespace HUMUS_UNITY_ID {

// F111, S10
TEST(RedactedUrl, DropsUserInfoAndTheFragment) {
  EXPECT_EQ(redacted_url("https://user:pw@payments:8443/a?b=1#frag"), "https://payments:8443/a?b=1");
  EXPECT_EQ(redacted_url("http://u@h"), "http://h");
  EXPECT_EQ(redacted_url("http://h/p#frag"), "http://h/p");
  EXPECT_EQ(redacted_url("http://h/a@b"), "http://h/a@b");  // an '@' in the path is no user-info
  EXPECT_EQ(redacted_url("http://h:8080/plain/path"), "http://h:8080/plain/path");
}

// S22
TEST(RedactedUrl, RedactsOnlyTheNamedParametersValues) {
  EXPECT_EQ(redacted_url("https://h/p?sig=abc&Signature=&x=sig&signature=keep"),
            "https://h/p?sig=REDACTED&Signature=REDACTED&x=sig&signature=keep");
  EXPECT_EQ(redacted_url("https://h/p?AWSAccessKeyId"), "https://h/p?AWSAccessKeyId");  // no value to hide
  EXPECT_EQ(redacted_url("https://h/p"), "https://h/p");
  EXPECT_EQ(redacted_url("https://h/p?"), "https://h/p?");
}

}  // namespace HUMUS_UNITY_ID
}  // namespace
}  // namespace humus::telemetry
