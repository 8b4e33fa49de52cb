#include "client/decision_trace.h"

#include <algorithm>
#include <utility>

namespace humus::client {

void TraceRecorder::start(Instant now, Instant deadline) {
  started_ = now;
  deadline_ = deadline;
  trace_->hops = 1;
}

void TraceRecorder::redirect(const std::string& method, const std::string& url) {
  if (trace_->hops++ == 1) {
    trace_->request = TraceHop{method, url};
  } else {
    trace_->redirects.push_back(TraceHop{method, url});
  }
}

void TraceRecorder::admitted(Instant now, int attempt, breaker::Position at, double budget, bool hedge) {
  AttemptRecord& r = open_.emplace();
  r.start = now - started_;
  r.hop = trace_->hops - 1;
  r.resend = attempt > 1;
  r.hedge = hedge;
  r.breaker_at = at;
  r.budget_before = budget;
}

void TraceRecorder::not_sent(Instant now, Code why, retry::Decision decision, bool rejected,
                             std::optional<breaker::Position> at, double budget) {
  AttemptRecord r;
  r.start = now - started_;
  r.hop = trace_->hops - 1;
  r.resend = trace_->records > 0 && trace_->at(trace_->records - 1).hop == r.hop;
  r.error = why;
  r.breaker_at = at;
  r.budget_before = r.budget_after = budget;
  r.rejected = rejected;
  r.decision = decision;
  r.deadline_left = std::max(deadline_ - now, Duration::zero());
  open_.reset();
  trace_->push(std::move(r));
}

void TraceRecorder::superseded() {
  if (open_) open_->superseded = true;
}

void TraceRecorder::ended(Duration took, int wire_sends) {
  if (!open_) return;
  open_->duration = took;
  open_->wire_sends = wire_sends;
}

void TraceRecorder::outcome(int status, Code error) {
  if (!open_) return;
  open_->status = error == Code::kOk ? status : 0;
  open_->error = error;
}

void TraceRecorder::classified(const classify::Classification& c, bool retry_after_header) {
  if (!open_) return;
  open_->classified = true;
  open_->verdict = c;
  if (c.retry_after > Duration::zero()) {
    open_->retry_after_source = retry_after_header ? RetryAfterSource::kHeader : RetryAfterSource::kClassifier;
  }
}

void TraceRecorder::decided(Instant now, retry::Decision decision, Duration wait, retry::WaitSource source,
                            std::optional<breaker::Position> after, double budget) {
  if (!open_) return;
  open_->decision = decision;
  open_->wait = wait;
  open_->wait_source = source;
  open_->breaker_after = after;
  open_->budget_after = budget;
  open_->deadline_left = std::max(deadline_ - now, Duration::zero());
  trace_->push(std::move(*open_));
  open_.reset();
}

std::shared_ptr<const DecisionTrace> TraceRecorder::take(std::string method, std::string url) {
  if (trace_->hops == 1) {
    trace_->request = TraceHop{std::move(method), std::move(url)};
  } else if (trace_->hops > 1) {
    trace_->redirects.push_back(TraceHop{std::move(method), std::move(url)});
  }
  return std::move(trace_);
}

}  // namespace humus::client
