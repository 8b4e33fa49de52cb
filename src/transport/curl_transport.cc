#include "transport/curl_transport.h"

#include <curl/curl.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "common/mutex.h"
#include "transport/curl_easy.h"
#include "transport/curl_stream.h"
#include "transport/fork.h"
#include "transport/system_roots.h"
#include "transport/tls_identity.h"

namespace humus::transport {
namespace {

using std::chrono::duration_cast;
using std::chrono::milliseconds;

// --- Blocking attempts: a lane is an easy handle with a multi handle of its own, driven on the caller's
// thread. --------------------------------------------------------------------------------------------------

// The engine could not make its own sockets or pipes: a local shortage (docs/transport.md §10.7).
struct LocalShortage {
  int error;
};

WireResult shortage_result(const LocalShortage& s) {
  WireResult out;
  out.error = Code::kResource;
  out.message = std::string("a local shortage stopped the attempt (") + std::strerror(s.error) +
                "): the transport could not make its own sockets";
  return out;
}

// An attempt that could not start; its `done` is posted at once.
class UnstartedAttempt final : public AsyncAttempt {
 public:
  void cancel() override {}
};

// A multi handle; curl_multi_init fails when no descriptor is left for its wake-up socket pair.
CURLM* new_multi() {
  errno = 0;
  CURLM* multi = curl_multi_init();
  if (multi == nullptr) {
    if (is_local_shortage(errno)) throw LocalShortage{errno};
    throw std::bad_alloc();
  }
  return multi;
}

// The local port of the connection `h` last used (0: none yet in this transfer).
long local_port(CURL* h) {
  long port = 0;
  return curl_easy_getinfo(h, CURLINFO_LOCAL_PORT, &port) == CURLE_OK ? port : 0;
}

// Closes the connection on local port `port` under libcurl, and retires it: a request that would reuse it
// goes to a new connection (on_prereq), also while other transfers of the cache run.
void close_connection(SocketRegistry& sockets, int port) {
  if (const int fd = sockets.fd_for(port); fd >= 0) {
    sockets.retire(port);
    poison(fd);
  }
}

// A stepped attempt on a lane (Transport::open_stepped): the stream the lane's transfer runs in, until its
// headers come and it becomes the response's body.
class SteppedStream final : public Transport::Stepped {
 public:
  explicit SteppedStream(std::unique_ptr<CurlStream> stream) : stream_(std::move(stream)) {}
  std::optional<Transport::Opened> advance(StepWait& wait) override {
    std::optional<WireResult> head = stream_->open_step(wait);
    if (!head) return std::nullopt;
    if (head->error != Code::kOk) {
      stream_.reset();
      return Transport::Opened{std::move(*head), nullptr};
    }
    return Transport::Opened{std::move(*head), std::move(stream_)};
  }

 private:
  std::unique_ptr<CurlStream> stream_;
};

// A stepped attempt that could not start: its first advance says why.
class SteppedShortage final : public Transport::Stepped {
 public:
  explicit SteppedShortage(WireResult why) : why_(std::move(why)) {}
  std::optional<Transport::Opened> advance(StepWait&) override { return Transport::Opened{std::move(why_), nullptr}; }

 private:
  WireResult why_;
};

class Lane {
 public:
  Lane(const TransportConfig& config, const Slist& connect_to, OriginMemory& origin)
      : easy_(config, connect_to, sockets_, origin), multi_(new_multi()) {
    sockets_.set_transfers(1);
  }
  ~Lane() { curl_multi_cleanup(multi_); }
  Lane(const Lane&) = delete;
  Lane& operator=(const Lane&) = delete;

  Instant last_used;
  CurlEasy& easy() { return easy_; }
  CURLM* multi() { return multi_; }

  WireResult perform(const WireRequest& request, const AttemptLimits& limits, CancelToken* cancel) {
    easy_.prepare(request, limits, std::chrono::steady_clock::now());
    if (cancel != nullptr) cancel->set_waker([multi = multi_] { curl_multi_wakeup(multi); });
    WireResult result = drive(limits, cancel);
    // A pooled connection with a peer's late bytes: the attempt goes out once more, on a fresh connection.
    if (result.error != Code::kCancelled && result.error != Code::kTimeout && easy_.ready_fresh_retry()) {
      result = drive(limits, cancel);
    }
    if (cancel != nullptr) cancel->clear_waker();
    return result;
  }

 private:
  WireResult drive(const AttemptLimits& limits, CancelToken* cancel) {
    curl_multi_add_handle(multi_, easy_.handle());
    LaneProgress progress;
    drive_lane(multi_, easy_, limits, cancel, [] { return false; }, progress);
    // Cancelled before libcurl finished it: libcurl closes an HTTP/1.1 connection itself, but keeps an
    // HTTP/2 one, its stream's RST_STREAM only buffered until the lane's next request (AsyncMulti::
    // send_reset). No other transfer shares a lane's connection: it is closed now, so that the server ends
    // the stream at once (a timed-out one's is, by finish()).
    const bool cut = progress.interrupt == Interrupt::kCancelled && !progress.ended;
    const long cut_port = cut ? local_port(easy_.handle()) : 0;
    curl_multi_remove_handle(multi_, easy_.handle());
    if (cut_port > 0) {
      close_connection(sockets_, static_cast<int>(cut_port));
    }
    return easy_.finish(progress.code, progress.interrupt);
  }

  SocketRegistry sockets_;  // declared first: it outlives the connections libcurl closes in ~Lane
  CurlEasy easy_;
  CURLM* multi_;
};

// --- Asynchronous attempts: one multi handle per client, driven by the runtime's event loop through
// libcurl's socket interface, so concurrent attempts share the client's connections (and HTTP/2 streams). --

class AsyncMulti;

// What the multi handle drives: a transfer whose whole response is collected (Transfer) or one whose body is
// read after its headers (StreamTransfer). Loop thread only.
class MultiEntry {
 public:
  virtual ~MultiEntry() = default;
  virtual CurlEasy& easy() = 0;
  // libcurl finished the transfer with `code`.
  virtual void curl_done(CURLcode code) = 0;
  // A callback saw the headers end or body bytes arrive (streamed transfers), outside libcurl now.
  virtual void progressed() {}
  bool queued = false;       // in the multi's list of entries to tell of progress
  bool head_queued = false;  // in the multi's list of entries whose HTTP/2 head may be held up
  AsyncMulti* owner = nullptr;
};

class Transfer final : public AsyncAttempt, public MultiEntry {
 public:
  Transfer(AsyncMulti& multi, std::unique_ptr<CurlEasy> easy, AttemptDone done)
      : multi_(multi), easy_(std::move(easy)), done_(std::move(done)) {}
  ~Transfer() override;

  void cancel() override { end(CURLE_OK, Interrupt::kCancelled); }
  void curl_done(CURLcode code) override { end(code, Interrupt::kNone); }

  // Loop thread: libcurl finished it, or a deadline or cancel ends it.
  void end(CURLcode code, Interrupt interrupt);
  CurlEasy& easy() override { return *easy_; }
  EventLoop::TimerId deadline_timer = 0;

 private:
  AsyncMulti& multi_;
  std::unique_ptr<CurlEasy> easy_;  // back to the multi's pool when the transfer ends
  AttemptDone done_;
  bool ended_ = false;
};

class StreamTransfer;

class AsyncMulti final : public EventLoop::SocketHandler {
 public:
  AsyncMulti(EventLoop& loop, const TransportConfig& config, const Slist& connect_to, OriginMemory& origin)
      : loop_(loop), config_(config), connect_to_(connect_to), origin_(origin), multi_(new_multi()) {
    curl_multi_setopt(multi_, CURLMOPT_SOCKETFUNCTION, &AsyncMulti::on_curl_socket);
    curl_multi_setopt(multi_, CURLMOPT_SOCKETDATA, this);
    curl_multi_setopt(multi_, CURLMOPT_TIMERFUNCTION, &AsyncMulti::on_curl_timer);
    curl_multi_setopt(multi_, CURLMOPT_TIMERDATA, this);
    curl_multi_setopt(multi_, CURLMOPT_PIPELINING, static_cast<long>(CURLPIPE_MULTIPLEX));
    curl_multi_setopt(multi_, CURLMOPT_MAXCONNECTS, static_cast<long>(std::max<uint32_t>(1, config.max_idle_connections)));
    sockets_.on_close([this](int fd) { forget_socket(fd); });
  }
  // Loop thread, with no transfer left.
  ~AsyncMulti() override {
    if (timer_ != 0) loop_.cancel_timer(timer_);
    for (const auto& [fd, events] : armed_) loop_.unwatch(fd);
    armed_.clear();
    curl_multi_cleanup(multi_);  // its connections close through forget_socket, which finds nothing left
  }

  EventLoop& loop() { return loop_; }

  // In a forked child (docs/fork.md §23): the loop this multi was driven by is the parent's, abandoned. The
  // multi lets go of it without a word to it (an epoll_ctl on a socket the child shares with the parent would
  // change the parent's epoll set), and libcurl is told of no socket or timer any more. Whether it may then be
  // taken apart: only with no transfer in it — a transfer in flight at the fork is the parent's (its easy
  // handle is held by a call the child never runs, and a resolver thread it may wait for is not in the child).
  bool forget_loop_after_fork() {
    curl_multi_setopt(multi_, CURLMOPT_SOCKETFUNCTION, nullptr);
    curl_multi_setopt(multi_, CURLMOPT_TIMERFUNCTION, nullptr);
    sockets_.on_close(nullptr);
    armed_.clear();
    parked_.clear();
    timer_ = 0;
    return live_.empty();
  }

  std::unique_ptr<AsyncAttempt> start(const WireRequest& request, const AttemptLimits& limits, AttemptDone done) {
    std::unique_ptr<CurlEasy> easy;
    if (!pool_.empty()) {
      easy = std::move(pool_.back());
      pool_.pop_back();
    } else {
      easy = std::make_unique<CurlEasy>(config_, connect_to_, sockets_, origin_);
    }
    easy->prepare(request, limits, std::chrono::steady_clock::now());
    auto transfer = std::make_unique<Transfer>(*this, std::move(easy), std::move(done));
    Transfer* t = transfer.get();
    curl_easy_setopt(t->easy().handle(), CURLOPT_PRIVATE, static_cast<MultiEntry*>(t));
    // The attempt's deadline covers dial → headers; once they arrive only the call's deadline (libcurl's
    // CURLOPT_TIMEOUT_MS) bounds the body.
    const Instant attempt_end = std::min(limits.attempt_deadline, limits.call_deadline);
    t->deadline_timer = loop_.add_timer(attempt_end, [this, t, call_end = limits.call_deadline] {
      t->deadline_timer = 0;
      if (!t->easy().headers_done()) {
        t->end(CURLE_OK, Interrupt::kAttemptTimeout);
      } else if (call_end > std::chrono::steady_clock::now()) {
        t->deadline_timer = loop_.add_timer(call_end, [t] {
          t->deadline_timer = 0;
          t->end(CURLE_OK, Interrupt::kCallTimeout);
        });
      } else {
        t->end(CURLE_OK, Interrupt::kCallTimeout);
      }
    });
    watch_head(*t);
    live_.insert(static_cast<MultiEntry*>(t));
    sockets_.set_transfers(live_.size());
    curl_multi_add_handle(multi_, t->easy().handle());
    return transfer;
  }

  std::unique_ptr<AsyncAttempt> start_open(const WireRequest& request, const AttemptLimits& limits, OpenDone done);

  std::unique_ptr<CurlEasy> take_easy() {
    if (pool_.empty()) return std::make_unique<CurlEasy>(config_, connect_to_, sockets_, origin_);
    std::unique_ptr<CurlEasy> easy = std::move(pool_.back());
    pool_.pop_back();
    return easy;
  }

  // A transfer joins the multi, PRIVATE pointing at its entry.
  void attach(MultiEntry& e) {
    curl_easy_setopt(e.easy().handle(), CURLOPT_PRIVATE, &e);
    watch_head(e);
    live_.insert(&e);
    sockets_.set_transfers(live_.size());
    curl_multi_add_handle(multi_, e.easy().handle());
  }
  // A transfer leaves the multi: a finished one leaves its connection in the cache, an unfinished one (`cut`)
  // closes it (HTTP/2: resets its stream, at once: send_reset). Its easy handle stays with its owner.
  void detach(MultiEntry& e, bool cut = false) {
    leave_heads(e);
    live_.erase(&e);
    sockets_.set_transfers(live_.size());
    const long port = cut ? local_port(e.easy().handle()) : 0;
    curl_multi_remove_handle(multi_, e.easy().handle());
    send_reset(port);
  }
  // An easy handle no transfer uses any more, for the next one.
  void give_back(std::unique_ptr<CurlEasy> easy) {
    if (pool_.size() < std::max<size_t>(config_.max_idle_connections, 1)) pool_.push_back(std::move(easy));
  }

  // From inside libcurl's callbacks (CurlEasy::on_progress): the entry is told once libcurl has returned.
  static void note_progress(void* entry);
  void note(MultiEntry& e) {
    if (e.queued) return;
    e.queued = true;
    ready_.push_back(&e);
  }

  // A transfer stopped before sending because its pooled connection held a peer's late bytes: it goes out
  // once more on a fresh connection, under the same deadline timer. False when it must end instead.
  bool restart_fresh(MultiEntry& t) {
    if (!t.easy().ready_fresh_retry()) return false;
    curl_multi_remove_handle(multi_, t.easy().handle());
    curl_multi_add_handle(multi_, t.easy().handle());
    return true;
  }

  // A transfer leaves the multi; its easy handle (and connection cache entry) stays for the next one. `cut`:
  // a deadline or cancel ended it before libcurl did (its HTTP/2 stream is reset at once: send_reset).
  void retire(Transfer& t, std::unique_ptr<CurlEasy> easy, bool cut) {
    leave_heads(t);
    live_.erase(&t);
    sockets_.set_transfers(live_.size());
    const long port = cut ? local_port(easy->handle()) : 0;
    curl_multi_remove_handle(multi_, easy->handle());  // the transfer's own easy_ was moved here
    send_reset(port);
    give_back(std::move(easy));
  }

  // A transfer cut on an HTTP/2 connection other transfers share: libcurl resets its stream in
  // curl_multi_remove_handle (RST_STREAM), but only into the connection's output buffer — libcurl 7.88
  // writes a frame under 1 KB there and flushes the buffer only when a transfer next sends on the
  // connection (8.x alike, when one next runs). With every other stream on it waiting for its answer, the
  // reset would reach the server only after one of them ended: the stream held there long after its call
  // gave its bulkhead slot back (docs/transport.md §10.7). So another transfer on the connection is kicked
  // as kick_stalled_head kicks one: its unpause has libcurl 7.88 send on the connection there and then (a
  // window update that changes nothing, and the buffer), and has 8.x run it at its next timer. A transfer
  // whose reader is away (its sink paused) is passed over: unpausing it would hand its body on. Alone on
  // its connection, the cut transfer's connection is closed, so that the server ends the stream now rather
  // than with the connection's next request, which may never come or come after another connection's.
  // `port`: the cut transfer's local port, 0 for none. Loop thread, outside libcurl.
  void send_reset(long port) {
    if (port <= 0) return;
    bool shared = false;
    for (MultiEntry* other : live_) {
      CURL* h = other->easy().handle();
      if (local_port(h) != port) continue;
      shared = true;
      if (other->easy().sink().paused()) continue;
      curl_easy_pause(h, CURLPAUSE_RECV);
      if (curl_easy_pause(h, CURLPAUSE_CONT) == CURLE_OK) return;
    }
    if (shared) return;  // only readers that are away share it: the reset goes out when one comes back
    close_connection(sockets_, static_cast<int>(port));
  }

  void on_socket(int fd, uint32_t events) override {
    if (parked_.count(fd) != 0) {
      // An idle connection has input: the peer closed it, or sent late bytes. libcurl looks at it before
      // it reuses it (on_prereq); until then it is not watched, or its input would wake the loop over and
      // over.
      forget_socket(fd);
      return;
    }
    int mask = 0;
    if (events & EPOLLIN) mask |= CURL_CSELECT_IN;
    if (events & EPOLLOUT) mask |= CURL_CSELECT_OUT;
    if (events & (EPOLLERR | EPOLLHUP)) mask |= CURL_CSELECT_ERR;
    int running = 0;
    curl_multi_socket_action(multi_, fd, mask, &running);
    collect();
    kick_held_heads();
    tell_progress();
  }

  // After libcurl returned (a socket action, a timer, an unpause): the entries its callbacks noted.
  void tell_progress() {
    while (!ready_.empty()) {
      std::vector<MultiEntry*> batch;
      batch.swap(ready_);
      for (MultiEntry* e : batch) {
        if (live_.count(e) == 0) continue;  // ended meanwhile
        e->queued = false;
        e->progressed();
      }
    }
  }
  // An entry's HTTP/2 head larger than half a receive buffer: noted from inside libcurl (CurlEasy::on_head_held),
  // kicked once libcurl returned (kick_held_heads).
  void watch_head(MultiEntry& e) {
    e.owner = this;
    e.easy().on_head_held(&AsyncMulti::note_head_held, &e);
  }
  static void note_head_held(void* entry) {
    auto* e = static_cast<MultiEntry*>(entry);
    if (e->head_queued) return;
    e->head_queued = true;
    e->owner->held_.push_back(e);
  }
  void kick_held_heads() {
    while (!held_.empty()) {
      std::vector<MultiEntry*> batch;
      batch.swap(held_);
      for (MultiEntry* e : batch) {
        e->head_queued = false;
        e->easy().kick_stalled_head();
      }
    }
  }
  void leave_heads(MultiEntry& e) {
    if (!e.head_queued) return;
    held_.erase(std::remove(held_.begin(), held_.end(), &e), held_.end());
    e.head_queued = false;
  }

  // An entry that leaves for good is no longer in the list.
  void forget(MultiEntry& e) {
    if (!e.queued) return;
    ready_.erase(std::remove(ready_.begin(), ready_.end(), &e), ready_.end());
    e.queued = false;
  }

 private:
  static int on_curl_socket(CURL* /*easy*/, curl_socket_t fd, int what, void* user, void* /*socketp*/) {
    auto* self = static_cast<AsyncMulti*>(user);
    if (what == CURL_POLL_REMOVE) {
      // A connection going back to the cache stays registered with epoll (parked): its next request then
      // re-arms it without two epoll_ctl calls. Any other socket (a resolver's, say) may be closed by
      // libcurl without a word, so it leaves epoll at once.
      if (self->sockets_.connected(fd) && self->armed_.count(fd) != 0) {
        self->parked_.insert(fd);
      } else {
        self->forget_socket(fd);
      }
      return 0;
    }
    uint32_t events = 0;
    if (what == CURL_POLL_IN || what == CURL_POLL_INOUT) events |= EPOLLIN;
    if (what == CURL_POLL_OUT || what == CURL_POLL_INOUT) events |= EPOLLOUT;
    const bool was_parked = self->parked_.erase(fd) != 0;
    auto [it, added] = self->armed_.try_emplace(fd, events);
    if (was_parked && !added && it->second == events) return 0;  // armed already, for these events
    it->second = events;
    self->loop_.watch(fd, events, self);
    return 0;
  }

  // `fd` leaves epoll: libcurl no longer wants it, or closes it (SocketRegistry::on_close), or it is parked
  // and has input.
  void forget_socket(int fd) {
    parked_.erase(fd);
    if (armed_.erase(fd) != 0) loop_.unwatch(fd);
  }

  static int on_curl_timer(CURLM* /*multi*/, long timeout_ms, void* user) {
    auto* self = static_cast<AsyncMulti*>(user);
    if (self->timer_ != 0) {
      self->loop_.cancel_timer(self->timer_);
      self->timer_ = 0;
    }
    if (timeout_ms < 0) return 0;
    self->timer_ = self->loop_.add_timer(std::chrono::steady_clock::now() + milliseconds(timeout_ms), [self] {
      self->timer_ = 0;
      int running = 0;
      curl_multi_socket_action(self->multi_, CURL_SOCKET_TIMEOUT, 0, &running);
      self->collect();
      self->kick_held_heads();
      self->tell_progress();
    });
    return 0;
  }

  void collect() {
    int queued = 0;
    while (CURLMsg* msg = curl_multi_info_read(multi_, &queued)) {
      if (msg->msg != CURLMSG_DONE) continue;
      MultiEntry* t = nullptr;
      curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &t);
      const CURLcode code = msg->data.result;
      if (t == nullptr || live_.count(t) == 0) continue;
      if (!restart_fresh(*t)) t->curl_done(code);
    }
  }

  EventLoop& loop_;
  const TransportConfig& config_;
  const Slist& connect_to_;
  OriginMemory& origin_;
  SocketRegistry sockets_;  // before multi_: it outlives the connections curl_multi_cleanup closes
  CURLM* multi_;
  EventLoop::TimerId timer_ = 0;
  std::unordered_map<int, uint32_t> armed_;  // sockets registered with the loop's epoll → their events
  std::unordered_set<int> parked_;           // those of idle connections, which libcurl does not watch
  std::unordered_set<MultiEntry*> live_;
  std::vector<MultiEntry*> ready_;  // noted by callbacks, told by tell_progress()
  std::vector<MultiEntry*> held_;   // noted by callbacks, kicked by kick_held_heads()
  std::vector<std::unique_ptr<CurlEasy>> pool_;
};

void Transfer::end(CURLcode code, Interrupt interrupt) {
  if (ended_) return;
  ended_ = true;
  if (deadline_timer != 0) multi_.loop().cancel_timer(deadline_timer);
  deadline_timer = 0;
  WireResult result = easy_->finish(code, interrupt);
  multi_.retire(*this, std::move(easy_), interrupt != Interrupt::kNone);
  // Posted, so whoever owns this transfer may destroy it in `done`.
  multi_.loop().post([done = std::move(done_), result = std::move(result)]() mutable { done(std::move(result)); });
}

Transfer::~Transfer() {
  if (!ended_) end(CURLE_OK, Interrupt::kCancelled);
}

// A transfer whose body is read after its headers (Transport::start_open). Shared by the attempt's handle
// (until the headers are delivered) and the body's (after), so neither outlives the other's use of it. Its
// easy handle streams into the sink (BodySink::stream): with no buffer lent, one write is kept and the next
// pauses the transfer (CURL_WRITEFUNC_PAUSE); a read lends its buffer and unpauses (curl_easy_pause). Every
// completion is posted, so whoever holds a handle may drop it in the callback. Loop thread only.
class StreamTransfer final : public MultiEntry, public std::enable_shared_from_this<StreamTransfer> {
 public:
  StreamTransfer(AsyncMulti& multi, std::unique_ptr<CurlEasy> easy, const AttemptLimits& limits, OpenDone done)
      : multi_(multi), easy_(std::move(easy)), limits_(limits), done_(std::move(done)) {}
  ~StreamTransfer() override { close(); }

  CurlEasy& easy() override { return *easy_; }
  AsyncMulti& multi() { return multi_; }

  void begin() {
    easy_->on_progress(&AsyncMulti::note_progress, static_cast<MultiEntry*>(this));
    // The attempt's deadline covers dial -> headers; after them only the call's bounds the body.
    const Instant attempt_end = std::min(limits_.attempt_deadline, limits_.call_deadline);
    timer_ = multi_.loop().add_timer(attempt_end, [this] {
      timer_ = 0;
      if (phase_ == Phase::kHead) {
        stop(Interrupt::kAttemptTimeout);
      } else {
        arm_call_deadline();
      }
    });
    multi_.attach(*this);
    in_multi_ = true;
  }

  void curl_done(CURLcode code) override {
    multi_.detach(*this);
    in_multi_ = false;
    ended_ = true;
    code_ = code;
    if (phase_ == Phase::kHead) {
      if (easy_->headers_done() && code == CURLE_OK) {
        deliver_head();
      } else {
        deliver_failure();
      }
    } else if (reading_) {
      complete_read();
    }
  }

  void progressed() override {
    if (phase_ == Phase::kHead && easy_->headers_done()) {
      deliver_head();
    } else if (phase_ == Phase::kBody && reading_ && easy_->sink().taken() > 0) {
      complete_read();
    }
  }

  // The attempt's handle.
  void cancel_attempt() {
    if (phase_ == Phase::kHead) stop(Interrupt::kCancelled);
  }
  void drop_attempt() {
    if (phase_ != Phase::kHead) return;
    done_ = nullptr;  // the caller no longer waits for it
    close();
  }

  // The body's handle.
  void read(char* buf, size_t cap, ResponseBody::ReadDone done) {
    BodySink& sink = easy_->sink();
    if (!failed_ && in_multi_ && std::chrono::steady_clock::now() >= limits_.call_deadline) {
      stop(Interrupt::kCallTimeout);  // a reader coming back late is bounded by the deadline too (docs/timeouts.md §8)
    }
    if (failed_ || interrupt_ != Interrupt::kNone) {
      post_read(std::move(done), ending());
      return;
    }
    // Bytes kept from the last write come first, also after the transfer ended.
    const size_t drained = sink.drain(buf, cap);
    if (drained == cap || !in_multi_) {
      BodyRead r;
      r.n = drained;
      post_read(std::move(done), drained > 0 ? std::move(r) : ending());
      return;
    }
    reading_ = true;
    read_done_ = std::move(done);
    read_drained_ = drained;
    sink.lend(buf + drained, cap - drained);
    if (sink.paused()) {
      // libcurl hands the write it kept over at once (into the lent buffer), then reads the socket again.
      sink.resumed();
      curl_easy_pause(easy_->handle(), CURLPAUSE_CONT);
    }
    if (reading_ && (drained > 0 || sink.taken() > 0)) complete_read();
    // Otherwise progressed() or curl_done() completes it.
  }

  void cancel_body() {
    if (in_multi_) stop(Interrupt::kCancelled);
  }

  // Both handles are gone, or the body's was: the transfer leaves the multi, its easy handle for the next one.
  void close() {
    phase_ = Phase::kClosed;
    reading_ = false;
    read_done_ = nullptr;
    if (timer_ != 0) multi_.loop().cancel_timer(timer_);
    timer_ = 0;
    multi_.forget(*this);
    if (in_multi_) {
      drop_paused_bytes();
      multi_.detach(*this, /*cut=*/true);
      cut_ = true;
    }
    in_multi_ = false;
    if (easy_) {
      if (easy_->sink().streaming()) {
        easy_->sink().unlend();
        easy_->sink().release_kept();
      }
      easy_->on_progress(nullptr, nullptr);
      // A handle taken out of the multi mid-transfer is not reused: libcurl may still hold bytes of that
      // transfer for it (an HTTP/2 stream paused while its reader was away), which would reach the next
      // request's body.
      if (cut_) {
        easy_.reset();
      } else {
        multi_.give_back(std::move(easy_));
      }
    }
  }

 private:
  enum class Phase { kHead, kBody, kClosed };

  void arm_call_deadline() {
    if (!in_multi_) return;
    if (limits_.call_deadline <= std::chrono::steady_clock::now()) {
      stop(Interrupt::kCallTimeout);
      return;
    }
    timer_ = multi_.loop().add_timer(limits_.call_deadline, [this] {
      timer_ = 0;
      stop(Interrupt::kCallTimeout);
    });
  }

  // libcurl 7.88 keeps the write a paused transfer refused (and what more of an HTTP/2 stream came) for the
  // handle, and neither curl_multi_remove_handle nor curl_easy_cleanup frees it: left, it leaks, or reaches
  // the next request on the handle. Unpaused into a sink that drops it, it goes now. Before the detach.
  void drop_paused_bytes() {
    BodySink& sink = easy_->sink();
    if (!sink.paused()) return;
    easy_->on_progress(nullptr, nullptr);  // nothing more to tell: the transfer is being cut
    sink.discard_rest();
    sink.resumed();
    curl_easy_pause(easy_->handle(), CURLPAUSE_CONT);
  }

  // A deadline or cancel stops the transfer before libcurl finished it.
  void stop(Interrupt why) {
    if (!in_multi_) return;
    interrupt_ = why;
    // Before leaving the multi, while the cache still counts this transfer: a timed-out connection another
    // transfer shares must stay (a later finish() would count one transfer too few, and cut it under them).
    easy_->retire_connection_after_timeout(why);
    drop_paused_bytes();
    multi_.detach(*this, /*cut=*/true);
    cut_ = true;
    in_multi_ = false;
    if (phase_ == Phase::kHead) {
      deliver_failure();
    } else if (reading_) {
      reading_ = false;
      easy_->sink().unlend();
      post_read(std::move(read_done_), ending());
    }
  }

  void deliver_head() {
    phase_ = Phase::kBody;
    if (!done_) return;
    WireResult head = easy_->head();
    // The body's handle is made in the task (a task must be copyable): dropped unrun, the transfer closes
    // with its last reference.
    multi_.loop().post([done = std::move(done_), head = std::move(head), t = shared_from_this()]() mutable {
      done(std::move(head), std::make_unique<Body>(std::move(t)));
    });
    done_ = nullptr;
  }

  void deliver_failure() {
    if (timer_ != 0) multi_.loop().cancel_timer(timer_);
    timer_ = 0;
    WireResult result = easy_->finish(code_, interrupt_);
    phase_ = Phase::kClosed;
    if (done_) {
      multi_.loop().post([done = std::move(done_), result = std::move(result)]() mutable {
        done(std::move(result), nullptr);
      });
    }
    done_ = nullptr;
  }

  void complete_read() {
    reading_ = false;
    BodySink& sink = easy_->sink();
    BodyRead r;
    r.n = read_drained_ + sink.unlend();
    if (r.n == 0 && !in_multi_) r = ending();  // the transfer ended with nothing more to hand over
    post_read(std::move(read_done_), std::move(r));
  }

  // How the body ends once nothing is left to hand over: its end, or its failure (every later read too).
  BodyRead ending() {
    if (failed_) return failure_;
    if (ended_ && code_ == CURLE_OK && interrupt_ == Interrupt::kNone) {
      if (end_seen_ || !easy_->body_cut_at_close()) {
        end_seen_ = true;
        return BodyRead{};
      }
      failed_ = true;
      failure_.error = Code::kConnectionLost;
      failure_.message = kCutWithoutCloseNotify;
      return failure_;
    }
    WireResult why = easy_->finish(code_, interrupt_);
    failed_ = true;
    failure_.error = why.error != Code::kOk ? why.error : Code::kConnectionLost;
    failure_.message = why.error != Code::kOk ? std::move(why.message) : "the body ended early";
    return failure_;
  }

  void post_read(ResponseBody::ReadDone done, BodyRead r) {
    multi_.loop().post([done = std::move(done), r = std::move(r)]() mutable { done(std::move(r)); });
  }

  class Body final : public ResponseBody {
   public:
    explicit Body(std::shared_ptr<StreamTransfer> t) : t_(std::move(t)) {}
    ~Body() override { t_->close(); }
    void read(char* buf, size_t cap, ReadDone done) override { t_->read(buf, cap, std::move(done)); }
    BodyRead read_ready(char*, size_t, BodyWait* wait) override {
      // The loop thread must not wait inside, and libcurl reads this transfer's socket on the loop.
      *wait = BodyWait{};
      BodyRead refused;
      refused.error = Code::kMisuse;
      refused.message = "a body on the event loop is read with read(), its completion posted";
      return refused;
    }
    void cancel() override { t_->cancel_body(); }

   private:
    std::shared_ptr<StreamTransfer> t_;
  };

  AsyncMulti& multi_;
  std::unique_ptr<CurlEasy> easy_;  // back to the multi's pool at close()
  const AttemptLimits limits_;
  OpenDone done_;  // until the headers (or the failure) are delivered
  Phase phase_ = Phase::kHead;
  EventLoop::TimerId timer_ = 0;
  bool in_multi_ = false;
  bool cut_ = false;    // taken out of the multi before libcurl finished the transfer (see close())
  bool ended_ = false;  // libcurl finished the transfer, with code_
  CURLcode code_ = CURLE_OK;
  Interrupt interrupt_ = Interrupt::kNone;
  // The pending read: its buffer (lent to the sink past read_drained_ bytes of kept ones) and its done.
  bool reading_ = false;
  ResponseBody::ReadDone read_done_;
  size_t read_drained_ = 0;
  bool failed_ = false;
  BodyRead failure_;
  bool end_seen_ = false;
};

// The attempt's handle of a streamed transfer: cancelling it before the headers ends the attempt.
class OpenAttempt final : public AsyncAttempt {
 public:
  explicit OpenAttempt(std::shared_ptr<StreamTransfer> t) : t_(std::move(t)) {}
  ~OpenAttempt() override { t_->drop_attempt(); }
  void cancel() override { t_->cancel_attempt(); }

 private:
  std::shared_ptr<StreamTransfer> t_;
};

void AsyncMulti::note_progress(void* entry) {
  auto* e = static_cast<MultiEntry*>(entry);
  static_cast<StreamTransfer*>(e)->multi().note(*e);
}

std::unique_ptr<AsyncAttempt> AsyncMulti::start_open(const WireRequest& request, const AttemptLimits& limits,
                                                     OpenDone done) {
  std::unique_ptr<CurlEasy> easy = take_easy();
  easy->prepare(request, limits, std::chrono::steady_clock::now());
  easy->stream_body();
  auto t = std::make_shared<StreamTransfer>(*this, std::move(easy), limits, std::move(done));
  t->begin();
  return std::make_unique<OpenAttempt>(std::move(t));
}

// Overwrites a secret's bytes before its memory goes back to the heap.
void wipe(std::string& secret) {
  OPENSSL_cleanse(secret.data(), secret.size());
  secret.clear();
}

// Reads a whole file into a string sized once: no growing copy, and no stream buffer, is left behind
// holding a part of it (the file may be a private key).
std::string read_file(const std::string& path, bool& ok) {
  ok = false;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::string();
  struct stat st {};
  std::string out;
  if (::fstat(fd, &st) == 0 && st.st_size >= 0) {
    out.resize(static_cast<size_t>(st.st_size));
    size_t got = 0;
    while (got < out.size()) {
      const ssize_t n = ::read(fd, out.data() + got, out.size() - got);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
    ok = got == out.size();
  }
  ::close(fd);
  if (!ok) wipe(out);
  return out;
}

class CurlTransport final : public Transport {
 public:
  explicit CurlTransport(TransportConfig config)
      : config_(std::move(config)), connect_to_(make_slist(config_.connect_to)) {
    watch_forks();
  }

  // The async multi lives on the loop thread: it is destroyed there too. The private key is wiped once no
  // handle can read it any more: the client's own copies of secrets do not outlive it in the heap.
  ~CurlTransport() override {
    adopt_if_forked();  // a parent's loop is not waited for
    if (async_ && async_loop_ != nullptr) {
      if (async_loop_->on_loop_thread()) {
        async_.reset();
      } else {
        Mutex m;
        CondVar cv;
        bool gone = false;  // guarded by m (a local: GUARDED_BY applies to members only)
        async_loop_->post([&] {
          async_.reset();
          MutexLock lock(m);
          gone = true;
          cv.notify_one();
        });
        if (async_loop_->caller_driven()) {
          async_loop_->drive_until([&] {
            MutexLock lock(m);
            return gone;
          });
        } else {
          MutexLock lock(m);
          while (!gone) cv.wait(m);
        }
      }
    }
    idle_.clear();
    wipe(config_.key_pem);
  }

  WireResult perform(const WireRequest& request, const AttemptLimits& limits, CancelToken* cancel) override {
    adopt_if_forked();
    std::unique_ptr<Lane> lane;
    try {
      lane = acquire();
    } catch (const LocalShortage& s) {
      return shortage_result(s);
    }
    WireResult result = lane->perform(request, limits, cancel);
    release(std::move(lane));
    return result;
  }

  // The lane stays with the body until it is read or closed, then comes back as a perform()'s would.
  Opened open(const WireRequest& request, const AttemptLimits& limits, CancelToken* cancel) override {
    adopt_if_forked();
    std::unique_ptr<CurlStream> stream;
    try {
      stream = stream_on_lane(limits, cancel);
    } catch (const LocalShortage& s) {
      return Opened{shortage_result(s), nullptr};
    }
    WireResult head = stream->open(request);
    if (head.error != Code::kOk) return Opened{std::move(head), nullptr};
    return Opened{std::move(head), std::move(stream)};
  }

  // As open(), on a lane the caller's steps drive.
  std::unique_ptr<Stepped> open_stepped(const WireRequest& request, const AttemptLimits& limits,
                                        CancelToken* cancel) override {
    adopt_if_forked();
    std::unique_ptr<CurlStream> stream;
    try {
      stream = stream_on_lane(limits, cancel);
    } catch (const LocalShortage& s) {
      return std::make_unique<SteppedShortage>(shortage_result(s));
    }
    stream->begin(request);
    return std::make_unique<SteppedStream>(std::move(stream));
  }

  std::unique_ptr<AsyncAttempt> start(EventLoop& loop, const WireRequest& request, const AttemptLimits& limits,
                                      AttemptDone done) override {
    adopt_if_forked();
    if (std::optional<WireResult> shortage = make_async(loop)) {
      loop.post([done = std::move(done), result = std::move(*shortage)]() mutable { done(std::move(result)); });
      return std::make_unique<UnstartedAttempt>();
    }
    return async_->start(request, limits, std::move(done));
  }

  std::unique_ptr<AsyncAttempt> start_open(EventLoop& loop, const WireRequest& request, const AttemptLimits& limits,
                                           OpenDone done) override {
    adopt_if_forked();
    if (std::optional<WireResult> shortage = make_async(loop)) {
      loop.post([done = std::move(done), result = std::move(*shortage)]() mutable { done(std::move(result), nullptr); });
      return std::make_unique<UnstartedAttempt>();
    }
    return async_->start_open(request, limits, std::move(done));
  }

 private:
  // In a forked child, on first use: the parent's handles are dropped, to be made anew here (docs/fork.md
  // §23). One relaxed load and a compare when not forked. Acquire: a thread that sees this process's
  // generation sees the handles adopt() left.
  void adopt_if_forked() {
    if (generation_.load(std::memory_order_acquire) != fork_generation()) [[unlikely]] adopt();
  }

  void adopt() NO_THREAD_SAFETY_ANALYSIS {
    MutexLock forking(fork_mutex());
    const uint64_t generation = fork_generation();
    if (generation_.load(std::memory_order_relaxed) == generation) return;  // another thread adopted it
    // A thread of the parent may have held mu_ at the fork (for a few instructions: acquire(), release()), a
    // thread this process does not have: it is made anew. No thread of this process holds it: each comes
    // through here first. (std::mutex is trivially destructible: nothing is lost by building over it.)
    new (&mu_) Mutex();
    std::vector<std::unique_ptr<Lane>> inherited;
    {
      MutexLock lock(mu_);
      inherited.swap(idle_);
    }
    // The parent's connections: the fork handler made each socket of theirs a dead one in this process, so
    // libcurl takes them apart (a TLS close_notify, an HTTP/2 GOAWAY) without a byte reaching the parent's
    // peer, and closes only this process's copies. Where it could not (no descriptor for the dead socket),
    // they are left alone, memory and all. A lane another thread of the parent was using at the fork is not
    // here: it stays with that thread's stack, which this process never runs (its socket is dead too).
    const bool take_apart = !inherited_sockets_live();
    for (std::unique_ptr<Lane>& lane : inherited) {
      if (take_apart) {
        lane.reset();
      } else {
        (void)lane.release();
      }
    }
    if (async_) {
      if (async_->forget_loop_after_fork() && take_apart) {
        async_.reset();
      } else {
        (void)async_.release();  // the parent's transfers in flight: theirs, memory and all
      }
      async_loop_ = nullptr;
    }
    generation_.store(generation, std::memory_order_release);
  }

  // The client's multi handle, made on first use: the failure to report when the machine has no descriptor
  // left for it.
  std::optional<WireResult> make_async(EventLoop& loop) {
    if (async_) return std::nullopt;
    try {
      async_ = std::make_unique<AsyncMulti>(loop, config_, connect_to_, origin_);
    } catch (const LocalShortage& s) {
      return shortage_result(s);
    }
    async_loop_ = &loop;
    return std::nullopt;
  }

  // A stream on a lane of the pool: the lane comes back when the stream ends with its transfer finished, and
  // is closed, connection and all, when the stream is cut short.
  std::unique_ptr<CurlStream> stream_on_lane(const AttemptLimits& limits, CancelToken* cancel) {
    Lane* lane = acquire().release();
    return std::make_unique<CurlStream>(lane->easy(), lane->multi(), limits, cancel, [this, lane](bool ended) {
      std::unique_ptr<Lane> owned(lane);
      if (ended) release(std::move(owned));
    });
  }

  std::unique_ptr<Lane> acquire() {
    std::vector<std::unique_ptr<Lane>> stale;  // closed outside the lock
    {
      MutexLock lock(mu_);
      const Instant now = std::chrono::steady_clock::now();
      while (!idle_.empty()) {
        std::unique_ptr<Lane> lane = std::move(idle_.back());
        idle_.pop_back();
        if (now - lane->last_used < config_.idle_timeout) return lane;
        stale.push_back(std::move(lane));
      }
    }
    return std::make_unique<Lane>(config_, connect_to_, origin_);
  }

  void release(std::unique_ptr<Lane> lane) {
    lane->last_used = std::chrono::steady_clock::now();
    MutexLock lock(mu_);
    if (idle_.size() < config_.max_idle_connections) idle_.push_back(std::move(lane));
  }

  TransportConfig config_;  // changed only by the destructor's wipe
  const Slist connect_to_;
  OriginMemory origin_;  // shared by every lane and the async multi
  Mutex mu_;
  std::vector<std::unique_ptr<Lane>> idle_ GUARDED_BY(mu_);  // most recently used last
  std::unique_ptr<AsyncMulti> async_;        // loop thread only (and adopt(), in a forked child)
  EventLoop* async_loop_ = nullptr;          // loop thread only (and adopt(), in a forked child)
  // The fork generation the handles above belong to (docs/fork.md §23).
  std::atomic<uint64_t> generation_{fork_generation()};
};

}  // namespace

Status check_curl_features() {
  ensure_curl_global();
  const curl_version_info_data* info = curl_version_info(CURLVERSION_NOW);
  if (info->version_num < 0x075000) {
    return Status(Code::kInternal, std::string("libcurl 7.80 or newer is needed, found ") + info->version);
  }
  if (info->ssl_version == nullptr || std::string_view(info->ssl_version).find("OpenSSL") == std::string_view::npos) {
    return Status(Code::kInternal, "libcurl must be built with OpenSSL (hostname checks are pinned through it)");
  }
  return Status();
}

Result<std::unique_ptr<Transport>> make_curl_transport(const TransportConfig& config) {
  if (Status s = check_curl_features(); !s.ok()) return s;
  TransportConfig c = config;
  struct WipeOnReturn {
    TransportConfig& c;
    ~WipeOnReturn() { wipe(c.key_pem); }  // a no-op once the transport has taken the key
  } wipe_on_return{c};
  // Files are read now, so a missing file is an error when the client is built, not at its first call, and
  // the key material sits in memory as a blob (nothing re-read per connection).
  const std::pair<std::string*, std::string*> files[] = {
      {&c.ca_file, &c.ca_pem}, {&c.cert_file, &c.cert_pem}, {&c.key_file, &c.key_pem}};
  const char* keys[] = {"tls.ca_file", "tls.cert_file", "tls.key_file"};
  const bool cert_from_file = !c.cert_file.empty(), key_from_file = !c.key_file.empty();
  for (size_t i = 0; i < 3; ++i) {
    auto [file, pem] = files[i];
    if (file->empty()) continue;
    bool ok = false;
    *pem = read_file(*file, ok);
    if (!ok) return Status(Code::kConfig, std::string(keys[i]) + ": cannot read \"" + *file + "\"", {keys[i]});
    file->clear();
  }
  if (c.https && c.ca_pem.empty()) c.system_ca_file = system_ca_bundle();
  if (!c.cert_pem.empty() || !c.key_pem.empty()) {
    if (Status s = check_client_identity(c.cert_pem, c.key_pem, cert_from_file ? "tls.cert_file" : "tls.cert_pem",
                                         key_from_file ? "tls.key_file" : "tls.key_pem");
        !s.ok()) {
      return s;
    }
  }
  return std::unique_ptr<Transport>(new CurlTransport(std::move(c)));
}

}  // namespace humus::transport
