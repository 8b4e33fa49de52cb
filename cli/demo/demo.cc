#include "demo/demo.h"

#include <humus_http.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "capi.h"
#include "demo/load.h"
#include "demo/run.h"
#include "demo/svg.h"
#include "demo/timeline.h"
#include "demo/upstream.h"
#include "exit_codes.h"
#include "metrics.h"

namespace humus::cli::demo {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// The client's settings: short timeouts and a short open_for so a run of a few seconds tells the whole
// story; the rest are the library's defaults, spelt out so the header can show them.
constexpr int64_t kAttemptTimeoutMs = 250;
constexpr int64_t kSlowDelayMs = 600;  // the slow phase's slow answers: well past the attempt timeout
// --slow-call-trip (docs/breaker.md §9.3a): an attempt over 100 ms is slow, and a window of 20 results a fifth
// slow opens the breaker. The slow phase's every 4th answer (a quarter of its attempts) reaches that; healthy
// answers come in milliseconds and never do.
constexpr int64_t kSlowCallMs = 100;
constexpr double kSlowCallRate = 0.2;
constexpr int32_t kMaxAttempts = 3;
constexpr double kBudgetTokens = 10;
// Each line waits this long past its second, for the calls and log records of its last instants.
constexpr auto kLineGrace = milliseconds(20);

// The breaker's state changes, as the client logs them (docs/telemetry.md §13.3): exact, where sampling the state would
// miss a probe that fails within a millisecond.
class BreakerLog {
 public:
  explicit BreakerLog(int64_t epoch_unix_ms) : epoch_unix_ms_(epoch_unix_ms) {}

  humus_status install(humus_runtime* rt, humus_error** err) {
    humus_log_sink sink = HUMUS_LOG_SINK_INIT;
    sink.record = &BreakerLog::record;
    sink.user_data = this;
    return humus_runtime_set_log_sink(rt, &sink, err);
  }

  // {0, closed}, then every change so far, in time order.
  std::vector<BreakerChange> changes() const {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<BreakerChange> all = {{0, HUMUS_CIRCUIT_CLOSED}};
    all.insert(all.end(), changes_.begin(), changes_.end());
    std::stable_sort(all.begin(), all.end(),
                     [](const BreakerChange& a, const BreakerChange& b) { return a.ms < b.ms; });
    return all;
  }

 private:
  static void record(void* user_data, const humus_log_record* r) {
    if (r->new_state < 0) return;  // not a breaker state change
    auto* self = static_cast<BreakerLog*>(user_data);
    std::lock_guard<std::mutex> lock(self->mu_);
    // When the change took effect: a lazy open -> half-open is logged at the next admission, dated when
    // open_for ran out.
    self->changes_.push_back({std::max<int64_t>(r->time_unix_ms - self->epoch_unix_ms_, 0), r->new_state});
  }

  const int64_t epoch_unix_ms_;
  mutable std::mutex mu_;
  std::vector<BreakerChange> changes_;  // guarded by mu_
};

uint64_t throttled_so_far(humus_runtime* rt) {
  const std::map<std::string, uint64_t> decisions = counter_by_attribute(rt, "humus.retry.decisions");
  const auto it = decisions.find("throttled");
  return it == decisions.end() ? 0 : it->second;
}

int fail(const std::string& what) {
  std::fprintf(stderr, "humus-http demo: %s\n", what.c_str());
  return exit_code::kFailure;
}

std::string seconds_text(int64_t ms) { return std::to_string(ms / 1000); }

}  // namespace

int run_demo(const DemoOptions& options) {
  Run run;
  run.schedule = Schedule::for_seconds(options.duration_s);
  run.rate = options.rate;
  run.max_attempts = kMaxAttempts;
  run.budget_tokens = kBudgetTokens;
  run.seconds.resize(static_cast<size_t>(options.duration_s));
  const Schedule& sc = run.schedule;
  // Open long enough to see, short enough to probe a few times during the outage: 2 s in a 30 s run.
  const int64_t open_for_ms = std::clamp<int64_t>(options.duration_s * 1000 / 15, 500, 5000);

  // The phases start a little after now, once the client is built.
  const Clock::time_point epoch = Clock::now() + milliseconds(200);
  const int64_t epoch_unix_ms = std::chrono::duration_cast<milliseconds>(
                                    std::chrono::system_clock::now().time_since_epoch() + milliseconds(200))
                                    .count();
  BreakerLog breaker_log(epoch_unix_ms);  // outlives the runtime that calls it
  Upstream upstream(sc, milliseconds(kSlowDelayMs));
  std::string why;
  if (!upstream.start(epoch, why)) return fail("the upstream did not start: " + why);
  const std::string base_url = "http://127.0.0.1:" + std::to_string(upstream.port());

  nlohmann::json settings_json = {
      {"base_url", base_url},
      {"timeout", "5s"},  // longer than every attempt and wait: no call ends on its deadline
      {"attempt_timeout", std::to_string(kAttemptTimeoutMs) + "ms"},
      {"connect_timeout", std::to_string(kAttemptTimeoutMs) + "ms"},
      {"max_attempts", kMaxAttempts},
      {"backoff_base", "25ms"},
      {"backoff_max", "1s"},  // max_retry_after follows it: the upstream's Retry-After: 1 is honoured
      {"retry_budget", {{"policy", "token_bucket"}, {"tokens", kBudgetTokens}, {"ratio", 0.1}}},
      {"breaker",
       {{"window", 20},
        {"open_for", std::to_string(open_for_ms) + "ms"},
        {"probes", 1},
        {"probe_timeout", "2s"}}},
      {"trip", {{"consecutive_failures", 5}, {"failure_rate", 0.5}, {"min_results", 20}}},
      {"probe", {{"successes_to_close", 3}}},
      {"bulkhead", {{"max_concurrent", 50}, {"wait", "500ms"}}},
  };
  if (options.slow_call_trip) {
    settings_json["breaker"]["slow_call_duration"] = std::to_string(kSlowCallMs) + "ms";
    settings_json["trip"]["slow_call_rate"] = kSlowCallRate;
  }
  const std::string settings_text = settings_json.dump();
  humus_error* raw_error = nullptr;
  humus_runtime* raw_runtime = nullptr;
  if (humus_runtime_new(nullptr, 0, &raw_runtime, &raw_error) != HUMUS_OK) {
    Error e(raw_error);
    return fail("runtime: " + describe(e.get()));
  }
  Runtime runtime(raw_runtime);
  if (breaker_log.install(runtime.get(), &raw_error) != HUMUS_OK) {
    Error e(raw_error);
    return fail("log sink: " + describe(e.get()));
  }
  humus_settings* raw_settings = nullptr;
  if (humus_settings_from_json(settings_text.data(), settings_text.size(), &raw_settings, &raw_error) !=
      HUMUS_OK) {
    Error e(raw_error);
    return fail("settings: " + describe(e.get()));
  }
  Settings settings(raw_settings);
  humus_client* raw_client = nullptr;
  if (humus_client_new(runtime.get(), settings.get(), &raw_client, &raw_error) != HUMUS_OK) {
    Error e(raw_error);
    return fail("client: " + describe(e.get()));
  }
  Client client(raw_client);

  Setup setup;
  setup.upstream_url = base_url;
  setup.client =
      "max_attempts " + std::to_string(kMaxAttempts) + ", attempt_timeout " +
      std::to_string(kAttemptTimeoutMs) + "ms, timeout 5s, backoff 25ms..1s; retry budget " +
      std::to_string(static_cast<int>(kBudgetTokens)) +
      " tokens (+0.1 per success); breaker opens on 5 failures in a row or >= half of the last 20, "
      "stays open " +
      std::to_string(open_for_ms) + "ms, closes after 3 good probes; bulkhead 50";
  if (options.slow_call_trip) {
    setup.client += "; slow-call trip: an attempt over " + std::to_string(kSlowCallMs) + "ms is slow, " +
                    std::to_string(static_cast<int>(kSlowCallRate * 100)) + "% of the window slow opens it";
  }
  const auto span = [&](Phase p) {
    return std::string(phase_name(p)) + " " + seconds_text(sc.start_of(p)) + "-" +
           seconds_text(sc.end_of(p)) + "s";
  };
  setup.phases = span(Phase::kHealthy) + ": 200 | " + span(Phase::kSlow) + ": every 4th answer after " +
                 std::to_string(kSlowDelayMs) + "ms | " + span(Phase::kFailing) +
                 ": 503 + Retry-After: 1, every 4th a connection reset | " + span(Phase::kRecovering) +
                 ": 200";

  Timeline timeline(stdout);
  timeline.header(run, setup);

  // The load runs on its own thread and the event loop; this thread closes each second and prints it.
  {
    Load load(client.get(), sc, options.rate);
    if (!load.start(base_url + "/demo", epoch, why)) return fail("load: " + why);
    const size_t n = run.seconds.size();
    uint64_t throttled_before = 0;
    const auto close = [&](size_t i) {
      Second& s = run.seconds[i];
      s = load.close_second(i);
      (void)humus_client_budget_tokens(client.get(), &s.budget);
      const uint64_t throttled = throttled_so_far(runtime.get());
      s.throttled = static_cast<int64_t>(throttled - throttled_before);
      throttled_before = throttled;
      const auto from = static_cast<int64_t>(i) * 1000;
      s.breaker = breaker_states(breaker_log.changes(), from, from + 1000);
      timeline.line(run, i);
    };
    for (size_t i = 0; i + 1 < n; ++i) {
      std::this_thread::sleep_until(epoch + milliseconds(static_cast<int64_t>(i + 1) * 1000) + kLineGrace);
      close(i);
    }
    // The last second closes once the calls in flight have ended.
    run.unfinished = load.finish(milliseconds(6000));
    close(n - 1);
    run.latency_ms = load.latencies();
    client.reset();  // cancels what is still in flight, before `load` (their callbacks' target) goes
  }
  run.breaker = breaker_log.changes();
  upstream.stop();

  timeline.summary(run);
  const Upstream::Counts u = upstream.counts();
  std::printf(
      "  the upstream got %llu requests: %llu answered 200, %llu answered 503, %llu reset; %llu were held "
      "%lldms (past the attempt timeout)\n",
      static_cast<unsigned long long>(u.requests), static_cast<unsigned long long>(u.ok),
      static_cast<unsigned long long>(u.unavailable), static_cast<unsigned long long>(u.resets),
      static_cast<unsigned long long>(u.delayed), static_cast<long long>(kSlowDelayMs));

  if (options.plot) {
    if (!write_svg(run, *options.plot, why)) {
      std::fprintf(stderr, "humus-http demo: --plot: %s\n", why.c_str());
      return exit_code::kWrite;
    }
    std::printf("\nChart: %s (open it in a browser)\n", options.plot->c_str());
  }
  std::fflush(stdout);
  return exit_code::kOk;
}

}  // namespace humus::cli::demo
