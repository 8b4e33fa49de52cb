// The C functions of the response section of include/humus_http.h: reading a response, whole or streamed.
#include <algorithm>
#include <cstring>
#include <future>
#include <optional>
#include <memory>

#include "capi/client_capi.h"
#include "capi/guard.h"
#include "client/body_stream.h"

using humus::Code;
using humus::Status;
using humus::capi::bad_handle;
using humus::capi::guard;
using humus::capi::live;
using humus::capi::null_argument;
using humus::capi::report;
using humus::capi::retire;

namespace {

// Hands out bytes of the body already in memory (read ahead of a stream, or all of it): true when some were.
bool read_buffered(humus_response* resp, void* buf, size_t cap, size_t* n) {
  humus::client::Response& response = resp->response;
  if (resp->read_at >= response.body.size()) return false;
  const size_t k = std::min(cap, response.body.size() - resp->read_at);
  std::memcpy(buf, response.body.data() + resp->read_at, k);
  resp->read_at += k;
  if (resp->read_at == response.body.size() && response.stream != nullptr) {
    // The bytes read ahead are handed out: the rest comes from the connection.
    std::string().swap(response.body);
    resp->read_at = 0;
  }
  *n = k;
  return true;
}

// Closes a body that lives on the loop (its result counted) and frees the response: on the loop thread. A ring
// reading it ahead issues no read after this, and its pending one completes with kCancelled as the body closes.
void close_on_loop(humus_response* resp) {
  if (resp->ring != nullptr) resp->ring->close();
  if (resp->response.stream != nullptr) resp->response.stream->close();
  delete resp;
}

humus_status read_elsewhere(const char* function, humus_error** err) {
  return report(Status(Code::kMisuse, std::string(function) +
                                          ": resp came from humus_client_submit_open; its body is read with "
                                          "humus_response_read_async or humus_response_take"),
                err);
}

// Loop thread: the next bytes of a body on the loop, the ones read ahead before a retry first. `done` may run
// before this returns.
void read_next(humus_response* resp, char* buf, size_t cap, humus::client::ResponseStream::ReadDone done) {
  size_t n = 0;
  if (read_buffered(resp, buf, cap, &n)) {
    done(n);
  } else if (resp->response.stream == nullptr) {
    done(size_t{0});
  } else {
    resp->response.stream->read_async(buf, cap, std::move(done));
  }
}

// Loop thread: one humus_response_read_async.
void read_on_loop(humus_response* resp, void* buf, size_t cap, humus_read_done on_read, void* user_data) {
  // Cleared before on_read runs, so on_read may start the next read.
  read_next(resp, static_cast<char*>(buf), cap, [resp, on_read, user_data](humus::Result<size_t> got) {
    resp->reading.store(false, std::memory_order_release);
    if (got.ok()) {
      on_read(user_data, HUMUS_OK, *got, nullptr);
      return;
    }
    humus_error* error = nullptr;
    const humus_status status = report(got.status(), &error, resp->response.attempts);
    on_read(user_data, status, 0, error);
  });
}

// The Content-Length a response declared, if it is one number.
std::optional<uint64_t> content_length(const humus::client::Response& response) {
  const std::string* v = response.headers.find("content-length");
  if (v == nullptr || v->empty() || v->size() > 19) return std::nullopt;
  uint64_t n = 0;
  for (const char c : *v) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + static_cast<uint64_t>(c - '0');
  }
  return n;
}

// humus_response_read, or with `wait` humus_response_read_ready: *n == 0 with wait->fd >= 0 is "nothing yet".
humus_status read_body(const char* function, humus_response* resp, void* buf, size_t cap, size_t* n,
                       humus::transport::BodyWait* wait, humus_error** err) {
  if (live(resp) == nullptr) return bad_handle(function, "resp", err);
  if (buf == nullptr) return null_argument(function, "buf", err);
  if (n == nullptr) return null_argument(function, "n", err);
  if (cap == 0)
    return report(Status(Code::kInvalidArgument, std::string(function) + ": cap must be > 0", {"cap"}), err);
  if (resp->loop != nullptr) return read_elsewhere(function, err);
  humus::client::Response& response = resp->response;
  if (read_buffered(resp, buf, cap, n)) return HUMUS_OK;
  if (response.stream == nullptr) {
    *n = 0;
    return HUMUS_OK;
  }
  humus::Result<size_t> got = wait == nullptr
                                  ? response.stream->read(static_cast<char*>(buf), cap)
                                  : response.stream->read_ready(static_cast<char*>(buf), cap, wait);
  if (!got.ok()) return report(got.status(), err, response.attempts);
  *n = *got;
  return HUMUS_OK;
}

// Redirect `i` of a live response, or nullptr.
const humus::client::Redirect* hop(const humus_response* resp, size_t i) {
  if (live(resp) == nullptr || i >= resp->response.history.size()) return nullptr;
  return &resp->response.history[i];
}

}  // namespace

extern "C" {

HUMUS_API humus_status humus_response_read(humus_response* resp, void* buf, size_t cap, size_t* n,
                                           humus_error** err) {
  return guard(err, [&]() -> humus_status {
    return read_body("humus_response_read", resp, buf, cap, n, nullptr, err);
  });
}

HUMUS_API humus_status humus_response_read_ready(humus_response* resp, void* buf, size_t cap, size_t* n,
                                                 int* wait_fd, int64_t* wait_ms, humus_error** err) {
  return guard(err, [&]() -> humus_status {
    if (live(resp) == nullptr) return bad_handle("humus_response_read_ready", "resp", err);
    if (wait_fd == nullptr) return null_argument("humus_response_read_ready", "wait_fd", err);
    if (wait_ms == nullptr) return null_argument("humus_response_read_ready", "wait_ms", err);
    *wait_fd = -1;
    *wait_ms = -1;
    humus::transport::BodyWait wait;
    const humus_status status = read_body("humus_response_read_ready", resp, buf, cap, n, &wait, err);
    *wait_fd = wait.fd;
    *wait_ms = wait.ms;
    return status;
  });
}

HUMUS_API humus_status humus_response_read_async(humus_response* resp, void* buf, size_t cap, humus_read_done on_read,
                                                 void* user_data, humus_error** err) {
  return guard(err, [&]() -> humus_status {
    if (live(resp) == nullptr) return bad_handle("humus_response_read_async", "resp", err);
    if (buf == nullptr) return null_argument("humus_response_read_async", "buf", err);
    if (on_read == nullptr) return null_argument("humus_response_read_async", "on_read", err);
    if (cap == 0) {
      return report(Status(Code::kInvalidArgument, "humus_response_read_async: cap must be > 0", {"cap"}), err);
    }
    if (resp->loop == nullptr) {
      return report(Status(Code::kMisuse, "humus_response_read_async: resp did not come from humus_client_submit_open; "
                                          "read it with humus_response_read"),
                    err);
    }
    if (resp->ring != nullptr) {
      return report(Status(Code::kMisuse, "humus_response_read_async: resp is read ahead; take its bytes with "
                                          "humus_response_take"),
                    err);
    }
    if (resp->reading.exchange(true, std::memory_order_acq_rel)) {
      return report(Status(Code::kMisuse, "humus_response_read_async: a read of resp is pending already (one at a "
                                          "time: start the next from on_read)"),
                    err);
    }
    resp->loop->post([resp, buf, cap, on_read, user_data] { read_on_loop(resp, buf, cap, on_read, user_data); });
    return HUMUS_OK;
  });
}

HUMUS_API humus_status humus_response_read_ahead(humus_response* resp, size_t ring_bytes, humus_body_ready ready,
                                                 void* user_data, int* whole, humus_error** err) {
  return guard(err, [&]() -> humus_status {
    if (live(resp) == nullptr) return bad_handle("humus_response_read_ahead", "resp", err);
    if (ready == nullptr) return null_argument("humus_response_read_ahead", "ready", err);
    if (resp->loop == nullptr) {
      return report(Status(Code::kMisuse, "humus_response_read_ahead: resp did not come from humus_client_submit_open; "
                                          "read it with humus_response_read"),
                    err);
    }
    // Taken for good: no humus_response_read_async may start beside the ring, nor a second ring.
    if (resp->ring != nullptr || resp->reading.exchange(true, std::memory_order_acq_rel)) {
      return report(Status(Code::kMisuse, "humus_response_read_ahead: resp is read already (a read is pending, or "
                                          "it is read ahead)"),
                    err);
    }
    const humus::client::BodyRing::Shape shape =
        humus::client::BodyRing::shape_for(content_length(resp->response), ring_bytes, whole != nullptr);
    if (whole != nullptr) *whole = shape.whole ? 1 : 0;
    resp->ring = humus::client::BodyRing::start(
        *resp->loop,
        [resp](char* buf, size_t cap, humus::client::BodyRing::ReadDone done) {
          read_next(resp, buf, cap, std::move(done));  // the ring reads only until close_on_loop closed it
        },
        shape, [ready, user_data, resp] { ready(user_data, resp); });
    return HUMUS_OK;
  });
}

HUMUS_API humus_status humus_response_take(humus_response* resp, void* buf, size_t cap, uint32_t flags, size_t* n,
                                           int32_t* took, humus_error** err) {
  return guard(err, [&]() -> humus_status {
    if (live(resp) == nullptr) return bad_handle("humus_response_take", "resp", err);
    if (buf == nullptr) return null_argument("humus_response_take", "buf", err);
    if (n == nullptr) return null_argument("humus_response_take", "n", err);
    if (took == nullptr) return null_argument("humus_response_take", "took", err);
    if (cap == 0) return report(Status(Code::kInvalidArgument, "humus_response_take: cap must be > 0", {"cap"}), err);
    if (resp->ring == nullptr) {
      return report(Status(Code::kMisuse, "humus_response_take: resp is not read ahead (humus_response_read_ahead)"),
                    err);
    }
    using Took = humus::client::BodyRing::Took;
    const humus::client::BodyRing::Taken t =
        resp->ring->take(static_cast<char*>(buf), cap, (flags & HUMUS_TAKE_DROP) != 0);
    *n = t.n;
    switch (t.kind) {
      case Took::kBytes:
        *took = HUMUS_TOOK_BYTES;
        return HUMUS_OK;
      case Took::kLast:
        *took = HUMUS_TOOK_LAST;
        return HUMUS_OK;
      case Took::kEnd:
        *took = HUMUS_TOOK_END;
        return HUMUS_OK;
      case Took::kWait:
        *took = HUMUS_TOOK_WAIT;
        return HUMUS_OK;
      case Took::kFailed:
        break;
    }
    *took = HUMUS_TOOK_END;
    return report(t.failure, err, resp->response.attempts);
  });
}

HUMUS_API void humus_response_hurry(humus_response* resp) {
  if (live(resp) == nullptr || resp->ring == nullptr) return;
  resp->ring->hurry();
}

HUMUS_API int32_t humus_response_status(const humus_response* resp) {
  return live(resp) == nullptr ? 0 : resp->response.status;
}

HUMUS_API int32_t humus_response_attempts(const humus_response* resp) {
  return live(resp) == nullptr ? 0 : resp->response.attempts;
}

HUMUS_API const char* humus_response_header(const humus_response* resp, const char* name) {
  if (live(resp) == nullptr || name == nullptr) return nullptr;
  const std::string* value = resp->response.headers.find(name);
  return value == nullptr ? nullptr : value->c_str();
}

HUMUS_API size_t humus_response_header_count(const humus_response* resp) {
  return live(resp) == nullptr ? 0 : resp->response.headers.size();
}

HUMUS_API humus_status humus_response_header_at(const humus_response* resp, size_t i, const char** name,
                                                const char** value) {
  return guard(nullptr, [&]() -> humus_status {
    if (live(resp) == nullptr) return bad_handle("humus_response_header_at", "resp", nullptr);
    if (name == nullptr || value == nullptr) return null_argument("humus_response_header_at", "name/value", nullptr);
    const auto& fields = resp->response.headers.fields();
    if (i >= fields.size()) {
      return report(Status(Code::kInvalidArgument, "humus_response_header_at: index out of range", {"i"}), nullptr);
    }
    *name = fields[i].first.c_str();
    *value = fields[i].second.c_str();
    return HUMUS_OK;
  });
}

HUMUS_API humus_status humus_response_body(humus_response* resp, const void** data, size_t* len,
                                           humus_error** err) {
  return guard(err, [&]() -> humus_status {
    if (live(resp) == nullptr) return bad_handle("humus_response_body", "resp", err);
    if (data == nullptr || len == nullptr) return null_argument("humus_response_body", "data/len", err);
    if (resp->loop != nullptr) return read_elsewhere("humus_response_body", err);
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
  return live(resp) == nullptr ? "" : resp->response.http_version.c_str();
}

HUMUS_API const char* humus_response_url(const humus_response* resp) {
  return live(resp) == nullptr ? "" : resp->response.url.c_str();
}

HUMUS_API size_t humus_response_redirect_count(const humus_response* resp) {
  return live(resp) == nullptr ? 0 : resp->response.history.size();
}

HUMUS_API humus_status humus_response_redirect_at(const humus_response* resp, size_t i, int32_t* status,
                                                  const char** url) {
  return guard(nullptr, [&]() -> humus_status {
    if (live(resp) == nullptr) return bad_handle("humus_response_redirect_at", "resp", nullptr);
    if (status == nullptr || url == nullptr) return null_argument("humus_response_redirect_at", "status/url", nullptr);
    const auto& history = resp->response.history;
    if (i >= history.size()) {
      return report(Status(Code::kInvalidArgument, "humus_response_redirect_at: index out of range", {"i"}), nullptr);
    }
    *status = history[i].status;
    *url = history[i].url.c_str();
    return HUMUS_OK;
  });
}

HUMUS_API const char* humus_response_reason(const humus_response* resp) {
  return live(resp) == nullptr ? "" : resp->response.reason.c_str();
}

HUMUS_API const char* humus_response_redirect_reason(const humus_response* resp, size_t i) {
  const humus::client::Redirect* r = hop(resp, i);
  return r == nullptr ? "" : r->reason.c_str();
}

HUMUS_API const char* humus_response_redirect_http_version(const humus_response* resp, size_t i) {
  const humus::client::Redirect* r = hop(resp, i);
  return r == nullptr ? "" : r->http_version.c_str();
}

HUMUS_API size_t humus_response_redirect_header_count(const humus_response* resp, size_t i) {
  const humus::client::Redirect* r = hop(resp, i);
  return r == nullptr ? 0 : r->headers.size();
}

HUMUS_API humus_status humus_response_redirect_header_at(const humus_response* resp, size_t i, size_t j,
                                                         const char** name, const char** value) {
  return guard(nullptr, [&]() -> humus_status {
    if (live(resp) == nullptr) return bad_handle("humus_response_redirect_header_at", "resp", nullptr);
    if (name == nullptr || value == nullptr) {
      return null_argument("humus_response_redirect_header_at", "name/value", nullptr);
    }
    const humus::client::Redirect* r = hop(resp, i);
    if (r == nullptr) {
      return report(Status(Code::kInvalidArgument, "humus_response_redirect_header_at: redirect index out of range",
                           {"i"}), nullptr);
    }
    const auto& fields = r->headers.fields();
    if (j >= fields.size()) {
      return report(Status(Code::kInvalidArgument, "humus_response_redirect_header_at: header index out of range",
                           {"j"}), nullptr);
    }
    *name = fields[j].first.c_str();
    *value = fields[j].second.c_str();
    return HUMUS_OK;
  });
}

HUMUS_API void humus_response_free(humus_response* resp) {
  if (!retire(resp)) return;
  if (resp->loop != nullptr) {
    // Its body lives on the loop: closed there, after the reads posted before (a pending one completes with
    // HUMUS_E_CANCELLED first).
    resp->loop->post([resp] { close_on_loop(resp); });
    return;
  }
  if (const std::shared_ptr<humus::transport::FreeOnLoop> home = std::move(resp->home);
      home != nullptr && home->give_back(resp, [](void* r) { delete static_cast<humus_response*>(r); })) {
    return;
  }
  delete resp;
}

HUMUS_API void humus_response_close(humus_response* resp) {
  humus_response* known = live(resp);
  if (known == nullptr || known->loop == nullptr || known->loop->on_loop_thread()) {
    // Closed at once already, or on the loop, which cannot wait for itself: humus_response_free's order.
    humus_response_free(resp);
    return;
  }
  humus::transport::EventLoop* const resp_loop = known->loop;
  if (!retire(resp)) return;
  // The task owns the promise: this thread may return (and unwind) as soon as it is set, while set_value
  // itself is still finishing on the loop thread.
  auto closed = std::make_shared<std::promise<void>>();
  std::future<void> done = closed->get_future();
  resp_loop->post([resp, closed] {
    close_on_loop(resp);
    closed->set_value();
  });
  if (resp_loop->caller_driven()) {
    resp_loop->drive_until(
        [&] { return done.wait_for(std::chrono::seconds(0)) == std::future_status::ready; });
  } else {
    done.wait();
  }
}

}  // extern "C"
