// Fork safety (docs/fork.md §23) against the project's real local server: a client made and used before fork()
// keeps working in the child, on connections of the child's own, blocking and asynchronous alike, while the
// parent's pooled connections are neither reused, written to, nor closed by the child. The server's records
// tell which connection carried each request (`connection`, a server-wide id).
//
// The child runs no gtest assertion (its failures would not reach this process's report): it returns the
// number of the first check that failed as its exit status, 0 when all went well.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "client/client.h"
#include "common/mutex.h"
#include "humus_http.h"
#include "support/sanitizers.h"
#include "support/test_server.h"
#include "transport/fork.h"

namespace humus::client {
namespace {
namespace HUMUS_UNITY_ID {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

// TSan stops a child of a multithreaded process that starts a thread (die_after_fork), as the child's new
// event loop does, unless told otherwise: then the forking tests are skipped, saying why.
bool tsan_refuses_threads_after_fork() {
  if (!humus::test::kThreadSanitized) return false;
  const char* options = std::getenv("TSAN_OPTIONS");
  return options == nullptr || std::strstr(options, "die_after_fork=0") == nullptr;
}

#define SKIP_UNDER_TSAN_UNLESS_ALLOWED()                                                                \
  if (tsan_refuses_threads_after_fork()) {                                                           \
    GTEST_SKIP() << "TSan kills a forked child that starts a thread; run with "                       \
                    "TSAN_OPTIONS=die_after_fork=0 to include this test";                             \
  }

Request req(const std::string& listener, const std::string& path) {
  Request r;
  r.method = "GET";
  r.url = humus::test::TestServer::shared().url(listener, path);
  return r;
}

class ForkTest : public humus::test::WithTestServer {
 protected:
  static RuntimeOptions options(bool caller_loop = false) {
    RuntimeOptions o;
    for (const char* listener : {"https", "https_h1"}) {
      o.resolve.emplace_back(server().host_port(listener), server().address(listener));
    }
    o.caller_loop = caller_loop;
    return o;
  }

  static std::unique_ptr<Client> make(Runtime& runtime, const std::string& listener) {
    settings::Settings s;
    const bool tls = listener != "http";
    s.base_url = tls ? "https://" + server().host_port(listener) : "http://" + server().address(listener);
    if (tls) {
      s.tls.emplace();
      s.tls->ca_file = server().ca_file();
    }
    Result<std::unique_ptr<Client>> c = Client::create(runtime, s);
    EXPECT_TRUE(c.ok()) << c.status().message();
    return c.ok() ? std::move(c).value() : nullptr;
  }

  // The connection ids of the requests the server recorded for `path`.
  static std::vector<int> connections(const std::string& path) {
    std::vector<int> out;
    for (const json& r : server().requests(path)) out.push_back(r.at("connection").get<int>());
    return out;
  }

  // Waits (at most `guard`, then kills it) for the child; its exit status, or -1 when it did not exit by
  // itself. The guard only ends a child that would otherwise hang.
  static int wait_child(pid_t pid, std::chrono::seconds guard = seconds(60)) {
    const auto until = std::chrono::steady_clock::now() + guard;
    int status = 0;
    while (waitpid(pid, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > until) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        return -1;
      }
      std::this_thread::sleep_for(milliseconds(5));
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
};

// Submits `r` and waits for its outcome; a caller-driven loop is driven by this thread while it waits.
CallResult submit_and_wait(Runtime& runtime, Client& client, Request r) {
  Mutex mu;
  CondVar cv;
  std::optional<CallResult> out;
  const std::shared_ptr<AsyncCall> call = client.submit(std::move(r), [&](CallResult result) {
    MutexLock lock(mu);
    out = std::move(result);
    cv.notify_all();
  });
  if (runtime.options().caller_loop) {
    runtime.loop().drive_until([&] {
      MutexLock lock(mu);
      return out.has_value();
    });
  }
  MutexLock lock(mu);
  while (!out) cv.wait(mu);
  return std::move(*out);
}

bool ok200(const CallResult& r) { return r.ok() && r.response->status == 200; }

// The child's part: two blocking calls (the second on the first's connection), one asynchronous call, and
// the client destroyed, which must wait for none of the parent's calls.
int child_calls(Runtime& runtime, std::unique_ptr<Client> client, const std::string& listener) {
  if (client->calls_in_flight() != 0) return 10;  // the parent's, if any, are not the child's
  if (!ok200(client->execute(req(listener, "/fork/child")))) return 11;
  if (!ok200(client->execute(req(listener, "/fork/child")))) return 12;
  if (!ok200(submit_and_wait(runtime, *client, req(listener, "/fork/child-async")))) return 13;
  if (runtime.options().caller_loop) {
    // A binding's poller asks for the loop's descriptor again in the child: it names the child's epoll set.
    const int fd = runtime.loop().dup_fd();
    if (fd < 0) return 14;
    close(fd);
  }
  client.reset();
  return 0;
}

class ForkListenerTest : public ForkTest, public ::testing::WithParamInterface<std::string> {};

// F165: HTTP/2 over TLS ("https"), HTTP/1.1 over TLS ("https_h1") and plain HTTP/1.1 ("http").
TEST_P(ForkListenerTest, ChildCallsOnItsOwnConnectionsAndTheParentsPoolStaysItsOwn) {
  SKIP_UNDER_TSAN_UNLESS_ALLOWED();
  const std::string listener = GetParam();
  Runtime runtime(options());
  std::unique_ptr<Client> client = make(runtime, listener);
  ASSERT_NE(client, nullptr);
  // A pooled keep-alive connection for blocking calls (a lane's) and one for asynchronous calls (the
  // client's multi handle's).
  ASSERT_TRUE(ok200(client->execute(req(listener, "/fork/parent-before"))));
  ASSERT_TRUE(ok200(submit_and_wait(runtime, *client, req(listener, "/fork/parent-before-async"))));
  const std::vector<int> blocking = connections("/fork/parent-before");
  const std::vector<int> async = connections("/fork/parent-before-async");
  ASSERT_EQ(blocking.size(), 1u);
  ASSERT_EQ(async.size(), 1u);
  const size_t noted = transport::noted_sockets();
  EXPECT_GE(noted, 2u);  // the parent's connections, which the child must not use

  const pid_t pid = fork();
  ASSERT_GE(pid, 0) << std::strerror(errno);
  if (pid == 0) _exit(child_calls(runtime, std::move(client), listener));
  EXPECT_EQ(wait_child(pid), 0) << "the child's first failed check (see child_calls)";

  // The parent's pooled connections still carry its calls: the child neither closed them (a TLS
  // close_notify, an HTTP/2 GOAWAY or a shutdown() would have ended them) nor read from them.
  ASSERT_TRUE(ok200(client->execute(req(listener, "/fork/parent-after"))));
  ASSERT_TRUE(ok200(submit_and_wait(runtime, *client, req(listener, "/fork/parent-after-async"))));
  EXPECT_EQ(connections("/fork/parent-after"), blocking);
  EXPECT_EQ(connections("/fork/parent-after-async"), async);

  // The child's calls went out on connections of its own, its two blocking calls on one.
  const std::vector<int> child = connections("/fork/child");
  const std::vector<int> child_async = connections("/fork/child-async");
  ASSERT_EQ(child.size(), 2u);
  ASSERT_EQ(child_async.size(), 1u);
  EXPECT_EQ(child[0], child[1]);
  const std::set<int> parents = {blocking[0], async[0]};
  for (const int c : {child[0], child_async[0]}) EXPECT_EQ(parents.count(c), 0u) << "connection " << c;
  if (listener == "https") {
    EXPECT_EQ(server().requests("/fork/child")[0].at("protocol"), "2");
  }
}

INSTANTIATE_TEST_SUITE_P(Listeners, ForkListenerTest, ::testing::Values("https", "https_h1", "http"),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

// F166: calls in flight in the parent at the fork — a blocking one on another thread, an asynchronous one on the
// loop — are the parent's: they end there as if nothing happened, and the child neither waits for them nor
// touches their connections (docs/fork.md §23.3).
TEST_F(ForkTest, CallsInFlightAtTheForkStayTheParents) {
  SKIP_UNDER_TSAN_UNLESS_ALLOWED();
  const std::string listener = "https_h1";
  server().script("/fork/slow", json::array({{{"delay_ms", 1000}, {"body", "late"}}}));
  Runtime runtime(options());
  std::unique_ptr<Client> client = make(runtime, listener);
  ASSERT_NE(client, nullptr);

  std::optional<CallResult> blocking;
  std::thread caller([&] { blocking = client->execute(req(listener, "/fork/slow")); });
  Mutex mu;
  CondVar cv;
  std::optional<CallResult> async;
  const std::shared_ptr<AsyncCall> call = client->submit(req(listener, "/fork/slow"), [&](CallResult r) {
    MutexLock lock(mu);
    async = std::move(r);
    cv.notify_all();
  });
  // Both requests are on the wire, their answers held back by the server.
  const auto until = std::chrono::steady_clock::now() + seconds(20);
  while (connections("/fork/slow").size() < 2 && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(milliseconds(5));
  }
  ASSERT_EQ(connections("/fork/slow").size(), 2u);
  ASSERT_EQ(client->calls_in_flight(), 1u);

  const pid_t pid = fork();
  if (pid == 0) _exit(child_calls(runtime, std::move(client), listener));
  ASSERT_GT(pid, 0) << std::strerror(errno);
  EXPECT_EQ(wait_child(pid), 0) << "the child's first failed check (see child_calls)";

  caller.join();
  {
    MutexLock lock(mu);
    while (!async) cv.wait(mu);
  }
  ASSERT_TRUE(blocking.has_value());
  EXPECT_TRUE(ok200(*blocking));
  EXPECT_EQ(blocking->response->body, "late");
  EXPECT_TRUE(ok200(*async));
  EXPECT_EQ(async->response->body, "late");
  const std::vector<int> slow = connections("/fork/slow");
  for (const int c : connections("/fork/child")) {
    EXPECT_NE(c, slow[0]);
    EXPECT_NE(c, slow[1]);
  }
  for (const int c : connections("/fork/child-async")) {
    EXPECT_NE(c, slow[0]);
    EXPECT_NE(c, slow[1]);
  }
  EXPECT_EQ(connections("/fork/child").size(), 2u);
}

// F167: a runtime whose loop the caller drives ("loop": "caller"): in the child, the loop is made anew, and the
// descriptor a poller watches must be asked for again (the parent's names the parent's epoll set).
TEST_F(ForkTest, CallerDrivenLoopIsMadeAnewInTheChild) {
  SKIP_UNDER_TSAN_UNLESS_ALLOWED();
  const std::string listener = "https";
  Runtime runtime(options(/*caller_loop=*/true));
  std::unique_ptr<Client> client = make(runtime, listener);
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(ok200(submit_and_wait(runtime, *client, req(listener, "/fork/parent-before-async"))));
  transport::EventLoop* parents_loop = runtime.existing_loop();
  ASSERT_NE(parents_loop, nullptr);

  const pid_t pid = fork();
  if (pid == 0) {
    // The parent's loop is not this process's: none exists until the first asynchronous call makes one.
    if (runtime.existing_loop() != nullptr) _exit(30);
    _exit(child_calls(runtime, std::move(client), listener));
  }
  ASSERT_GT(pid, 0) << std::strerror(errno);
  EXPECT_EQ(wait_child(pid), 0) << "the child's first failed check (see child_calls)";

  EXPECT_EQ(runtime.existing_loop(), parents_loop);
  ASSERT_TRUE(ok200(submit_and_wait(runtime, *client, req(listener, "/fork/parent-after-async"))));
  EXPECT_EQ(connections("/fork/parent-after-async"), connections("/fork/parent-before-async"));
  ASSERT_EQ(connections("/fork/child-async").size(), 1u);
  EXPECT_NE(connections("/fork/child-async")[0], connections("/fork/parent-before-async")[0]);
}


// F169: a client and its runtime freed in a child that made no call: nothing waits for the parent's event-loop
// thread (not in the child) or for the parent's calls, and the child's copies of the parent's connections
// are closed without a word to the server.
TEST_F(ForkTest, FreeingInTheChildWaitsForNothingOfTheParents) {
  SKIP_UNDER_TSAN_UNLESS_ALLOWED();
  const std::string listener = "https_h1";  // a TLS close_notify the child sent would end the parent's
  auto runtime = std::make_unique<Runtime>(options());
  std::unique_ptr<Client> client = make(*runtime, listener);
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(ok200(client->execute(req(listener, "/fork/parent-before"))));
  ASSERT_TRUE(ok200(submit_and_wait(*runtime, *client, req(listener, "/fork/parent-before-async"))));

  const pid_t pid = fork();
  if (pid == 0) {
    client.reset();
    runtime.reset();
    _exit(0);
  }
  ASSERT_GT(pid, 0) << std::strerror(errno);
  EXPECT_EQ(wait_child(pid), 0);
  ASSERT_TRUE(ok200(client->execute(req(listener, "/fork/parent-after"))));
  ASSERT_TRUE(ok200(submit_and_wait(*runtime, *client, req(listener, "/fork/parent-after-async"))));
  EXPECT_EQ(connections("/fork/parent-after"), connections("/fork/parent-before"));
  EXPECT_EQ(connections("/fork/parent-after-async"), connections("/fork/parent-before-async"));
}

// F166: a thread of the parent inside the C ABI at the fork. Every C function looks its handle up in the
// handle registry, under one of its locks: a fork that copied that lock held would leave the child's first
// C call on a handle of that shard waiting for ever. The fork handlers hold every registry lock across the
// fork. Forked 40 times while another thread calls in a loop: without them, some child hangs.
TEST_F(ForkTest, ACApiCallOnAnotherThreadAtTheForkLeavesNoRegistryLockHeld) {
  if (humus::test::kThreadSanitized) {
    GTEST_SKIP() << "under TSan the fork does not hold the registry's 64 locks (TSan's deadlock detector aborts "
                    "past 64 held by one thread): src/capi/handle.cc";
  }
  humus_request* r = nullptr;
  ASSERT_EQ(humus_request_new("GET", "http://127.0.0.1:9/x", &r, nullptr), HUMUS_OK);
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> calls{0};
  std::thread caller([&] {
    while (!stop.load(std::memory_order_relaxed)) {
      if (humus_request_set_timeout_ms(r, 1000, nullptr) == HUMUS_OK) calls.fetch_add(1, std::memory_order_relaxed);
    }
  });
  int hung = 0;
  for (int i = 0; i < 40; ++i) {
    const pid_t pid = fork();
    if (pid == 0) _exit(humus_request_set_timeout_ms(r, 2000, nullptr) == HUMUS_OK ? 0 : 1);
    ASSERT_GT(pid, 0) << std::strerror(errno);
    if (wait_child(pid, seconds(5)) != 0) ++hung;
  }
  stop = true;
  caller.join();
  humus_request_free(r);
  EXPECT_GT(calls.load(), 0u);
  EXPECT_EQ(hung, 0) << "children whose C call found a registry lock held (killed after 5 s)";
}

}  // namespace HUMUS_UNITY_ID
}  // namespace
}  // namespace humus::client
