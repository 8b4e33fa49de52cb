// The breaker under parallel use: exact counts, and a consistent story of transitions. Meant to be run under
// ThreadSanitizer too (HUMUS_SANITIZE=thread), which checks every shared access these threads make.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "breaker/breaker.h"
#include "testing/virtual_clock.h"

namespace humus::breaker {
namespace {
namespace HUMUS_UNITY_ID {

using std::chrono::milliseconds;

class NeverTrips final : public Policy {
 public:
  Result<bool> trip(const Counts&) const override { return false; }
  Result<ProbeDecision> probe(const Counts&) const override { return ProbeDecision::kContinue; }
};

uint64_t mix(uint64_t x) {
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

TEST(BreakerConcurrency, ParallelResultsLeaveExactCounts) {
  constexpr int kThreads = 10;
  constexpr int kPerThread = 10000;
  testing::VirtualClock clock;
  // A window larger than all results, so its failures must equal the exact sum too.
  Breaker breaker(Breaker::Options{.window = kThreads * kPerThread + 1}, std::make_shared<NeverTrips>(), clock);
  std::atomic<uint64_t> successes{0}, failures{0}, ignored{0};
  std::atomic<bool> go{false};
  std::atomic<int> done{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      while (!go.load()) std::this_thread::yield();
      uint64_t s = 0, f = 0, ig = 0;
      for (int i = 0; i < kPerThread; ++i) {
        const Admission a = breaker.admit();
        if (!a.admitted) {
          ADD_FAILURE() << "rejected while closed";
          break;
        }
        switch (mix(static_cast<uint64_t>(t) * 1000003u + static_cast<uint64_t>(i)) % 3) {
          case 0:
            EXPECT_TRUE(breaker.record(a.permit, Outcome::kSuccess).ok());
            ++s;
            break;
          case 1:
            EXPECT_TRUE(breaker.record(a.permit, Outcome::kFailure).ok());
            ++f;
            break;
          default:
            EXPECT_TRUE(breaker.record(a.permit, Outcome::kIgnored).ok());
            ++ig;
            break;
        }
      }
      successes += s;
      failures += f;
      ignored += ig;
      ++done;
    });
  }
  // A reader alongside the writers: its reads must be consistent snapshots.
  std::thread reader([&] {
    while (done.load() < kThreads) {
      const Counts c = breaker.counts();
      EXPECT_EQ(c.state, State::kClosed);
      EXPECT_EQ(c.window_results, c.successes + c.failures);
      EXPECT_EQ(c.window_failures, c.failures);
      EXPECT_TRUE(c.consecutive_successes == 0 || c.consecutive_failures == 0);
      EXPECT_EQ(breaker.state(), State::kClosed);
      EXPECT_EQ(breaker.retry_after(), Duration::zero());
    }
  });
  go = true;
  for (auto& th : threads) th.join();
  reader.join();

  const Counts c = breaker.counts();
  EXPECT_EQ(c.successes, successes.load());
  EXPECT_EQ(c.failures, failures.load());
  EXPECT_EQ(c.window_results, successes.load() + failures.load());
  EXPECT_EQ(c.window_failures, failures.load());
  EXPECT_EQ(successes + failures + ignored, static_cast<uint64_t>(kThreads) * kPerThread);
  EXPECT_GT(ignored.load(), 0u);
  EXPECT_TRUE(c.consecutive_successes == 0 || c.consecutive_failures == 0);
  EXPECT_EQ(c.consecutive_successes + c.consecutive_failures > 0, true);
  EXPECT_EQ(breaker.generation(), 1u);
}

// Threads drive the default policy through every state while another moves time; the listener must see each
// transition once, one at a time, in generation order, each starting where the previous one ended.
TEST(BreakerConcurrency, TransitionsAreDeliveredOnceInOrderNeverConcurrently) {
  constexpr int kThreads = 6;
  constexpr int kPerThread = 4000;
  testing::VirtualClock clock;
  Breaker breaker(Breaker::Options{.window = 10, .open_for = milliseconds(2), .probes = 2,
                                   .probe_timeout = milliseconds(3)},
                  make_default_policy({}), clock);
  std::atomic<int> in_listener{0};
  std::atomic<bool> overlapped{false};
  std::vector<Transition> seen;  // only touched by the listener, which is never concurrent with itself
  breaker.set_listener([&](const Transition& t) {
    if (in_listener.fetch_add(1) != 0) overlapped = true;
    seen.push_back(t);
    in_listener.fetch_sub(1);
  });
  std::atomic<int> done{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::vector<Permit> held;
      for (int i = 0; i < kPerThread; ++i) {
        const uint64_t r = mix(static_cast<uint64_t>(t + 1) * 7919u + static_cast<uint64_t>(i));
        const Admission a = breaker.admit();
        if (a.admitted) held.push_back(a.permit);
        if (!a.admitted) {
          EXPECT_GT(a.retry_after, Duration::zero());
        }
        if (!held.empty() && r % 4 != 0) {
          const Outcome o = r % 7 < 3 ? Outcome::kFailure : r % 7 < 6 ? Outcome::kSuccess : Outcome::kIgnored;
          (void)breaker.record(held.back(), o);
          held.pop_back();
        }
        if (r % 11 == 0) (void)breaker.state();
        if (r % 13 == 0) clock.advance(std::chrono::microseconds(100));  // time moves with the work too
      }
      ++done;
    });
  }
  std::thread time_mover([&] {
    while (done.load() < kThreads) {
      clock.advance(milliseconds(1));
      std::this_thread::yield();
    }
  });
  for (auto& th : threads) th.join();
  time_mover.join();

  EXPECT_FALSE(overlapped.load());
  // Every caller has returned, and a delivering thread returns only once nothing is pending: all delivered.
  const uint64_t generation = breaker.generation();
  ASSERT_EQ(seen.size(), generation - 1);
  ASSERT_GT(seen.size(), 2u) << "the test should have driven the breaker through its states";
  State at = State::kClosed;
  for (size_t i = 0; i < seen.size(); ++i) {
    EXPECT_EQ(seen[i].from, at) << i;
    EXPECT_NE(seen[i].from, seen[i].to) << i;
    EXPECT_EQ(seen[i].generation, i + 2) << i;
    EXPECT_EQ(seen[i].counts_at_change.state, seen[i].from) << i;
    if (i > 0) {
      EXPECT_GE(seen[i].at, seen[i - 1].at) << i;
    }
    at = seen[i].to;
  }
  EXPECT_EQ(breaker.state(), at);
}

}  // namespace HUMUS_UNITY_ID
}  // namespace
}  // namespace humus::breaker
