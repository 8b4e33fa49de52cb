#include "demo/timeline.h"

#include <humus_http.h>

#include <algorithm>
#include <cmath>

#include "capi.h"

namespace humus::cli::demo {
namespace {

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size())));
  return v[std::min(v.size() - 1, rank == 0 ? 0 : rank - 1)];
}

constexpr char kColumns[] =
    "   second  phase       calls     ok  attempts  retries  throttled  rejected  failed  full  budget  "
    "breaker\n";

}  // namespace

std::string breaker_path(const std::vector<int32_t>& states) {
  std::string s;
  for (const int32_t st : states) s += (s.empty() ? "" : "->") + std::string(circuit_name(st));
  return s;
}

void Timeline::header(const Run& run, const Setup& setup) {
  std::fprintf(
      out_,
      "humus-http demo: %d calls/s for %lld s through one client, against a built-in upstream at %s\n"
      "  client:   %s\n"
      "  upstream: %s\n\n",
      run.rate, static_cast<long long>(run.schedule.duration_ms / 1000), setup.upstream_url.c_str(),
      setup.client.c_str(), setup.phases.c_str());
  std::fprintf(
      out_,
      "Each line is one second. calls: calls that ended in it; ok: with a 2xx; attempts: requests sent\n"
      "for them; retries: attempts after each call's first; throttled: retries the retry budget refused\n"
      "(the client's humus.retry.decisions{throttled}); rejected: calls the open breaker ended, nothing\n"
      "sent; failed: other ends the caller saw (the last 503, a reset, a timeout); full: bulkhead full;\n"
      "budget: retry tokens left at the second's end (a retry needs more than %g); breaker: the state it\n"
      "began in and each change in the second (the client's log records).\n\n",
      run.budget_tokens / 2);
  std::fputs(kColumns, out_);
  std::fflush(out_);
}

void Timeline::line(const Run& run, size_t i) {
  const Second& s = run.seconds[i];
  const std::string when = std::to_string(i) + "-" + std::to_string(i + 1) + "s";
  std::fprintf(out_, "%9s  %-10s %6lld %6lld %9lld %8lld %10lld %9lld %7lld %5lld %7.1f  %s\n", when.c_str(),
               phase_name(run.schedule.at(static_cast<int64_t>(i) * 1000)), static_cast<long long>(s.calls),
               static_cast<long long>(s.ok), static_cast<long long>(s.attempts),
               static_cast<long long>(s.retries), static_cast<long long>(s.throttled),
               static_cast<long long>(s.rejected), static_cast<long long>(s.failed),
               static_cast<long long>(s.full), s.budget, breaker_path(s.breaker).c_str());
  std::fflush(out_);
}

void Timeline::summary(const Run& run) {
  struct Totals {
    int64_t seconds = 0, calls = 0, ok = 0, attempts = 0, retries = 0, throttled = 0, rejected = 0,
            failed = 0, full = 0;
    void add(const Second& s) {
      ++seconds;
      calls += s.calls;
      ok += s.ok;
      attempts += s.attempts;
      retries += s.retries;
      throttled += s.throttled;
      rejected += s.rejected;
      failed += s.failed;
      full += s.full;
    }
  };
  Totals per_phase[4];
  Totals all;
  for (size_t i = 0; i < run.seconds.size(); ++i) {
    per_phase[static_cast<int>(run.schedule.at(static_cast<int64_t>(i) * 1000))].add(run.seconds[i]);
    all.add(run.seconds[i]);
  }
  std::vector<double> all_latency;
  for (const auto& v : run.latency_ms) all_latency.insert(all_latency.end(), v.begin(), v.end());

  std::fprintf(out_, "\nSummary\n");
  std::fprintf(
      out_,
      "  phase       seconds   calls     ok    ok%%  attempts  retries  throttled  rejected  failed  "
      "full  p50 ms  p99 ms\n");
  const auto row = [&](const char* name, const Totals& t, const std::vector<double>& latency) {
    const double ok_pct =
        t.calls > 0 ? 100.0 * static_cast<double>(t.ok) / static_cast<double>(t.calls) : 0.0;
    std::fprintf(out_, "  %-10s %8lld %7lld %6lld %6.1f %9lld %8lld %10lld %9lld %7lld %5lld %7.1f %7.1f\n",
                 name, static_cast<long long>(t.seconds), static_cast<long long>(t.calls),
                 static_cast<long long>(t.ok), ok_pct, static_cast<long long>(t.attempts),
                 static_cast<long long>(t.retries), static_cast<long long>(t.throttled),
                 static_cast<long long>(t.rejected), static_cast<long long>(t.failed),
                 static_cast<long long>(t.full), percentile(latency, 50), percentile(latency, 99));
  };
  for (const Phase p : kPhases) {
    row(phase_name(p), per_phase[static_cast<int>(p)], run.latency_ms[static_cast<size_t>(p)]);
  }
  row("all", all, all_latency);

  // The breaker's changes, as the client logged them.
  int opened = 0;
  int closed = 0;
  int64_t first_open_ms = -1;
  int64_t last_close_ms = -1;
  std::string changes;
  for (size_t i = 1; i < run.breaker.size(); ++i) {
    const BreakerChange& c = run.breaker[i];
    if (c.state == HUMUS_CIRCUIT_OPEN) {
      ++opened;
      if (first_open_ms < 0) first_open_ms = c.ms;
    }
    if (c.state == HUMUS_CIRCUIT_CLOSED) {
      ++closed;
      last_close_ms = c.ms;
    }
    char item[64];
    std::snprintf(item, sizeof item, "%.2fs %s", static_cast<double>(c.ms) / 1000.0, circuit_name(c.state));
    changes += (changes.empty() ? "" : ", ") + std::string(item);
  }
  std::fprintf(out_, "\nBreaker (from the client's log records): opened %d time%s, closed %d time%s\n",
               opened, opened == 1 ? "" : "s", closed, closed == 1 ? "" : "s");
  if (!changes.empty()) std::fprintf(out_, "  changes: %s\n", changes.c_str());

  // What the run showed, one verdict a line.
  const Schedule& sc = run.schedule;
  const int64_t outage_from = sc.start_of(Phase::kFailing);
  const int64_t outage_to = sc.end_of(Phase::kFailing);
  bool opened_in_outage = false;
  int64_t opened_at = -1;
  for (size_t i = 1; i < run.breaker.size(); ++i) {
    const BreakerChange& c = run.breaker[i];
    if (c.state == HUMUS_CIRCUIT_OPEN && c.ms >= outage_from && c.ms < outage_to) {
      opened_in_outage = true;
      opened_at = c.ms;
      break;
    }
  }
  const bool ends_closed = !run.breaker.empty() && run.breaker.back().state == HUMUS_CIRCUIT_CLOSED;
  const bool closed_after_recovery = ends_closed && last_close_ms >= sc.start_of(Phase::kRecovering);
  double min_budget = run.budget_tokens;
  for (const Second& s : run.seconds) min_budget = std::min(min_budget, s.budget);

  std::fprintf(out_, "\nWhat the run showed\n");
  if (opened_in_outage) {
    std::fprintf(out_, "  breaker opened during the outage: yes, at %.2fs (failing: %.0f-%.0fs)\n",
                 static_cast<double>(opened_at) / 1000.0, static_cast<double>(outage_from) / 1000.0,
                 static_cast<double>(outage_to) / 1000.0);
  } else {
    std::fprintf(out_, "  breaker opened during the outage: NO\n");
  }
  if (closed_after_recovery) {
    std::fprintf(
        out_, "  breaker closed after recovery: yes, at %.2fs (recovering from %.0fs), and stayed closed\n",
        static_cast<double>(last_close_ms) / 1000.0,
        static_cast<double>(sc.start_of(Phase::kRecovering)) / 1000.0);
  } else {
    std::fprintf(out_, "  breaker closed after recovery: NO (it ended %s)\n",
                 run.breaker.empty() ? "unknown" : circuit_name(run.breaker.back().state));
  }
  if (all.throttled > 0) {
    std::fprintf(out_,
                 "  retries throttled by the budget: yes, %lld retries refused (lowest balance %.1f of %g tokens)\n",
                 static_cast<long long>(all.throttled), min_budget, run.budget_tokens);
  } else {
    std::fprintf(out_, "  retries throttled by the budget: NO (lowest balance %.1f of %g tokens)\n",
                 min_budget, run.budget_tokens);
  }
  const Totals& failing = per_phase[static_cast<int>(Phase::kFailing)];
  if (failing.calls > 0) {
    std::fprintf(
        out_,
        "  during the outage: %.2f attempts per call (%d allowed), %lld of %lld calls failed fast without "
        "sending anything\n",
        static_cast<double>(failing.attempts) / static_cast<double>(failing.calls), run.max_attempts,
        static_cast<long long>(failing.rejected), static_cast<long long>(failing.calls));
  }
  if (run.unfinished > 0) {
    std::fprintf(out_, "  %lld calls were still in flight at the end and were cancelled (not counted)\n",
                 static_cast<long long>(run.unfinished));
  }
  std::fflush(out_);
}

}  // namespace humus::cli::demo
