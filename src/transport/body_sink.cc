#include "transport/body_sink.h"

#include <curl/curl.h>

#include <algorithm>
#include <cstring>

namespace humus::transport {

void BodySink::buffer_into(std::string* body, uint64_t limit) {
  streaming_ = false;
  body_ = body;
  limit_ = limit;
  over_limit_ = false;
  buf_ = nullptr;
  cap_ = taken_ = 0;
  pending_.clear();
  pending_at_ = 0;
  paused_ = false;
}

void BodySink::stream() {
  buffer_into(nullptr, UINT64_MAX);
  streaming_ = true;
}

size_t BodySink::write(const char* data, size_t n) {
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
    // The reader has not taken what the last write left: libcurl keeps this write and hands it over again
    // after curl_easy_pause(CURLPAUSE_CONT).
    paused_ = true;
    return CURL_WRITEFUNC_PAUSE;
  }
  const size_t fits = std::min(n, cap_ - taken_);
  if (fits > 0) std::memcpy(buf_ + taken_, data, fits);
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

size_t BodySink::drain(char* buf, size_t cap) {
  const size_t n = std::min(cap, pending_.size() - pending_at_);
  if (n > 0) std::memcpy(buf, pending_.data() + pending_at_, n);
  pending_at_ += n;
  if (pending_at_ == pending_.size()) {
    pending_.clear();
    pending_at_ = 0;
  }
  return n;
}

void grow_within(std::string& body, size_t needed, uint64_t limit) {
  constexpr size_t kJump = size_t{1} << 20;
  if (needed <= body.capacity()) return;
  if (needed <= kJump || limit <= kJump) {
    body.reserve(std::max(needed, body.capacity() * 2));  // at most twice a limit of 1 MiB or less
    return;
  }
  std::string whole;
  whole.reserve(static_cast<size_t>(std::max<uint64_t>(limit, needed)));  // a fresh string: exactly this
  whole.append(body);
  body.swap(whole);
}

bool strip_decoded_headers(Headers& headers) {
  const std::string* coding = headers.find("Content-Encoding");
  if (coding == nullptr || coding->empty() || equals_ignore_case(*coding, "identity")) return false;
  headers.remove("Content-Encoding");
  headers.remove("Content-Length");
  return true;
}

}  // namespace humus::transport
