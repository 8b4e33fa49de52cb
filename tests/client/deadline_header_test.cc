// Deadline propagation's settings and header value (docs/timeouts.md §8.4); the call's use of them is pinned by the
// vectors deadline_header_* and deadline_min_attempt_time, and by deadline_server_test.cc.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "client/call_headers.h"
#include "settings/settings.h"

namespace humus::client {
namespace {
namespace HUMUS_UNITY_ID {

using settings::DeadlineFormat;
using std::chrono::microseconds;
using std::chrono::milliseconds;

TEST(DeadlineHeader, WholeMillisecondsRoundedDown) {
  EXPECT_EQ(deadline_header_value(milliseconds(1500), DeadlineFormat::kMilliseconds), "1500");
  EXPECT_EQ(deadline_header_value(microseconds(1999), DeadlineFormat::kMilliseconds), "1");
  EXPECT_EQ(deadline_header_value(microseconds(999), DeadlineFormat::kMilliseconds), "0");
  EXPECT_EQ(deadline_header_value(-milliseconds(3), DeadlineFormat::kMilliseconds), "0");  // never negative
  EXPECT_EQ(deadline_header_value(std::chrono::hours(1), DeadlineFormat::kGrpc), "3600000m");
}

TEST(DeadlineSettings, OffByDefaultAndLeftOutOfJsonWhileOff) {
  const Result<settings::Settings> s = settings::from_json(R"({"base_url": "http://p"})");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->deadline_header, "");
  EXPECT_EQ(s->deadline_format, DeadlineFormat::kMilliseconds);
  EXPECT_EQ(s->min_attempt_time, Duration::zero());
  EXPECT_EQ(settings::to_json(*s).find("deadline_header"), std::string::npos);
}

TEST(DeadlineSettings, LoadedCheckedAndWrittenBack) {
  const Result<settings::Settings> s = settings::from_json(
      R"({"base_url": "http://p", "deadline_header": "X-Request-Timeout", "deadline_format": "grpc",
          "min_attempt_time": "25ms"})");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->deadline_header, "X-Request-Timeout");
  EXPECT_EQ(s->deadline_format, DeadlineFormat::kGrpc);
  EXPECT_EQ(s->min_attempt_time, milliseconds(25));
  const Result<settings::Settings> back = settings::from_json(settings::to_json(*s));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, *s);

  const Result<settings::Settings> bad = settings::from_json(
      R"({"base_url": "http://p", "deadline_header": "X Timeout", "deadline_format": "s", "min_attempt_time": "-1s"})");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().fields(),
            (std::vector<std::string>{"deadline_header", "deadline_format", "min_attempt_time"}))
      << bad.status().message();
}

}  // namespace HUMUS_UNITY_ID
}  // namespace
}  // namespace humus::client
