// A runtime makes its event loop at the first asynchronous call (Python's blocking calls go through it too).
// When the process has no descriptor left for the loop then, the call is a local shortage (docs/transport.md
// §10.7): HUMUS_E_RESOURCE, nothing sent, and the next call, once descriptors are free, makes the loop.
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <vector>

#include "humus_http.h"
#include "support/capi_client.h"
#include "support/sanitizers.h"

namespace {
namespace HUMUS_UNITY_ID {

std::atomic<int> g_sent{0};

humus_status answer(void*, const humus_mock_request*, humus_mock_reply* reply) {
  ++g_sent;
  humus_mock_reply_set_status(reply, 200);
  return HUMUS_OK;
}

using Outcome = humus::testing::CallOutcome;
constexpr auto on_done = &humus::testing::CallOutcome::on_done;

// Takes every descriptor but a few under a low limit, and gives them back.
class DescriptorHog {
 public:
  DescriptorHog() {
    getrlimit(RLIMIT_NOFILE, &saved_);
    rlimit low = saved_;
    low.rlim_cur = 256;
    setrlimit(RLIMIT_NOFILE, &low);
    for (int fd; (fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0;) fds_.push_back(fd);
  }
  ~DescriptorHog() {
    for (int fd : fds_) close(fd);
    setrlimit(RLIMIT_NOFILE, &saved_);
  }

 private:
  rlimit saved_{};
  std::vector<int> fds_;
};

// F131
TEST(LoopShortageCapiTest, NoDescriptorForTheEventLoopIsResourceAndTheNextCallMakesIt) {
  if (humus::test::kSanitized) {
    GTEST_SKIP() << "the sanitizer runtimes need descriptors of their own to report: the plain build runs this";
  }
  g_sent = 0;
  humus_runtime* rt = nullptr;
  ASSERT_EQ(humus_runtime_new(nullptr, 0, &rt, nullptr), HUMUS_OK);  // a real clock: its loop is made on demand
  humus_mock_transport mock = HUMUS_MOCK_TRANSPORT_INIT;
  mock.respond = answer;
  ASSERT_EQ(humus_runtime_set_mock_transport(rt, &mock, nullptr), HUMUS_OK);
  humus_client* client = humus::testing::new_capi_client(rt, R"({"base_url": "http://payments:8080"})");
  ASSERT_NE(client, nullptr);
  humus_request* req = nullptr;
  ASSERT_EQ(humus_request_new("GET", "http://payments:8080/pay", &req, nullptr), HUMUS_OK);

  Outcome starved;
  humus_error* err = nullptr;
  humus_status submitted = HUMUS_OK;
  {
    DescriptorHog hog;
    submitted = humus_client_submit(client, req, on_done, &starved, nullptr, &err);
  }
  EXPECT_EQ(submitted, HUMUS_E_RESOURCE) << humus_status_name(submitted);
  ASSERT_NE(err, nullptr);
  EXPECT_NE(std::string(humus_error_message(err)).find("local shortage"), std::string::npos)
      << humus_error_message(err);
  humus_error_free(err);
  EXPECT_FALSE(starved.done) << "a call that was not submitted completed";
  EXPECT_EQ(g_sent.load(), 0);

  Outcome fed;
  ASSERT_EQ(humus_client_submit(client, req, on_done, &fed, nullptr, nullptr), HUMUS_OK);
  ASSERT_TRUE(fed.wait());
  EXPECT_EQ(fed.status, HUMUS_OK);
  EXPECT_EQ(fed.http_status, 200);
  EXPECT_EQ(g_sent.load(), 1);
  humus_request_free(req);
  humus_client_free(client);
  humus_runtime_free(rt);
}

}  // namespace HUMUS_UNITY_ID
}  // namespace
