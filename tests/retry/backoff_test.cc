#include "retry/backoff.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdint>
#include <limits>

namespace humus::retry {
namespace {
namespace HUMUS_UNITY_ID {

using std::chrono::milliseconds;
using std::chrono::seconds;

class FixedRandom final : public Random {
 public:
  explicit FixedRandom(uint64_t value) : value_(value) {}
  uint64_t next() override { return value_; }

 private:
  uint64_t value_;
};

TEST(Backoff, CapDoublesUpToTheMax) {
  const Backoff b(milliseconds(100), seconds(2));
  EXPECT_EQ(b.cap(1), milliseconds(100));
  EXPECT_EQ(b.cap(2), milliseconds(200));
  EXPECT_EQ(b.cap(3), milliseconds(400));
  EXPECT_EQ(b.cap(4), milliseconds(800));
  EXPECT_EQ(b.cap(5), milliseconds(1600));
  EXPECT_EQ(b.cap(6), seconds(2));
  EXPECT_EQ(b.cap(7), seconds(2));
  EXPECT_EQ(b.cap(0), milliseconds(100));  // below 1 is taken as 1
  EXPECT_EQ(b.cap(-5), milliseconds(100));
}

TEST(Backoff, CapNeverOverflows) {
  const Backoff b(milliseconds(100), seconds(2));
  for (int n : {30, 31, 32, 33, 62, 63, 64, 65, 1000, INT_MAX}) EXPECT_EQ(b.cap(n), seconds(2)) << n;

  const Duration huge(std::numeric_limits<int64_t>::max());
  const Backoff one_ns(Duration(1), huge);
  EXPECT_EQ(one_ns.cap(63), Duration(int64_t{1} << 62));
  EXPECT_EQ(one_ns.cap(64), huge);
  EXPECT_EQ(one_ns.cap(1000), huge);
  const Backoff big(huge, huge);
  EXPECT_EQ(big.cap(1), huge);
  EXPECT_EQ(big.cap(2), huge);
  EXPECT_EQ(big.cap(INT_MAX), huge);
}

TEST(Backoff, ADrawReachesBothEndsOfItsRange) {
  const Backoff b(milliseconds(100), seconds(2));
  FixedRandom zero(0);
  FixedRandom top(std::numeric_limits<uint64_t>::max());
  for (int n = 1; n <= 8; ++n) {
    EXPECT_EQ(b.draw(n, zero), Duration::zero());
    EXPECT_EQ(b.draw(n, top), b.cap(n));
  }
  const Duration huge(std::numeric_limits<int64_t>::max());
  EXPECT_EQ(Backoff(huge, huge).draw(1, top), huge);
  EXPECT_EQ(Backoff(Duration::zero(), Duration::zero()).draw(1, top), Duration::zero());
}

TEST(Backoff, FullJitterUsesTheWholeRangeUnderAGrowingCap) {
  const Backoff b(milliseconds(100), seconds(2));
  SeededRandom random(20260101);
  constexpr int kDraws = 10000;
  for (int n = 1; n <= 6; ++n) {
    const Duration cap = std::min<Duration>(seconds(2), milliseconds(100) * (int64_t{1} << (n - 1)));
    Duration lo = Duration::max();
    Duration hi = Duration::min();
    double sum = 0;
    for (int i = 0; i < kDraws; ++i) {
      const Duration d = b.draw(n, random);
      ASSERT_GE(d, Duration::zero()) << "n=" << n;
      ASSERT_LE(d, cap) << "n=" << n;
      lo = std::min(lo, d);
      hi = std::max(hi, d);
      sum += static_cast<double>(d.count());
    }
    const auto c = static_cast<double>(cap.count());
    EXPECT_LT(static_cast<double>(lo.count()), 0.005 * c) << "n=" << n;
    EXPECT_GT(static_cast<double>(hi.count()), 0.995 * c) << "n=" << n;
    // The mean of 10 000 uniform draws has a standard deviation of cap/346; 2% of cap is ~7 of them.
    EXPECT_NEAR(sum / kDraws, c / 2, 0.02 * c) << "n=" << n;
  }
}

TEST(Backoff, TheSameSeedDrawsTheSameWaits) {
  const Backoff b(milliseconds(100), seconds(2));
  SeededRandom r1(7);
  SeededRandom r2(7);
  for (int n = 1; n <= 20; ++n) EXPECT_EQ(b.draw(n, r1), b.draw(n, r2));
}

}  // namespace HUMUS_UNITY_ID
}  // namespace
}  // namespace humus::retry
