// `share` through the C ABI (docs/shared.md §22): real clients in fork()ed worker processes, as a pre-fork server
// runs them, calling a real loopback dependency that counts what reaches it — the calls in total, and the
// requests in flight at once.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "humus_http.h"
#include "shared/segment.h"
#include "support/raw_peer.h"

namespace humus {
namespace {
namespace HUMUS_UNITY_ID {

using std::chrono::milliseconds;

// The dependency: answers every request with `status` after `delay`, counting the requests in flight at once.
class Dependency {
 public:
  Dependency()
      : peer_([this](test::RawConnection& c) {
          while (c.read_request()) {
            const int now = ++in_flight_;
            int peak = peak_.load();
            while (now > peak && !peak_.compare_exchange_weak(peak, now)) {
            }
            std::this_thread::sleep_for(milliseconds(delay_ms_.load()));
            --in_flight_;
            const int status = status_.load();
            c.write("HTTP/1.1 " + std::to_string(status) + (status == 200 ? " OK" : " Error") +
                    "\r\nContent-Length: 2\r\n\r\nok");
          }
        }) {}
  void answer(int status, int delay_ms) {
    status_ = status;
    delay_ms_ = delay_ms;
  }
  void reset_peak() { peak_ = 0; }
  int peak() const { return peak_.load(); }
  int requests() const { return peer_.requests(); }
  std::string url() const { return peer_.url("/dep"); }
  std::string origin() const { return "http://127.0.0.1:" + std::to_string(peer_.port()); }

 private:
  std::atomic<int> status_{500};
  std::atomic<int> delay_ms_{0};
  std::atomic<int> in_flight_{0};
  std::atomic<int> peak_{0};
  test::RawPeer peer_;  // last: its threads use the members above
};

// A segment name of this test run, removed before and after.
struct Name {
  explicit Name(const char* what) : value("capi_" + std::string(what) + "_" + std::to_string(::getpid())) {
    (void)shared::remove(value);
  }
  ~Name() { (void)shared::remove(value); }
  std::string value;
};

// A runtime and one client with `json` settings, made in the process that uses them.
struct CClient {
  explicit CClient(const std::string& json) {
    if (humus_runtime_new(nullptr, 0, &rt, nullptr) != HUMUS_OK) return;
    humus_settings* s = nullptr;
    humus_error* err = nullptr;
    if (humus_settings_from_json(json.data(), json.size(), &s, &err) != HUMUS_OK) {
      message = humus_error_message(err);
      humus_error_free(err);
      return;
    }
    status = humus_client_new(rt, s, &client, &err);
    if (status != HUMUS_OK) {
      message = humus_error_message(err);
      humus_error_free(err);
    }
    humus_settings_free(s);
  }
  ~CClient() {
    humus_client_free(client);
    humus_runtime_free(rt);
  }
  // One call: its status (HUMUS_OK with any HTTP status, or the error's).
  humus_status call(const std::string& url) {
    humus_request* r = nullptr;
    if (humus_request_new("GET", url.c_str(), &r, nullptr) != HUMUS_OK) return HUMUS_E_INTERNAL;
    humus_response* resp = nullptr;
    humus_error* err = nullptr;
    const humus_status st = humus_client_do(client, r, &resp, &err);
    humus_response_free(resp);
    humus_error_free(err);
    humus_request_free(r);
    return st;
  }
  int32_t state() {
    int32_t s = -1;
    (void)humus_client_breaker_state(client, &s);
    return s;
  }
  humus_runtime* rt = nullptr;
  humus_client* client = nullptr;
  humus_status status = HUMUS_E_INTERNAL;
  std::string message;
};

std::string settings(const Dependency& dep, const std::string& share, const std::string& extra = "") {
  std::string json = "{\"base_url\": \"" + dep.origin() + "\", \"max_attempts\": 1";
  if (!share.empty()) json += ", \"share\": {\"name\": \"" + share + "\"}";
  return json + extra + "}";
}

// Runs `body` in `n` forked workers started together; returns the sum of their exit codes.
template <typename F>
int run_workers(int n, F body) {
  int go[2];
  if (::pipe(go) != 0) return -1;
  std::vector<pid_t> pids;
  for (int w = 0; w < n; ++w) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      char g = 0;
      if (::read(go[0], &g, 1) != 1) ::_exit(100);
      ::_exit(body(w));
    }
    pids.push_back(pid);
  }
  for (int w = 0; w < n; ++w) {
    if (::write(go[1], "g", 1) != 1) return -1;
  }
  int sum = 0;
  for (const pid_t pid : pids) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    sum += WIFEXITED(status) ? WEXITSTATUS(status) : 1000;
  }
  ::close(go[0]);
  ::close(go[1]);
  return sum;
}

TEST(SharedClientTest, TwoClientsOfOneNameSeeOneBreaker) {
  Dependency dep;
  const Name name("two");
  CClient a(settings(dep, name.value));
  CClient b(settings(dep, name.value));
  ASSERT_EQ(a.status, HUMUS_OK) << a.message;
  ASSERT_EQ(b.status, HUMUS_OK) << b.message;
  CClient alone(settings(dep, ""));
  for (int i = 0; i < 5; ++i) EXPECT_EQ((i % 2 == 0 ? a : b).call(dep.url()), HUMUS_OK);
  EXPECT_EQ(a.state(), HUMUS_CIRCUIT_OPEN);  // 3 failures of its own, 2 of b's
  EXPECT_EQ(b.state(), HUMUS_CIRCUIT_OPEN);
  EXPECT_EQ(b.call(dep.url()), HUMUS_E_REJECTED);
  EXPECT_EQ(alone.state(), HUMUS_CIRCUIT_CLOSED);  // without share, its own breaker
  EXPECT_EQ(dep.requests(), 5);
  // Readiness reads the shared state, with the processes sharing it.
  char* json = nullptr;
  ASSERT_EQ(humus_runtime_readiness_json(a.rt, &json, nullptr, nullptr), HUMUS_OK);
  const std::string readiness(json);
  humus_string_free(json);
  EXPECT_NE(readiness.find("\"processes\":1"), std::string::npos) << readiness;
  EXPECT_NE(readiness.find("\"state\":\"open\""), std::string::npos) << readiness;
}

// F156, F157, F158: a bad name, disagreeing settings, the virtual clock
TEST(SharedClientTest, RefusesWhatCannotBeShared) {
  Dependency dep;
  const Name name("refused");
  CClient bad_name(settings(dep, "no/slash"));
  EXPECT_EQ(bad_name.client, nullptr);
  EXPECT_NE(bad_name.message.find("share.name"), std::string::npos) << bad_name.message;
  CClient first(settings(dep, name.value));
  ASSERT_EQ(first.status, HUMUS_OK) << first.message;
  CClient other(settings(dep, name.value, ", \"breaker\": {\"window\": 10}"));
  EXPECT_EQ(other.status, HUMUS_E_CONFIG);
  EXPECT_NE(other.message.find("breaker.window 20; this client has 10"), std::string::npos) << other.message;
  // On the virtual clock, instants mean nothing to another process.
  humus_runtime* rt = nullptr;
  const char* options = R"({"clock": "virtual"})";
  ASSERT_EQ(humus_runtime_new(options, std::strlen(options), &rt, nullptr), HUMUS_OK);
  humus_settings* s = nullptr;
  const std::string json = settings(dep, name.value);
  ASSERT_EQ(humus_settings_from_json(json.data(), json.size(), &s, nullptr), HUMUS_OK);
  humus_client* c = nullptr;
  humus_error* err = nullptr;
  EXPECT_EQ(humus_client_new(rt, s, &c, &err), HUMUS_E_PROGRAM);
  EXPECT_NE(std::string(humus_error_message(err)).find("virtual clock"), std::string::npos);
  humus_error_free(err);
  humus_settings_free(s);
  humus_runtime_free(rt);
}

// F159: the issue's first point: 4 workers, a failing dependency, and the breaker opens after 5 failures in total.
TEST(SharedClientTest, FourWorkersOpenTheBreakerAfterFiveFailuresInTotal) {
  Dependency dep;
  const Name name("four");
  dep.answer(500, 2);
  const std::string json = settings(dep, name.value);
  const int rejected_workers = run_workers(4, [&](int) {
    CClient c(json);
    if (c.status != HUMUS_OK) return 50;
    for (int i = 0; i < 100; ++i) {
      if (c.call(dep.url()) == HUMUS_E_REJECTED) return 1;  // open: this worker stops
    }
    return 0;
  });
  EXPECT_EQ(rejected_workers, 4);  // every worker saw it open
  // Not 5 per worker (20): the fifth failure on the host opened it. A closed breaker admits every call, so
  // each of the other workers may have had one more in flight when it opened.
  EXPECT_GE(dep.requests(), 5);
  EXPECT_LE(dep.requests(), 5 + 3);
  std::printf("[ info ] 4 workers, failing dependency: %d calls reached it before the breaker opened\n",
              dep.requests());
  const shared::Report report = shared::inspect(name.value).value();
  ASSERT_EQ(report.origins.size(), 1u);
  EXPECT_EQ(report.origins[0].state, breaker::State::kOpen);
  EXPECT_EQ(report.origins[0].generation, 2u);  // opened once, for the host
}

// F160: while half-open, at most breaker.probes probes are in flight on the host, counted by the dependency.
TEST(SharedClientTest, ARecoveringDependencySeesAtMostProbesInFlight) {
  Dependency dep;
  const Name name("probes");
  const std::string json = settings(
      dep, name.value,
      R"(, "breaker": {"open_for": "20ms", "probes": 2}, "probe": {"successes_to_close": 1000000})");
  CClient opener(json);
  ASSERT_EQ(opener.status, HUMUS_OK) << opener.message;
  for (int i = 0; i < 5; ++i) (void)opener.call(dep.url());
  ASSERT_EQ(opener.state(), HUMUS_CIRCUIT_OPEN);
  const int before = dep.requests();
  dep.answer(200, 20);  // recovering, and slow enough for probes to overlap
  dep.reset_peak();
  (void)run_workers(4, [&](int) {
    CClient c(json);
    if (c.status != HUMUS_OK) return 50;
    // For 300 ms: through open (20 ms), then half-open for good (successes_to_close is out of reach).
    const auto end = std::chrono::steady_clock::now() + milliseconds(300);
    while (std::chrono::steady_clock::now() < end) {
      if (c.call(dep.url()) == HUMUS_E_REJECTED) std::this_thread::sleep_for(milliseconds(1));
    }
    return 0;
  });
  EXPECT_GT(dep.requests(), before);  // probes went through
  EXPECT_GE(dep.peak(), 1);
  EXPECT_LE(dep.peak(), 2) << "more probes in flight than breaker.probes";
  std::printf("[ info ] half-open, 4 workers: %d probes reached the dependency, at most %d at once (probes 2)\n",
              dep.requests() - before, dep.peak());
  EXPECT_EQ(opener.state(), HUMUS_CIRCUIT_HALF_OPEN);
}

// F161: the bulkhead's cap holds across processes: the dependency never sees more than max_concurrent at once.
TEST(SharedClientTest, TheBulkheadCapHoldsAcrossProcesses) {
  Dependency dep;
  const Name name("bulkhead");
  dep.answer(200, 20);
  const std::string json =
      settings(dep, name.value, R"(, "bulkhead": {"max_concurrent": 2, "wait": "0s"})");
  const int refused = run_workers(4, [&](int) {
    CClient c(json);
    if (c.status != HUMUS_OK) return 50;
    int full = 0;
    for (int i = 0; i < 10; ++i) full += c.call(dep.url()) == HUMUS_E_BULKHEAD_FULL ? 1 : 0;
    return std::min(full, 1);
  });
  EXPECT_LE(dep.peak(), 2) << "more calls in flight than bulkhead.max_concurrent";
  std::printf("[ info ] 4 workers x 10 calls, max_concurrent 2: %d reached the dependency, at most %d at once\n",
              dep.requests(), dep.peak());
  EXPECT_GE(dep.peak(), 1);
  EXPECT_GE(refused, 1);  // 4 workers on a cap of 2: some were turned away
  const shared::Report report = shared::inspect(name.value).value();
  ASSERT_EQ(report.origins.size(), 1u);
  EXPECT_EQ(report.origins[0].in_flight, 0u);
}

}  // namespace HUMUS_UNITY_ID
}  // namespace
}  // namespace humus
