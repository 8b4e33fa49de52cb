// A client: one per dependency (docs/README.md §1), shared by every caller, thread-safe. It composes the policies —
// bulkhead, breaker, retry rules and budget, classifier — around a transport, in the order of docs/retries.md §6 and
// §9: bulkhead → for each attempt: breaker admission → send → classify → breaker result → retry decision →
// wait.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <unordered_map>

#include "breaker/breaker.h"
#include "bulkhead/bulkhead.h"
#include "client/async_call.h"
#include "client/call_env.h"
#include "client/origin_spelling.h"
#include "classify/classification.h"
#include "client/request.h"
#include "client/runtime.h"
#include "client/stepped_call.h"
#include "common/cancel.h"
#include "common/mutex.h"
#include "retry/backoff.h"
#include "retry/budget.h"
#include "settings/settings.h"
#include "shared/segment.h"
#include "telemetry/metrics.h"
#include "transport/fork.h"
#include "transport/transport.h"
#include "transport/url.h"

namespace humus::client {

class Client {
 public:
  // Checks the rules across fields (kProgram, docs/settings.md §3.2), builds the policies and the transport.
  static Result<std::unique_ptr<Client>> create(Runtime& runtime, settings::Settings settings);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Runs one call to the end on the calling thread: every attempt, wait and redirect. Exactly one outcome:
  // a response (whatever its status) or the error that left the call without one. Thread-safe. Refused
  // (kMisuse) on the runtime's event-loop thread, where it would wait on itself.
  CallResult execute(const Request& request, CancelToken* cancel = nullptr);
  // As execute(), but returns once the final response's headers are in: its body comes through
  // Response::stream (body_stream.h), read on the caller's thread, bounded by the call's deadline and
  // cancelled by `cancel`, which must outlive the stream; so must this client. Thread-safe.
  CallResult open(const Request& request, CancelToken* cancel = nullptr);
  // open() driven by its caller a step at a time (stepped_call.h); `request` and `cancel` must outlive it.
  // Null when this client's calls cannot be stepped — they hedge, or run on a virtual clock — : the caller
  // then runs the call with open(). Thread-safe.
  std::unique_ptr<SteppedCall> step(const Request& request, CancelToken* cancel = nullptr);
  // The longest body read whole (TransportConfig::max_response_body).
  uint64_t max_response_body() const { return max_response_body_; }

  // Starts the call on the runtime's event loop and returns at once; `done` runs on the loop thread exactly
  // once with the outcome. The handle cancels it, and so does `cancel` (may be null; held until the call
  // ends). Thread-safe.
  std::shared_ptr<AsyncCall> submit(Request request, CallDone done, std::shared_ptr<CancelToken> cancel = nullptr);
  // As submit(), but `done` comes once the final response's headers are in: its body comes through
  // Response::stream, read on the loop (ResponseStream::read_async) within the call's deadline and cancelled
  // by `cancel`. The stream must not outlive this client. Thread-safe.
  std::shared_ptr<AsyncCall> submit_open(Request request, CallDone done, std::shared_ptr<CancelToken> cancel = nullptr);
  // Asynchronous calls not yet done.
  size_t calls_in_flight() const;
  // Cancels the asynchronous calls in flight and waits until each has called its `done`. Not on the loop
  // thread (it would wait on itself); there, see cancel_calls().
  void cancel_calls_and_wait();
  // Cancels the calls in flight without waiting; true when none is left.
  bool cancel_calls();

  // True when `url` starts with this client's origin spelled canonically ("https://payments:8443" or, for a
  // default port, "https://payments") followed by a path, query or nothing: then it is the origin for sure
  // and the URL need not be parsed on every call. Any other spelling goes through the full parse.
  bool spelled_as_origin(std::string_view url) const { return spelling_.matches(url); }

  Runtime& runtime() { return runtime_; }
  breaker::Breaker& breaker() { return breaker_; }
  const transport::Origin& origin() const { return origin_; }
  const settings::Settings& settings() const { return settings_; }
  retry::Budget& budget() { return *budget_; }
  bulkhead::Bulkhead& bulkhead() { return bulkhead_; }
  const telemetry::ClientMetrics& metrics() const { return metrics_; }

 private:
  Client(Runtime& runtime, settings::Settings settings, transport::Origin origin,
         std::shared_ptr<const classify::Classifier> classifier, std::unique_ptr<retry::Budget> budget,
         std::unique_ptr<transport::Transport> transport, std::unique_ptr<shared::OriginShare> share);

  void forget(AsyncCall* call);
  // In a forked child, before the child's first call (blocking or asynchronous) and before calls_mu_ is first
  // taken: the parent's calls are forgotten (docs/fork.md §23.3). One relaxed load and a compare when not
  // forked.
  void adopt_if_forked() {
    if (calls_generation_.load(std::memory_order_acquire) != transport::fork_generation()) [[unlikely]] adopt();
  }
  void adopt();
  std::shared_ptr<AsyncCall> start_async(Request request, CallDone done, std::shared_ptr<CancelToken> cancel,
                                         bool stream);
  CallResult run(const Request& request, CancelToken* cancel, bool stream);
  // A blocking call that may hedge: run on the event loop as an asynchronous one, its caller waiting for it.
  CallResult run_on_loop(const Request& request, CancelToken* cancel);
  void on_transition(const breaker::Transition& t);  // the breaker's listener: count and log (docs/breaker.md §9.5)

  Runtime& runtime_;
  Clock& clock_;
  const settings::Settings settings_;
  const transport::Origin origin_;
  const OriginSpelling spelling_;
  const std::string fault_point_;          // "http:payments:443": its name for failure injection (docs/failure-injection.md §14)
  const std::shared_ptr<const classify::Classifier> classifier_;
  const retry::Backoff backoff_;
  const Duration max_retry_after_;
  telemetry::ClientMetrics metrics_;  // before breaker_: its listener records here
  // With `share` set (docs/shared.md §22): the segment slot the breaker, budget and bulkhead keep their state
  // in; before them, so it outlives them.
  const std::unique_ptr<shared::OriginShare> share_;
  breaker::Breaker breaker_;
  const std::unique_ptr<retry::Budget> budget_;
  bulkhead::Bulkhead bulkhead_;
  const std::unique_ptr<transport::Transport> transport_;
  const uint64_t max_response_body_;
  const std::optional<settings::HedgeDelay> hedge_delay_;  // settings_.hedge's delay; unset: no hedging
  retry::LatencyTracker latency_;  // the origin's latencies, for a percentile hedge delay (docs/retries.md §6.8)
  const CallEnv call_env_;  // last: it refers to the members above; all a call sees of its client

  mutable Mutex calls_mu_;
  CondVar calls_done_;
  std::unordered_map<AsyncCall*, std::shared_ptr<AsyncCall>> calls_ GUARDED_BY(calls_mu_);
  // The fork generation calls_ belongs to (docs/fork.md §23).
  std::atomic<uint64_t> calls_generation_{transport::fork_generation()};
};

}  // namespace humus::client
