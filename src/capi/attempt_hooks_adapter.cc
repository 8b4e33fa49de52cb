// A C attempt-hooks table (humus_attempt_hooks) as classify::AttemptHooks: owns user_data, lends the
// callbacks their views for the duration of the call, and turns a failing `before` into the call's kCallback.
#include "capi/attempt_hooks_adapter.h"

#include <new>
#include <string>

#include "capi/attempt_request_view.h"
#include "capi/attempt_view.h"
#include "capi/c_tables.h"

namespace humus::capi {
namespace {

class CAttemptHooks final : public classify::AttemptHooks {
 public:
  explicit CAttemptHooks(const humus_attempt_hooks& table) : table_(table) {}
  ~CAttemptHooks() override {
    if (table_.destroy != nullptr) table_.destroy(table_.user_data);
  }
  CAttemptHooks(const CAttemptHooks&) = delete;
  CAttemptHooks& operator=(const CAttemptHooks&) = delete;

  Status before(classify::AttemptRequest& request) const override {
    if (table_.before == nullptr) return Status();
    try {
      humus_attempt_request view(request);
      const humus_status rc = table_.before(table_.user_data, &view);
      if (rc == HUMUS_OK) return Status();
      return Status(Code::kCallback, std::string("attempt hooks: before returned ") + humus_status_name(rc) +
                                         " (" + std::to_string(rc) + ")");
    } catch (const std::bad_alloc&) {
      return Status(Code::kNoMemory, "attempt hooks: out of memory");
    } catch (...) {
      // A C function pointer should not throw, but C++ code can install one that does: contain it here.
      return Status(Code::kCallback, "attempt hooks: before threw an exception");
    }
  }

  void after(const classify::Attempt& attempt) const override {
    if (table_.after == nullptr) return;
    try {
      const humus_attempt view(attempt);
      table_.after(table_.user_data, &view);
    } catch (...) {
      // Nothing to report it to: `after` cannot fail the call (its result is the classifier's to judge).
    }
  }

 private:
  const humus_attempt_hooks table_;
};

}  // namespace

Result<std::shared_ptr<const classify::AttemptHooks>> make_c_attempt_hooks(
    const humus_attempt_hooks& caller) {
  Result<humus_attempt_hooks> accepted = accept_table(caller);
  if (!accepted.ok()) return accepted.status();
  const humus_attempt_hooks& table = *accepted;
  if (table.before == nullptr && table.after == nullptr) {
    return Status(Code::kProgram, "attempt hooks: before and after are both NULL", {"before", "after"});
  }
  // On failure nothing owns user_data yet: the caller keeps it and destroy is not called.
  try {
    return std::shared_ptr<const classify::AttemptHooks>(std::make_shared<const CAttemptHooks>(table));
  } catch (const std::bad_alloc&) {
    return Status(Code::kNoMemory, "attempt hooks: out of memory");
  }
}

}  // namespace humus::capi
