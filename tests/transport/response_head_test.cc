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

// The replacement runs many bytes at a time: every length and position, the last bytes past a whole block
// included, and every byte value but the three passing as it is.
TEST(FieldText, EveryPositionOfEveryLength) {
  for (size_t len = 1; len <= 80; ++len) {
    for (size_t at = 0; at < len; ++at) {
      for (const char bad : {'\r', '\n', '\0'}) {
        std::string in(len, 'x');
        in[at] = bad;
        std::string want(len, 'x');
        want[at] = ' ';
        ASSERT_EQ(field_text(in), want) << "length " << len << ", position " << at;
      }
    }
  }
  std::string all;
  for (int c = 0; c < 256; ++c) all.push_back(static_cast<char>(c));
  const std::string out = field_text(all);
  ASSERT_EQ(out.size(), all.size());
  for (size_t i = 0; i < all.size(); ++i) {
    const bool replaced = all[i] == '\r' || all[i] == '\n' || all[i] == '\0';
    EXPECT_EQ(out[i], replaced ? ' ' : all[i]) << "byte " << i;
  }
}

}  // namespace HUMUS_UNITY_ID
}  // namespace
}  // namespace humus::transport
