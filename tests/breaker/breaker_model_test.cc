// Model-based test: random operation sequences run against the Breaker and against a reference model
// written as plainly as possible (a deque for the window, a list of probes, times as integers), which must
// agree after every step.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "breaker/breaker.h"
#include "testing/virtual_clock.h"

namespace humus::breaker {
namespace {
namespace HUMUS_UNITY_ID {

struct Config {
  uint32_t window;
  uint32_t probes;
  int64_t open_for;       // ns
  int64_t probe_timeout;  // ns
  uint64_t consecutive_failures;
  double failure_rate;
  uint32_t min_results;
  uint64_t successes_to_close;
};

struct ModelTransition {
  State from, to;
  int64_t at;
  uint64_t generation;
};

class Model {
 public:
  explicit Model(const Config& c) : c_(c) {}

  struct Admit {
    bool admitted;
    Permit permit;
    int64_t retry_after;
  };

  Admit admit() {
    tick();
    if (state == State::kClosed) return {true, Permit{generation, next_id++, false}, 0};
    if (state == State::kHalfOpen && probes.size() < c_.probes) {
      probes.push_back({next_id, now});
      return {true, Permit{generation, next_id++, true}, 0};
    }
    return {false, Permit{}, retry_after()};
  }

  void record(const Permit& p, Outcome o) {
    tick();
    if (p.generation != generation) return;
    if (state == State::kClosed) {
      if (o == Outcome::kIgnored) return;
      const bool failure = o == Outcome::kFailure;
      count(failure);
      window.push_back(failure);
      if (window.size() > c_.window) window.pop_front();
      const uint32_t in_window = static_cast<uint32_t>(window.size());
      const uint32_t failed = static_cast<uint32_t>(std::count(window.begin(), window.end(), true));
      const bool streak = c_.consecutive_failures > 0 && consecutive_failures >= c_.consecutive_failures;
      const bool rate = in_window >= c_.min_results &&
                        static_cast<double>(failed) >= c_.failure_rate * static_cast<double>(in_window);
      if (streak || rate) go(State::kOpen, now);
      return;
    }
    if (state != State::kHalfOpen) return;
    bool found = false;
    for (size_t i = 0; i < probes.size(); ++i) {
      if (probes[i].id == p.id) {
        probes.erase(probes.begin() + static_cast<std::ptrdiff_t>(i));
        found = true;
        break;
      }
    }
    if (!found || o == Outcome::kIgnored) return;
    count(o == Outcome::kFailure);
    if (failures > 0) {
      go(State::kOpen, now);
    } else if (successes >= c_.successes_to_close) {
      go(State::kClosed, now);
    }
  }

  void tick() {
    if (state == State::kOpen && now >= open_until) go(State::kHalfOpen, open_until);
    if (state == State::kHalfOpen) {
      std::vector<Probe> kept;
      for (const Probe& p : probes) {
        if (now - p.admitted >= c_.probe_timeout) {
          ++timed_out;
        } else {
          kept.push_back(p);
        }
      }
      probes = kept;
    }
  }

  int64_t retry_after() {
    tick();
    if (state == State::kOpen) return open_until - now;
    if (state == State::kHalfOpen && probes.size() >= c_.probes) {
      int64_t oldest = probes[0].admitted;
      for (const Probe& p : probes) oldest = std::min(oldest, p.admitted);
      return oldest + c_.probe_timeout - now;
    }
    return 0;
  }

  Counts counts() {
    tick();
    Counts c;
    c.state = state;
    c.successes = successes;
    c.failures = failures;
    c.consecutive_successes = consecutive_successes;
    c.consecutive_failures = consecutive_failures;
    c.timed_out_probes = timed_out;
    if (state == State::kClosed) {
      c.window_results = static_cast<uint32_t>(window.size());
      c.window_failures = static_cast<uint32_t>(std::count(window.begin(), window.end(), true));
    }
    return c;
  }

  int64_t now = 0;
  State state = State::kClosed;
  uint64_t generation = 1;
  std::vector<ModelTransition> transitions;

 private:
  struct Probe {
    uint64_t id;
    int64_t admitted;
  };

  void count(bool failure) {
    if (failure) {
      ++failures;
      ++consecutive_failures;
      consecutive_successes = 0;
    } else {
      ++successes;
      ++consecutive_successes;
      consecutive_failures = 0;
    }
  }

  void go(State to, int64_t at) {
    ++generation;
    transitions.push_back({state, to, at, generation});
    state = to;
    successes = failures = consecutive_successes = consecutive_failures = timed_out = 0;
    probes.clear();
    if (to == State::kClosed) window.clear();
    if (to == State::kOpen) open_until = at + c_.open_for;
  }

  Config c_;
  uint64_t next_id = 1;
  int64_t open_until = 0;
  uint64_t successes = 0, failures = 0, consecutive_successes = 0, consecutive_failures = 0, timed_out = 0;
  std::deque<bool> window;
  std::vector<Probe> probes;
};

// SplitMix64: the same sequence on every platform, unlike the <random> distributions.
struct Rng {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  uint64_t below(uint64_t n) { return next() % n; }
};

std::string describe(const Counts& c) {
  return std::string(state_name(c.state)) + " s=" + std::to_string(c.successes) + " f=" +
         std::to_string(c.failures) + " cs=" + std::to_string(c.consecutive_successes) +
         " cf=" + std::to_string(c.consecutive_failures) + " to=" + std::to_string(c.timed_out_probes) +
         " wr=" + std::to_string(c.window_results) + " wf=" + std::to_string(c.window_failures);
}

bool same(const Counts& a, const Counts& b) { return describe(a) == describe(b); }

// Adds the number of transitions the sequence went through to `transitions`.
void run_sequence(uint64_t seed, int steps, size_t& transitions) {
  Rng rng{seed};
  Config c;
  c.window = 1 + static_cast<uint32_t>(rng.below(10));
  c.probes = 1 + static_cast<uint32_t>(rng.below(3));
  c.open_for = 5 + static_cast<int64_t>(rng.below(20));
  c.probe_timeout = 3 + static_cast<int64_t>(rng.below(20));
  c.consecutive_failures = rng.below(6);  // 0: the streak rule is off
  const double rates[] = {0.3, 0.5, 0.7, 1.0};
  c.failure_rate = rates[rng.below(4)];
  c.min_results = 1 + static_cast<uint32_t>(rng.below(c.window + 1));
  c.successes_to_close = 1 + rng.below(3);

  DefaultPolicyParams params;
  params.consecutive_failures = c.consecutive_failures;
  params.failure_rate = c.failure_rate;
  params.min_results = c.min_results;
  params.successes_to_close = c.successes_to_close;
  testing::VirtualClock clock;
  const Instant origin = clock.now();
  Breaker breaker(Breaker::Options{.window = c.window,
                                   .open_for = Duration(c.open_for),
                                   .probes = c.probes,
                                   .probe_timeout = Duration(c.probe_timeout)},
                  make_default_policy(params), clock);
  std::vector<Transition> seen;
  breaker.set_listener([&](const Transition& t) { seen.push_back(t); });
  Model model(c);
  std::vector<Permit> outstanding;

  for (int step = 0; step < steps; ++step) {
    SCOPED_TRACE("seed " + std::to_string(seed) + " step " + std::to_string(step));
    const uint64_t op = rng.below(100);
    if (op < 40 && outstanding.size() < 40) {
      const Admission got = breaker.admit();
      const Model::Admit want = model.admit();
      ASSERT_EQ(got.admitted, want.admitted);
      if (got.admitted) {
        ASSERT_EQ(got.permit.probe, want.permit.probe);
        ASSERT_EQ(got.permit.generation, want.permit.generation);
        ASSERT_EQ(got.permit.id, want.permit.id);
        outstanding.push_back(got.permit);
      } else {
        ASSERT_EQ(got.retry_after.count(), want.retry_after);
        ASSERT_GT(got.retry_after.count(), 0);
      }
    } else if (op < 80) {
      if (outstanding.empty()) continue;
      const size_t i = rng.below(outstanding.size());
      const Permit permit = outstanding[i];
      outstanding.erase(outstanding.begin() + static_cast<std::ptrdiff_t>(i));
      const uint64_t o = rng.below(10);
      const Outcome outcome = o < 5 ? Outcome::kSuccess : o < 9 ? Outcome::kFailure : Outcome::kIgnored;
      ASSERT_TRUE(breaker.record(permit, outcome).ok());
      model.record(permit, outcome);
    } else if (op < 95) {
      // Steps that land on and around the deadlines, plus arbitrary ones.
      int64_t by = 0;
      switch (rng.below(5)) {
        case 0: by = 1; break;
        case 1: by = c.open_for; break;
        case 2: by = c.probe_timeout - 1; break;
        case 3: by = c.open_for - 1; break;
        default: by = static_cast<int64_t>(rng.below(static_cast<uint64_t>(2 * c.open_for))); break;
      }
      clock.advance(Duration(by));
      model.now += by;
    } else {
      ASSERT_EQ(breaker.retry_after().count(), model.retry_after());
    }
    // After every step the two agree on everything observable.
    const Counts got = breaker.counts();
    const Counts want = model.counts();
    ASSERT_TRUE(same(got, want)) << "breaker: " << describe(got) << "\nmodel:   " << describe(want);
    ASSERT_EQ(breaker.state(), model.state);
    ASSERT_EQ(breaker.generation(), model.generation);
    ASSERT_EQ(seen.size(), model.transitions.size());
  }
  for (size_t i = 0; i < seen.size(); ++i) {
    SCOPED_TRACE("seed " + std::to_string(seed) + " transition " + std::to_string(i));
    EXPECT_EQ(seen[i].from, model.transitions[i].from);
    EXPECT_EQ(seen[i].to, model.transitions[i].to);
    EXPECT_EQ((seen[i].at - origin).count(), model.transitions[i].at);
    EXPECT_EQ(seen[i].generation, model.transitions[i].generation);
  }
  transitions += seen.size();
}

TEST(BreakerModel, RandomSequencesAgreeWithTheReferenceModel) {
  size_t transitions = 0;
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    run_sequence(seed, 200, transitions);
    if (::testing::Test::HasFatalFailure()) return;
  }
  EXPECT_GT(transitions, 200u * 3) << "sequences should cycle through the states";
}

// Longer runs so sequences reach the later states: many open/half-open/closed cycles each.
TEST(BreakerModel, LongSequencesAgreeWithTheReferenceModel) {
  size_t transitions = 0;
  for (uint64_t seed = 1000; seed < 1020; ++seed) {
    run_sequence(seed, 3000, transitions);
    if (::testing::Test::HasFatalFailure()) return;
  }
  EXPECT_GT(transitions, 20u * 30);
}

}  // namespace HUMUS_UNITY_ID
}  // namespace
}  // namespace humus::breaker
