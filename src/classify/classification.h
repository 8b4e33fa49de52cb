// What an attempt's result means, twice over (docs/retries.md §5): for retry and for the breaker.
#pragma once

#include <memory>
#include <string_view>

#include "breaker/outcome.h"
#include "common/clock.h"
#include "common/headers.h"
#include "common/status.h"

namespace humus::classify {

// The numbers are the C ABI's HUMUS_RETRY_* (the C ABI's abi_numbers.cc checks).
enum class RetryVerdict : int32_t { kDone = 1, kAgain = 2 };

struct Classification {
  RetryVerdict retry = RetryVerdict::kDone;
  breaker::Outcome breaker = breaker::Outcome::kSuccess;
  Duration retry_after = Duration::zero();  // the dependency asked to wait this long; zero: it did not ask
};

// One attempt as a classifier sees it: a response (status > 0, headers) or an error kind (no response).
struct Attempt {
  std::string_view method;
  int status = 0;
  const Headers* headers = nullptr;  // response headers; nullptr when there was no response
  Code error = Code::kOk;            // the transport error when status == 0
  std::string_view error_message;
  int number = 1;                    // 1 for a request's first attempt
  WallTime now{};                    // calendar time of the result, for Retry-After dates
};

// Decides what an attempt's result means. Implementations must be thread-safe: many calls classify at once.
class Classifier {
 public:
  virtual ~Classifier() = default;
  // A Status other than ok ends the call (a callback failed or returned an invalid classification).
  virtual Result<Classification> classify(const Attempt& attempt) const = 0;
};

}  // namespace humus::classify

namespace humus::classify {

// The default classifier (docs/retries.md §5.3) and the presets "humus", "jfast", "strict" (§5.5); nullptr for an
// unknown name. Shared, stateless, thread-safe.
std::shared_ptr<const Classifier> preset(std::string_view name);

}  // namespace humus::classify
