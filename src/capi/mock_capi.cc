// The mock transport's C face (docs/testing-kit.md §16.2): a C callback answers each attempt.
#include <memory>
#include <string>

#include "capi/client_capi.h"
#include "capi/guard.h"
#include "testing/mock_transport.h"

struct humus_mock_request {
  const humus::transport::WireRequest& request;
};

struct humus_mock_reply {
  humus::testing::MockReply reply;
};

using humus::Code;
using humus::Status;

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
    humus_mock_request view{request};
    humus_mock_reply reply;
    const humus_status rc = table_.respond(table_.user_data, &view, &reply);
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
  return r == nullptr ? "" : r->request.method.c_str();
}

HUMUS_API const char* humus_mock_request_url(const humus_mock_request* r) {
  return r == nullptr ? "" : r->request.url.c_str();
}

HUMUS_API const char* humus_mock_request_header(const humus_mock_request* r, const char* name) {
  if (r == nullptr || name == nullptr) return nullptr;
  const std::string* value = r->request.headers.find(name);
  return value == nullptr ? nullptr : value->c_str();
}

HUMUS_API void humus_mock_request_body(const humus_mock_request* r, const void** data, size_t* len) {
  if (data == nullptr || len == nullptr) return;
  const bool has = r != nullptr && r->request.body != nullptr && !r->request.body->empty();
  *data = has ? r->request.body->data() : nullptr;
  *len = has ? r->request.body->size() : 0;
}

HUMUS_API void humus_mock_reply_set_status(humus_mock_reply* reply, int32_t status) {
  if (reply != nullptr) reply->reply.status = status;
}

HUMUS_API void humus_mock_reply_add_header(humus_mock_reply* reply, const char* name, const char* value) {
  if (reply != nullptr && name != nullptr && value != nullptr) reply->reply.headers.add(name, value);
}

HUMUS_API void humus_mock_reply_set_body(humus_mock_reply* reply, const void* data, size_t len) {
  if (reply == nullptr) return;
  reply->reply.body = data == nullptr ? std::string() : std::string(static_cast<const char*>(data), len);
}

HUMUS_API void humus_mock_reply_set_error(humus_mock_reply* reply, humus_status error, const char* message) {
  if (reply == nullptr) return;
  reply->reply.error = static_cast<Code>(error);
  reply->reply.error_message = message == nullptr ? "" : message;
}

HUMUS_API void humus_mock_reply_set_delay_ms(humus_mock_reply* reply, int64_t ms) {
  if (reply != nullptr) reply->reply.delay = std::chrono::milliseconds(ms < 0 ? 0 : ms);
}

HUMUS_API void humus_mock_reply_set_hang(humus_mock_reply* reply) {
  if (reply != nullptr) reply->reply.hang = true;
}

HUMUS_API humus_status humus_runtime_set_mock_transport(humus_runtime* rt, const humus_mock_transport* mock,
                                                        humus_error** err) {
  return humus::capi::guard(err, [&]() -> humus_status {
    if (rt == nullptr) return humus::capi::null_argument("humus_runtime_set_mock_transport", "rt", err);
    if (mock == nullptr) {
      rt->runtime.set_mock_handler(nullptr);
      return HUMUS_OK;
    }
    if (mock->version != HUMUS_MOCK_TRANSPORT_VERSION) {
      return humus::capi::report(Status(Code::kInvalidArgument, "mock transport: unknown version " +
                                                                    std::to_string(mock->version), {"version"}), err);
    }
    if (mock->respond == nullptr) {
      return humus::capi::report(Status(Code::kProgram, "mock transport: respond callback is NULL", {"respond"}), err);
    }
    auto owner = std::make_shared<const CMock>(*mock);
    rt->runtime.set_mock_handler([owner](const humus::transport::WireRequest& r) { return owner->respond(r); });
    return HUMUS_OK;
  });
}

// ---- Bodies that break off (docs/bodies.md §7) ----

HUMUS_API void humus_mock_reply_set_body_error(humus_mock_reply* reply, size_t after_bytes, humus_status error,
                                               const char* message) {
  if (reply == nullptr) return;
  reply->reply.body_error = static_cast<Code>(error);
  reply->reply.body_error_after = after_bytes;
  reply->reply.body_error_message = message == nullptr ? "" : message;
}

}  // extern "C"
