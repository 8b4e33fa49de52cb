#include "retry/retry_after.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

namespace humus::retry {
namespace {
namespace HUMUS_UNITY_ID {

using std::chrono::milliseconds;
using std::chrono::seconds;

// Sun, 06 Nov 1994 08:49:37 GMT.
const WallTime kDate = WallTime(seconds(784111777));
const char* const kDateText = "Sun, 06 Nov 1994 08:49:37 GMT";

TEST(RetryAfter, DeltaSeconds) {
  EXPECT_EQ(parse_retry_after("120", kDate), seconds(120));
  EXPECT_EQ(parse_retry_after("0", kDate), Duration::zero());
  EXPECT_EQ(parse_retry_after("007", kDate), seconds(7));
}

TEST(RetryAfter, WhitespaceAroundIsTrimmed) {
  EXPECT_EQ(parse_retry_after("  2\t", kDate), seconds(2));
  EXPECT_EQ(parse_retry_after(std::string(" ") + kDateText + " ", kDate - seconds(3)), seconds(3));
}

TEST(RetryAfter, HugeDeltaSaturates) {
  EXPECT_EQ(parse_retry_after("999999999999999999999999999999999999999999", kDate), kMaxRetryAfter);
  EXPECT_EQ(parse_retry_after("9223372036854775808", kDate), kMaxRetryAfter);  // 2^63
  EXPECT_EQ(parse_retry_after("1000000000", kDate), kMaxRetryAfter);
  EXPECT_EQ(parse_retry_after("999999999", kDate), seconds(999999999));
}

// F77
TEST(RetryAfter, FutureDateIsTheExactDelta) {
  EXPECT_EQ(parse_retry_after(kDateText, kDate - seconds(90)), seconds(90));
  // Sub-second "now": the delta keeps its precision.
  EXPECT_EQ(parse_retry_after(kDateText, kDate - milliseconds(1500)), milliseconds(1500));
}

TEST(RetryAfter, ObsoleteDateForms) {
  EXPECT_EQ(parse_retry_after("Sunday, 06-Nov-94 08:49:37 GMT", kDate - seconds(5)), seconds(5));
  EXPECT_EQ(parse_retry_after("Sun Nov  6 08:49:37 1994", kDate - seconds(5)), seconds(5));
}

// F77
TEST(RetryAfter, DateInThePastIsZero) {
  EXPECT_EQ(parse_retry_after(kDateText, kDate + seconds(30)), Duration::zero());
  EXPECT_EQ(parse_retry_after(kDateText, kDate), Duration::zero());
  EXPECT_EQ(parse_retry_after(kDateText, WallTime::max()), Duration::zero());
}

TEST(RetryAfter, FarFutureDateSaturates) {
  EXPECT_EQ(parse_retry_after("Sun, 06 Nov 99999 08:49:37 GMT", kDate), kMaxRetryAfter);
  // Even from the most negative "now" the difference does not overflow.
  EXPECT_EQ(parse_retry_after("Sun, 06 Nov 99999 08:49:37 GMT", WallTime::min()), kMaxRetryAfter);
}

// F77
TEST(RetryAfter, MalformedIsIgnored) {
  for (const char* bad : {"", "   ", "-1", "-0", "+5", "1.5", ".5", "1e3", "5s", "10 s", "soon", "0x10",
                          "5 Nov 2026", "Sun, 32 Nov 1994 08:49:37 GMT", "12 34"}) {
    EXPECT_EQ(parse_retry_after(bad, kDate), std::nullopt) << '"' << bad << '"';
  }
}

TEST(RetryAfter, EmbeddedNulIsIgnored) {
  EXPECT_EQ(parse_retry_after(std::string("5\0", 2), kDate), std::nullopt);
  EXPECT_EQ(parse_retry_after(std::string("Sun, 06 Nov 1994 08:49:37 GMT\0x", 31), kDate - seconds(1)),
            std::nullopt);
}

}  // namespace HUMUS_UNITY_ID
}  // namespace
}  // namespace humus::retry
