#include "transport/http_date.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

namespace humus::transport {
namespace {
namespace HUMUS_UNITY_ID {

using std::chrono::seconds;

// Sun, 06 Nov 1994 08:49:37 GMT, RFC 9110's example.
const WallTime kExample = WallTime(seconds(784111777));

TEST(HttpDate, ImfFixdate) { EXPECT_EQ(parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT"), kExample); }

TEST(HttpDate, ObsoleteForms) {
  EXPECT_EQ(parse_http_date("Sunday, 06-Nov-94 08:49:37 GMT"), kExample);  // RFC 850
  EXPECT_EQ(parse_http_date("Sun Nov  6 08:49:37 1994"), kExample);        // asctime
}

TEST(HttpDate, ZoneIsGmtNeverLocalTime) {
  EXPECT_EQ(parse_http_date("Sun, 06 Nov 1994 08:49:37"), kExample);
  EXPECT_EQ(parse_http_date("Sun, 06 Nov 1994 08:49:37 +0100"), kExample - std::chrono::hours(1));
}

TEST(HttpDate, Epoch) { EXPECT_EQ(parse_http_date("Thu, 01 Jan 1970 00:00:00 GMT"), WallTime(seconds(0))); }

TEST(HttpDate, RefusesWhatCurlRefuses) {
  for (const char* bad :
       {"", "soon", "5", "1.5", "-5", "Sun, 32 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 1994 25:49:37 GMT"}) {
    EXPECT_EQ(parse_http_date(bad), std::nullopt) << bad;
  }
}

TEST(HttpDate, RefusesEmbeddedNul) {
  // curl would read only the prefix before the NUL and accept a value that is not what was sent.
  const std::string with_nul("Sun, 06 Nov 1994 08:49:37 GMT\0junk", 34);
  EXPECT_EQ(parse_http_date(with_nul), std::nullopt);
}

TEST(HttpDate, RefusesOverlongText) {
  std::string longer = "Sun, 06 Nov 1994 08:49:37 GMT";
  longer.append(300, ' ');
  EXPECT_EQ(parse_http_date(longer), std::nullopt);
}

TEST(HttpDate, DoesNotNeedNulTerminatedInput) {
  const std::string text = "Sun, 06 Nov 1994 08:49:37 GMTXXXX";
  EXPECT_EQ(parse_http_date(std::string_view(text).substr(0, 29)), kExample);
}

TEST(HttpDate, FarDatesSaturateInsteadOfOverflowing) {
  EXPECT_EQ(parse_http_date("Sun, 06 Nov 99999 08:49:37 GMT"), WallTime::max());
  EXPECT_EQ(parse_http_date("Mon, 01 Jan 1600 00:00:00 GMT"), WallTime::min());
}

}  // namespace HUMUS_UNITY_ID
}  // namespace
}  // namespace humus::transport
