// The adaptive bulkhead's limit (docs/bulkhead.md §11.1) over time, for both algorithms, against a simulated
// dependency whose latency rises with its load past a knee. The real Bulkhead and Limit run on the virtual clock;
// the dependency and the closed-loop callers are a discrete-event simulation around them, so the trace is the same
// on every machine and takes no real time. Printed, not asserted (the load test with a real server,
// tests/client/adaptive_limit_server_test.cc, asserts bands).
//
//   adaptive_limit_bench [callers=32] [knee=10]
//
// Phases of 2000 calls each: the knee as given, then latency falling (no knee within reach), then the knee again.
// Each line is the limit every 100 calls; the summary says where each phase's second half settled against the knee.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <queue>
#include <string>
#include <vector>

#include "bulkhead/bulkhead.h"
#include "bulkhead/limit.h"
#include "testing/virtual_clock.h"

namespace {

using humus::Duration;
using humus::Instant;
using humus::bulkhead::Bulkhead;
using humus::bulkhead::Outcome;
using std::chrono::milliseconds;

constexpr int kBaseMs = 20;       // the dependency's latency unloaded
constexpr int kPerCallMs = 20;    // and what each request beyond the knee adds
constexpr int kTimeoutMs = 250;   // an attempt that would take longer times out here (a drop)
constexpr int kPhaseCalls = 2000;

struct Done {
  Instant at;
  int caller;
  bool dropped;
  bool operator>(const Done& o) const { return at > o.at || (at == o.at && caller > o.caller); }
};

class Simulation {
 public:
  Simulation(std::unique_ptr<humus::bulkhead::Limit> limit, int callers)
      : bulkhead_(1, milliseconds(60000), clock_, nullptr, std::move(limit)),
        slots_(static_cast<size_t>(callers)),
        waiters_(static_cast<size_t>(callers)) {
    for (int i = 0; i < callers; ++i) {
      waiters_[static_cast<size_t>(i)] = std::make_unique<Waiter>(this, i);
      start(i);
    }
  }

  ~Simulation() {
    // Nobody may wait on or hold a slot of the bulkhead as it goes.
    for (auto& w : waiters_) {
      if (!bulkhead_.abandon(w->node)) bulkhead_.take(w->node).release(Outcome::kIgnored);
    }
    for (auto& s : slots_) s.release(Outcome::kIgnored);
  }

  // Runs `calls` completions with the given knee; the limit every 100 calls.
  std::vector<uint32_t> phase(int knee, int calls) {
    knee_ = knee;
    std::vector<uint32_t> trace;
    for (int n = 1; n <= calls; ++n) {
      const Done d = pending_.top();
      pending_.pop();
      clock_.advance_to(d.at);
      slots_[static_cast<size_t>(d.caller)].release(d.dropped ? Outcome::kDropped : Outcome::kDone);
      serve_granted();
      start(d.caller);  // closed loop: the caller calls again at once
      if (n % 100 == 0) trace.push_back(bulkhead_.limit());
    }
    return trace;
  }

 private:
  struct Waiter {
    Waiter(Simulation* s, int caller) : sim(s), id(caller), node(&Waiter::granted, this) {}
    static void granted(void* arg) {
      auto* w = static_cast<Waiter*>(arg);
      w->sim->granted_.push_back(w->id);
    }
    Simulation* sim;
    int id;
    Bulkhead::AsyncWaiter node;
  };

  void start(int caller) {
    std::optional<humus::bulkhead::Slot> slot = bulkhead_.acquire_or_queue(waiters_[static_cast<size_t>(caller)]->node);
    if (slot) serve(caller, std::move(*slot));
    serve_granted();
  }

  void serve_granted() {
    while (!granted_.empty()) {
      const int caller = granted_.front();
      granted_.erase(granted_.begin());
      serve(caller, bulkhead_.take(waiters_[static_cast<size_t>(caller)]->node));
    }
  }

  // The dependency answers after base + per_call · (its load beyond the knee), or the attempt times out.
  void serve(int caller, humus::bulkhead::Slot slot) {
    const int load = static_cast<int>(bulkhead_.in_flight());
    const int ms = kBaseMs + kPerCallMs * std::max(0, load - knee_);
    const bool dropped = ms > kTimeoutMs;
    slots_[static_cast<size_t>(caller)] = std::move(slot);
    pending_.push(Done{clock_.now() + milliseconds(std::min(ms, kTimeoutMs)), caller, dropped});
  }

  humus::testing::VirtualClock clock_;
  Bulkhead bulkhead_;
  std::vector<humus::bulkhead::Slot> slots_;
  std::vector<std::unique_ptr<Waiter>> waiters_;
  std::vector<int> granted_;
  std::priority_queue<Done, std::vector<Done>, std::greater<Done>> pending_;
  int knee_ = 0;
};

void report(const char* name, std::unique_ptr<humus::bulkhead::Limit> limit, int callers, int knee) {
  Simulation sim(std::move(limit), callers);
  const struct {
    const char* label;
    int knee;
  } phases[] = {{"knee", knee}, {"latency falls", 1000000}, {"knee again", knee}};
  for (const auto& p : phases) {
    const std::vector<uint32_t> trace = sim.phase(p.knee, kPhaseCalls);
    std::string line;
    uint32_t low = UINT32_MAX, high = 0;
    double sum = 0;
    for (size_t i = 0; i < trace.size(); ++i) {
      line += (i ? " " : "") + std::to_string(trace[i]);
      if (i >= trace.size() / 2) {
        low = std::min(low, trace[i]);
        high = std::max(high, trace[i]);
        sum += trace[i];
      }
    }
    const double mean = sum / static_cast<double>(trace.size() - trace.size() / 2);
    std::printf("%-9s %-13s limit: %s\n", name, p.label, line.c_str());
    if (p.knee < 1000) {
      std::printf("%-9s %-13s settled %u..%u (mean %.1f) against the knee %d: ratio %.2f\n", name, "", low, high, mean,
                  p.knee, mean / p.knee);
    } else {
      std::printf("%-9s %-13s recovered to %u..%u (mean %.1f) with %d callers\n", name, "", low, high, mean, callers);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int callers = argc > 1 ? std::atoi(argv[1]) : 32;
  const int knee = argc > 2 ? std::atoi(argv[2]) : 10;
  if (callers < 1 || knee < 1) {
    std::fprintf(stderr, "usage: adaptive_limit_bench [callers>=1] [knee>=1]\n");
    return 2;
  }
  std::printf("dependency: %d ms + %d ms per request beyond the knee %d, attempts time out at %d ms; %d callers\n",
              kBaseMs, kPerCallMs, knee, kTimeoutMs, callers);
  const humus::bulkhead::LimitBounds bounds{4, 2, 200};
  report("gradient2", std::make_unique<humus::bulkhead::Gradient2>(bounds), callers, knee);
  report("aimd", std::make_unique<humus::bulkhead::Aimd>(bounds), callers, knee);
  return 0;
}
