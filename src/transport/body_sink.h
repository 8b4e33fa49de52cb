// Bodies that do not sit whole in memory (docs/bodies.md §7): a request body the caller streams (BodySource), a
// response body read in pieces after its headers (ResponseBody), and where libcurl's write callback puts the
// bytes it hands over (BodySink): into a buffer capped at max_response_body, or into the reader's own buffer,
// pausing the transfer while that buffer is full.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "common/headers.h"
#include "common/status.h"

namespace humus::transport {

// A request body read as it is sent. Not thread-safe: one attempt reads it at a time.
class BodySource {
 public:
  virtual ~BodySource() = default;
  virtual int64_t length() const = 0;     // -1: unknown (chunked on HTTP/1.1)
  virtual bool replayable() const = 0;    // has a rewind: the request may be sent more than once
  // Before each attempt that sends it: the first use goes as it is, every later one rewinds first; an
  // unreplayable source used once already is kMisuse, a failing rewind kCallback.
  virtual Status begin_attempt() = 0;
  // Fills at most `cap` bytes into `buf`; 0 at the end. A failure (kCallback) ends the attempt.
  virtual Result<size_t> read(char* buf, size_t cap) = 0;
  // libcurl's own resend within one attempt (docs/libcurl-traps.md §19): back to the first byte. kCallback when it cannot.
  virtual Status rewind() = 0;
};

// What one read of a response body brought: `n` bytes (0 and kOk: the end), or why it failed.
struct BodyRead {
  size_t n = 0;
  Code error = Code::kOk;
  std::string message;
};

// What a read that must not wait found to wait for when no byte was there yet (ResponseBody::read_ready).
struct BodyWait {
  int fd = -1;      // a socket to poll readable, or -1: nothing to wait for
  int64_t ms = -1;  // the longest wait before reading again (the call's deadline), or -1
};

// A response body still on its connection once its headers are in (Transport::open, Transport::start_open): one
// type for both drivers, read in pieces the reader's buffer lends. A body a blocking attempt opened is read on
// the caller's thread, each read completing before it returns; one opened on the event loop is read there, each
// read completing later as a task of its own, its transfer paused while nobody reads (docs/bodies.md §7). Not
// thread-safe; a body opened on the loop is used on the loop thread only, destruction included.
class ResponseBody {
 public:
  using ReadDone = std::function<void(BodyRead)>;
  // Closes the body: a transfer not read to its end is stopped (its HTTP/1.1 connection closed, its HTTP/2
  // stream reset). A read still pending never gets its `done`.
  virtual ~ResponseBody() = default;
  // Lends `buf` (`cap` > 0) until `done` runs, exactly once: at least one byte in `buf`, the end (n == 0), or
  // the failure (kConnectionLost, kTimeout at the call's deadline, kCancelled); after a failure every read
  // fails so. One read at a time. A blocking body waits for the network within the call's deadline and cancel
  // token and runs `done` as its last act before returning (so `done` may destroy it); a body on the loop
  // posts it.
  virtual void read(char* buf, size_t cap, ReadDone done) = 0;
  // Blocking bodies: as read(), but without waiting for the network. With no byte there yet it returns n == 0
  // and kOk with `wait->fd` set to the socket to wait on (readable) for at most `wait->ms` (-1: no bound)
  // before reading again, so a caller with a poller of its own (Go's netpoller) waits there instead of in the
  // library. wait->fd < 0 with n == 0 and kOk is the end. A body that cannot say what to wait for waits
  // inside, as read() does (this default).
  virtual BodyRead read_ready(char* buf, size_t cap, BodyWait* wait);
  // Ends the body now with kCancelled: a pending read completes so. A blocking body sees its call's cancel
  // token at its next read instead (this default does nothing).
  virtual void cancel() {}
};

// The bytes of libcurl's write callback. Buffered: appended to a string, at most `limit` bytes, its capacity
// grown by hand so memory never passes the limit (a doubling string would reach twice it). Streamed: copied
// into the reader's lent buffer; what comes beyond it during that read is kept, up to kKeepAhead (libcurl
// reads the socket again within one perform while it stays readable); between reads one write is kept. The
// write after that pauses the transfer (CURL_WRITEFUNC_PAUSE) until the reader comes back. A read with no
// room left for a whole receive asks to hold the transfer instead (should_hold), before the next receive.
class BodySink {
 public:
  // Bytes a streamed body keeps past the reader's buffer during a read before it pauses the transfer.
  static constexpr size_t kKeepAhead = size_t{256} * 1024;

  void buffer_into(std::string* body, uint64_t limit);
  void stream();
  bool streaming() const { return streaming_; }

  // The response's Content-Length, once its headers are in: a buffered body reserves it (up to 1 MiB), so a
  // typical body lands in one allocation instead of growing through several copies.
  void expect(uint64_t length);
  // The write callback's result: `n`, 0 to abort (over the limit), or CURL_WRITEFUNC_PAUSE.
  size_t write(const char* data, size_t n);
  bool over_limit() const { return over_limit_; }
  uint64_t limit() const { return limit_; }

  // Streamed only.
  void lend(char* buf, size_t cap);  // where the writes to come go, until unlend()
  size_t unlend();                   // bytes written into the lent buffer
  size_t taken() const { return taken_; }
  bool has_pending() const { return pending_at_ < pending_.size(); }
  size_t drain(char* buf, size_t cap);  // kept bytes into `buf`
  bool paused() const { return paused_; }
  void resumed() { paused_ = false; }
  // libcurl's receive buffer (CURLOPT_BUFFERSIZE): the most one receive hands over, in one write or several.
  static constexpr size_t kReceiveBuffer = size_t{32} * 1024;
  // Whether the transfer should stop reading now: a read is in progress, has bytes, and its buffer has no
  // room left for a whole receive. Pausing then (curl_easy_pause from the write callback, which holds()
  // records) stops libcurl before its next receive, where a refused write (CURL_WRITEFUNC_PAUSE) would cost
  // libcurl a copy of its own, and a write past the buffer a second copy, from the keep into the next read.
  bool should_hold() const {
    return streaming_ && buf_ != nullptr && taken_ > 0 && cap_ - taken_ < kReceiveBuffer && !paused_ &&
           !discarding_;
  }
  void holds() { paused_ = true; }
  // Frees the kept bytes and their memory (up to kKeepAhead): for a handle going back to a pool once its body
  // is closed, so that an idle handle holds none of it.
  void release_kept();
  // Every later write is taken and dropped: for the bytes libcurl still holds of a transfer being cut.
  void discard_rest() { discarding_ = true; }

 private:
  bool streaming_ = false;
  std::string* body_ = nullptr;
  uint64_t limit_ = UINT64_MAX;
  bool over_limit_ = false;
  char* buf_ = nullptr;
  size_t cap_ = 0;
  size_t taken_ = 0;
  std::string pending_;
  size_t pending_at_ = 0;
  bool paused_ = false;
  bool discarding_ = false;
};

// Makes room in `body` for `needed` bytes in all, never more than `limit`. std::string's own growth doubles
// (reserve() too, in libstdc++), which would take a body near its limit to twice it; so the capacity grows
// by hand: doubling up to 1 MiB, then four times over (fewer copies of a large body, pages untouched until
// bytes land on them), and never past `limit` — nor reserved at `limit` up front, which for a limit of a
// TiB would fail an allocation for a 2 MiB body.
void grow_within(std::string& body, size_t needed, uint64_t limit);

// libcurl decodes a Content-Encoding it was asked for: once decoded, the body's Content-Encoding and
// Content-Length no longer describe it, so both go, as Go's Transport does. True when they were removed.
bool strip_decoded_headers(Headers& headers);

}  // namespace humus::transport
