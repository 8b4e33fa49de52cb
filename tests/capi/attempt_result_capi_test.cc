// An attempt's result is recorded in one place, whichever way its body is read (docs/bodies.md §7): a breaker
// policy that fails (docs/breaker.md §9.4) makes the same counts for a buffered response, a streamed one read to
// its end, and a call on the event loop.
#include <gtest/gtest.h>

#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

#include "humus_http.h"

namespace {
namespace HUMUS_UNITY_ID {

humus_status failing_trip(void*, const humus_breaker_counts*, int32_t*) { return HUMUS_E_CALLBACK; }
humus_status close_probe(void*, const humus_breaker_counts*, int32_t* decision) {
  *decision = HUMUS_PROBE_CLOSE;
  return HUMUS_OK;
}

humus_status paid(void*, const humus_mock_request*, humus_mock_reply* reply) {
  humus_mock_reply_set_status(reply, 200);
  humus_mock_reply_set_body(reply, "paid", 4);  // a body, so a streamed response holds its result until its end
  return HUMUS_OK;
}

// humus.circuit.calls of one port, by outcome.
struct Outcomes {
  int32_t port = 0;
  std::map<std::string, uint64_t> by_outcome;
};

humus_status collect_outcomes(void* user, const humus_metric_point* p) {
  auto* o = static_cast<Outcomes*>(user);
  if (std::string(p->name) == "humus.circuit.calls" && p->server_port == o->port) {
    o->by_outcome[p->attribute_value] += p->value;
  }
  return HUMUS_OK;
}

// Waits for one asynchronous callback.
struct Latch {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  humus_status status = HUMUS_OK;
  humus_response* resp = nullptr;
  void open(humus_status s) {
    std::lock_guard<std::mutex> lock(mu);
    status = s;
    done = true;
    cv.notify_all();
  }
  void wait() {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [this] { return done; });
    done = false;
  }
};

void on_headers(void* user, humus_status s, humus_response* resp, humus_error* err) {
  humus_error_free(err);
  auto* l = static_cast<Latch*>(user);
  l->resp = resp;
  l->open(s);
}

class AttemptResultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* options = R"({"clock": "virtual"})";
    ASSERT_EQ(humus_runtime_new(options, std::strlen(options), &rt_, nullptr), HUMUS_OK);
    humus_mock_transport mock = HUMUS_MOCK_TRANSPORT_INIT;
    mock.respond = paid;
    ASSERT_EQ(humus_runtime_set_mock_transport(rt_, &mock, nullptr), HUMUS_OK);
  }
  void TearDown() override {
    for (humus_client* c : clients_) humus_client_free(c);
    humus_runtime_free(rt_);
  }

  // A client of http://payments:<port> whose breaker policy fails on every result, and a request to it.
  humus_client* client(int port, humus_request** req) {
    const std::string origin = "http://payments:" + std::to_string(port);
    const std::string json = R"({"base_url": ")" + origin + R"("})";
    humus_settings* s = nullptr;
    EXPECT_EQ(humus_settings_from_json(json.data(), json.size(), &s, nullptr), HUMUS_OK);
    humus_breaker_policy policy = HUMUS_BREAKER_POLICY_INIT;
    policy.trip = failing_trip;
    policy.probe = close_probe;
    EXPECT_EQ(humus_settings_set_breaker_policy(s, &policy, nullptr), HUMUS_OK);
    humus_client* c = nullptr;
    EXPECT_EQ(humus_client_new(rt_, s, &c, nullptr), HUMUS_OK);
    humus_settings_free(s);
    clients_.push_back(c);
    EXPECT_EQ(humus_request_new("GET", (origin + "/charges").c_str(), req, nullptr), HUMUS_OK);
    return c;
  }

  Outcomes outcomes(int32_t port) {
    Outcomes o;
    o.port = port;
    EXPECT_EQ(humus_runtime_metrics_collect(rt_, collect_outcomes, &o, nullptr), HUMUS_OK);
    return o;
  }

  static humus_breaker_counts counts(humus_client* c) {
    humus_breaker_counts k = HUMUS_BREAKER_COUNTS_INIT;
    EXPECT_EQ(humus_client_breaker_counts(c, &k), HUMUS_OK);
    return k;
  }

  humus_runtime* rt_ = nullptr;
  std::vector<humus_client*> clients_;
};

TEST_F(AttemptResultTest, FailingPolicyCountsTheSameBufferedStreamedAndOnTheLoop) {
  // Buffered: the attempt ends inside the call, which a failing policy ends with its status.
  humus_request* buffered_req = nullptr;
  humus_client* buffered = client(8081, &buffered_req);
  humus_response* resp = nullptr;
  humus_error* err = nullptr;
  EXPECT_EQ(humus_client_do(buffered, buffered_req, &resp, &err), HUMUS_E_CALLBACK);
  humus_error_free(err);
  EXPECT_EQ(resp, nullptr);

  // Streamed: the result waits for the body's end, after the call returned.
  humus_request* streamed_req = nullptr;
  humus_client* streamed = client(8082, &streamed_req);
  ASSERT_EQ(humus_client_open(streamed, streamed_req, &resp, nullptr), HUMUS_OK);
  char buf[16];
  size_t n = 0;
  std::string body;
  while (humus_response_read(resp, buf, sizeof buf, &n, nullptr) == HUMUS_OK && n > 0) body.append(buf, n);
  EXPECT_EQ(body, "paid");
  humus_response_free(resp);

  // On the event loop: the mock transport hands its body over whole with the headers (it has nothing to stream
  // there), so the call records the result itself and ends with the policy's status, as a buffered one does.
  humus_request* loop_req = nullptr;
  humus_client* looped = client(8083, &loop_req);
  Latch latch;
  ASSERT_EQ(humus_client_submit_open(looped, loop_req, on_headers, &latch, nullptr, nullptr), HUMUS_OK);
  latch.wait();
  EXPECT_EQ(latch.status, HUMUS_E_CALLBACK);
  EXPECT_EQ(latch.resp, nullptr);

  const Outcomes want = outcomes(8081);
  EXPECT_EQ(want.by_outcome.at("failure"), 1u);  // docs/breaker.md §9.4: a failing policy counts a failure
  EXPECT_EQ(want.by_outcome.at("success"), 0u);
  EXPECT_EQ(outcomes(8082).by_outcome, want.by_outcome);
  EXPECT_EQ(outcomes(8083).by_outcome, want.by_outcome);
  for (humus_client* c : {buffered, streamed, looped}) {
    EXPECT_EQ(counts(c).failures, 1u);
    EXPECT_EQ(counts(c).successes, 0u);
  }
  for (humus_request* r : {buffered_req, streamed_req, loop_req}) humus_request_free(r);
}

}  // namespace HUMUS_UNITY_ID
}  // namespace
