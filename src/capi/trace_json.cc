#include "capi/trace_json.h"

#include <cinttypes>
#include <cstdio>

#include "humus_http.h"
#include "telemetry/redact.h"

// Written by hand rather than through nlohmann::json: a binding may render every call's trace (Rust keeps
// the text of each), and building a json tree per record cost about five times this.
namespace humus::capi {
namespace {

class Writer {
 public:
  explicit Writer(std::string& out) : out_(out) {}

  void key(const char* name) {
    out_ += first_ ? "\"" : ",\"";
    first_ = false;
    out_ += name;
    out_ += "\":";
  }
  void null() { out_ += "null"; }
  void boolean(bool v) { out_ += v ? "true" : "false"; }
  void integer(int64_t v) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "%" PRId64, v);
    out_ += buf;
  }
  void unsigned_integer(uint64_t v) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "%" PRIu64, v);
    out_ += buf;
  }
  // A finite number, to 15 significant digits (a budget's 9.1 reads 9.1): never NaN or infinity, which
  // JSON cannot say.
  void number(double v) {
    if (!(v == v) || v > 1e300 || v < -1e300) v = 0;
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.15g", v);
    out_ += buf;
  }
  // Seconds, exactly: the whole nanoseconds as a decimal fraction without trailing zeros ("0.056656158").
  void seconds(Duration d) {
    const int64_t ns = std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
    const uint64_t magnitude = ns < 0 ? 0 - static_cast<uint64_t>(ns) : static_cast<uint64_t>(ns);
    char buf[40];
    int n = std::snprintf(buf, sizeof buf, "%s%" PRIu64, ns < 0 ? "-" : "", magnitude / 1000000000u);
    if (const uint64_t fraction = magnitude % 1000000000u; fraction != 0) {
      n += std::snprintf(buf + n, sizeof buf - static_cast<size_t>(n), ".%09" PRIu64, fraction);
      while (buf[n - 1] == '0') buf[--n] = '\0';
    }
    out_ += buf;
  }
  void string(std::string_view s) {
    out_ += '"';
    for (const char c : s) {
      switch (c) {
        case '"': out_ += "\\\""; break;
        case '\\': out_ += "\\\\"; break;
        case '\n': out_ += "\\n"; break;
        case '\r': out_ += "\\r"; break;
        case '\t': out_ += "\\t"; break;
        default:
          if (static_cast<unsigned char>(c) < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
            out_ += buf;
          } else {
            out_ += c;
          }
      }
    }
    out_ += '"';
  }
  void string_or_null(const char* s) {
    if (s == nullptr) {
      null();
    } else {
      string(s);
    }
  }
  void position(const std::optional<breaker::Position>& p) {
    if (!p) {
      null();
      return;
    }
    out_ += "{\"state\":";
    string(breaker::state_name(p->state));
    out_ += ",\"generation\":";
    unsigned_integer(p->generation);
    out_ += '}';
  }

 private:
  std::string& out_;
  bool first_ = true;
};

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

void write_record(std::string& out, const client::DecisionTrace& trace, const client::AttemptRecord& r, size_t index) {
  Writer w(out);
  out += '{';
  w.key("attempt");
  w.unsigned_integer(index + 1);
  w.key("start");
  w.seconds(r.start);
  const client::TraceHop* hop = trace.hop(r.hop);
  w.key("method");
  if (hop != nullptr) {
    w.string(hop->method);
  } else {
    w.null();
  }
  w.key("url");
  if (hop != nullptr) {
    w.string(telemetry::redacted_url(hop->url));
  } else {
    w.null();
  }
  w.key("redirect");
  w.integer(r.hop);
  w.key("resend");
  w.boolean(r.resend);
  w.key("hedge");
  w.boolean(r.hedge);
  w.key("wire_sends");
  w.integer(r.wire_sends);
  w.key("status");
  if (r.status != 0) {
    w.integer(r.status);
  } else {
    w.null();
  }
  w.key("error");
  w.string_or_null(r.error != Code::kOk ? humus_status_name(static_cast<humus_status>(r.error)) : nullptr);
  w.key("duration");
  w.seconds(r.duration);
  w.key("retry_verdict");
  w.string_or_null(!r.classified ? nullptr : r.verdict.retry == classify::RetryVerdict::kAgain ? "again" : "done");
  w.key("breaker_verdict");
  w.string_or_null(r.classified ? breaker::outcome_name(r.verdict.breaker) : nullptr);
  const char* source = retry_after_source_name(r.retry_after_source);
  w.key("retry_after");
  if (source != nullptr) {
    w.seconds(r.verdict.retry_after);
  } else {
    w.null();
  }
  w.key("retry_after_source");
  w.string_or_null(source);
  w.key("breaker");
  w.position(r.breaker_at);
  w.key("breaker_after");
  w.position(r.breaker_after);
  w.key("budget_before");
  w.number(r.budget_before);
  w.key("budget_after");
  w.number(r.budget_after);
  w.key("decision");
  w.string(r.rejected ? "rejected" : r.superseded ? "hedged" : retry::decision_name(r.decision));
  w.key("wait");
  w.seconds(r.wait);
  w.key("wait_source");
  w.string(retry::wait_source_name(r.wait_source));
  w.key("deadline_left");
  w.seconds(r.deadline_left);
  out += '}';
}

}  // namespace

std::string trace_json(const client::DecisionTrace* trace) {
  std::string out = "[";
  if (trace != nullptr) {
    out.reserve(520 * trace->size() + 2);
    for (size_t i = 0; i < trace->size(); ++i) {
      if (i > 0) out += ',';
      write_record(out, *trace, trace->at(i), i);
    }
  }
  out += ']';
  return out;
}

}  // namespace humus::capi
