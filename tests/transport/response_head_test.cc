#include "transport/response_head.h"

#include <gtest/gtest.h>

#include <string>

namespace humus::transport {
namespace {
namespace HUMUS_UNITY_ID {

// Found by tests/fuzz (response_head): libcurl ends a header line at LF only, so the line
// "Content-Type: 100\rTP/1.0 200 OK" reached the caller with its bare CR.
TEST(FieldText, CrLfAndNulBecomeSpaces) {
  EXPECT_EQ(field_text("100\rTP/1.0 200 OK"), "100 TP/1.0 200 OK");
  EXPECT_EQ(field_text(std::string_view("a\nb\0c", 5)), "a b c");
  EXPECT_EQ(field_text("text/plain; charset=utf-8"), "text/plain; charset=utf-8");
  EXPECT_EQ(field_text(""), "");
  EXPECT_EQ(field_text("caf\xc3\xa9 \t obs"), "caf\xc3\xa9 \t obs");  // other bytes pass as they are
}

}  // namespace HUMUS_UNITY_ID
}  // namespace
}  // namespace humus::transport
