// The C functions of the runtime, client, request, cancel and response sections of include/humus_http.h.
#include "capi/client_capi.h"

#include <algorithm>
#include <cstring>
#include <string_view>

#include "client/body_stream.h"

#include "capi/guard.h"
#include "capi/settings_capi.h"
#include "settings/settings.h"

using humus::Code;
using humus::Status;
using humus::capi::guard;
using humus::capi::null_argument;
using humus::capi::report;

namespace {

// RFC 9110 token characters: what a method or a header name may be made of.
bool is_token(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
    if (!ok) return false;
  }
  return true;
}

// A caller's humus_body_reader as the transport reads it. Destroyed (and `destroy` called, once) when the
// last holder — the request, or a call still sending it — lets go.
class CBodySource final : public humus::transport::BodySource {
 public:
  explicit CBodySource(const humus_body_reader& reader) : reader_(reader) {}
  ~CBodySource() override {
    if (reader_.destroy != nullptr) reader_.destroy(reader_.user_data);
  }
  CBodySource(const CBodySource&) = delete;
  CBodySource& operator=(const CBodySource&) = delete;

  int64_t length() const override { return reader_.length; }
  bool replayable() const override { return reader_.rewind != nullptr; }

  Status begin_attempt() override {
    if (!used_) {
      used_ = true;
      return Status();
    }
    if (reader_.rewind == nullptr) {
      return Status(Code::kMisuse, "the request's body reader was read by an earlier attempt and has no rewind");
    }
    return rewind();
  }

  humus::Result<size_t> read(char* buf, size_t cap) override {
    size_t n = 0;
    const humus_status st = reader_.read(reader_.user_data, buf, cap, &n);
    if (st != HUMUS_OK) return Status(Code::kCallback, std::string("read returned ") + humus_status_name(st));
    if (n > cap) return Status(Code::kCallback, "read reported more bytes than the buffer holds");
    return n;
  }

  Status rewind() override {
    const humus_status st = reader_.rewind(reader_.user_data);
    if (st != HUMUS_OK) return Status(Code::kCallback, std::string("rewind returned ") + humus_status_name(st));
    return Status();
  }

 private:
  const humus_body_reader reader_;
  bool used_ = false;
};

humus_status deliver(humus_client* c, humus::client::CallResult result, humus_response** out, humus_error** err) {
  if (!result.ok()) {
    const int64_t retry_after_ms = std::chrono::duration_cast<std::chrono::milliseconds>(result.retry_after).count();
    return report(result.error, err, result.attempts, retry_after_ms);
  }
  *out = new humus_response{std::move(*result.response), 0, c->client->max_response_body()};
  return HUMUS_OK;
}

}  // namespace

extern "C" {

HUMUS_API humus_status humus_runtime_new(const char* options_json, size_t len, humus_runtime** out,
                                         humus_error** err) {
  return guard(err, [&]() -> humus_status {
    if (out == nullptr) return null_argument("humus_runtime_new", "out", err);
    humus::Result<humus::client::RuntimeOptions> options =
        humus::client::runtime_options_from_json(options_json == nullptr ? std::string_view() : std::string_view(options_json, len));
    if (!options.ok()) return report(options.status(), err);
    *out = new humus_runtime(std::move(options).value());
    return HUMUS_OK;
  });
}

HUMUS_API void humus_runtime_free(humus_runtime* rt) { delete rt; }

HUMUS_API humus_status humus_runtime_advance_ms(humus_runtime* rt, int64_t ms, humus_error** err) {
  return guard(err, [&]() -> humus_status {
    if (rt == nullptr) return null_argument("humus_runtime_advance_ms", "rt", err);
    humus::testing::VirtualClock* clock = rt->runtime.virtual_clock();
    if (clock == nullptr) return report(Status(Code::kMisuse, "humus_runtime_advance_ms: the runtime's clock is real"), err);
    if (ms < 0) return report(Status(Code::kInvalidArgument, "humus_runtime_advance_ms: ms must be >= 0", {"ms"}), err);
    clock->advance(std::chrono::milliseconds(ms));
    return HUMUS_OK;
  });
}

HUMUS_API int64_t humus_runtime_elapsed_ms(humus_runtime* rt) {
  if (rt == nullptr) return 0;
  static_assert(sizeof(int64_t) == 8);
  const humus::Instant now = rt->runtime.clock().now();
  return std::chrono::duration_cast<std::chrono::milliseconds>(now - rt->runtime.started_at()).count();
}

HUMUS_API humus_status humus_client_new(humus_runtime* rt, const humus_settings* s, humus_client** out,
                                        humus_error** err) {
  return guard(err, [&]() -> humus_status {
    if (rt == nullptr) return null_argument("humus_client_new", "rt", err);
    if (s == nullptr) return null_argument("humus_client_new", "s", err);
    if (out == nullptr) return null_argument("humus_client_new", "out", err);
    humus::Result<std::unique_ptr<humus::client::Client>> client = humus::client::Client::create(rt->runtime, s->value);
    if (!client.ok()) return report(client.status(), err);
    *out = new humus_client{std::move(client).value()};
    return HUMUS_OK;
  });
}

namespace {

// A client freed on its own event loop (inside a callback) cannot wait there for its calls: each try cancels
// what is left and, while calls remain, comes back after the loop has delivered their outcomes.
void free_on_loop(humus_client* c) {
  if (c->client->cancel_calls()) {
    delete c;
    return;
  }
  c->client->runtime().loop().post([c] { free_on_loop(c); });
}

}  // namespace

HUMUS_API void humus_client_free(humus_client* c) {
  if (c == nullptr) return;
  if (c->client->runtime().on_loop_thread()) {
    free_on_loop(c);
    return;
  }
  delete c;  // ~Client cancels and waits for its asynchronous calls
}

HUMUS_API humus_status humus_client_breaker_state(humus_client* c, int32_t* state) {
  return guard(nullptr, [&]() -> humus_status {
    if (c == nullptr) return null_argument("humus_client_breaker_state", "c", nullptr);
    if (state == nullptr) return null_argument("humus_client_breaker_state", "state", nullptr);
    *state = static_cast<int32_t>(c->client->breaker().state());
    return HUMUS_OK;
  });
}

HUMUS_API humus_status humus_client_breaker_counts(humus_client* c, humus_breaker_counts* counts) {
  return guard(nullptr, [&]() -> humus_status {
    if (c == nullptr) return null_argument("humus_client_breaker_counts", "c", nullptr);
    if (counts == nullptr) return null_argument("humus_client_breaker_counts", "counts", nullptr);
    *counts = humus::breaker::to_c_counts(c->client->breaker().counts());
    return HUMUS_OK;
  });
}

HUMUS_API humus_status humus_client_budget_tokens(humus_client* c, double* tokens) {
  if (c == nullptr) return null_argument("humus_client_budget_tokens", "c", nullptr);
  if (tokens == nullptr) return null_argument("humus_client_budget_tokens", "tokens", nullptr);
  *tokens = c->client->budget().tokens();
  return HUMUS_OK;
}

HUMUS_API humus_status humus_request_new(const char* method, const char* url, humus_request** out,
                                         humus_error** err) {
  return guard(err, [&]() -> humus_status {
    if (method == nullptr) return null_argument("humus_request_new", "method", err);
    if (url == nullptr) return null_argument("humus_request_new", "url", err);
    if (out == nullptr) return null_argument("humus_request_new", "out", err);
    if (!is_token(method)) {
      return report(Status(Code::kInvalidArgument, std::string("method: \"") + method + "\" is not an HTTP method token",
                           {"method"}), err);
    }
    humus::Result<humus::transport::ClientUrl> parsed = humus::transport::ClientUrl::parse(url);
    if (!parsed.ok()) {
      return report(Status(Code::kInvalidArgument, "url: " + parsed.status().message(), {"url"}), err);
    }
    const std::string& scheme = parsed->parts().scheme;
    if (scheme != "http" && scheme != "https") {
      return report(Status(Code::kInvalidArgument, "url: the scheme must be http or https, got \"" + scheme + "\"",
                           {"url"}),
                    err);
    }
    auto request = std::make_unique<humus_request>();
    request->request.method = method;
    request->request.url = url;
    *out = request.release();
    return HUMUS_OK;
  });
}

HUMUS_API humus_status humus_request_set_header(humus_request* r, const char* name, const char* value,
                                                humus_error** err) {
  return guard(err, [&]() -> humus_status {
    if (r == nullptr) return null_argument("humus_request_set_header", "r", err);
    if (name == nullptr) return null_argument("humus_request_set_header", "name", err);
    if (value == nullptr) return null_argument("humus_request_set_header", "value", err);
    if (Status st = humus::settings::check_header(name, value); !st.ok()) {
      return report(Status(Code::kInvalidArgument, st.message(), {name}), err);
    }
    r->request.headers.add(name, value);
    return HUMUS_OK;
  });
}

HUMUS_API humus_status humus_request_set_body(humus_request* r, const void* data, size_t len) {
  return guard(nullptr, [&]() -> humus_status {
    if (r == nullptr) return null_argument("humus_request_set_body", "r", nullptr);
    if (data == nullptr && len > 0) return null_argument("humus_request_set_body", "data", nullptr);
    r->request.body = std::make_shared<const std::string>(static_cast<const char*>(data), len);
    r->request.body_source = nullptr;
    return HUMUS_OK;
  });
}

HUMUS_API humus_status humus_request_set_body_reader(humus_request* r, const humus_body_reader* reader,
                                                     humus_error** err) {
  return guard(err, [&]() -> humus_status {
    if (r == nullptr) return null_argument("humus_request_set_body_reader", "r", err);
    if (reader == nullptr) return null_argument("humus_request_set_body_reader", "reader", err);
    if (reader->version == 0 || reader->version > HUMUS_BODY_READER_VERSION) {
      return report(Status(Code::kInvalidArgument,
                           "body reader: unknown version " + std::to_string(reader->version), {"version"}), err);
    }
    if (reader->read == nullptr) return report(Status(Code::kProgram, "body reader: read is NULL", {"read"}), err);
    if (reader->length < -1) {
      return report(Status(Code::kInvalidArgument, "body reader: length must be >= 0, or -1 for unknown",
                           {"length"}), err);
    }
    r->request.body_source = std::make_shared<CBodySource>(*reader);
    r->request.body = nullptr;
    return HUMUS_OK;
  });
}

HUMUS_API humus_status humus_request_set_idempotency_key(humus_request* r, const char* key, humus_error** err) {
  return guard(err, [&]() -> humus_status {
    if (r == nullptr) return null_argument("humus_request_set_idempotency_key", "r", err);
    if (key == nullptr) return null_argument("humus_request_set_idempotency_key", "key", err);
    if (Status st = humus::settings::check_header("Idempotency-Key", key); !st.ok() || *key == '\0') {
      return report(Status(Code::kInvalidArgument, "Idempotency-Key: must be non-empty, without CR, LF or NUL",
                           {"Idempotency-Key"}), err);
    }
    r->request.headers.set("Idempotency-Key", key);
    return HUMUS_OK;
  });
}

HUMUS_API humus_status humus_request_set_retry(humus_request* r, int32_t mode) {
  return guard(nullptr, [&]() -> humus_status {
    if (r == nullptr) return null_argument("humus_request_set_retry", "r", nullptr);
    switch (mode) {
      case HUMUS_RETRY_MODE_DEFAULT: r->request.retry = humus::retry::RetryOverride::kDefault; return HUMUS_OK;
      case HUMUS_RETRY_MODE_FORBID: r->request.retry = humus::retry::RetryOverride::kForbid; return HUMUS_OK;
      case HUMUS_RETRY_MODE_FORCE: r->request.retry = humus::retry::RetryOverride::kForce; return HUMUS_OK;
      default:
        return report(Status(Code::kInvalidArgument, "retry: mode must be HUMUS_RETRY_MODE_DEFAULT, _FORBID or _FORCE",
                             {"retry"}), nullptr);
    }
  });
}

HUMUS_API humus_status humus_request_set_timeout_ms(humus_request* r, int64_t ms) {
  return guard(nullptr, [&]() -> humus_status {
    if (r == nullptr) return null_argument("humus_request_set_timeout_ms", "r", nullptr);
    if (ms <= 0 || ms > 3'600'000) {
      return report(Status(Code::kInvalidArgument, "timeout: must be > 0 and <= 1h (deadlines cannot be turned off)",
                           {"timeout"}), nullptr);
    }
    r->request.timeout = std::chrono::milliseconds(ms);
    return HUMUS_OK;
  });
}

HUMUS_API humus_status humus_request_set_context(humus_request* r, const char* traceparent, const char* tracestate,
                                                 const char* baggage, const char* request_id,
                                                 const char* authorization, humus_error** err) {
  return guard(err, [&]() -> humus_status {
    if (r == nullptr) return null_argument("humus_request_set_context", "r", err);
    const std::pair<const char*, const char*> parts[] = {{"traceparent", traceparent}, {"tracestate", tracestate},
                                                         {"baggage", baggage}, {"X-Request-ID", request_id},
                                                         {"Authorization", authorization}};
    for (const auto& [name, value] : parts) {
      if (value == nullptr) continue;
      if (Status st = humus::settings::check_header(name, value); !st.ok()) {
        return report(Status(Code::kInvalidArgument, st.message(), {name}), err);
      }
    }
    humus::client::CallContext& c = r->request.context;
    auto text = [](const char* v) { return v == nullptr ? std::string() : std::string(v); };
    c.traceparent = text(traceparent);
    c.tracestate = text(tracestate);
    c.baggage = text(baggage);
    c.request_id = text(request_id);
    c.authorization = text(authorization);
    return HUMUS_OK;
  });
}

HUMUS_API humus_status humus_request_set_cancel(humus_request* r, humus_cancel* c) {
  if (r == nullptr) return null_argument("humus_request_set_cancel", "r", nullptr);
  r->cancel = c;
  return HUMUS_OK;
}

HUMUS_API void humus_request_free(humus_request* r) { delete r; }

HUMUS_API humus_status humus_cancel_new(humus_cancel** out) {
  return guard(nullptr, [&]() -> humus_status {
    if (out == nullptr) return null_argument("humus_cancel_new", "out", nullptr);
    *out = new humus_cancel();
    return HUMUS_OK;
  });
}

HUMUS_API void humus_cancel_trigger(humus_cancel* c) {
  if (c != nullptr) c->token.cancel();
}

HUMUS_API void humus_cancel_free(humus_cancel* c) { delete c; }

HUMUS_API humus_status humus_client_do(humus_client* c, const humus_request* r, humus_response** out,
                                       humus_error** err) {
  return guard(err, [&]() -> humus_status {
    if (c == nullptr) return null_argument("humus_client_do", "c", err);
    if (r == nullptr) return null_argument("humus_client_do", "r", err);
    if (out == nullptr) return null_argument("humus_client_do", "out", err);
    return deliver(c, c->client->execute(r->request, r->cancel != nullptr ? &r->cancel->token : nullptr), out, err);
  });
}

HUMUS_API humus_status humus_client_open(humus_client* c, const humus_request* r, humus_response** out,
                                         humus_error** err) {
  return guard(err, [&]() -> humus_status {
    if (c == nullptr) return null_argument("humus_client_open", "c", err);
    if (r == nullptr) return null_argument("humus_client_open", "r", err);
    if (out == nullptr) return null_argument("humus_client_open", "out", err);
    return deliver(c, c->client->open(r->request, r->cancel != nullptr ? &r->cancel->token : nullptr), out, err);
  });
}

HUMUS_API humus_status humus_response_read(humus_response* resp, void* buf, size_t cap, size_t* n,
                                           humus_error** err) {
  return guard(err, [&]() -> humus_status {
    if (resp == nullptr) return null_argument("humus_response_read", "resp", err);
    if (buf == nullptr) return null_argument("humus_response_read", "buf", err);
    if (n == nullptr) return null_argument("humus_response_read", "n", err);
    if (cap == 0) {
      return report(Status(Code::kInvalidArgument, "humus_response_read: cap must be > 0", {"cap"}), err);
    }
    humus::client::Response& response = resp->response;
    if (resp->read_at < response.body.size()) {
      const size_t k = std::min(cap, response.body.size() - resp->read_at);
      std::memcpy(buf, response.body.data() + resp->read_at, k);
      resp->read_at += k;
      if (resp->read_at == response.body.size() && response.stream != nullptr) {
        // The bytes read ahead are handed out: the rest comes from the connection.
        std::string().swap(response.body);
        resp->read_at = 0;
      }
      *n = k;
      return HUMUS_OK;
    }
    if (response.stream == nullptr) {
      *n = 0;
      return HUMUS_OK;
    }
    humus::Result<size_t> got = response.stream->read(static_cast<char*>(buf), cap);
    if (!got.ok()) return report(got.status(), err, response.attempts);
    *n = *got;
    return HUMUS_OK;
  });
}

HUMUS_API humus_status humus_client_submit(humus_client* c, const humus_request* r, humus_call_done on_done,
                                           void* user_data, humus_call** call, humus_error** err) {
  return guard(err, [&]() -> humus_status {
    if (c == nullptr) return null_argument("humus_client_submit", "c", err);
    if (r == nullptr) return null_argument("humus_client_submit", "r", err);
    if (on_done == nullptr) return null_argument("humus_client_submit", "on_done", err);
    auto handle = std::make_unique<humus_call>();
    handle->call = c->client->submit(r->request, [on_done, user_data](humus::client::CallResult result) {
      if (result.ok()) {
        on_done(user_data, HUMUS_OK, new humus_response{std::move(*result.response)}, nullptr);
        return;
      }
      humus_error* error = nullptr;
      const int64_t retry_after_ms = std::chrono::duration_cast<std::chrono::milliseconds>(result.retry_after).count();
      const humus_status status = report(result.error, &error, result.attempts, retry_after_ms);
      on_done(user_data, status, nullptr, error);
    });
    if (call != nullptr) *call = handle.release();
    return HUMUS_OK;
  });
}

HUMUS_API void humus_call_cancel(humus_call* call) {
  if (call != nullptr && call->call) call->call->cancel();
}

HUMUS_API void humus_call_free(humus_call* call) { delete call; }

HUMUS_API int32_t humus_response_status(const humus_response* resp) {
  return resp == nullptr ? 0 : resp->response.status;
}

HUMUS_API int32_t humus_response_attempts(const humus_response* resp) {
  return resp == nullptr ? 0 : resp->response.attempts;
}

HUMUS_API const char* humus_response_header(const humus_response* resp, const char* name) {
  if (resp == nullptr || name == nullptr) return nullptr;
  const std::string* value = resp->response.headers.find(name);
  return value == nullptr ? nullptr : value->c_str();
}

HUMUS_API size_t humus_response_header_count(const humus_response* resp) {
  return resp == nullptr ? 0 : resp->response.headers.size();
}

HUMUS_API humus_status humus_response_header_at(const humus_response* resp, size_t i, const char** name,
                                                const char** value) {
  if (resp == nullptr) return null_argument("humus_response_header_at", "resp", nullptr);
  if (name == nullptr || value == nullptr) return null_argument("humus_response_header_at", "name/value", nullptr);
  const auto& fields = resp->response.headers.fields();
  if (i >= fields.size()) {
    return report(Status(Code::kInvalidArgument, "humus_response_header_at: index out of range", {"i"}), nullptr);
  }
  *name = fields[i].first.c_str();
  *value = fields[i].second.c_str();
  return HUMUS_OK;
}

HUMUS_API humus_status humus_response_body(humus_response* resp, const void** data, size_t* len,
                                           humus_error** err) {
  return guard(err, [&]() -> humus_status {
    if (resp == nullptr) return null_argument("humus_response_body", "resp", err);
    if (data == nullptr || len == nullptr) return null_argument("humus_response_body", "data/len", err);
    humus::client::Response& response = resp->response;
    if (response.stream != nullptr && !response.stream->ended()) {
      response.body.erase(0, resp->read_at);
      resp->read_at = 0;
      if (Status st = response.stream->read_rest(response.body, resp->max_body); !st.ok()) {
        return report(st, err, response.attempts);
      }
    }
    const size_t rest = response.body.size() - resp->read_at;
    *data = rest == 0 ? nullptr : response.body.data() + resp->read_at;
    *len = rest;
    return HUMUS_OK;
  });
}

HUMUS_API const char* humus_response_http_version(const humus_response* resp) {
  return resp == nullptr ? "" : resp->response.http_version.c_str();
}

HUMUS_API const char* humus_response_url(const humus_response* resp) {
  return resp == nullptr ? "" : resp->response.url.c_str();
}

HUMUS_API void humus_response_free(humus_response* resp) { delete resp; }

}  // extern "C"
