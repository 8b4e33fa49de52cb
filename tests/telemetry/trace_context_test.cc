// W3C Trace Context: what is read from a caller's traceparent, and what each attempt writes.
#include "telemetry/trace_context.h"

#include <gtest/gtest.h>

#include <set>

namespace humus::telemetry {
namespace {
namespace HUMUS_UNITY_ID {

constexpr char kValid[] = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

TEST(TraceContextTest, AValidTraceparentIsRead) {
  std::optional<TraceParent> p = parse_traceparent(kValid);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(to_hex(p->trace_id), "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(to_hex(p->span_id), "00f067aa0ba902b7");
  EXPECT_EQ(p->flags, 1);
  EXPECT_EQ(format_traceparent(p->trace_id, p->span_id, p->flags), kValid);
}

TEST(TraceContextTest, InvalidTraceparentsAreRefused) {
  for (const char* bad : {
           "",
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",       // no flags
           "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",    // uppercase
           "00-00000000000000000000000000000000-00f067aa0ba902b7-01",    // zero trace id
           "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",    // zero span id
           "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",    // version ff
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x",  // version 00 has no more fields
           "0-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
           "00_4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7_01",
           "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",    // not hex
       }) {
    EXPECT_FALSE(parse_traceparent(bad).has_value()) << bad;
  }
}

TEST(TraceContextTest, ALaterVersionIsReadForItsFirstFourFields) {
  EXPECT_TRUE(parse_traceparent("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01").has_value());
  EXPECT_TRUE(parse_traceparent("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra").has_value());
  EXPECT_FALSE(parse_traceparent("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01extra").has_value());
}

TEST(TraceContextTest, FreshIdsAreNonZeroAndDistinct) {
  SeededRandom random(0);  // SplitMix64 from 0: its draws are not zero, but the rule is checked anyway
  std::set<std::string> traces, spans;
  for (int i = 0; i < 1000; ++i) {
    const TraceId t = new_trace_id(random);
    const SpanId s = new_span_id(random);
    EXPECT_NE(to_hex(t), std::string(32, '0'));
    EXPECT_NE(to_hex(s), std::string(16, '0'));
    traces.insert(to_hex(t));
    spans.insert(to_hex(s));
  }
  EXPECT_EQ(traces.size(), 1000u);
  EXPECT_EQ(spans.size(), 1000u);
}

}  // namespace HUMUS_UNITY_ID
}  // namespace
}  // namespace humus::telemetry
