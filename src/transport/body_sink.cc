#include "transport/body_sink.h"

#include <curl/curl.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace humus::transport {

BodyRead ResponseBody::read_ready(char* buf, size_t cap, BodyWait* wait) {
  *wait = BodyWait{};
  BodyRead got;
  read(buf, cap, [&got](BodyRead r) { got = std::move(r); });
  return got;
}

void BodySink::buffer_into(std::string* body, uint64_t limit) {
  streaming_ = false;
  body_ = body;
  limit_ = limit;
  over_limit_ = false;
  buf_ = nullptr;
  cap_ = taken_ = 0;
  release_kept();
  paused_ = false;
  discarding_ = false;
}

void BodySink::stream() {
  buffer_into(nullptr, UINT64_MAX);
  streaming_ = true;
}

namespace {

// Copies a body's bytes into a reader's buffer. When the destination lies just past the source modulo 4 KiB
// (the two buffers' offsets in their pages differ by under 256 bytes), a large forward copy reads what
// aliases the stores it just made, and glibc's `rep movsb` path for copies of 4 KiB and more does not avoid
// that: a 1 GiB streamed download took 0.40 s of user time instead of 0.05 when the first write happened to
// put libcurl's buffer and the reader's 16 bytes apart in their pages, every write after it the same. Below
// that size glibc's vector loop copies such a pair backwards, so the copy goes in pieces under 4 KiB.
void copy_into_reader(char* dst, const char* src, size_t n) {
  constexpr uintptr_t kPage = 4096;
  constexpr size_t kPiece = 2048;
  if (((reinterpret_cast<uintptr_t>(dst) - reinterpret_cast<uintptr_t>(src)) & (kPage - 1)) >= 256 ||
      n < kPage) {
    std::memcpy(dst, src, n);
    return;
  }
  for (size_t at = 0; at < n; at += kPiece) std::memcpy(dst + at, src + at, std::min(kPiece, n - at));
}

}  // namespace

size_t BodySink::write(const char* data, size_t n) {
  if (discarding_) return n;
  if (!streaming_) {
    if (over_limit_) return 0;
    std::string& body = *body_;
    if (n > limit_ - std::min<uint64_t>(limit_, body.size())) {
      over_limit_ = true;
      return 0;
    }
    grow_within(body, body.size() + n, limit_);
    body.append(data, n);
    return n;
  }
  if (has_pending()) {
    if (buf_ != nullptr && pending_.size() - pending_at_ + n <= kKeepAhead) {
      // During a read, libcurl reads the socket again within one perform while it stays readable: the writes
      // past the reader's buffer are kept here, up to kKeepAhead, rather than paused, since a paused write
      // costs libcurl a copy of its own and a second hand-over (1.28 bytes copied per body byte, measured).
      // Between reads the rule stays one write, so a body left unread holds no more than that.
      if (pending_at_ > 0) {
        pending_.erase(0, pending_at_);
        pending_at_ = 0;
      }
      pending_.append(data, n);
      return n;
    }
    // The reader has not taken what the last writes left: libcurl keeps this write and hands it over again
    // after curl_easy_pause(CURLPAUSE_CONT).
    paused_ = true;
    return CURL_WRITEFUNC_PAUSE;
  }
  const size_t fits = std::min(n, cap_ - taken_);
  if (fits > 0) copy_into_reader(buf_ + taken_, data, fits);
  taken_ += fits;
  if (fits < n) {
    pending_.assign(data + fits, n - fits);
    pending_at_ = 0;
  }
  return n;
}

void BodySink::lend(char* buf, size_t cap) {
  buf_ = buf;
  cap_ = cap;
  taken_ = 0;
}

size_t BodySink::unlend() {
  const size_t n = taken_;
  buf_ = nullptr;
  cap_ = taken_ = 0;
  return n;
}

void BodySink::release_kept() {
  std::string().swap(pending_);
  pending_at_ = 0;
}

size_t BodySink::drain(char* buf, size_t cap) {
  const size_t n = std::min(cap, pending_.size() - pending_at_);
  if (n > 0) copy_into_reader(buf, pending_.data() + pending_at_, n);
  pending_at_ += n;
  if (pending_at_ == pending_.size()) {
    pending_.clear();
    pending_at_ = 0;
  }
  return n;
}

void grow_within(std::string& body, size_t needed, uint64_t limit) {
  constexpr size_t kLarge = size_t{1} << 20;
  const size_t have = body.capacity();
  if (needed <= have) return;
  const uint64_t grown = have < kLarge ? uint64_t{have} * 2 : uint64_t{have} * 4;
  const uint64_t target = std::max<uint64_t>(needed, std::min(grown, limit));
  // std::string::reserve would round a request up to twice its capacity: a fresh string takes exactly this.
  std::string fresh;
  fresh.reserve(static_cast<size_t>(target));
  fresh.append(body);
  body.swap(fresh);
}

void BodySink::expect(uint64_t length) {
  constexpr uint64_t kUpFront = uint64_t{1} << 20;  // a peer's Content-Length is a hint, not a promise
  if (streaming_ || body_ == nullptr || length > limit_ || body_->capacity() >= length) return;
  if (body_->empty()) body_->reserve(static_cast<size_t>(std::min(length, kUpFront)));
}

bool strip_decoded_headers(Headers& headers) {
  const std::string* coding = headers.find("Content-Encoding");
  if (coding == nullptr || coding->empty() || equals_ignore_case(*coding, "identity")) return false;
  headers.remove("Content-Encoding");
  headers.remove("Content-Length");
  return true;
}

}  // namespace humus::transport
