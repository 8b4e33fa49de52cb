#include "client/body_ring.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace humus::client {

BodyRing::Shape BodyRing::shape_for(std::optional<uint64_t> content_length, size_t asked, bool hold_whole) {
  Shape s;
  const bool small = content_length && *content_length < kWholeBody;
  // A body the ring can hold gets a ring of its size: the library's choice for one under kWholeBody, the
  // caller's when its body is shorter than asked.
  if (small && (asked == 0 || hold_whole || *content_length < asked)) {
    s.capacity = static_cast<size_t>(*content_length) + 1;
    s.whole = hold_whole;
    s.fits = true;
  } else if (asked > 0) {
    s.fits = content_length && *content_length < asked;
    s.capacity = s.fits ? static_cast<size_t>(*content_length) + 1 : asked;
  } else {
    s.capacity = content_length && *content_length >= kLargeBody ? kLargeRing : kRing;
  }
  return s;
}

std::shared_ptr<BodyRing> BodyRing::start(transport::EventLoop& loop, Source source, Shape shape, Ready ready) {
  auto ring = std::make_shared<BodyRing>(loop, std::move(source), shape, std::move(ready));
  MutexLock lock(ring->mu_);
  ring->read_more();
  return ring;
}

BodyRing::BodyRing(transport::EventLoop& loop, Source source, Shape shape, Ready ready)
    : loop_(loop),
      source_(std::move(source)),
      ready_(std::move(ready)),
      // A ring its body fits in reads into any room it has: the rest is all that will come, and a ring held
      // whole waiting for more room would wait for a take that never comes before the body is in.
      min_room_(shape.fits || shape.capacity < 2 * kMinRoom ? 1 : kMinRoom),
      whole_(shape.whole),
      ring_(new char[shape.capacity]),
      cap_(shape.capacity) {}

void BodyRing::read_more() {
  if (pending_ || ended_ || closed_) return;
  if (len_ == 0) head_ = 0;  // an empty ring reads into its whole length
  const size_t tail = (head_ + len_) % cap_;
  const size_t room = len_ == cap_ ? 0 : tail >= head_ ? cap_ - tail : head_ - tail;
  if (room < min_room_) return;
  pending_ = true;
  // Posted, never run here: take() runs on the reader's thread, and a read may complete before it returns.
  loop_.post([self = shared_from_this(), tail, room] { self->issue(tail, room); });
}

void BodyRing::issue(size_t at, size_t room) {
  {
    MutexLock lock(mu_);
    if (closed_) {
      pending_ = false;
      return;
    }
  }
  // The bytes from `at` are the loop's until on_read: take() copies only what lies before them.
  source_(ring_.get() + at, room, [self = shared_from_this()](Result<size_t> got) { self->on_read(std::move(got)); });
}

void BodyRing::on_read(Result<size_t> got) {
  bool wake = false;
  {
    MutexLock lock(mu_);
    pending_ = false;
    if (closed_) return;
    if (!got.ok()) {
      ended_ = true;
      failure_ = got.status();
    } else if (*got == 0) {
      ended_ = true;
    } else {
      len_ += *got;
    }
    flowing_ = got.ok() && *got >= kFullRead;
    read_more();
    wake = due();
  }
  if (wake) ready_();
}

bool BodyRing::due() {
  if (closed_) return false;
  if (whole_ && !told_whole_) {
    // A length that lied (more bytes than it said) fills the ring before the end: told then, so the reader
    // makes room instead of both sides waiting.
    if (!ended_ && len_ < cap_) return false;
    told_whole_ = true;
    waiting_ = Waiting::kNo;
    return true;
  }
  if (waiting_ == Waiting::kNo || (len_ == 0 && !ended_)) return false;
  const bool batch = ended_ || !pending_ || !flowing_ || len_ >= cap_ / 2;
  if (waiting_ == Waiting::kAny || batch) {
    waiting_ = Waiting::kNo;
    return true;
  }
  return false;
}

BodyRing::Taken BodyRing::take(char* buf, size_t cap, bool drop) {
  MutexLock lock(mu_);
  if (drop) {  // consumed unread: the tail, where a pending read lands, stays
    head_ = (head_ + len_) % cap_;
    len_ = 0;
    // A body that ended well before the cancel reached it must not read as whole now: what was dropped is
    // missing. Its result stays counted as it was; the takes say cancelled, as a pending read's would.
    if (ended_ && failure_.ok()) failure_ = Status(Code::kCancelled, "the call was cancelled while its body was read");
  }
  Taken t;
  while (t.n < cap && len_ > 0) {
    const size_t piece = std::min({cap_ - head_, len_, cap - t.n});
    std::memcpy(buf + t.n, ring_.get() + head_, piece);
    t.n += piece;
    head_ = (head_ + piece) % cap_;
    len_ -= piece;
  }
  if (t.n > 0) {
    t.kind = len_ == 0 && ended_ && failure_.ok() ? Took::kLast : Took::kBytes;
  } else if (!ended_) {
    waiting_ = Waiting::kBatch;
    t.kind = Took::kWait;
  } else if (failure_.ok()) {
    t.kind = Took::kEnd;
  } else {
    t.kind = Took::kFailed;
    t.failure = failure_;
  }
  read_more();
  return t;
}

void BodyRing::hurry() {
  bool wake = false;
  {
    MutexLock lock(mu_);
    if (waiting_ != Waiting::kBatch) return;
    waiting_ = Waiting::kAny;
    wake = due();
  }
  if (wake) ready_();
}

void BodyRing::close() {
  MutexLock lock(mu_);
  closed_ = true;
}

}  // namespace humus::client
