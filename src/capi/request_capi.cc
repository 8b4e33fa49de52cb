// The C functions of the request and cancel-token sections of include/humus_http.h.
#include <algorithm>
#include <memory>
#include <string>
#include <string_view>

#include "capi/client_capi.h"
#include "capi/guard.h"
#include "capi/c_tables.h"
#include "settings/settings.h"
#include "transport/url.h"

using humus::Code;
using humus::Status;
using humus::capi::bad_handle;
using humus::capi::guard;
using humus::capi::live;
using humus::capi::null_argument;
using humus::capi::publish;
using humus::capi::report;
using humus::capi::retire;

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

}  // namespace

extern "C" {

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
    // A URL in its plainest spelling is valid as it stands; any other is parsed whole to say what is wrong.
    if (!humus::transport::is_plain_http_url(url)) {
      humus::Result<humus::transport::ClientUrl> parsed = humus::transport::ClientUrl::parse(url);
      if (!parsed.ok()) {
        return report(Status(Code::kInvalidArgument, "url: " + parsed.status().message(), {"url"}), err);
      }
      const std::string& scheme = parsed->parts().scheme;
      if (scheme != "http" && scheme != "https") {
        return report(Status(Code::kInvalidArgument,
                             "url: the scheme must be http or https, got \"" + scheme + "\"", {"url"}),
                      err);
      }
    }
    auto request = std::make_unique<humus_request>();
    request->request.method = method;
    request->request.url = url;
    *out = publish(request.release());
    return HUMUS_OK;
  });
}

HUMUS_API humus_status humus_request_set_header(humus_request* r, const char* name, const char* value,
                                                humus_error** err) {
  return guard(err, [&]() -> humus_status {
    if (live(r) == nullptr) return bad_handle("humus_request_set_header", "r", err);
    if (name == nullptr) return null_argument("humus_request_set_header", "name", err);
    if (value == nullptr) return null_argument("humus_request_set_header", "value", err);
    if (Status st = humus::settings::check_header(name, value); !st.ok()) {
      return report(Status(Code::kInvalidArgument, st.message(), {name}), err);
    }
    r->request.headers.add(name, value);
    return HUMUS_OK;
  });
}

HUMUS_API humus_status humus_request_remove_header(humus_request* r, const char* name, humus_error** err) {
  return guard(err, [&]() -> humus_status {
    if (live(r) == nullptr) return bad_handle("humus_request_remove_header", "r", err);
    if (name == nullptr) return null_argument("humus_request_remove_header", "name", err);
    // The names a caller may not set it may not leave out either: without Host or the framing, a request
    // is another request (docs/transport.md §10.5).
    if (Status st = humus::settings::check_header(name, ""); !st.ok()) {
      return report(Status(Code::kInvalidArgument, st.message(), {name}), err);
    }
    humus::client::Request& request = r->request;
    request.headers.remove(name);
    const bool known = std::any_of(request.omitted_headers.begin(), request.omitted_headers.end(),
                                   [&](const std::string& o) { return humus::equals_ignore_case(o, name); });
    if (!known) request.omitted_headers.emplace_back(name);
    return HUMUS_OK;
  });
}

HUMUS_API humus_status humus_request_set_body(humus_request* r, const void* data, size_t len) {
  return guard(nullptr, [&]() -> humus_status {
    if (live(r) == nullptr) return bad_handle("humus_request_set_body", "r", nullptr);
    if (data == nullptr && len > 0) return null_argument("humus_request_set_body", "data", nullptr);
    r->request.body = std::make_shared<const std::string>(static_cast<const char*>(data), len);
    r->request.body_source = nullptr;
    return HUMUS_OK;
  });
}

HUMUS_API humus_status humus_request_set_body_reader(humus_request* r, const humus_body_reader* reader,
                                                     humus_error** err) {
  return guard(err, [&]() -> humus_status {
    if (live(r) == nullptr) return bad_handle("humus_request_set_body_reader", "r", err);
    if (reader == nullptr) return null_argument("humus_request_set_body_reader", "reader", err);
    humus::Result<humus_body_reader> table = humus::accept_table(*reader);
    if (!table.ok()) return report(table.status(), err);
    if (table->read == nullptr) return report(Status(Code::kProgram, "body reader: read is NULL", {"read"}), err);
    if (table->length < -1) {
      return report(Status(Code::kInvalidArgument, "body reader: length must be >= 0, or -1 for unknown",
                           {"length"}), err);
    }
    r->request.body_source = std::make_shared<CBodySource>(*table);
    r->request.body = nullptr;
    return HUMUS_OK;
  });
}

HUMUS_API humus_status humus_request_set_idempotency_key(humus_request* r, const char* key, humus_error** err) {
  return guard(err, [&]() -> humus_status {
    if (live(r) == nullptr) return bad_handle("humus_request_set_idempotency_key", "r", err);
    if (key == nullptr) return null_argument("humus_request_set_idempotency_key", "key", err);
    if (Status st = humus::settings::check_header("Idempotency-Key", key); !st.ok() || *key == '\0') {
      return report(Status(Code::kInvalidArgument, "Idempotency-Key: must be non-empty, without CR, LF or NUL",
                           {"Idempotency-Key"}), err);
    }
    r->request.headers.set("Idempotency-Key", key);
    return HUMUS_OK;
  });
}

HUMUS_API humus_status humus_request_set_retry(humus_request* r, int32_t mode, humus_error** err) {
  return guard(err, [&]() -> humus_status {
    if (live(r) == nullptr) return bad_handle("humus_request_set_retry", "r", err);
    switch (mode) {
      case HUMUS_RETRY_MODE_DEFAULT: r->request.retry = humus::retry::RetryOverride::kDefault; return HUMUS_OK;
      case HUMUS_RETRY_MODE_FORBID: r->request.retry = humus::retry::RetryOverride::kForbid; return HUMUS_OK;
      case HUMUS_RETRY_MODE_FORCE: r->request.retry = humus::retry::RetryOverride::kForce; return HUMUS_OK;
      default:
        return report(Status(Code::kInvalidArgument,
                             "retry: mode " + std::to_string(mode) +
                                 " is not HUMUS_RETRY_MODE_DEFAULT, _FORBID or _FORCE",
                             {"retry"}),
                      err);
    }
  });
}

HUMUS_API humus_status humus_request_set_follow_redirects(humus_request* r, int32_t follow, humus_error** err) {
  return guard(err, [&]() -> humus_status {
    if (live(r) == nullptr) return bad_handle("humus_request_set_follow_redirects", "r", err);
    if (follow != 0 && follow != 1) {
      return report(Status(Code::kInvalidArgument,
                           "follow_redirects: " + std::to_string(follow) + " is not 0 (return the 3xx) or 1 (follow)",
                           {"follow_redirects"}),
                    err);
    }
    r->request.follow_redirects = follow == 1;
    return HUMUS_OK;
  });
}

HUMUS_API humus_status humus_request_set_timeout_ms(humus_request* r, int64_t ms, humus_error** err) {
  return guard(err, [&]() -> humus_status {
    if (live(r) == nullptr) return bad_handle("humus_request_set_timeout_ms", "r", err);
    if (ms <= 0 || ms > 3'600'000) {
      return report(Status(Code::kInvalidArgument, "timeout: must be > 0 and <= 1h (deadlines cannot be turned off)",
                           {"timeout"}), err);
    }
    r->request.timeout = std::chrono::milliseconds(ms);
    return HUMUS_OK;
  });
}

HUMUS_API humus_status humus_request_set_context(humus_request* r, const char* traceparent, const char* tracestate,
                                                 const char* baggage, const char* request_id,
                                                 const char* authorization, humus_error** err) {
  return guard(err, [&]() -> humus_status {
    if (live(r) == nullptr) return bad_handle("humus_request_set_context", "r", err);
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
  return guard(nullptr, [&]() -> humus_status {
    if (live(r) == nullptr) return bad_handle("humus_request_set_cancel", "r", nullptr);
    if (c != nullptr && live(c) == nullptr) return bad_handle("humus_request_set_cancel", "c", nullptr);
    r->cancel = c == nullptr ? nullptr : c->token;
    return HUMUS_OK;
  });
}

HUMUS_API void humus_request_free(humus_request* r) {
  if (retire(r)) delete r;
}

HUMUS_API humus_status humus_cancel_new(humus_cancel** out) {
  return guard(nullptr, [&]() -> humus_status {
    if (out == nullptr) return null_argument("humus_cancel_new", "out", nullptr);
    *out = publish(new humus_cancel());
    return HUMUS_OK;
  });
}

HUMUS_API void humus_cancel_trigger(humus_cancel* c) {
  if (live(c) != nullptr) c->token->cancel();
}

HUMUS_API void humus_cancel_free(humus_cancel* c) {
  if (retire(c)) delete c;
}

}  // extern "C"
