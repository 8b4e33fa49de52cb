#include "common/duration.h"

#include <gtest/gtest.h>

#include <chrono>
#include <limits>
#include <string>

namespace humus {
namespace {
namespace HUMUS_UNITY_ID {

using std::chrono::hours;
using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::nanoseconds;
using std::chrono::seconds;

Duration parsed(std::string_view text) {
  Result<Duration> r = parse_duration(text);
  EXPECT_TRUE(r.ok()) << text << ": " << r.status().message();
  return r.ok() ? *r : Duration(-1);
}

TEST(ParseDuration, EveryUnit) {
  EXPECT_EQ(parsed("10ns"), nanoseconds(10));
  EXPECT_EQ(parsed("100us"), microseconds(100));
  EXPECT_EQ(parsed("100\xC2\xB5s"), microseconds(100));  // µs, as Go writes it
  EXPECT_EQ(parsed("250ms"), milliseconds(250));
  EXPECT_EQ(parsed("5s"), seconds(5));
  EXPECT_EQ(parsed("1m"), minutes(1));
  EXPECT_EQ(parsed("1h"), hours(1));
  EXPECT_EQ(parsed("0s"), Duration::zero());
  EXPECT_EQ(parsed("007s"), seconds(7));
}

TEST(ParseDuration, Decimals) {
  EXPECT_EQ(parsed("1.5s"), milliseconds(1500));
  EXPECT_EQ(parsed("0.25s"), milliseconds(250));
  EXPECT_EQ(parsed(".5s"), milliseconds(500));
  EXPECT_EQ(parsed("1.s"), seconds(1));
  EXPECT_EQ(parsed("1.500000000000000000000s"), milliseconds(1500));  // trailing zeros are free
  EXPECT_EQ(parsed("0.001ms"), microseconds(1));
  EXPECT_EQ(parsed("1.0000000001h"), hours(1) + nanoseconds(360));
  EXPECT_FALSE(parse_duration("1.0000000000001h").ok());  // 0.36ns
}

TEST(ParseDuration, CompoundPartsAreSummed) {
  EXPECT_EQ(parsed("1m30s"), seconds(90));
  EXPECT_EQ(parsed("1h2m3s4ms5us6ns"),
            hours(1) + minutes(2) + seconds(3) + milliseconds(4) + microseconds(5) + nanoseconds(6));
}

TEST(ParseDuration, Refused) {
  for (const char* bad : {"",
                          "5",
                          "-5s",
                          "+5s",
                          "s",
                          ".s",
                          "5 s",
                          " 5s",
                          "5s ",
                          "5sec",
                          "5S",
                          "1d",
                          "1.5.5s",
                          "5s5",
                          "ms",
                          "0.5ns",
                          "1.00000000001ns",
                          "abc",
                          "1e3s",
                          "\xC2\xB5s",
                          "5\x00s"}) {
    EXPECT_FALSE(parse_duration(bad).ok()) << bad;
  }
  EXPECT_FALSE(parse_duration(std::string_view("5\0s", 3)).ok());
  const Result<Duration> r = parse_duration("-5s");
  EXPECT_NE(r.status().message().find("sign"), std::string::npos) << r.status().message();
  EXPECT_NE(parse_duration("5").status().message().find("missing unit"), std::string::npos);
  EXPECT_NE(parse_duration("5sec").status().message().find("unknown unit \"sec\""), std::string::npos);
}

TEST(ParseDuration, OverflowIsRefused) {
  const int64_t max = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(parsed(std::to_string(max) + "ns"), nanoseconds(max));
  EXPECT_FALSE(parse_duration(std::to_string(max) + "1ns").ok());
  EXPECT_FALSE(parse_duration("9223372036854775808ns").ok());
  EXPECT_FALSE(parse_duration("2562048h").ok());  // > 292 years
  EXPECT_EQ(parsed("2562047h"), hours(2562047));
  EXPECT_FALSE(parse_duration("2562047h2562047h").ok());  // the sum overflows
  EXPECT_FALSE(parse_duration("99999999999999999999999999999999s").ok());
  EXPECT_NE(parse_duration("2562048h").status().message().find("too large"), std::string::npos);
}

TEST(ParseDuration, MessageQuotesAndEscapesTheText) {
  const Result<Duration> r = parse_duration("5\nx");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("\"5\\x0ax\""), std::string::npos) << r.status().message();
  EXPECT_EQ(r.status().message().find('\n'), std::string::npos);
}

TEST(FormatDuration, LargestExactUnit) {
  EXPECT_EQ(format_duration(Duration::zero()), "0s");
  EXPECT_EQ(format_duration(milliseconds(250)), "250ms");
  EXPECT_EQ(format_duration(seconds(5)), "5s");
  EXPECT_EQ(format_duration(seconds(90)), "90s");
  EXPECT_EQ(format_duration(seconds(120)), "2m");
  EXPECT_EQ(format_duration(hours(1)), "1h");
  EXPECT_EQ(format_duration(milliseconds(1500)), "1500ms");
  EXPECT_EQ(format_duration(microseconds(100)), "100us");
  EXPECT_EQ(format_duration(nanoseconds(10)), "10ns");
  EXPECT_EQ(format_duration(hours(1) + nanoseconds(1)), "3600000000001ns");
  EXPECT_EQ(format_duration(-seconds(5)), "-5s");
  EXPECT_EQ(format_duration(Duration::min()), "-9223372036854775808ns");
}

TEST(FormatDuration, RoundTripsExactly) {
  const int64_t samples[] = {1,
                             7,
                             999,
                             1000,
                             1001,
                             1'000'000,
                             1'500'000'000,
                             60'000'000'000,
                             90'000'000'000,
                             3'600'000'000'000,
                             3'600'000'000'001,
                             86'400'000'000'000,
                             std::numeric_limits<int64_t>::max()};
  for (int64_t ns : samples) {
    const std::string text = format_duration(nanoseconds(ns));
    EXPECT_EQ(parsed(text), nanoseconds(ns)) << text;
  }
  for (const char* text : {"250ms", "5s", "1m", "1h", "100us", "10ns", "90s", "1500ms"}) {
    EXPECT_EQ(format_duration(parsed(text)), text);
  }
}

}  // namespace HUMUS_UNITY_ID
}  // namespace
}  // namespace humus
