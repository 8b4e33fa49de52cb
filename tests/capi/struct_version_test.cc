// Versioned structs through the C ABI alone: a caller built against version 1 of a struct — its layout
// written out here as that caller's header had it — keeps working, and a version the library does not know
// (0, or newer) is refused naming the struct.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#include "humus_http.h"

namespace {
namespace HUMUS_UNITY_ID {

// ---- Version 1 layouts, as the first ABI's header declared them --------------------------------------

struct BreakerCountsV1 {
  uint32_t version;
  int32_t state;
  uint64_t successes, failures, consecutive_successes, consecutive_failures, timed_out_probes;
  uint32_t window_results, window_failures;
};

struct LogRecordV1 {  // counts embedded by value
  uint32_t version;
  const char* event;
  const char* message;
  const char* server_address;
  int32_t server_port;
  int32_t previous_state;
  int32_t new_state;
  BreakerCountsV1 counts;
  int64_t time_unix_ms;
  const char* upstream;
};

struct LogSinkV1 {
  uint32_t version;  // 1
  // The function type a version-1 caller compiled: the record's name is the same, only its layout is older.
  void (*record)(void* user_data, const humus_log_record* record);
  void* user_data;
  void (*destroy)(void* user_data);
};

struct ClassifierV1 {
  uint32_t version;  // 1
  humus_status (*classify)(void* user_data, const humus_attempt* attempt, humus_classification* out);
  void* user_data;
  void (*destroy)(void* user_data);
};

struct AttemptHooksV1 {
  uint32_t version;  // 1
  void* user_data;
  humus_status (*before)(void* user_data, humus_attempt_request* request);
  void (*after)(void* user_data, const humus_attempt* attempt);
  void (*destroy)(void* user_data);
};

humus_status always_503(void*, const humus_mock_request*, humus_mock_reply* reply) {
  humus_mock_reply_set_status(reply, 503);
  return HUMUS_OK;
}

class StructVersionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* options = R"({"clock": "virtual", "seed": 1})";
    ASSERT_EQ(humus_runtime_new(options, std::strlen(options), &rt_, nullptr), HUMUS_OK);
    humus_mock_transport mock = HUMUS_MOCK_TRANSPORT_INIT;
    mock.respond = always_503;
    ASSERT_EQ(humus_runtime_set_mock_transport(rt_, &mock, nullptr), HUMUS_OK);
    const char* json = R"({"base_url": "http://payments:8080", "max_attempts": 1})";
    ASSERT_EQ(humus_settings_from_json(json, std::strlen(json), &settings_, nullptr), HUMUS_OK);
    ASSERT_EQ(humus_request_new("GET", "http://payments:8080/pay", &req_, nullptr), HUMUS_OK);
  }
  void TearDown() override {
    humus_request_free(req_);
    humus_client_free(client_);
    humus_settings_free(settings_);
    humus_runtime_free(rt_);
  }
  void build_client() { ASSERT_EQ(humus_client_new(rt_, settings_, &client_, nullptr), HUMUS_OK); }
  int32_t call_status() {
    humus_response* resp = nullptr;
    EXPECT_EQ(humus_client_do(client_, req_, &resp, nullptr), HUMUS_OK);
    const int32_t status = humus_response_status(resp);
    humus_response_free(resp);
    return status;
  }

  humus_runtime* rt_ = nullptr;
  humus_settings* settings_ = nullptr;
  humus_client* client_ = nullptr;
  humus_request* req_ = nullptr;
};

struct SeenV1 {
  std::vector<LogRecordV1> records;
  std::vector<std::string> events;
  int destroyed = 0;
};

void record_v1(void* user, const humus_log_record* record) {
  const auto* r = reinterpret_cast<const LogRecordV1*>(record);  // what that caller's header declared
  auto* seen = static_cast<SeenV1*>(user);
  seen->records.push_back(*r);
  seen->events.emplace_back(r->event);
}

void destroy_v1(void* user) { ++static_cast<SeenV1*>(user)->destroyed; }

TEST_F(StructVersionTest, AVersion1LogSinkGetsVersion1Records) {
  SeenV1 seen;
  const LogSinkV1 sink{1, record_v1, &seen, destroy_v1};
  static_assert(sizeof(LogSinkV1) == sizeof(humus_log_sink), "the table itself did not change");
  ASSERT_EQ(humus_runtime_set_log_sink(rt_, reinterpret_cast<const humus_log_sink*>(&sink), nullptr), HUMUS_OK);
  build_client();
  for (int i = 0; i < 5; ++i) EXPECT_EQ(call_status(), 503);
  ASSERT_EQ(seen.records.size(), 1u);
  const LogRecordV1& r = seen.records[0];
  EXPECT_EQ(r.version, 1u);
  EXPECT_EQ(seen.events[0], "humus.circuit.state_change");
  EXPECT_EQ(r.server_port, 8080);
  EXPECT_EQ(r.previous_state, HUMUS_CIRCUIT_CLOSED);
  EXPECT_EQ(r.new_state, HUMUS_CIRCUIT_OPEN);
  // The counts sit where version 1 put them, by value.
  EXPECT_EQ(r.counts.version, 1u);
  EXPECT_EQ(r.counts.state, HUMUS_CIRCUIT_CLOSED);
  EXPECT_EQ(r.counts.consecutive_failures, 5u);
  EXPECT_EQ(r.counts.failures, 5u);
  EXPECT_GT(r.time_unix_ms, 1'600'000'000'000);
  ASSERT_EQ(humus_runtime_set_log_sink(rt_, nullptr, nullptr), HUMUS_OK);
  EXPECT_EQ(seen.destroyed, 1);
}

// humus_breaker_counts grew in version 2 (slow_results, window_slow): a version 1 caller's smaller struct gets
// its own members, and nothing is written past them.
TEST_F(StructVersionTest, AVersion1CountsCallerGetsItsPrefixOnly) {
  build_client();
  for (int i = 0; i < 3; ++i) EXPECT_EQ(call_status(), 503);
  struct {
    BreakerCountsV1 counts;
    unsigned char after[16];
  } v1;
  std::memset(&v1, 0xAB, sizeof v1);
  v1.counts.version = 1;
  ASSERT_EQ(humus_client_breaker_counts(client_, reinterpret_cast<humus_breaker_counts*>(&v1.counts)), HUMUS_OK);
  EXPECT_EQ(v1.counts.version, 1u);
  EXPECT_EQ(v1.counts.state, HUMUS_CIRCUIT_CLOSED);
  EXPECT_EQ(v1.counts.failures, 3u);
  EXPECT_EQ(v1.counts.window_failures, 3u);
  for (unsigned char b : v1.after) EXPECT_EQ(b, 0xAB);
  static_assert(sizeof(BreakerCountsV1) == offsetof(humus_breaker_counts, slow_results), "v2 appends");
}

TEST_F(StructVersionTest, AVersion2CallerGetsTheSlowMembersWritten) {
  humus_settings_free(settings_);
  const char* json = R"({"base_url": "http://payments:8080", "max_attempts": 1,
                         "breaker": {"slow_call_duration": "1ns"}})";
  ASSERT_EQ(humus_settings_from_json(json, std::strlen(json), &settings_, nullptr), HUMUS_OK);
  build_client();
  // On the virtual clock an immediate answer takes no time: not slow even against 1 ns.
  EXPECT_EQ(call_status(), 503);
  humus_breaker_counts counts = HUMUS_BREAKER_COUNTS_INIT;
  counts.slow_results = 77;  // overwritten: version 2 has them
  counts.window_slow = 77;
  ASSERT_EQ(humus_client_breaker_counts(client_, &counts), HUMUS_OK);
  EXPECT_EQ(counts.version, 2u);
  EXPECT_EQ(counts.failures, 1u);
  EXPECT_EQ(counts.slow_results, 0u);
  EXPECT_EQ(counts.window_slow, 0u);
}

humus_status all_done_ignored(void* user, const humus_attempt* a, humus_classification* out) {
  ++*static_cast<int*>(user);
  EXPECT_EQ(humus_attempt_status(a), 503);
  out->retry = HUMUS_RETRY_DONE;
  out->breaker = HUMUS_BREAKER_IGNORED;
  out->retry_after_ms = 0;
  return HUMUS_OK;
}

TEST_F(StructVersionTest, AVersion1ClassifierIsAcceptedAndUsed) {
  int calls = 0;
  const ClassifierV1 table{1, all_done_ignored, &calls, nullptr};
  ASSERT_EQ(humus_settings_set_classifier(settings_, reinterpret_cast<const humus_classifier*>(&table), nullptr),
            HUMUS_OK);
  build_client();
  for (int i = 0; i < 6; ++i) EXPECT_EQ(call_status(), 503);
  EXPECT_EQ(calls, 6);
  int32_t state = -1;
  ASSERT_EQ(humus_client_breaker_state(client_, &state), HUMUS_OK);
  EXPECT_EQ(state, HUMUS_CIRCUIT_CLOSED);  // every 503 ignored, as the classifier said
}

humus_status count_before(void* user, humus_attempt_request* r) {
  EXPECT_EQ(humus_attempt_request_number(r), 1);
  ++static_cast<int*>(user)[0];
  return HUMUS_OK;
}

void count_after(void* user, const humus_attempt* a) {
  EXPECT_EQ(humus_attempt_status(a), 503);
  ++static_cast<int*>(user)[1];
}

void count_destroy(void* user) { ++static_cast<int*>(user)[2]; }

TEST_F(StructVersionTest, Version1AttemptHooksAreAcceptedAndUsed) {
  int seen[3] = {0, 0, 0};  // before, after, destroy
  const AttemptHooksV1 table{1, seen, count_before, count_after, count_destroy};
  ASSERT_EQ(humus_settings_set_attempt_hooks(settings_, reinterpret_cast<const humus_attempt_hooks*>(&table),
                                             nullptr),
            HUMUS_OK);
  build_client();
  for (int i = 0; i < 3; ++i) EXPECT_EQ(call_status(), 503);
  EXPECT_EQ(seen[0], 3);
  EXPECT_EQ(seen[1], 3);
  humus_client_free(client_);
  client_ = nullptr;
  humus_settings_free(settings_);
  settings_ = nullptr;
  EXPECT_EQ(seen[2], 1);
}

// The refusal every versioned struct gets for a version this library does not know. The error is taken by
// address, so it is read after the call (argument order is unspecified), and reset.
void expect_refused(humus_status st, humus_error** err, const char* struct_name) {
  EXPECT_EQ(st, HUMUS_E_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(humus_error_message(*err), struct_name), nullptr) << humus_error_message(*err);
  EXPECT_STREQ(humus_error_field(*err, 0), "version");
  humus_error_free(*err);
  *err = nullptr;
}

void ignore_record(void*, const humus_log_record*) {}
void ignore_span(void*, const humus_span*) {}
humus_status never_called(void*, const humus_attempt*, humus_classification*) { return HUMUS_E_CALLBACK; }
humus_status never_trip(void*, const humus_breaker_counts*, int32_t*) { return HUMUS_E_CALLBACK; }
humus_status never_read(void*, void*, size_t, size_t*) { return HUMUS_E_CALLBACK; }
humus_status never_before(void*, humus_attempt_request*) { return HUMUS_E_CALLBACK; }

TEST_F(StructVersionTest, VersionZeroAndNewerAreRefusedNamingTheStruct) {
  for (const uint32_t version : {0u, 99u}) {
    SCOPED_TRACE(version);
    humus_error* err = nullptr;
    humus_classifier classifier = HUMUS_CLASSIFIER_INIT;
    classifier.version = version;
    classifier.classify = never_called;
    expect_refused(humus_settings_set_classifier(settings_, &classifier, &err), &err, "humus_classifier");
    humus_breaker_policy policy = HUMUS_BREAKER_POLICY_INIT;
    policy.version = version;
    policy.trip = never_trip;
    policy.probe = never_trip;
    expect_refused(humus_settings_set_breaker_policy(settings_, &policy, &err), &err, "humus_breaker_policy");
    humus_body_reader reader = HUMUS_BODY_READER_INIT;
    reader.version = version;
    reader.read = never_read;
    expect_refused(humus_request_set_body_reader(req_, &reader, &err), &err, "humus_body_reader");
    humus_attempt_hooks hooks = HUMUS_ATTEMPT_HOOKS_INIT;
    hooks.version = version;
    hooks.before = never_before;
    expect_refused(humus_settings_set_attempt_hooks(settings_, &hooks, &err), &err, "humus_attempt_hooks");
    expect_refused(humus_request_set_attempt_hooks(req_, &hooks, &err), &err, "humus_attempt_hooks");
    humus_log_sink log = HUMUS_LOG_SINK_INIT;
    log.version = version;
    log.record = ignore_record;
    expect_refused(humus_runtime_set_log_sink(rt_, &log, &err), &err, "humus_log_sink");
    humus_span_sink span = HUMUS_SPAN_SINK_INIT;
    span.version = version;
    span.span = ignore_span;
    expect_refused(humus_runtime_set_span_sink(rt_, &span, &err), &err, "humus_span_sink");
    humus_mock_transport mock = HUMUS_MOCK_TRANSPORT_INIT;
    mock.version = version;
    mock.respond = always_503;
    expect_refused(humus_runtime_set_mock_transport(rt_, &mock, &err), &err, "humus_mock_transport");
  }
}

}  // namespace HUMUS_UNITY_ID
}  // namespace
