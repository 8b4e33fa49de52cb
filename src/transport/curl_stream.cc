#include "transport/curl_stream.h"

#include <sys/select.h>

#include <algorithm>
#include <chrono>

namespace humus::transport {

using std::chrono::duration_cast;
using std::chrono::milliseconds;

namespace {
constexpr milliseconds kConnectingPoll{20};
}  // namespace

CurlStream::CurlStream(CurlEasy& easy, CURLM* multi, const AttemptLimits& limits, CancelToken* cancel,
                       std::function<void(bool ended)> release)
    : easy_(easy), multi_(multi), limits_(limits), cancel_(cancel), release_(std::move(release)) {}

CurlStream::~CurlStream() {
  // Removing a transfer libcurl has not finished closes its connection (it cannot be reused half-read).
  if (added_) curl_multi_remove_handle(multi_, easy_.handle());
  easy_.sink().release_kept();  // the lane goes back to its pool: it holds none of this body's keep
  if (release_) release_(ended_);
}

void CurlStream::begin(const WireRequest& request) {
  easy_.prepare(request, limits_, std::chrono::steady_clock::now());
  easy_.stream_body();
  curl_multi_add_handle(multi_, easy_.handle());
  added_ = true;
}

WireResult CurlStream::open(const WireRequest& request) {
  begin(request);
  for (;;) {
    drive([this] { return easy_.headers_done(); });
    if (std::optional<WireResult> head = opened()) return std::move(*head);
  }
}

std::optional<WireResult> CurlStream::open_step(StepWait& wait) {
  const auto headers_in = [this] { return easy_.headers_done(); };
  for (;;) {
    wait = StepWait{};
    if (!poll(headers_in, wait)) drive(headers_in);
    if (!over() && !easy_.headers_done()) return std::nullopt;
    if (std::optional<WireResult> head = opened()) return head;
  }
}

std::optional<WireResult> CurlStream::opened() {
  if (!fresh_retried_ && ended_ && interrupt_ == Interrupt::kNone && easy_.ready_fresh_retry()) {
    fresh_retried_ = true;
    curl_multi_remove_handle(multi_, easy_.handle());
    ended_ = false;
    code_ = CURLE_OK;
    curl_multi_add_handle(multi_, easy_.handle());
    return std::nullopt;
  }
  if (easy_.headers_done() && interrupt_ == Interrupt::kNone && (!ended_ || code_ == CURLE_OK)) return easy_.head();
  // No response head: the attempt failed as a buffered one would have.
  return easy_.finish(code_, interrupt_);
}

namespace {

// How long a lane's driver may wait before driving libcurl again: until libcurl's next timer, the attempt's
// deadline (until the headers) or the call's, and while connecting at most kConnectingPoll.
long lane_wait_ms(CURLM* multi, CurlEasy& easy, const AttemptLimits& limits, Instant now) {
  long curl_wait = -1;
  curl_multi_timeout(multi, &curl_wait);
  const Instant until =
      easy.headers_done() ? limits.call_deadline : std::min(limits.attempt_deadline, limits.call_deadline);
  long wait_ms = static_cast<long>(duration_cast<milliseconds>(until - now).count()) + 1;
  if (curl_wait >= 0) wait_ms = std::min(wait_ms, curl_wait);
  // libcurl 7.88 gives up on an address of a name that did not answer within its share of the connect
  // timeout, but starts the next address only when driven again, and sets no timer for that: left to wait
  // for its next timer, the next address would get no time at all (F04). Until the connection is up, libcurl
  // is driven at least every kConnectingPoll.
  curl_off_t ready_us = 0;
  if (curl_easy_getinfo(easy.handle(), CURLINFO_PRETRANSFER_TIME_T, &ready_us) == CURLE_OK && ready_us == 0) {
    wait_ms = std::min<long>(wait_ms, kConnectingPoll.count());
  }
  return std::max(wait_ms, 0L);
}

}  // namespace

void drive_lane(CURLM* multi, CurlEasy& easy, const AttemptLimits& limits, CancelToken* cancel,
                const std::function<bool()>& enough, LaneProgress& progress, bool wait) {
  while (!progress.over() && !enough()) {
    int running = 0;
    curl_multi_perform(multi, &running);
    int queued = 0;
    while (CURLMsg* msg = curl_multi_info_read(multi, &queued)) {
      if (msg->msg == CURLMSG_DONE) {
        progress.code = msg->data.result;
        progress.ended = true;
      }
    }
    if (progress.ended || enough()) break;
    if (easy.kick_stalled_head()) continue;  // libcurl holds the rest of an HTTP/2 head: at once, no wait
    const Instant now = std::chrono::steady_clock::now();
    if (cancel != nullptr && cancel->cancelled()) {
      progress.interrupt = Interrupt::kCancelled;
    } else if (!easy.headers_done() && now >= limits.attempt_deadline) {
      progress.interrupt = Interrupt::kAttemptTimeout;
    } else if (now >= limits.call_deadline) {
      progress.interrupt = Interrupt::kCallTimeout;
    }
    if (progress.interrupt != Interrupt::kNone || !wait) break;
    const long wait_ms = lane_wait_ms(multi, easy, limits, now);
    curl_multi_poll(multi, nullptr, 0, static_cast<int>(std::min(wait_ms, 1000L)), nullptr);
  }
}

bool CurlStream::step(const std::function<bool()>& enough, BodyWait* wait) {
  StepWait any;
  if (!poll(enough, any)) return false;
  if (over() || enough()) return true;
  // Only a wait on one socket for reading: a wait for a write too (an HTTP/2 window update on a full send
  // buffer) is left to drive(), which waits for everything.
  if (any.write) return false;
  wait->fd = any.fd;
  wait->ms = any.ms;
  return true;
}

bool CurlStream::poll(const std::function<bool()>& enough, StepWait& wait) {
  // A few performs while libcurl says it has more to do at once (bytes it holds decrypted, a transfer it
  // stopped to let others run): a wait on the socket would not see those.
  for (int round = 0; round < 4; ++round) {
    LaneProgress progress{code_, ended_, interrupt_};
    drive_lane(multi_, easy_, limits_, cancel_, enough, progress, /*wait=*/false);
    code_ = progress.code;
    ended_ = progress.ended;
    interrupt_ = progress.interrupt;
    if (over() || enough()) return true;
    long curl_wait = -1;
    curl_multi_timeout(multi_, &curl_wait);
    if (curl_wait != 0) break;
  }
  fd_set readable, writable, failing;
  FD_ZERO(&readable);
  FD_ZERO(&writable);
  FD_ZERO(&failing);
  int highest = -1;
  if (curl_multi_fdset(multi_, &readable, &writable, &failing, &highest) != CURLM_OK) return false;
  int socket = -1;
  for (int fd = 0; fd <= highest; ++fd) {
    const bool reads = FD_ISSET(fd, &readable);
    const bool writes = FD_ISSET(fd, &writable);
    if (!reads && !writes) continue;
    if (socket >= 0) return false;
    socket = fd;
    wait.read = reads;
    wait.write = writes;
  }
  // No socket named: libcurl's timer alone, or a socket numbered past FD_SETSIZE, which curl_multi_fdset
  // leaves out (a process with many descriptors): a wait for time alone could then outwait the answer.
  if (socket < 0) return false;
  wait.fd = socket;
  wait.ms = lane_wait_ms(multi_, easy_, limits_, std::chrono::steady_clock::now());
  return true;
}

void CurlStream::drive(const std::function<bool()>& enough) {
  if (cancel_ != nullptr) cancel_->set_waker([multi = multi_] { curl_multi_wakeup(multi); });
  LaneProgress progress{code_, ended_, interrupt_};
  drive_lane(multi_, easy_, limits_, cancel_, enough, progress);
  code_ = progress.code;
  ended_ = progress.ended;
  interrupt_ = progress.interrupt;
  if (cancel_ != nullptr) cancel_->clear_waker();
}

BodyRead CurlStream::read_or_wait(char* buf, size_t cap, BodyWait* wait) {
  if (wait != nullptr) *wait = BodyWait{};
  if (failed_) return failure_;
  BodySink& sink = easy_.sink();
  BodyRead out;
  if (cap == 0) return out;
  if (!over()) {
    // The call's deadline bounds the body too (docs/timeouts.md §8), also for a reader that came back late; a cancel
    // ends it at once.
    if (std::chrono::steady_clock::now() >= limits_.call_deadline) {
      interrupt_ = Interrupt::kCallTimeout;
    } else if (cancel_ != nullptr && cancel_->cancelled()) {
      interrupt_ = Interrupt::kCancelled;
    }
  }
  if (interrupt_ == Interrupt::kNone) {
    // Bytes kept from the last write come first, also after the transfer ended.
    out.n = sink.drain(buf, cap);
    if (out.n == cap) return out;
    if (!ended_) {
      sink.lend(buf + out.n, cap - out.n);
      if (sink.paused()) {
        // libcurl hands over the write it kept (into the lent buffer) at once, and reads the socket again.
        sink.resumed();
        curl_easy_pause(easy_.handle(), CURLPAUSE_CONT);
      }
      // Wait for the network only when there is nothing to hand over yet.
      auto enough = [&sink] { return sink.taken() > 0 || sink.has_pending(); };
      if (out.n == 0 && (wait == nullptr || !step(enough, wait))) drive(enough);
      out.n += sink.unlend();
      if (out.n == 0) out.n = sink.drain(buf, cap);
      if (out.n == 0 && wait != nullptr && wait->fd >= 0 && !over()) return out;  // nothing yet: wait->fd
      if (wait != nullptr) *wait = BodyWait{};
    }
    if (out.n > 0) return out;
  }
  if (ended_ && code_ == CURLE_OK && interrupt_ == Interrupt::kNone) {
    if (end_seen_ || !easy_.body_cut_at_close()) {
      end_seen_ = true;
      return out;  // the end
    }
    failed_ = true;
    failure_.error = Code::kConnectionLost;
    failure_.message = kCutWithoutCloseNotify;
    return failure_;
  }
  WireResult why = easy_.finish(code_, interrupt_);
  failed_ = true;
  failure_.error = why.error != Code::kOk ? why.error : Code::kConnectionLost;
  failure_.message = why.error != Code::kOk ? std::move(why.message) : "the body ended early";
  return failure_;
}

}  // namespace humus::transport
