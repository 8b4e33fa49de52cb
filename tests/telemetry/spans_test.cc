// Attempt spans (docs/telemetry.md §13.1) and what travels with them (§12) on the virtual clock and the mock transport:
// the traceparent each attempt sends names the span the sink receives.
#include <gtest/gtest.h>

#include <future>
#include <mutex>
#include <stdexcept>

#include "client/client.h"
#include "support/mock_script.h"

namespace humus::client {
namespace {
namespace HUMUS_UNITY_ID {

using namespace humus::test::mock;  // Script and the reply builders
using telemetry::Span;
using telemetry::to_hex;

constexpr char kCaller[] = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

class SpansTest : public ::testing::Test {
 protected:
  SpansTest() : runtime_([] {
    RuntimeOptions o;
    o.virtual_clock = true;
    o.seed = 5;
    return o;
  }()) {
    runtime_.telemetry().set_span_sink([this](const Span& s) {
      std::lock_guard<std::mutex> lock(mu_);
      spans_.push_back(s);
    });
  }

  std::unique_ptr<Client> make(std::vector<MockReply> replies) {
    script_ = std::make_shared<Script>(std::move(replies));
    runtime_.set_mock_handler([script = script_](const transport::WireRequest& r) { return script->next(r); });
    settings::Settings s;
    s.base_url = "http://payments:8080";
    return std::move(Client::create(runtime_, s)).value();
  }

  static Request get(std::string path = "/pay") {
    Request r;
    r.url = "http://payments:8080" + path;
    return r;
  }

  std::vector<Span> spans() {
    std::lock_guard<std::mutex> lock(mu_);
    return spans_;
  }
  std::string sent_traceparent(size_t i) { return *script_->received(i).headers.find("traceparent"); }
  static std::string traceparent_of(const Span& s) {
    return telemetry::format_traceparent(s.trace_id, s.span_id, s.trace_flags);
  }

  Runtime runtime_;
  std::shared_ptr<Script> script_;
  std::mutex mu_;
  std::vector<Span> spans_;
};

TEST_F(SpansTest, WithoutAContextEachCallIsANewTraceOfRootSpans) {
  auto c = make({status(503), status(200)});
  ASSERT_TRUE(c->execute(get()).ok());
  ASSERT_TRUE(c->execute(get()).ok());
  const std::vector<Span> s = spans();
  ASSERT_EQ(s.size(), 3u);
  EXPECT_FALSE(s[0].parent_span_id.has_value());
  EXPECT_EQ(s[0].trace_id, s[1].trace_id);  // two attempts of one call
  EXPECT_NE(s[1].trace_id, s[2].trace_id);  // another call
  EXPECT_EQ(s[0].trace_flags, 1);           // sampled: a sink records it
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(sent_traceparent(i), traceparent_of(s[i]));
  EXPECT_EQ(s[0].resend_count, 0);
  EXPECT_EQ(s[1].resend_count, 1);
  EXPECT_EQ(s[2].resend_count, 0);
  EXPECT_EQ(s[0].name, "GET");
  EXPECT_EQ(s[0].method, "GET");
  EXPECT_EQ(s[0].server_address, "payments");
  EXPECT_EQ(s[0].server_port, 8080);
  EXPECT_EQ(s[0].url_full, "http://payments:8080/pay");
  EXPECT_LT(s[0].end, s[1].start);  // the backoff lies between them, on the virtual clock's calendar
}

// S22: url.full keeps no credential the semantic conventions name; what was sent keeps the query intact.
TEST_F(SpansTest, UrlFullRedactsSignedQueryParameters) {
  auto c = make({status(200)});
  ASSERT_TRUE(c->execute(get("/f?X-Goog-Signature=s3cr3t&id=7&AWSAccessKeyId=AK&sig=x&Signature=y")).ok());
  const std::vector<Span> s = spans();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].url_full,
            "http://payments:8080/f?X-Goog-Signature=REDACTED&id=7&AWSAccessKeyId=REDACTED&sig=REDACTED&"
            "Signature=REDACTED");
  EXPECT_EQ(script_->received(0).url, "http://payments:8080/f?X-Goog-Signature=s3cr3t&id=7&AWSAccessKeyId=AK&sig=x&Signature=y");
}

TEST_F(SpansTest, TheCallersTraceparentIsTheParentAndItsTracestatePassesOn) {
  auto c = make({status(200)});
  Request r = get();
  r.context.traceparent = kCaller;
  r.context.tracestate = "vendor=1";
  ASSERT_TRUE(c->execute(r).ok());
  const std::vector<Span> s = spans();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(to_hex(s[0].trace_id), "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(to_hex(*s[0].parent_span_id), "00f067aa0ba902b7");
  EXPECT_EQ(s[0].tracestate, "vendor=1");
  EXPECT_EQ(sent_traceparent(0), traceparent_of(s[0]));
  EXPECT_NE(sent_traceparent(0), kCaller);
  EXPECT_EQ(*script_->received(0).headers.find("tracestate"), "vendor=1");
}

TEST_F(SpansTest, ATraceparentAmongTheCallsOwnHeadersIsTheParentNotSentVerbatim) {
  auto c = make({status(200)});
  Request r = get();
  r.headers.add("traceparent", kCaller);
  ASSERT_TRUE(c->execute(r).ok());
  const std::vector<Span> s = spans();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(to_hex(*s[0].parent_span_id), "00f067aa0ba902b7");
  const transport::WireRequest sent = script_->received(0);
  EXPECT_EQ(*sent.headers.find("traceparent"), traceparent_of(s[0]));
  size_t traceparents = 0;
  for (const auto& [name, value] : sent.headers.fields()) traceparents += equals_ignore_case(name, "traceparent");
  EXPECT_EQ(traceparents, 1u);
}

TEST_F(SpansTest, AnInvalidTraceparentStartsANewTraceAndDropsItsTracestate) {
  auto c = make({status(200)});
  Request r = get();
  r.context.traceparent = "00-not-a-trace";
  r.context.tracestate = "vendor=1";
  ASSERT_TRUE(c->execute(r).ok());
  const std::vector<Span> s = spans();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_FALSE(s[0].parent_span_id.has_value());
  EXPECT_EQ(script_->received(0).headers.find("tracestate"), nullptr);
}

TEST_F(SpansTest, ARedirectIsASpanOfItsOwn) {
  auto c = make({status(302, header("Location", "/moved")), status(200)});
  ASSERT_TRUE(c->execute(get()).ok());
  const std::vector<Span> s = spans();
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].status_code, 302);
  EXPECT_FALSE(s[0].error);  // a 3xx is no error
  EXPECT_EQ(s[1].url_full, "http://payments:8080/moved");
  EXPECT_EQ(s[1].resend_count, 1);
  EXPECT_EQ(sent_traceparent(1), traceparent_of(s[1]));
}

TEST_F(SpansTest, AnAttemptWithoutAnswerHasItsErrorType) {
  auto c = make({error(Code::kConnect), status(200)});
  ASSERT_TRUE(c->execute(get()).ok());
  const std::vector<Span> s = spans();
  ASSERT_EQ(s.size(), 2u);
  EXPECT_TRUE(s[0].error);
  EXPECT_EQ(s[0].error_type, "connect");
  EXPECT_EQ(s[0].status_code, 0);
  EXPECT_EQ(s[0].protocol_version, "");
}

TEST_F(SpansTest, AThrowingSinkLosesItsSpansNotTheCall) {
  runtime_.telemetry().set_span_sink([](const Span&) { throw std::runtime_error("sink down"); });
  auto c = make({status(200)});
  CallResult r = c->execute(get());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.response->status, 200);
}

TEST_F(SpansTest, WithoutASinkTheCallersContextPassesUnchanged) {
  runtime_.telemetry().set_span_sink(nullptr);
  auto c = make({status(200)});
  Request r = get();
  r.context.traceparent = kCaller;
  r.context.tracestate = "vendor=1";
  ASSERT_TRUE(c->execute(r).ok());
  EXPECT_EQ(sent_traceparent(0), kCaller);
  EXPECT_EQ(*script_->received(0).headers.find("tracestate"), "vendor=1");
  EXPECT_TRUE(spans().empty());
}

TEST_F(SpansTest, AsyncAttemptsHaveSpansToo) {
  auto c = make({status(503), status(200)});
  std::promise<CallResult> done;
  c->submit(get(), [&](CallResult r) { done.set_value(std::move(r)); });
  ASSERT_TRUE(done.get_future().get().ok());
  const std::vector<Span> s = spans();
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(sent_traceparent(1), traceparent_of(s[1]));
}

}  // namespace HUMUS_UNITY_ID
}  // namespace
}  // namespace humus::client
