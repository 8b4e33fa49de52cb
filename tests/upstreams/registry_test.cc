// The upstreams registry (docs/upstreams.md §15.1): clients by name from one document, the environment's base_url
// winning and logged, every problem refused naming its path.
#include "upstreams/registry.h"

#include <gtest/gtest.h>

#include <algorithm>

#include <map>
#include <mutex>

#include "support/mock_script.h"

namespace humus::upstreams {
namespace {
namespace HUMUS_UNITY_ID {

using namespace humus::test::mock;  // Script and the reply builders

class RegistryTest : public ::testing::Test {
 protected:
  RegistryTest() : runtime_([] {
    client::RuntimeOptions o;
    o.virtual_clock = true;
    return o;
  }()) {
    runtime_.set_mock_handler([this](const transport::WireRequest& r) { return script_->next(r); });
    runtime_.telemetry().set_log_sink([this](const telemetry::LogRecord& r) {
      std::lock_guard<std::mutex> lock(mu_);
      logs_.push_back({std::string(r.event), std::string(r.upstream), std::string(r.message)});
    });
  }

  Environment env() const {
    return [this](const std::string& name) -> std::optional<std::string> {
      auto it = env_.find(name);
      if (it == env_.end()) return std::nullopt;
      return it->second;
    };
  }

  Result<std::vector<Upstream>> build(std::string_view json) { return build_upstreams(runtime_, json, env()); }

  struct Log {
    std::string event, upstream, message;
  };
  client::Runtime runtime_;
  std::shared_ptr<Script> script_ = std::make_shared<Script>(std::vector<MockReply>{status(200)});
  std::map<std::string, std::string> env_;
  std::mutex mu_;
  std::vector<Log> logs_;
};

TEST_F(RegistryTest, EachUpstreamIsAClientWithItsSettings) {
  Result<std::vector<Upstream>> u = build(R"({"upstreams": {
      "ledger": {"base_url": "http://ledger:9000", "max_attempts": 5},
      "billing": {"base_url": "https://billing:8443", "timeout": "2s", "attempt_timeout": "500ms"}}})");
  ASSERT_TRUE(u.ok()) << u.status().message();
  ASSERT_EQ(u->size(), 2u);
  EXPECT_EQ((*u)[0].name, "billing");  // sorted by name
  EXPECT_EQ((*u)[0].client->origin().to_string(), "https://billing:8443");
  EXPECT_EQ((*u)[0].client->settings().timeout, std::chrono::seconds(2));
  EXPECT_EQ((*u)[1].name, "ledger");
  EXPECT_EQ((*u)[1].client->settings().max_attempts, 5u);
  client::Request r;
  r.url = "http://ledger:9000/entries";
  EXPECT_TRUE((*u)[1].client->execute(r).ok());
  EXPECT_EQ(script_->received(0).url, "http://ledger:9000/entries");
  std::lock_guard<std::mutex> lock(mu_);
  EXPECT_TRUE(logs_.empty());
}

TEST_F(RegistryTest, TheEnvironmentsBaseUrlWinsAndADisagreementIsLoggedOnce) {
  env_["HUMUS_HTTP_UPSTREAMS__BILLING_API__BASE_URL"] = "http://127.0.0.1:18080";
  env_["HUMUS_HTTP_UPSTREAMS__LEDGER__BASE_URL"] = "http://ledger:9000";  // agrees: nothing to log
  Result<std::vector<Upstream>> u = build(R"({"upstreams": {
      "billing-api": {"base_url": "https://billing:8443", "timeout": "3s"},
      "ledger": {"base_url": "http://ledger:9000"},
      "search": {"timeout": "1s"}}})");
  ASSERT_FALSE(u.ok());  // search has no base_url, and no variable gives one
  EXPECT_EQ(u.status().fields(), std::vector<std::string>{"upstreams.search.base_url"});
  {
    std::lock_guard<std::mutex> lock(mu_);
    EXPECT_TRUE(logs_.empty());  // nothing is logged for a registry that was not built
  }

  env_["HUMUS_HTTP_UPSTREAMS__SEARCH__BASE_URL"] = "http://search:7700";  // the file has none: no disagreement
  u = build(R"({"upstreams": {
      "billing-api": {"base_url": "https://billing:8443", "timeout": "3s"},
      "ledger": {"base_url": "http://ledger:9000"},
      "search": {"timeout": "1s"}}})");
  ASSERT_TRUE(u.ok()) << u.status().message();
  EXPECT_EQ((*u)[0].client->origin().to_string(), "http://127.0.0.1:18080");
  EXPECT_EQ((*u)[0].client->settings().timeout, std::chrono::seconds(3));  // every other key: the file's
  EXPECT_EQ((*u)[2].client->origin().to_string(), "http://search:7700");
  std::lock_guard<std::mutex> lock(mu_);
  ASSERT_EQ(logs_.size(), 1u);
  EXPECT_EQ(logs_[0].event, telemetry::kUpstreamBaseUrlOverride);
  EXPECT_EQ(logs_[0].upstream, "billing-api");
  EXPECT_NE(logs_[0].message.find("HUMUS_HTTP_UPSTREAMS__BILLING_API__BASE_URL"), std::string::npos);
  EXPECT_NE(logs_[0].message.find("https://billing:8443"), std::string::npos);
}

// Found by tests/fuzz (upstreams): the variable's bytes went into a JSON document whose serialiser threw on
// invalid UTF-8, so a stray byte in the environment ended the process instead of being refused.
TEST_F(RegistryTest, ABaseUrlVariableThatIsNotUtf8IsRefusedNamingIt) {
  env_["HUMUS_HTTP_UPSTREAMS__A__BASE_URL"] = "https://a:547\xf9\xf9";
  env_["HUMUS_HTTP_UPSTREAMS__B__BASE_URL"] = "http://b\xed\xa0\x80";  // a UTF-16 surrogate, as UTF-8
  env_["HUMUS_HTTP_UPSTREAMS__C__BASE_URL"] = "http://caf\xc3\xa9:8080";  // valid UTF-8 reaches the URL check
  Result<std::vector<Upstream>> u = build(R"({"upstreams": {"a": {"timeout": "7s"}, "b": {}, "c": {}}})");
  ASSERT_FALSE(u.ok());
  const std::string message = u.status().message();
  EXPECT_NE(message.find("HUMUS_HTTP_UPSTREAMS__A__BASE_URL: not valid UTF-8"), std::string::npos) << message;
  EXPECT_NE(message.find("HUMUS_HTTP_UPSTREAMS__B__BASE_URL: not valid UTF-8"), std::string::npos) << message;
  EXPECT_EQ(message.find("HUMUS_HTTP_UPSTREAMS__C__BASE_URL"), std::string::npos) << message;
  const std::vector<std::string> f = u.status().fields();
  EXPECT_NE(std::find(f.begin(), f.end(), "upstreams.a.base_url"), f.end());
  EXPECT_NE(std::find(f.begin(), f.end(), "upstreams.b.base_url"), f.end());
}

TEST_F(RegistryTest, EveryProblemIsRefusedAtOnceNamingItsPath) {
  Result<std::vector<Upstream>> u = build(R"({"upstream": {}, "upstreams": {
      "billing": {"base_url": "https://billing:8443", "timout": "5s"},
      "ledger": {"base_url": "http://ledger:9000", "max_attempts": 0},
      "bad name": {"base_url": "http://x:1"},
      "notes": "text"}})");
  ASSERT_FALSE(u.ok());
  EXPECT_EQ(u.status().code(), Code::kConfig);
  const std::vector<std::string> expected = {"upstream", "upstreams.bad name", "upstreams.billing.timout",
                                             "upstreams.ledger.max_attempts", "upstreams.notes"};
  std::vector<std::string> fields = u.status().fields();
  std::sort(fields.begin(), fields.end());
  EXPECT_EQ(fields, expected);
  EXPECT_NE(u.status().message().find("timeout"), std::string::npos) << u.status().message();  // the suggestion
}

TEST_F(RegistryTest, ADocumentThatIsNoRegistryIsRefused) {
  for (const char* bad : {"", "not json", "[]", R"({"billing": {}})", R"({"upstreams": []})"}) {
    Result<std::vector<Upstream>> u = build(bad);
    ASSERT_FALSE(u.ok()) << bad;
    EXPECT_EQ(u.status().code(), Code::kConfig) << bad;
  }
}

TEST_F(RegistryTest, ARuleAcrossFieldsIsAProgramError) {
  Result<std::vector<Upstream>> u =
      build(R"({"upstreams": {"billing": {"base_url": "http://billing:80", "classify": "no-such-preset"}}})");
  ASSERT_FALSE(u.ok());
  EXPECT_NE(u.status().message().find("upstreams.billing"), std::string::npos) << u.status().message();
}

TEST(RegistryNamesTest, VariablesAndUnknownNames) {
  EXPECT_EQ(base_url_variable("billing-api"), "HUMUS_HTTP_UPSTREAMS__BILLING_API__BASE_URL");
  const Status st = no_such_upstream("biling", {"billing", "ledger"});
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("billing, ledger"), std::string::npos) << st.message();
  EXPECT_NE(no_such_upstream("x", {}).message().find("none"), std::string::npos);
}

}  // namespace HUMUS_UNITY_ID
}  // namespace
}  // namespace humus::upstreams
