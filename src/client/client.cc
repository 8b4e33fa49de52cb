#include "client/client.h"

#include <algorithm>
#include <optional>

#include "client/call.h"
#include "client/read_ahead.h"
#include "faults/scenario.h"

namespace humus::client {
namespace {

transport::TransportConfig transport_config(const settings::Settings& s, const transport::Origin& origin) {
  transport::TransportConfig c;
  c.host = origin.host;
  c.https = origin.scheme == "https";
  c.connect_timeout = s.connect_timeout;
  c.max_idle_connections = s.max_idle_connections;
  c.idle_timeout = s.idle_timeout;
  c.max_connection_lifetime = s.max_connection_lifetime;
  c.max_response_headers = s.max_response_headers;
  c.max_response_body = s.max_response_body;
  c.decompress = s.decompress;
  c.http_version = s.http_version;
  if (s.tls) {
    c.ca_file = s.tls->ca_file;
    c.ca_pem = s.tls->ca_pem;
    c.cert_file = s.tls->cert_file;
    c.cert_pem = s.tls->cert_pem;
    c.key_file = s.tls->key_file;
    c.key_pem = s.tls->key_pem;
    c.tls13_only = s.tls->min_version == settings::TlsVersion::kTls1_3;
  }
  return c;
}

retry::BudgetOptions budget_options(const settings::RetryBudgetSettings& b) {
  retry::BudgetOptions o;
  o.policy = b.policy;
  o.tokens = b.tokens;
  o.ratio = b.ratio;
  o.min_per_second = b.min_per_second;
  o.window = b.window;
  return o;
}

// The adaptive bulkhead's algorithm (docs/bulkhead.md §11.1), or null for a fixed one.
std::unique_ptr<bulkhead::Limit> bulkhead_limit(const settings::BulkheadSettings& b) {
  if (b.mode != settings::BulkheadMode::kAdaptive) return nullptr;
  return bulkhead::make_limit(b.algorithm, {b.max_concurrent, b.min, b.max});
}

// What every client sharing an origin must agree on (docs/shared.md §22.1).
shared::SlotConfig slot_config(const settings::Settings& s) {
  shared::SlotConfig c;
  c.window = s.breaker.window;
  c.probes = s.breaker.probes;
  c.open_for_ns = s.breaker.open_for.count();
  c.probe_timeout_ns = s.breaker.probe_timeout.count();
  c.max_concurrent = s.bulkhead.max_concurrent;
  c.budget_policy = static_cast<int32_t>(s.retry_budget.policy);
  c.tokens = s.retry_budget.tokens;
  c.ratio = s.retry_budget.ratio;
  if (s.retry_budget.policy == retry::BudgetPolicy::kRatio) {
    c.min_per_second = s.retry_budget.min_per_second;
    c.budget_window_ns = s.retry_budget.window.count();
  }
  return c;
}

// The slot of the client's origin in its `share` segment, or why it cannot share (kProgram for settings that
// cannot be shared, kConfig for the segment).
Result<std::unique_ptr<shared::OriginShare>> open_share(Runtime& runtime, const settings::Settings& s,
                                                        const transport::Origin& origin) {
  if (dynamic_cast<RealClock*>(&runtime.clock()) == nullptr) {
    return Status(Code::kProgram,
                  "share: the runtime runs on the virtual clock, whose instants mean nothing to other processes; "
                  "share state only on the real clock",
                  {"share"});
  }
  if (s.breaker_policy) {
    return Status(Code::kProgram,
                  "share: a breaker_policy callback or plugin would run under the host-wide lock; a shared breaker "
                  "uses the built-in policy (trip and probe settings)",
                  {"share", "breaker_policy"});
  }
  if (s.breaker.probes > shared::kMaxProbes) {
    return Status(Code::kProgram,
                  "share: breaker.probes must be at most " + std::to_string(shared::kMaxProbes) +
                      " to be shared, got " + std::to_string(s.breaker.probes),
                  {"share", "breaker.probes"});
  }
  Result<std::shared_ptr<shared::Segment>> segment = shared::Segment::attach(s.share->name);
  if (!segment.ok()) return segment.status();
  Result<shared::Slot*> slot = (*segment)->slot(OriginSpelling(origin).with_port(), slot_config(s));
  if (!slot.ok()) return slot.status();
  return std::make_unique<shared::OriginShare>(std::move(segment).value(), **slot);
}

}  // namespace

Result<std::unique_ptr<Client>> Client::create(Runtime& runtime, settings::Settings s) {
  if (Status st = settings::validate(s, /*from_config=*/false); !st.ok()) return st;
  Result<transport::ClientUrl> url = transport::ClientUrl::parse(s.base_url);
  if (!url.ok()) return url.status();
  const transport::Origin origin = url->origin();

  std::shared_ptr<const classify::Classifier> classifier = s.classifier;
  if (!classifier) classifier = classify::preset(s.classify_preset);
  if (!classifier) {
    return Status(Code::kProgram, "classify: unknown preset \"" + s.classify_preset + "\"", {"classify"});
  }
  Result<std::unique_ptr<retry::Budget>> budget = retry::make_budget(budget_options(s.retry_budget), runtime.clock());
  if (!budget.ok()) return Status(Code::kProgram, budget.status().message(), budget.status().fields());
  std::unique_ptr<shared::OriginShare> share;
  if (s.share) {
    Result<std::unique_ptr<shared::OriginShare>> opened = open_share(runtime, s, origin);
    if (!opened.ok()) return opened.status();
    share = std::move(opened).value();
    budget = share->make_budget(slot_config(s));  // the same checks passed above
  }
  Result<std::unique_ptr<transport::Transport>> transport = runtime.make_transport(transport_config(s, origin));
  if (!transport.ok()) return transport.status();
  return std::unique_ptr<Client>(new Client(runtime, std::move(s), origin, std::move(classifier),
                                            std::move(budget).value(), std::move(transport).value(),
                                            std::move(share)));
}

Client::Client(Runtime& runtime, settings::Settings s, transport::Origin origin,
               std::shared_ptr<const classify::Classifier> classifier, std::unique_ptr<retry::Budget> budget,
               std::unique_ptr<transport::Transport> transport, std::unique_ptr<shared::OriginShare> share)
    : runtime_(runtime),
      clock_(runtime.clock()),
      settings_(std::move(s)),
      origin_(std::move(origin)),
      spelling_(origin_),
      fault_point_(faults::point_name(origin_.host, origin_.port)),
      classifier_(std::move(classifier)),
      backoff_(settings_.backoff_base, settings_.backoff_max),
      max_retry_after_(settings::effective_max_retry_after(settings_)),
      metrics_(origin_.host, origin_.port),
      share_(std::move(share)),
      breaker_(breaker::Breaker::Options{settings_.breaker.window, settings_.breaker.open_for,
                                         settings_.breaker.probes, settings_.breaker.probe_timeout},
               settings_.breaker_policy ? settings_.breaker_policy : breaker::make_default_policy(settings_.policy_params),
               runtime.clock(), share_ ? &share_->core() : nullptr, share_.get()),
      budget_(std::move(budget)),
      bulkhead_(settings_.bulkhead.max_concurrent, settings_.bulkhead.wait, runtime.clock(), share_.get(),
                bulkhead_limit(settings_.bulkhead)),
      transport_(std::move(transport)),
      max_response_body_(transport_config(settings_, origin_).max_response_body),
      hedge_delay_(settings_.hedge ? std::optional(settings::parse_hedge_delay(settings_.hedge->delay).value())
                                   : std::nullopt),
      latency_(runtime.clock()),
      call_env_{clock_,    runtime.random(), runtime.telemetry(), runtime.options().faults,
                settings_, origin_,          spelling_,           fault_point_,
                *classifier_, backoff_,      max_retry_after_,    metrics_,
                breaker_,  *budget_,         bulkhead_,           hedge_delay_,
                latency_} {
  breaker_.set_listener([this](const breaker::Transition& t) { on_transition(t); });
  runtime_.telemetry().metrics().add(metrics_, breaker_, spelling_.with_port(), &bulkhead_);
}

void Client::on_transition(const breaker::Transition& t) {
  metrics_.transition(t.to);
  const std::string message = telemetry::transition_message(spelling_.with_port(), t);
  telemetry::LogRecord record;
  record.event = telemetry::kCircuitStateChange;
  record.message = message;
  record.server_address = origin_.host;
  record.server_port = origin_.port;
  record.state_change = true;
  record.previous = t.from;
  record.next = t.to;
  record.counts = t.counts_at_change;
  // The transition's instant on the monotonic clock, dated on the calendar of the same clock.
  record.time = clock_.wall_now() - std::chrono::duration_cast<WallTime::duration>(clock_.now() - t.at);
  runtime_.telemetry().log(record);
}

Client::~Client() {
  adopt_if_forked();  // a parent's calls hold bulkhead slots this process never gives back
  if (!runtime_.on_loop_thread()) cancel_calls_and_wait();
  // No call is left to record: the counts move to the runtime's record of clients gone.
  runtime_.telemetry().metrics().remove(metrics_);
}

std::shared_ptr<AsyncCall> Client::submit(Request request, CallDone done, std::shared_ptr<CancelToken> cancel) {
  return start_async(std::move(request), std::move(done), std::move(cancel), false);
}

std::shared_ptr<AsyncCall> Client::submit_open(Request request, CallDone done, std::shared_ptr<CancelToken> cancel) {
  return start_async(std::move(request), std::move(done), std::move(cancel), true);
}

std::shared_ptr<AsyncCall> Client::start_async(Request request, CallDone done, std::shared_ptr<CancelToken> cancel,
                                               bool stream) {
  adopt_if_forked();
  auto call = std::make_shared<AsyncCall>(call_env_, *transport_, runtime_.loop(), std::move(request), std::move(done),
                                         [this](AsyncCall* ended) { forget(ended); }, stream);
  {
    MutexLock lock(calls_mu_);
    calls_.emplace(call.get(), call);
  }
  // Linked before begin() is posted: a token cancelled already ends the call before anything is sent.
  if (cancel) call->link(std::move(cancel));
  runtime_.loop().post([call] { call->begin(); });
  return call;
}

void Client::forget(AsyncCall* call) {
  std::shared_ptr<AsyncCall> last;  // released outside the lock: it may be the call's last reference
  {
    MutexLock lock(calls_mu_);
    auto it = calls_.find(call);
    if (it == calls_.end()) return;
    last = std::move(it->second);
    calls_.erase(it);
    if (calls_.empty()) calls_done_.notify_all();
  }
}

void Client::adopt() NO_THREAD_SAFETY_ANALYSIS {
  MutexLock forking(transport::fork_mutex());
  const uint64_t generation = transport::fork_generation();
  if (calls_generation_.load(std::memory_order_relaxed) == generation) return;  // another thread adopted it
  // calls_mu_ may have been held by a thread of the parent at the fork, for a few instructions: made anew, as
  // is its condition variable (no thread of this process waits on it: each comes through here first).
  new (&calls_mu_) Mutex();
  new (&calls_done_) CondVar();
  // The parent's calls in flight at the fork are the parent's: this process never runs them (their loop is
  // abandoned) nor waits for them. They are let go of, memory and all, without running their destructors,
  // which would reach for that loop.
  (void)new std::unordered_map<AsyncCall*, std::shared_ptr<AsyncCall>>(std::move(calls_));
  calls_.clear();
  // The bulkhead slots those calls, and the parent's blocking calls on its other threads, hold: not this
  // process's calls, never given back here.
  bulkhead_.forget_calls_after_fork();
  calls_generation_.store(generation, std::memory_order_release);
}

size_t Client::calls_in_flight() const {
  // In a forked child not adopted yet: the parent's calls are none of this process's.
  if (calls_generation_.load(std::memory_order_acquire) != transport::fork_generation()) return 0;
  MutexLock lock(calls_mu_);
  return calls_.size();
}

bool Client::cancel_calls() {
  adopt_if_forked();
  std::vector<std::shared_ptr<AsyncCall>> live;
  {
    MutexLock lock(calls_mu_);
    for (auto& [ptr, call] : calls_) live.push_back(call);
  }
  for (auto& call : live) call->cancel();
  return live.empty();
}

void Client::cancel_calls_and_wait() {
  cancel_calls();  // adopts first, in a forked child
  transport::EventLoop* loop = runtime_.existing_loop();
  if (loop != nullptr && loop->caller_driven()) {
    // The outcomes are delivered by whoever drives the loop: this thread, while it waits.
    loop->drive_until([&] {
      MutexLock lock(calls_mu_);
      return calls_.empty();
    });
    return;
  }
  MutexLock lock(calls_mu_);
  while (!calls_.empty()) calls_done_.wait(calls_mu_);
}

CallResult Client::execute(const Request& request, CancelToken* cancel) { return run(request, cancel, false); }

CallResult Client::open(const Request& request, CancelToken* cancel) { return run(request, cancel, true); }

std::unique_ptr<SteppedCall> Client::step(const Request& request, CancelToken* cancel) {
  adopt_if_forked();
  // A hedged call keeps several attempts in flight, which the event loop drives; on a virtual clock only the
  // blocking driver keeps time still while the call works.
  if (settings_.hedge || runtime_.virtual_clock() != nullptr) return nullptr;
  return std::make_unique<SteppedCall>(call_env_, *transport_, request, cancel);
}

CallResult Client::run_on_loop(const Request& request, CancelToken* cancel) {
  struct Outcome {
    std::optional<CallResult> result;  // written on the loop thread before `done` is notified
    Signal done;
  };
  auto outcome = std::make_shared<Outcome>();
  // The caller's token, linked before the call's first step is posted: a cancel that comes while this thread
  // has not run again since (on the virtual clock the whole call may run by then) is not missed. Not owned: the
  // caller keeps it past this call, and the call lets go of it (unsubscribes) before `done` runs.
  std::shared_ptr<CancelToken> linked;
  if (cancel != nullptr) linked = std::shared_ptr<CancelToken>(cancel, [](CancelToken*) {});
  (void)start_async(
      request,
      [outcome](CallResult r) {
        outcome->result = std::move(r);
        outcome->done.notify();  // its lock orders the write above before the caller's read
      },
      std::move(linked), false);  // the client holds the call until it ends
  transport::EventLoop& loop = runtime_.loop();
  if (loop.caller_driven()) {
    loop.drive_until([&] { return outcome->done.notified(); });
  } else {
    // In real time, and not asleep on the runtime's clock: a virtual clock then moves with the loop's timers
    // alone, as it does for an asynchronous call, never to a deadline of this wait's.
    (void)outcome->done.wait([] { return false; }, nullptr);
  }
  return std::move(*outcome->result);
}

CallResult Client::run(const Request& request, CancelToken* cancel, bool stream) {
  adopt_if_forked();
  if (runtime_.on_loop_thread()) {
    CallResult refused;
    refused.error = Status(Code::kMisuse, "a blocking call from the runtime's event-loop thread (inside a callback) "
                                          "would wait on itself; submit it instead");
    return refused;
  }
  // docs/retries.md §6.8: a hedged call keeps several attempts in flight, which the event loop drives.
  if (settings_.hedge && !stream) return run_on_loop(request, cancel);
  // On the virtual clock this call is busy between its waits: time must not jump while it works.
  std::optional<testing::VirtualClock::Hold> busy;
  if (testing::VirtualClock* vc = runtime_.virtual_clock()) busy.emplace(*vc);

  Call call(call_env_, request, cancel);
  Signal local;
  Signal& wake = cancel != nullptr ? cancel->signal() : local;
  for (Step step = call.start();;) {
    switch (step.kind) {
      case Step::Kind::kAcquire:
        step = call.on_slot(bulkhead_.acquire(step.until, cancel));
        break;
      case Step::Kind::kSend:
        if (stream) {
          transport::Transport::Opened opened = transport_->open(call.wire(), step.limits, cancel);
          step = call.on_sent(std::move(opened.result), std::move(opened.body));
        } else {
          step = call.on_sent(transport_->perform(call.wire(), step.limits, cancel));
        }
        break;
      case Step::Kind::kWait:
        step = call.on_waited(clock_.sleep_until(step.until, wake));
        break;
      case Step::Kind::kRedirect:
        step = call.admit();
        break;
      case Step::Kind::kReadAhead: {
        std::optional<Step> next;
        read_ahead(call, [&next](Step s) { next = std::move(s); });  // a blocking body's reads complete in place
        step = std::move(*next);
        break;
      }
      case Step::Kind::kDone:
        return std::move(step.result);
      case Step::Kind::kPending: {  // only a call that allow_hedging() let hedge waits on copies; not this one
        CallResult broken;
        broken.error = Status(Code::kInternal, "a blocking call was asked to wait for hedged copies");
        return broken;
      }
    }
  }
}

}  // namespace humus::client
