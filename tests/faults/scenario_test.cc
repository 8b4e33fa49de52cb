// The humus.fault baggage member (docs/failure-injection.md §14): how a scenario is read, refused and stripped.
#include "faults/scenario.h"

#include <gtest/gtest.h>

namespace humus::faults {
namespace {
namespace HUMUS_UNITY_ID {

Scenario read(std::string_view baggage) {
  Result<std::optional<Scenario>> s = scenario_from_baggage(baggage);
  EXPECT_TRUE(s.ok()) << s.status().message();
  EXPECT_TRUE(s.ok() && s->has_value()) << baggage;
  return s.ok() && s->has_value() ? **s : Scenario{};
}

TEST(ScenarioTest, TheSpecExampleIsRead) {
  const Scenario s = read("humus.fault=http:payments:8443=status:503@0.5|http:ledger:8443=delay:2s");
  ASSERT_EQ(s.rules.size(), 2u);
  const Fault* payments = s.fault_for("http:payments:8443");
  ASSERT_NE(payments, nullptr);
  EXPECT_EQ(payments->kind, Fault::Kind::kStatus);
  EXPECT_EQ(payments->status, 503);
  EXPECT_DOUBLE_EQ(payments->probability, 0.5);
  const Fault* ledger = s.fault_for("http:ledger:8443");
  ASSERT_NE(ledger, nullptr);
  EXPECT_EQ(ledger->kind, Fault::Kind::kDelay);
  EXPECT_EQ(ledger->delay, std::chrono::seconds(2));
  EXPECT_DOUBLE_EQ(ledger->probability, 1.0);
  EXPECT_EQ(s.fault_for("http:payments:443"), nullptr);  // a point is host and port
}

TEST(ScenarioTest, PercentEncodingIsHonouredAndOtherMembersIgnored) {
  const Scenario s = read("tenant=acme, humus.fault = http%3Apayments%3A8443%3Dabort%7Chttp:x:1=status:429 ;p=1");
  ASSERT_EQ(s.rules.size(), 2u);
  EXPECT_EQ(s.rules[0].point, "http:payments:8443");
  EXPECT_EQ(s.rules[0].fault.kind, Fault::Kind::kAbort);
  EXPECT_EQ(s.rules[1].fault.status, 429);
}

TEST(ScenarioTest, NoMemberIsNoScenario) {
  Result<std::optional<Scenario>> s = scenario_from_baggage("tenant=acme,humus.faults=x");
  ASSERT_TRUE(s.ok());
  EXPECT_FALSE(s->has_value());
  EXPECT_FALSE(scenario_from_baggage("")->has_value());
}

TEST(ScenarioTest, AMalformedScenarioIsRefusedNamingTheItem) {
  for (const char* bad : {"humus.fault=http:payments:8443", "humus.fault=payments:8443=abort",
                          "humus.fault=http:payments:8443=explode", "humus.fault=http:payments:8443=delay:soon",
                          "humus.fault=http:payments:8443=status:700", "humus.fault=http:payments:8443=abort@1.5",
                          "humus.fault=http:payments:8443=abort@half", "humus.fault=http%3", "humus.fault=http:p=abort"}) {
    Result<std::optional<Scenario>> s = scenario_from_baggage(bad);
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_EQ(s.status().code(), Code::kInvalidArgument);
    EXPECT_EQ(s.status().fields(), std::vector<std::string>{"baggage"});
    EXPECT_NE(s.status().message().find("humus.fault"), std::string::npos) << s.status().message();
  }
}

TEST(ScenarioTest, StrippingKeepsEveryOtherMemberInOrder) {
  EXPECT_EQ(without_scenario("a=1,humus.fault=http:p:1=abort;x=y,b=2"), "a=1,b=2");
  EXPECT_EQ(without_scenario("humus.fault=http:p:1=abort"), "");
  EXPECT_EQ(without_scenario("a=1, b=2;prop"), "a=1,b=2;prop");
}

TEST(ScenarioTest, PointNamesWriteThePortAndBracketIpv6) {
  EXPECT_EQ(point_name("payments", 443), "http:payments:443");
  EXPECT_EQ(point_name("::1", 8080), "http:[::1]:8080");
}

}  // namespace HUMUS_UNITY_ID
}  // namespace
}  // namespace humus::faults
