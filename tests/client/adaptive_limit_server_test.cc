// The adaptive bulkhead (docs/bulkhead.md §11.1) under load against the project's real local server, whose latency
// rises with the requests it is answering at once past a knee (the step fields load_knee and load_ms_per_call,
// tests/server/README.md). Closed-loop callers on threads keep more calls queued than the dependency serves well;
// the limit's path is printed, and the assertions are on limit values in generous bands, never on times.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "client/client.h"
#include "client/runtime.h"
#include "support/test_server.h"

namespace humus::client {
namespace {
namespace HUMUS_UNITY_ID {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr int kCallers = 24;  // closed-loop callers: far more than the knee
constexpr int kKnee = 8;      // the dependency's latency climbs past this many requests at once

class AdaptiveLimitServerTest : public humus::test::WithTestServer {
 protected:
  std::unique_ptr<Client> make(settings::Algorithm algorithm, Duration attempt_timeout) {
    settings::Settings s;
    s.base_url = "http://" + server().address("http");
    s.max_attempts = 1;
    s.timeout = seconds(30);
    s.attempt_timeout = attempt_timeout;
    s.connect_timeout = std::min<Duration>(attempt_timeout, seconds(2));
    s.breaker.window = 10000;  // the timeouts of an overloaded phase must not open the circuit
    s.policy_params.consecutive_failures = 1000000;
    s.policy_params.failure_rate = 1.0;
    s.policy_params.min_results = 10000;
    s.bulkhead.mode = settings::BulkheadMode::kAdaptive;
    s.bulkhead.algorithm = algorithm;
    s.bulkhead.max_concurrent = 4;  // start low: Gradient2 learns the unloaded latency first
    s.bulkhead.min = 2;
    s.bulkhead.max = 64;
    s.bulkhead.wait = seconds(30);
    Result<std::unique_ptr<Client>> c = Client::create(runtime_, s);
    EXPECT_TRUE(c.ok()) << c.status().message();
    return c.ok() ? std::move(c).value() : nullptr;
  }

  // The dependency: 20 ms, plus `per_call` ms for each request in service beyond `knee`.
  static void dependency(int knee, int per_call) {
    server().script("/load", json::array({{{"status", 200},
                                           {"delay_ms", 20},
                                           {"load_knee", knee},
                                           {"load_ms_per_call", per_call}}}));
  }

  struct Phase {
    uint32_t last = 0;       // the limit at the phase's end
    uint32_t low = 0;        // its lowest and highest in the second half of the phase
    uint32_t high = 0;
    int timeouts = 0;
  };

  // `calls` calls by kCallers closed-loop callers; the limit read every 20 calls, printed.
  Phase run(Client& c, const char* label, int calls) {
    std::atomic<int> left{calls};
    std::atomic<int> done{0};
    std::atomic<int> timeouts{0};
    std::vector<uint32_t> trace;
    std::mutex trace_mu;
    std::vector<std::thread> callers;
    for (int i = 0; i < kCallers; ++i) {
      callers.emplace_back([&] {
        Request r;
        r.method = "GET";
        r.url = server().url("http", "/load");
        while (left.fetch_sub(1) > 0) {
          CallResult out = c.execute(r);
          if (!out.ok()) {
            EXPECT_EQ(out.error.code(), Code::kTimeout) << out.error.message();
            timeouts.fetch_add(1);
          }
          if (done.fetch_add(1) % 20 == 19) {
            std::lock_guard<std::mutex> lock(trace_mu);
            trace.push_back(c.bulkhead().limit());
          }
        }
      });
    }
    for (std::thread& t : callers) t.join();
    Phase p;
    p.last = c.bulkhead().limit();
    p.timeouts = timeouts.load();
    std::string line;
    p.low = UINT32_MAX;
    for (size_t i = 0; i < trace.size(); ++i) {
      line += (i ? " " : "") + std::to_string(trace[i]);
      if (i >= trace.size() / 2) {
        p.low = std::min(p.low, trace[i]);
        p.high = std::max(p.high, trace[i]);
      }
    }
    std::printf("[ limit    ] %s: %s (end %u, timeouts %d)\n", label, line.c_str(), p.last, p.timeouts);
    std::fflush(stdout);
    return p;
  }

  Runtime runtime_{RuntimeOptions{}};
};

// F173: Gradient2 finds the knee from latency alone, and gives the room back when latency falls.
TEST_F(AdaptiveLimitServerTest, Gradient2SettlesNearTheKneeAndRecoversWhenLatencyFalls) {
  auto c = make(settings::Algorithm::kGradient2, seconds(10));
  ASSERT_NE(c, nullptr);
  dependency(kKnee, 10);
  const Phase loaded = run(*c, "gradient2, knee 8", 600);
  // Where 20 + 10 · (n − 8) ms passes 1.5 to 2.5 times the unloaded 20 ms: about 9 to 11; a wide band.
  EXPECT_GE(loaded.high, 4u);
  EXPECT_LE(loaded.high, 3u * kKnee);
  EXPECT_LT(loaded.last, static_cast<uint32_t>(kCallers));
  dependency(1000, 10);  // latency falls: no knee within reach
  const Phase relieved = run(*c, "gradient2, no knee", 600);
  EXPECT_GT(relieved.last, loaded.last);
  EXPECT_GE(relieved.last, static_cast<uint32_t>(kCallers) / 2 + 2);  // growing while in use, up to ~2 · callers
  EXPECT_EQ(loaded.timeouts + relieved.timeouts, 0);
}

// F174: AIMD is moved by drops: attempts that time out past the knee cut it, successes bring it back.
TEST_F(AdaptiveLimitServerTest, AimdSettlesWhereCallsStartToTimeOutAndRecovers) {
  // 20 + 40 · (n − 8) ms passes the 150 ms attempt_timeout from 12 requests at once.
  auto c = make(settings::Algorithm::kAimd, milliseconds(150));
  ASSERT_NE(c, nullptr);
  dependency(kKnee, 40);
  const Phase loaded = run(*c, "aimd, knee 8", 600);
  EXPECT_GT(loaded.timeouts, 0);  // it only learns from drops
  EXPECT_GE(loaded.high, 4u);
  EXPECT_LE(loaded.high, 3u * kKnee);
  EXPECT_LT(loaded.last, static_cast<uint32_t>(kCallers));
  dependency(1000, 40);
  const Phase relieved = run(*c, "aimd, no knee", 600);
  EXPECT_GT(relieved.last, loaded.last);
  EXPECT_GE(relieved.last, static_cast<uint32_t>(kCallers) / 2 + 2);
}

}  // namespace HUMUS_UNITY_ID
}  // namespace
}  // namespace humus::client
