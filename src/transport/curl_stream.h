// A blocking attempt whose body is read after its headers (docs/bodies.md §7): the lane's multi handle is
// driven on the caller's thread first until the headers are in, then by each read until bytes arrive. While
// the reader's buffer is full the transfer is paused (CURL_WRITEFUNC_PAUSE) and nothing drives it, so a slow
// reader holds what the sink keeps at most (BodySink: kKeepAhead and a write), and its connection stays with
// the body until the end or the close.
#pragma once

#include <curl/curl.h>

#include <functional>
#include <optional>

#include "common/cancel.h"
#include "transport/body_sink.h"
#include "transport/curl_easy.h"
#include "transport/transport.h"

namespace humus::transport {

// How far driving a lane's transfer got: libcurl finished it (with `code`), or the driver stopped it.
struct LaneProgress {
  CURLcode code = CURLE_OK;
  bool ended = false;
  Interrupt interrupt = Interrupt::kNone;
  bool over() const { return ended || interrupt != Interrupt::kNone; }
};

// Drives a lane's multi handle (one easy handle in it) on the calling thread until `enough()` holds or the
// transfer is over: libcurl finished it, the caller cancelled, the attempt's deadline (until the headers) or
// the call's passed. Shared by blocking attempts and streamed bodies.
// With `wait` false it stops instead of waiting for the network, after one perform.
void drive_lane(CURLM* multi, CurlEasy& easy, const AttemptLimits& limits, CancelToken* cancel,
                const std::function<bool()>& enough, LaneProgress& progress, bool wait = true);

class CurlStream final : public ResponseBody {
 public:
  // `release(ended)` runs once, from the destructor, after the handle left the multi: `ended` is true when
  // libcurl finished the transfer (its connection may be reused), false when it was cut short (the connection
  // is gone with the lane). `easy` and `multi` must stay alive until then; `cancel` (may be nullptr) until the
  // stream is destroyed.
  CurlStream(CurlEasy& easy, CURLM* multi, const AttemptLimits& limits, CancelToken* cancel,
             std::function<void(bool ended)> release);
  ~CurlStream() override;
  CurlStream(const CurlStream&) = delete;
  CurlStream& operator=(const CurlStream&) = delete;

  // Sends the request and returns once the headers are in (the response head, no body), or the attempt's
  // failure as perform() would report it.
  WireResult open(const WireRequest& request);
  // open() a step at a time: begin() readies the request (nothing is sent yet), and each open_step() drives
  // the transfer as far as it goes without waiting — what open() returns once the headers are in or the
  // attempt failed, else nothing with `wait` set. A wait one descriptor cannot serve (several sockets while a
  // name's addresses race, a timer alone, a socket past FD_SETSIZE) is waited for inside, as open() waits.
  void begin(const WireRequest& request);
  std::optional<WireResult> open_step(StepWait& wait);
  void read(char* buf, size_t cap, ReadDone done) override { done(read_or_wait(buf, cap, nullptr)); }
  BodyRead read_ready(char* buf, size_t cap, BodyWait* wait) override { return read_or_wait(buf, cap, wait); }

 private:
  // Drives the transfer until `enough()` holds or it ends (ended_ set, or interrupt_ for a deadline or cancel).
  void drive(const std::function<bool()>& enough);
  bool over() const { return ended_ || interrupt_ != Interrupt::kNone; }
  // read() with `wait` null; read_ready() with it: drives libcurl only as far as it goes without waiting.
  BodyRead read_or_wait(char* buf, size_t cap, BodyWait* wait);
  // Drives libcurl without waiting until `enough()` or nothing more comes at once; false when the transfer
  // needs what a wait on its socket for reading cannot give (a write, a timer, another socket).
  bool step(const std::function<bool()>& enough, BodyWait* wait);
  // As step(), but any wait on one descriptor will do: one socket for reading, writing or both; false when
  // libcurl waits on several sockets, or names none (its timer alone, or a socket past FD_SETSIZE, which
  // curl_multi_fdset cannot name). `wait` is set unless enough() or over().
  bool poll(const std::function<bool()>& enough, StepWait& wait);
  // After the transfer was driven as far as its headers or its end: what open() returns; nothing when the
  // attempt goes out once more, on a fresh connection (a pooled one held a peer's late bytes).
  std::optional<WireResult> opened();

  CurlEasy& easy_;
  CURLM* const multi_;
  const AttemptLimits limits_;
  CancelToken* const cancel_;
  std::function<void(bool)> release_;
  bool added_ = false;
  bool ended_ = false;  // libcurl finished the transfer, with code_
  CURLcode code_ = CURLE_OK;
  Interrupt interrupt_ = Interrupt::kNone;
  BodyRead failure_;    // once the body failed: what every later read returns
  bool fresh_retried_ = false;  // the attempt went out once more on a fresh connection (opened())
  bool end_seen_ = false;  // the body's end was read, and it was whole
  bool failed_ = false;
};

}  // namespace humus::transport
