#include "capi/trace_json.h"

#include <nlohmann/json.hpp>

#include "humus_http.h"

namespace humus::capi {
namespace {

using nlohmann::json;

double seconds(Duration d) { return std::chrono::duration<double>(d).count(); }

json position(const std::optional<breaker::Position>& p) {
  if (!p) return nullptr;
  return json{{"state", breaker::state_name(p->state)}, {"generation", p->generation}};
}

const char* retry_after_source_name(client::RetryAfterSource source) {
  switch (source) {
    case client::RetryAfterSource::kHeader:
      return "header";
    case client::RetryAfterSource::kClassifier:
      return "classifier";
    case client::RetryAfterSource::kNone:
      break;
  }
  return nullptr;
}

json record_json(const client::DecisionTrace& trace, const client::AttemptRecord& r, size_t index) {
  json out;
  out["attempt"] = index + 1;
  out["start"] = seconds(r.start);
  const client::TraceHop* hop =
      r.hop >= 0 && static_cast<size_t>(r.hop) < trace.hops.size() ? &trace.hops[static_cast<size_t>(r.hop)] : nullptr;
  out["method"] = hop != nullptr ? json(hop->method) : json(nullptr);
  out["url"] = hop != nullptr ? json(hop->url) : json(nullptr);
  out["redirect"] = r.hop;
  out["resend"] = r.resend;
  out["hedge"] = false;  // no hedged attempts yet: every attempt is sent alone
  out["wire_sends"] = r.wire_sends;
  out["status"] = r.status != 0 ? json(r.status) : json(nullptr);
  out["error"] = r.error != Code::kOk ? json(humus_status_name(static_cast<humus_status>(r.error))) : json(nullptr);
  out["duration"] = seconds(r.duration);
  if (r.classified) {
    out["retry_verdict"] = r.verdict.retry == classify::RetryVerdict::kAgain ? "again" : "done";
    out["breaker_verdict"] = breaker::outcome_name(r.verdict.breaker);
  } else {
    out["retry_verdict"] = nullptr;
    out["breaker_verdict"] = nullptr;
  }
  const char* source = retry_after_source_name(r.retry_after_source);
  out["retry_after"] = source != nullptr ? json(seconds(r.verdict.retry_after)) : json(nullptr);
  out["retry_after_source"] = source != nullptr ? json(source) : json(nullptr);
  out["breaker"] = position(r.breaker_at);
  out["breaker_after"] = position(r.breaker_after);
  out["budget_before"] = r.budget_before;
  out["budget_after"] = r.budget_after;
  out["decision"] = r.rejected ? "rejected" : retry::decision_name(r.decision);
  out["wait"] = seconds(r.wait);
  out["wait_source"] = retry::wait_source_name(r.wait_source);
  out["deadline_left"] = seconds(r.deadline_left);
  return out;
}

}  // namespace

std::string trace_json(const client::DecisionTrace* trace) {
  json out = json::array();
  if (trace != nullptr) {
    for (size_t i = 0; i < trace->attempts.size(); ++i) out.push_back(record_json(*trace, trace->attempts[i], i));
  }
  return out.dump();
}

}  // namespace humus::capi
