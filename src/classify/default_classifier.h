// The default classifier (docs/retries.md §5.3) and the presets (§5.5) as data: a table of rules any C++ code can copy,
// extend and turn into a Classifier of its own.
#pragma once

#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "classify/classification.h"
#include "common/status.h"

namespace humus::classify {

// A response whose status lies in [status_lo, status_hi] (inclusive).
struct StatusRule {
  int status_lo;
  int status_hi;
  RetryVerdict retry;
  breaker::Outcome breaker;
  // Read Retry-After into Classification::retry_after. Only meaningful with RetryVerdict::kAgain: a response
  // that ends the call has nothing to wait for, so it is not read then.
  bool honour_retry_after = false;
};

// An attempt with no response, by its transport error kind.
struct ErrorRule {
  Code error;
  RetryVerdict retry;
  breaker::Outcome breaker;
};

// The rules of one classifier. The first matching rule wins, so a rule inserted at the front overrides the
// rest: copy a preset's table, prepend `{409, 409, kAgain, kSuccess}` and make_table_classifier() it.
struct ClassifierTable {
  std::vector<StatusRule> statuses;
  std::vector<ErrorRule> errors;
  // No status rule matched (1xx, which should never reach a classifier, or a status above 599).
  Classification other_status{RetryVerdict::kDone, breaker::Outcome::kSuccess};
  // No error rule matched (an error kind this table does not name): not worth repeating, and the dependency
  // gave no answer.
  Classification other_error{RetryVerdict::kDone, breaker::Outcome::kFailure};
};

// The table of "humus", the default (docs/retries.md §5.3):
//   2xx, 3xx        done, success      408          retry, success
//   429             retry, success, Retry-After     other 4xx  done, success
//   500, 501, 505+  done, failure      502, 504     retry, failure
//   503             retry, failure, Retry-After
//   connect, resolve, timeout (the attempt's), connection lost, stream refused:  retry, failure
//   protocol (the peer broke HTTP: it would again), TLS, TLS client certificate:  done, failure
//   cancelled:  done, ignored (the client decides this itself before asking, docs/retries.md §5.1)
// A connection dropped mid-response is kConnectionLost (retried); kProtocol is a malformed answer, and an
// HTTP/2 GOAWAY before processing is kStreamRefused (docs/libcurl-traps.md §19), so kProtocol is not retried.
const ClassifierTable& humus_table();

// The table of a named preset: "humus", "jfast" (humus, but 500 is a breaker success and 429 is ignored by
// the breaker) or "strict" (humus's retry verdicts; only 2xx is a breaker success). nullopt for other names.
// Names are case-sensitive, as in the JSON settings.
std::optional<ClassifierTable> preset_table(std::string_view name);

// A classifier that applies `table`. HUMUS_E_INVALID_ARGUMENT naming the first bad rule when a status range
// is empty or outside 100..999, a verdict is not one of the enumerators, or an error rule names kOk.
// The classifier reads only the status and headers, never the body; thread-safe and stateless.
Result<std::shared_ptr<const Classifier>> make_table_classifier(ClassifierTable table);

// The default classifier: preset("humus"). Shared; never null.
const std::shared_ptr<const Classifier>& default_classifier();

}  // namespace humus::classify
