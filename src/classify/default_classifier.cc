#include "classify/default_classifier.h"

#include <string>
#include <utility>

#include "retry/retry_after.h"

namespace humus::classify {
namespace {

constexpr RetryVerdict kDone = RetryVerdict::kDone;
constexpr RetryVerdict kAgain = RetryVerdict::kAgain;
constexpr breaker::Outcome kSuccess = breaker::Outcome::kSuccess;
constexpr breaker::Outcome kFailure = breaker::Outcome::kFailure;
constexpr breaker::Outcome kIgnored = breaker::Outcome::kIgnored;

class TableClassifier final : public Classifier {
 public:
  explicit TableClassifier(ClassifierTable table) : table_(std::move(table)) {}

  Result<Classification> classify(const Attempt& attempt) const override {
    if (attempt.status > 0) return by_status(attempt);
    for (const ErrorRule& rule : table_.errors) {
      if (rule.error == attempt.error) return Classification{rule.retry, rule.breaker, Duration::zero()};
    }
    return table_.other_error;
  }

 private:
  [[nodiscard]] Classification by_status(const Attempt& attempt) const {
    for (const StatusRule& rule : table_.statuses) {
      if (attempt.status < rule.status_lo || attempt.status > rule.status_hi) continue;
      Classification c{rule.retry, rule.breaker, Duration::zero()};
      if (rule.honour_retry_after && rule.retry == kAgain && attempt.headers != nullptr) {
        if (const std::string* value = attempt.headers->find("Retry-After")) {
          // A malformed value is ignored (docs/retries.md §6.3): the backoff alone decides the wait.
          c.retry_after = retry::parse_retry_after(*value, attempt.now).value_or(Duration::zero());
        }
      }
      return c;
    }
    return table_.other_status;
  }

  const ClassifierTable table_;
};

bool valid(RetryVerdict v) { return v == kDone || v == kAgain; }
bool valid(breaker::Outcome v) { return v == kSuccess || v == kFailure || v == kIgnored; }

Status bad_rule(const std::string& what) {
  return Status(Code::kInvalidArgument, "classifier table: " + what, {"classifier"});
}

}  // namespace

const ClassifierTable& humus_table() {
  static const ClassifierTable table{
      .statuses =
          {
              {200, 399, kDone, kSuccess, false},
              {408, 408, kAgain, kSuccess, false},
              {429, 429, kAgain, kSuccess, true},
              {400, 499, kDone, kSuccess, false},
              {500, 501, kDone, kFailure, false},
              {502, 502, kAgain, kFailure, false},
              {503, 503, kAgain, kFailure, true},
              {504, 504, kAgain, kFailure, false},
              {505, 599, kDone, kFailure, false},
          },
      .errors =
          {
              {Code::kConnect, kAgain, kFailure},
              {Code::kResolve, kAgain, kFailure},
              {Code::kTimeout, kAgain, kFailure},
              {Code::kConnectionLost, kAgain, kFailure},
              {Code::kStreamRefused, kAgain, kFailure},
              {Code::kProtocol, kDone, kFailure},
              {Code::kTls, kDone, kFailure},
              {Code::kTlsClientCert, kDone, kFailure},
              {Code::kCancelled, kDone, kIgnored},
          },
      .other_status = {kDone, kSuccess, Duration::zero()},
      .other_error = {kDone, kFailure, Duration::zero()},
  };
  return table;
}

Result<std::shared_ptr<const Classifier>> make_table_classifier(ClassifierTable table) {
  for (size_t i = 0; i < table.statuses.size(); ++i) {
    const StatusRule& r = table.statuses[i];
    const std::string name = "status rule " + std::to_string(i) + " (" + std::to_string(r.status_lo) + ".." +
                             std::to_string(r.status_hi) + ")";
    if (r.status_lo < 100 || r.status_hi > 999 || r.status_lo > r.status_hi) {
      return bad_rule(name + ": the range must lie within 100..999, low end first");
    }
    if (!valid(r.retry) || !valid(r.breaker)) return bad_rule(name + ": invalid verdict");
  }
  for (size_t i = 0; i < table.errors.size(); ++i) {
    const ErrorRule& r = table.errors[i];
    const std::string name = "error rule " + std::to_string(i);
    if (r.error == Code::kOk) return bad_rule(name + ": names no error (kOk)");
    if (!valid(r.retry) || !valid(r.breaker)) return bad_rule(name + ": invalid verdict");
  }
  for (const Classification* c : {&table.other_status, &table.other_error}) {
    if (!valid(c->retry) || !valid(c->breaker)) return bad_rule("invalid fallback verdict");
    if (c->retry_after < Duration::zero()) return bad_rule("negative fallback retry_after");
  }
  return std::shared_ptr<const Classifier>(std::make_shared<const TableClassifier>(std::move(table)));
}

const std::shared_ptr<const Classifier>& default_classifier() {
  // Built once (thread-safe static init) from a table the tests pin, so value() cannot fail.
  static const std::shared_ptr<const Classifier> instance = make_table_classifier(humus_table()).value();
  return instance;
}

}  // namespace humus::classify
