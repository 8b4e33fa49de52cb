#include "client/body_stream.h"

#include <algorithm>

namespace humus::client {

ResponseStream::ResponseStream(std::unique_ptr<transport::BodyStream> wire, PendingVerdict verdict,
                               CancelToken* cancel, bulkhead::Slot slot)
    : wire_(std::move(wire)), verdict_(verdict), cancel_(cancel), slot_(std::move(slot)) {}

void ResponseStream::settle(breaker::Outcome outcome) {
  if (settled_) return;
  settled_ = true;
  // A failing breaker policy already counted the result as a failure (breaker.h); there is no call left to
  // end with its error.
  (void)verdict_.breaker->record(verdict_.permit, outcome);
  verdict_.metrics->outcome(outcome);
}

Result<size_t> ResponseStream::read(char* buf, size_t cap) {
  if (!failure_.ok()) return failure_;
  if (wire_ == nullptr) return size_t{0};
  transport::BodyRead r = wire_->read(buf, cap);
  if (r.error == Code::kOk) {
    if (r.n > 0 || cap == 0) return r.n;
    wire_.reset();  // the end: the connection goes back to the pool
    settle(verdict_.outcome);
    slot_ = bulkhead::Slot();
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
  wire_.reset();
  slot_ = bulkhead::Slot();
  return failure_;
}

Status ResponseStream::read_rest(std::string& body, uint64_t limit) {
  constexpr size_t kPiece = 64 * 1024;
  while (wire_ != nullptr || !failure_.ok()) {
    if (body.size() >= limit) {
      // One byte more tells a body of exactly `limit` from a longer one.
      char probe = 0;
      Result<size_t> n = read(&probe, 1);
      if (!n.ok()) return n.status();
      if (*n == 0) return Status();
      settle(breaker::Outcome::kIgnored);
      wire_.reset();
      slot_ = bulkhead::Slot();
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
  if (wire_ == nullptr) return;
  wire_.reset();  // closes the connection of a body not read to its end
  settle(verdict_.outcome);
  slot_ = bulkhead::Slot();
}

}  // namespace humus::client
