#include "client/body_stream.h"

#include <algorithm>

namespace humus::client {

ResponseStream::ResponseStream(std::unique_ptr<transport::ResponseBody> body, PendingVerdict verdict,
                               CancelToken* cancel, bulkhead::Slot slot)
    : body_(std::move(body)), verdict_(verdict), cancel_(cancel), slot_(std::move(slot)) {}

ResponseStream::~ResponseStream() {
  // After unsubscribe() returns the listener is not running and never runs again (cancel.h).
  if (watch_id_ != 0) watched_->unsubscribe(watch_id_);
  close();
}

void ResponseStream::settle(breaker::Outcome outcome) {
  if (settled_) return;
  settled_ = true;
  // A failing breaker policy counted a failure, as it does for a buffered response; there is no call left to
  // end with its error.
  (void)verdict_.result.record(outcome);
}

void ResponseStream::drop_body() {
  body_.reset();  // at the end the connection goes back to the pool; before it, it is closed
  slot_ = bulkhead::Slot();
}

Result<size_t> ResponseStream::took(transport::BodyRead r) {
  if (r.error == Code::kOk) {
    if (r.n > 0) return r.n;
    drop_body();
    settle(verdict_.outcome);
    return size_t{0};
  }
  // docs/retries.md §5.1: a body read failing later is a breaker failure, or ignored when the caller cancelled.
  const bool cancelled = r.error == Code::kCancelled || (cancel_ != nullptr && cancel_->cancelled());
  if (cancelled) {
    settle(breaker::Outcome::kIgnored);
    failure_ = Status(Code::kCancelled, "the call was cancelled while its body was read");
  } else {
    settle(breaker::Outcome::kFailure);
    failure_ = Status(r.error, "reading the response body: " + r.message);
  }
  drop_body();
  return failure_;
}

Result<size_t> ResponseStream::read(char* buf, size_t cap) {
  if (!failure_.ok()) return failure_;
  if (body_ == nullptr || cap == 0) return size_t{0};
  transport::BodyRead r;
  body_->read(buf, cap, [&r](transport::BodyRead got) { r = std::move(got); });  // completes in place
  return took(std::move(r));
}

Result<size_t> ResponseStream::read_ready(char* buf, size_t cap, transport::BodyWait* wait) {
  *wait = transport::BodyWait{};
  if (!failure_.ok()) return failure_;
  if (body_ == nullptr) return size_t{0};
  transport::BodyRead r = body_->read_ready(buf, cap, wait);
  if (r.error == Code::kOk && r.n == 0 && wait->fd >= 0) return size_t{0};  // nothing yet, not the end
  *wait = transport::BodyWait{};
  return took(std::move(r));
}

void ResponseStream::read_async(char* buf, size_t cap, ReadDone done) {
  if (!failure_.ok() || body_ == nullptr) {
    // Failed or ended already: told as a task of its own, as a read of the wire would be.
    Result<size_t> now = failure_.ok() ? Result<size_t>(size_t{0}) : Result<size_t>(failure_);
    loop_->post([done = std::move(done), now = std::move(now)] { done(now); });
    return;
  }
  pending_ = std::move(done);
  // Weak: a body closed while its read was on its way has told the reader already (close()).
  body_->read(buf, cap, [weak = weak_from_this()](transport::BodyRead r) {
    std::shared_ptr<ResponseStream> self = weak.lock();
    if (self == nullptr || !self->pending_) return;
    ReadDone reader = std::move(self->pending_);
    self->pending_ = nullptr;
    reader(self->took(std::move(r)));
  });
}

void ResponseStream::attach(transport::EventLoop& loop, std::shared_ptr<CancelToken> token) {
  loop_ = &loop;
  cancel_ = nullptr;  // the call's own token goes with the call
  if (token == nullptr) return;
  watched_ = std::move(token);
  cancel_ = watched_.get();
  // The listener runs on the cancelling thread: it only posts, and the stream is looked up on the loop, so
  // its last reference is never dropped elsewhere.
  watch_id_ = watched_->subscribe([weak = weak_from_this(), &loop] {
    loop.post([weak] {
      if (std::shared_ptr<ResponseStream> self = weak.lock(); self != nullptr && self->body_ != nullptr) {
        self->body_->cancel();
      }
    });
  });  // cancelled already: the listener ran now
}

Status ResponseStream::read_rest(std::string& body, uint64_t limit) {
  constexpr size_t kPiece = 64 * 1024;
  while (body_ != nullptr || !failure_.ok()) {
    if (body.size() >= limit) {
      // One byte more tells a body of exactly `limit` from a longer one.
      char probe = 0;
      Result<size_t> n = read(&probe, 1);
      if (!n.ok()) return n.status();
      if (*n == 0) return Status();
      settle(breaker::Outcome::kIgnored);
      drop_body();
      failure_ = Status(Code::kTooLarge, "the response body passed max_response_body (" + std::to_string(limit) +
                                             " bytes)");
      return failure_;
    }
    const size_t room = static_cast<size_t>(std::min<uint64_t>(kPiece, limit - body.size()));
    const size_t at = body.size();
    transport::grow_within(body, at + room, limit);
    body.resize(at + room);
    Result<size_t> n = read(body.data() + at, room);
    body.resize(at + (n.ok() ? *n : 0));
    if (!n.ok()) return n.status();
    if (*n == 0) return Status();
  }
  return Status();
}

void ResponseStream::close() {
  if (pending_) {
    // Freed with a read in flight: the reader hears first that it will get no bytes.
    ReadDone done = std::move(pending_);
    pending_ = nullptr;
    done(Status(Code::kCancelled, "the response was freed while a read of its body was pending"));
  }
  if (ended()) return;
  drop_body();  // closes the connection of a body not read to its end
  settle(verdict_.outcome);
}

}  // namespace humus::client
