// The mock transport's C face (docs/testing-kit.md §16.2): a C callback answers each attempt.
#include <memory>
#include <string>

#include "capi/client_capi.h"
#include "capi/guard.h"
#include "capi/c_tables.h"
#include "testing/mock_transport.h"

// Both are lent to the callback on the stack (capi::Lent): live only while it runs.
struct humus_mock_request {
  static constexpr humus::capi::Magic kMagic = humus::capi::Magic::kMockRequest;
  humus::capi::Magic magic = kMagic;
  const humus::transport::WireRequest& request;
};

struct humus_mock_reply {
  static constexpr humus::capi::Magic kMagic = humus::capi::Magic::kMockReply;
  humus::capi::Magic magic = kMagic;
  humus::testing::MockReply reply;
};

using humus::Code;
using humus::Status;
using humus::capi::live;

namespace {

// Owns the C table's user_data: destroy runs once, when the last client built with it is gone.
class CMock {
 public:
  explicit CMock(const humus_mock_transport& table) : table_(table) {}
  ~CMock() {
    if (table_.destroy != nullptr) table_.destroy(table_.user_data);
  }
  CMock(const CMock&) = delete;
  CMock& operator=(const CMock&) = delete;

  humus::Result<humus::testing::MockReply> respond(const humus::transport::WireRequest& request) const {
    humus_mock_request view{humus_mock_request::kMagic, request};
    humus_mock_reply reply;
    humus_status rc;
    {
      const humus::capi::Lent<humus_mock_request> lent_view(view);
      const humus::capi::Lent<humus_mock_reply> lent_reply(reply);
      rc = table_.respond(table_.user_data, &view, &reply);
    }
    if (rc != HUMUS_OK) {
      return Status(Code::kCallback, std::string("mock transport callback returned ") + humus_status_name(rc));
    }
    return std::move(reply.reply);
  }

 private:
  const humus_mock_transport table_;
};

}  // namespace

extern "C" {

HUMUS_API const char* humus_mock_request_method(const humus_mock_request* r) {
  return live(r) == nullptr ? "" : r->request.method.c_str();
}

HUMUS_API const char* humus_mock_request_url(const humus_mock_request* r) {
  return live(r) == nullptr ? "" : r->request.url.c_str();
}

HUMUS_API const char* humus_mock_request_header(const humus_mock_request* r, const char* name) {
  if (live(r) == nullptr || name == nullptr) return nullptr;
  const std::string* value = r->request.headers.find(name);
  return value == nullptr ? nullptr : value->c_str();
}

HUMUS_API void humus_mock_request_body(const humus_mock_request* r, const void** data, size_t* len) {
  if (data == nullptr || len == nullptr) return;
  const bool has = live(r) != nullptr && r->request.body != nullptr && !r->request.body->empty();
  *data = has ? r->request.body->data() : nullptr;
  *len = has ? r->request.body->size() : 0;
}

HUMUS_API void humus_mock_reply_set_status(humus_mock_reply* reply, int32_t status) {
  if (live(reply) != nullptr) reply->reply.status = status;
}

HUMUS_API void humus_mock_reply_add_header(humus_mock_reply* reply, const char* name, const char* value) {
  if (live(reply) != nullptr && name != nullptr && value != nullptr) reply->reply.headers.add(name, value);
}

HUMUS_API void humus_mock_reply_set_body(humus_mock_reply* reply, const void* data, size_t len) {
  if (live(reply) == nullptr) return;
  reply->reply.body = data == nullptr ? std::string() : std::string(static_cast<const char*>(data), len);
}

HUMUS_API void humus_mock_reply_set_error(humus_mock_reply* reply, humus_status error, const char* message) {
  if (live(reply) == nullptr) return;
  reply->reply.error = static_cast<Code>(error);
  reply->reply.error_message = message == nullptr ? "" : message;
}

HUMUS_API void humus_mock_reply_set_delay_ms(humus_mock_reply* reply, int64_t ms) {
  if (live(reply) != nullptr) reply->reply.delay = std::chrono::milliseconds(ms < 0 ? 0 : ms);
}

HUMUS_API void humus_mock_reply_set_hang(humus_mock_reply* reply) {
  if (live(reply) != nullptr) reply->reply.hang = true;
}

HUMUS_API humus_status humus_runtime_set_mock_transport(humus_runtime* rt, const humus_mock_transport* mock,
                                                        humus_error** err) {
  return humus::capi::guard(err, [&]() -> humus_status {
    if (live(rt) == nullptr) return humus::capi::bad_handle("humus_runtime_set_mock_transport", "rt", err);
    if (mock == nullptr) {
      rt->runtime.set_mock_handler(nullptr);
      return HUMUS_OK;
    }
    humus::Result<humus_mock_transport> table = humus::accept_table(*mock);
    if (!table.ok()) return humus::capi::report(table.status(), err);
    if (table->respond == nullptr) {
      return humus::capi::report(Status(Code::kProgram, "mock transport: respond callback is NULL", {"respond"}), err);
    }
    auto owner = std::make_shared<const CMock>(*table);
    rt->runtime.set_mock_handler([owner](const humus::transport::WireRequest& r) { return owner->respond(r); });
    return HUMUS_OK;
  });
}

// ---- Bodies that break off (docs/bodies.md §7) ----

HUMUS_API void humus_mock_reply_set_body_error(humus_mock_reply* reply, size_t after_bytes, humus_status error,
                                               const char* message) {
  if (live(reply) == nullptr) return;
  reply->reply.body_error = static_cast<Code>(error);
  reply->reply.body_error_after = after_bytes;
  reply->reply.body_error_message = message == nullptr ? "" : message;
}

}  // extern "C"
