// Deadline propagation (docs/timeouts.md §8.4) against the project's real local server: the header each attempt
// carries, as the server read it, and an attempt min_attempt_time keeps from starting. Only bounds that time
// cannot break are asserted (what is left never exceeds attempt_timeout; an answer held 700 ms leaves at most
// 300 ms of a 1 s call), so a loaded machine cannot change the outcome.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "client/client.h"
#include "client/runtime.h"
#include "common/headers.h"
#include "support/test_server.h"

namespace humus::client {
namespace {
namespace HUMUS_UNITY_ID {

using nlohmann::json;
using std::chrono::milliseconds;

class DeadlineServerTest : public humus::test::WithTestServer {
 protected:
  std::unique_ptr<Client> make(settings::Settings s) {
    s.base_url = "http://" + server().address("http");
    Result<std::unique_ptr<Client>> c = Client::create(runtime_, s);
    EXPECT_TRUE(c.ok()) << c.status().message();
    return c.ok() ? std::move(c).value() : nullptr;
  }

  static Request get(const std::string& path) {
    Request r;
    r.method = "GET";
    r.url = server().url("http", path);
    return r;
  }

  // The values of `name` the server read, one per request to `path` (empty when a request had none).
  static std::vector<std::string> header_values(const std::string& path, const std::string& name) {
    std::vector<std::string> out;
    for (const json& request : server().requests(path)) {
      std::string value;
      for (const json& field : request["headers"]) {
        if (equals_ignore_case(field[0].get<std::string>(), name)) value = field[1].get<std::string>();
      }
      out.push_back(value);
    }
    return out;
  }

  Runtime runtime_{RuntimeOptions{}};
};

TEST_F(DeadlineServerTest, EachAttemptSendsWhatItHasLeft) {
  server().script("/pay", json::array({{{"status", 503}}, {{"status", 200}}}));
  settings::Settings s;
  s.timeout = std::chrono::seconds(10);
  s.attempt_timeout = milliseconds(3000);
  s.deadline_header = "X-Request-Timeout";
  auto c = make(s);
  ASSERT_NE(c, nullptr);
  CallResult out = c->execute(get("/pay"));
  ASSERT_TRUE(out.ok()) << out.error.message();
  EXPECT_EQ(out.attempts, 2);
  const std::vector<std::string> values = header_values("/pay", "X-Request-Timeout");
  ASSERT_EQ(values.size(), 2u);
  for (const std::string& v : values) {
    ASSERT_FALSE(v.empty());
    ASSERT_EQ(v.find_first_not_of("0123456789"), std::string::npos) << v;
    EXPECT_GT(std::stoll(v), 0);
    EXPECT_LE(std::stoll(v), 3000);  // attempt_timeout bounds it
  }
}

TEST_F(DeadlineServerTest, TheGrpcFormatAndNothingWhenOff) {
  server().script("/pay", json::array({{{"status", 200}}}));
  settings::Settings s;
  s.deadline_header = "grpc-timeout";
  s.deadline_format = settings::DeadlineFormat::kGrpc;
  auto on = make(s);
  ASSERT_NE(on, nullptr);
  ASSERT_TRUE(on->execute(get("/pay")).ok());
  auto off = make(settings::Settings{});
  ASSERT_NE(off, nullptr);
  ASSERT_TRUE(off->execute(get("/pay")).ok());
  const std::vector<std::string> values = header_values("/pay", "grpc-timeout");
  ASSERT_EQ(values.size(), 2u);
  ASSERT_GE(values[0].size(), 2u);
  EXPECT_EQ(values[0].back(), 'm');
  EXPECT_LE(std::stoll(values[0].substr(0, values[0].size() - 1)), 5000);  // the default attempt_timeout
  EXPECT_EQ(values[1], "");  // off by default: not sent
}

TEST_F(DeadlineServerTest, ARetryWithTooLittleLeftIsNotStarted) {
  server().script("/pay", json::array({{{"status", 503}, {"delay_ms", 700}}}));
  settings::Settings s;
  s.timeout = std::chrono::seconds(1);
  s.attempt_timeout = std::chrono::seconds(1);
  s.connect_timeout = std::chrono::seconds(1);
  s.min_attempt_time = milliseconds(400);
  auto c = make(s);
  ASSERT_NE(c, nullptr);
  CallResult out = c->execute(get("/pay"));
  ASSERT_TRUE(out.ok()) << out.error.message();
  EXPECT_EQ(out.response->status, 503);  // the answer it had, no retry started
  EXPECT_EQ(out.attempts, 1);
  EXPECT_EQ(server().requests("/pay").size(), 1u);
  ASSERT_NE(out.response->trace, nullptr);
  ASSERT_EQ(out.response->trace->size(), 2u);
  EXPECT_EQ(out.response->trace->at(0).decision, retry::Decision::kAgain);
  EXPECT_EQ(out.response->trace->at(1).decision, retry::Decision::kExpired);
}

}  // namespace HUMUS_UNITY_ID
}  // namespace
}  // namespace humus::client
