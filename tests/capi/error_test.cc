#include <gtest/gtest.h>

#include <set>
#include <string>

#include "capi/error.h"
#include "humus_http.h"

namespace {
namespace HUMUS_UNITY_ID {

TEST(CapiVersion, MatchesHeader) {
  EXPECT_EQ(humus_version_number(), HUMUS_VERSION_NUMBER);
  EXPECT_STREQ(humus_version(), HUMUS_VERSION_STRING);
}

TEST(CapiStatusName, EveryPinnedCodeHasItsName) {
  const std::pair<humus_status, const char*> codes[] = {
      {HUMUS_OK, "HUMUS_OK"},
      {HUMUS_E_CONFIG, "HUMUS_E_CONFIG"},
      {HUMUS_E_PROGRAM, "HUMUS_E_PROGRAM"},
      {HUMUS_E_CROSS_ORIGIN, "HUMUS_E_CROSS_ORIGIN"},
      {HUMUS_E_REJECTED, "HUMUS_E_REJECTED"},
      {HUMUS_E_BULKHEAD_FULL, "HUMUS_E_BULKHEAD_FULL"},
      {HUMUS_E_TIMEOUT, "HUMUS_E_TIMEOUT"},
      {HUMUS_E_CANCELLED, "HUMUS_E_CANCELLED"},
      {HUMUS_E_CONNECT, "HUMUS_E_CONNECT"},
      {HUMUS_E_TLS, "HUMUS_E_TLS"},
      {HUMUS_E_PROTOCOL, "HUMUS_E_PROTOCOL"},
      {HUMUS_E_INVALID_ARGUMENT, "HUMUS_E_INVALID_ARGUMENT"},
      {HUMUS_E_MISUSE, "HUMUS_E_MISUSE"},
      {HUMUS_E_STREAM_REFUSED, "HUMUS_E_STREAM_REFUSED"},
      {HUMUS_E_TOO_LARGE, "HUMUS_E_TOO_LARGE"},
      {HUMUS_E_RESOURCE, "HUMUS_E_RESOURCE"},
  };
  for (const auto& [code, name] : codes) EXPECT_STREQ(humus_status_name(code), name);
  EXPECT_STREQ(humus_status_name(987654), "HUMUS_E_UNKNOWN");
  EXPECT_STREQ(humus_status_name(-1), "HUMUS_E_UNKNOWN");
}

TEST(CapiStatusName, NumbersArePinned) {
  // Append-only: these numbers are the ABI. Changing one breaks every binding built before.
  EXPECT_EQ(HUMUS_E_INVALID_ARGUMENT, 1);
  EXPECT_EQ(HUMUS_E_MISUSE, 2);
  EXPECT_EQ(HUMUS_E_PROGRAM, 3);
  EXPECT_EQ(HUMUS_E_CROSS_ORIGIN, 4);
  EXPECT_EQ(HUMUS_E_CONFIG, 100);
  EXPECT_EQ(HUMUS_E_REJECTED, 200);
  EXPECT_EQ(HUMUS_E_BULKHEAD_FULL, 201);
  EXPECT_EQ(HUMUS_E_TIMEOUT, 202);
  EXPECT_EQ(HUMUS_E_CANCELLED, 203);
  EXPECT_EQ(HUMUS_E_CONNECT, 300);
  EXPECT_EQ(HUMUS_E_PROTOCOL, 303);
  EXPECT_EQ(HUMUS_E_STREAM_REFUSED, 304);
  EXPECT_EQ(HUMUS_E_TOO_LARGE, 305);
  EXPECT_EQ(HUMUS_E_RESOURCE, 306);
  EXPECT_EQ(HUMUS_E_TLS, 400);
}

TEST(CapiError, AccessorsReadNullAsNoError) {
  EXPECT_EQ(humus_error_status(nullptr), HUMUS_OK);
  EXPECT_STREQ(humus_error_message(nullptr), "");
  EXPECT_EQ(humus_error_attempts(nullptr), 0);
  EXPECT_EQ(humus_error_field_count(nullptr), 0u);
  EXPECT_EQ(humus_error_field(nullptr, 0), nullptr);
  EXPECT_EQ(humus_error_retry_after_ms(nullptr), 0);
  humus_error_free(nullptr);
}

TEST(CapiError, ReportWritesErrorAndThreadLocalCopy) {
  humus_error* err = nullptr;
  const humus_status s = humus::capi::report(
      humus::Status(humus::Code::kConfig, "timeout: must be > 0", {"timeout", "retry_budget.tokens"}), &err, 2, 1500);
  ASSERT_EQ(s, HUMUS_E_CONFIG);
  ASSERT_NE(err, nullptr);
  EXPECT_EQ(humus_error_status(err), HUMUS_E_CONFIG);
  EXPECT_STREQ(humus_error_message(err), "timeout: must be > 0");
  EXPECT_EQ(humus_error_attempts(err), 2);
  EXPECT_EQ(humus_error_retry_after_ms(err), 1500);
  ASSERT_EQ(humus_error_field_count(err), 2u);
  EXPECT_STREQ(humus_error_field(err, 1), "retry_budget.tokens");
  EXPECT_EQ(humus_error_field(err, 2), nullptr);
  const humus_error* last = humus_last_error();
  ASSERT_NE(last, nullptr);
  EXPECT_NE(last, err);
  EXPECT_STREQ(humus_error_message(last), "timeout: must be > 0");
  humus_error_free(err);
  humus_error_free(nullptr);
}

TEST(CapiError, NullErrPointerStillRecordsLastError) {
  EXPECT_EQ(humus::capi::report(humus::Status(humus::Code::kMisuse, "freed handle"), nullptr), HUMUS_E_MISUSE);
  ASSERT_NE(humus_last_error(), nullptr);
  EXPECT_EQ(humus_error_status(humus_last_error()), HUMUS_E_MISUSE);
}

}  // namespace HUMUS_UNITY_ID
}  // namespace
