// A C classifier table (humus_classifier) as a classify::Classifier: owns user_data, and checks what the
// callback returns so a bad answer is HUMUS_E_PROGRAM, never undefined behaviour (docs/retries.md §5.4).
#include "capi/classifier_adapter.h"

#include <chrono>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "capi/attempt_view.h"
#include "capi/c_tables.h"
#include "retry/retry_after.h"

namespace humus::capi {
namespace {

class CClassifier final : public classify::Classifier {
 public:
  explicit CClassifier(const humus_classifier& table) : table_(table) {}
  ~CClassifier() override {
    if (table_.destroy != nullptr) table_.destroy(table_.user_data);
  }
  CClassifier(const CClassifier&) = delete;
  CClassifier& operator=(const CClassifier&) = delete;

  Result<classify::Classification> classify(const classify::Attempt& attempt) const override {
    try {
      const humus_attempt view(attempt);
      humus_classification out{0, 0, 0};
      const humus_status rc = table_.classify(table_.user_data, &view, &out);
      if (rc != HUMUS_OK) {
        return Status(Code::kCallback, std::string("classifier: callback returned ") + humus_status_name(rc) +
                                           " (" + std::to_string(rc) + ")");
      }
      return check(out);
    } catch (const std::bad_alloc&) {
      return Status(Code::kNoMemory, "classifier: out of memory");
    } catch (...) {
      // A C function pointer should not throw, but C++ code can install one that does: contain it here.
      return Status(Code::kCallback, "classifier: callback threw an exception");
    }
  }

 private:
  static Result<classify::Classification> check(const humus_classification& out) {
    std::vector<std::string> bad;
    std::string message = "classifier: invalid classification:";
    if (out.retry != HUMUS_RETRY_DONE && out.retry != HUMUS_RETRY_AGAIN) {
      bad.emplace_back("retry");
      message += " retry = " + std::to_string(out.retry) + " (want HUMUS_RETRY_DONE or HUMUS_RETRY_AGAIN)";
    }
    if (out.breaker != HUMUS_BREAKER_SUCCESS && out.breaker != HUMUS_BREAKER_FAILURE &&
        out.breaker != HUMUS_BREAKER_IGNORED) {
      if (!bad.empty()) message += ";";
      bad.emplace_back("breaker");
      message += " breaker = " + std::to_string(out.breaker) +
                 " (want HUMUS_BREAKER_SUCCESS, HUMUS_BREAKER_FAILURE or HUMUS_BREAKER_IGNORED)";
    }
    if (out.retry_after_ms < 0) {
      if (!bad.empty()) message += ";";
      bad.emplace_back("retry_after_ms");
      message += " retry_after_ms = " + std::to_string(out.retry_after_ms) + " (negative)";
    }
    if (!bad.empty()) return Status(Code::kProgram, std::move(message), std::move(bad));

    classify::Classification c;
    c.retry = static_cast<classify::RetryVerdict>(out.retry);
    c.breaker = static_cast<breaker::Outcome>(out.breaker);
    // Milliseconds to nanoseconds overflows past ~292 years: saturate as a parsed Retry-After does.
    constexpr int64_t kCapMs =
        std::chrono::duration_cast<std::chrono::milliseconds>(retry::kMaxRetryAfter).count();
    c.retry_after = out.retry_after_ms >= kCapMs ? retry::kMaxRetryAfter
                                                 : Duration(std::chrono::milliseconds(out.retry_after_ms));
    return c;
  }

  const humus_classifier table_;
};

}  // namespace

Result<std::shared_ptr<const classify::Classifier>> make_c_classifier(const humus_classifier& caller) {
  Result<humus_classifier> accepted = accept_table(caller);
  if (!accepted.ok()) return accepted.status();
  const humus_classifier& table = *accepted;
  if (table.classify == nullptr) {
    return Status(Code::kProgram, "classifier: classify callback is NULL", {"classify"});
  }
  // On failure nothing owns user_data yet: the caller keeps it and destroy is not called.
  try {
    return std::shared_ptr<const classify::Classifier>(std::make_shared<const CClassifier>(table));
  } catch (const std::bad_alloc&) {
    return Status(Code::kNoMemory, "classifier: out of memory");
  }
}

}  // namespace humus::capi
