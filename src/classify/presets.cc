// The named presets of docs/retries.md §5.5, each a table derived from humus's by overriding rules at the front.
#include <string_view>

#include "classify/default_classifier.h"

namespace humus::classify {
namespace {

constexpr RetryVerdict kDone = RetryVerdict::kDone;
constexpr RetryVerdict kAgain = RetryVerdict::kAgain;

ClassifierTable jfast_table() {
  ClassifierTable t = humus_table();
  // A 500 is the application answering (a bug on its side), not the dependency being unreachable; a 429 is
  // the dependency protecting itself, which says nothing about its health either way.
  t.statuses.insert(t.statuses.begin(), {
                                            {500, 500, kDone, breaker::Outcome::kSuccess, false},
                                            {429, 429, kAgain, breaker::Outcome::kIgnored, true},
                                        });
  return t;
}

ClassifierTable strict_table() {
  ClassifierTable t = humus_table();
  // Same retry verdicts; every status but 2xx counts against the dependency.
  for (StatusRule& r : t.statuses) {
    if (!(r.status_lo >= 200 && r.status_hi <= 299)) r.breaker = breaker::Outcome::kFailure;
  }
  // humus's first rule spans 2xx and 3xx: split it so 3xx fails while 2xx succeeds.
  t.statuses.insert(t.statuses.begin(), {200, 299, kDone, breaker::Outcome::kSuccess, false});
  t.other_status.breaker = breaker::Outcome::kFailure;
  return t;
}

}  // namespace

std::optional<ClassifierTable> preset_table(std::string_view name) {
  if (name == "humus") return humus_table();
  if (name == "jfast") return jfast_table();
  if (name == "strict") return strict_table();
  return std::nullopt;
}

std::shared_ptr<const Classifier> preset(std::string_view name) {
  // Thread-safe static init; the tables are fixed, so value() cannot fail.
  if (name == "humus") return default_classifier();
  if (name == "jfast") {
    static const std::shared_ptr<const Classifier> jfast = make_table_classifier(jfast_table()).value();
    return jfast;
  }
  if (name == "strict") {
    static const std::shared_ptr<const Classifier> strict = make_table_classifier(strict_table()).value();
    return strict;
  }
  return nullptr;
}

}  // namespace humus::classify
