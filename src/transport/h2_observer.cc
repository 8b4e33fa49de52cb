#include "transport/h2_observer.h"

#include <dlfcn.h>
#include <nghttp2/nghttp2.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <unordered_map>

#include "common/mutex.h"

namespace humus::transport::h2 {
namespace {

// Every watched easy handle's facts. One lock for all: it is taken a few times per request (the request's
// HEADERS, its last frame, the stream's close) and per attempt, never while calling out. The maps are reached
// through functions that require their lock: a GUARDED_BY cannot annotate a function's static.
Mutex registry_mu;
std::unordered_map<const void*, StreamFacts>& registry() REQUIRES(registry_mu) {
  static auto* watched = new std::unordered_map<const void*, StreamFacts>();  // never freed: used at exit
  return *watched;
}

std::atomic<bool> wrapped{false};

// Connection lifetime (set_lifetime): each watched easy handle's lifetime, and each open session's birth and,
// once a watched stream opened on it, the moment it takes no new stream. A lock of its own: libcurl asks
// check_request_allowed at every read of an HTTP/2 connection.
using Clock = std::chrono::steady_clock;
struct SessionAge {
  Clock::time_point born;
  Clock::time_point last_stream{Clock::time_point::max()};  // no new stream from then on
  bool counted = false;                                        // sessions_aged() counts it already
};
Mutex sessions_mu;
std::unordered_map<const void*, Clock::duration>& lifetimes() REQUIRES(sessions_mu) {  // easy → lifetime
  static auto* m = new std::unordered_map<const void*, Clock::duration>();  // never freed: used at exit
  return *m;
}
std::unordered_map<const nghttp2_session*, SessionAge>& sessions() REQUIRES(sessions_mu) {
  static auto* m = new std::unordered_map<const nghttp2_session*, SessionAge>();
  return *m;
}
std::atomic<uint64_t> aged_sessions{0};

// The session sent a frame: its first (the client's SETTINGS) is its birth.
void note_session_frame(const nghttp2_session* session) {
  MutexLock lock(sessions_mu);
  sessions().try_emplace(session, SessionAge{Clock::now()});
}

// `easy`'s request opened a stream on `session`: the session's first watched stream sets its last moment.
void note_session_stream(const nghttp2_session* session, const void* easy) {
  MutexLock lock(sessions_mu);
  const auto life = lifetimes().find(easy);
  if (life == lifetimes().end()) return;
  const auto it = sessions().try_emplace(session, SessionAge{Clock::now()}).first;
  if (it->second.last_stream == Clock::time_point::max()) it->second.last_stream = it->second.born + life->second;
}

// Whether `session` has reached its lifetime.
bool session_aged(const nghttp2_session* session) {
  MutexLock lock(sessions_mu);
  const auto it = sessions().find(session);
  if (it == sessions().end() || it->second.last_stream == Clock::time_point::max() ||
      Clock::now() < it->second.last_stream) {
    return false;
  }
  if (!it->second.counted) {
    it->second.counted = true;
    aged_sessions.fetch_add(1, std::memory_order_relaxed);
  }
  return true;
}

void forget_session(const nghttp2_session* session) {
  MutexLock lock(sessions_mu);
  sessions().erase(session);
}

// nghttp2's own definition of `name`: the next one after this library's in the lookup order.
template <typename Fn>
Fn real(const char* name) {
  void* f = dlsym(RTLD_NEXT, name);
  if (f == nullptr) {
    // Only libnghttp2 calls these functions' callers link against; it is loaded whenever one is called.
    std::fprintf(stderr, "humus_http: nghttp2's %s not found\n", name);
    std::abort();
  }
  return reinterpret_cast<Fn>(f);
}

void* stream_user_data(nghttp2_session* session, int32_t stream_id) {
  using Fn = void* (*)(nghttp2_session*, int32_t);
  static const Fn get = reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, "nghttp2_session_get_stream_user_data"));
  return get != nullptr && stream_id > 0 ? get(session, stream_id) : nullptr;
}

// The easy handle a stream belongs to, when it is watched.
StreamFacts* watched_stream(nghttp2_session* session, int32_t stream_id) REQUIRES(registry_mu) {
  auto it = registry().find(stream_user_data(session, stream_id));
  return it == registry().end() ? nullptr : &it->second;
}

// nghttp2 ended `session`'s connection: every watched stream on it learns why.
void connection_failed(nghttp2_session* session, int why) {
  MutexLock lock(registry_mu);
  for (auto& [easy, facts] : registry()) {
    if (facts.seen && facts.connection_failure == 0 && stream_user_data(session, facts.stream_id) == easy) {
      facts.connection_failure = why;
    }
  }
}

void note_frame_sent(nghttp2_session* session, const nghttp2_frame* frame) {
  const uint8_t type = frame->hd.type;
  const bool ends_stream = (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0;
  if (type == NGHTTP2_HEADERS || (type == NGHTTP2_DATA && ends_stream)) {
    const void* opened_by = nullptr;  // the watched easy handle whose request opened the stream
    {
      MutexLock lock(registry_mu);
      if (StreamFacts* f = watched_stream(session, frame->hd.stream_id)) {
        f->seen = true;
        f->stream_id = frame->hd.stream_id;
        f->request_ended = f->request_ended || ends_stream;
        if (type == NGHTTP2_HEADERS) opened_by = stream_user_data(session, frame->hd.stream_id);
      }
    }
    if (opened_by != nullptr) note_session_stream(session, opened_by);
  } else if (type == NGHTTP2_SETTINGS && (frame->hd.flags & NGHTTP2_FLAG_ACK) == 0) {
    note_session_frame(session);
  } else if (type == NGHTTP2_RST_STREAM) {
    MutexLock lock(registry_mu);
    if (StreamFacts* f = watched_stream(session, frame->hd.stream_id)) {
      f->reset_by_client = true;
      f->client_reset_code = frame->rst_stream.error_code;
    }
  } else if (type == NGHTTP2_GOAWAY && frame->goaway.error_code != NGHTTP2_NO_ERROR) {
    // The client's nghttp2 sends a GOAWAY with an error only when the server broke the protocol.
    connection_failed(session, static_cast<int>(frame->goaway.error_code));
  }
}

void note_stream_closed(nghttp2_session* session, int32_t stream_id, uint32_t error_code) {
  MutexLock lock(registry_mu);
  if (StreamFacts* f = watched_stream(session, stream_id)) {
    f->closed = true;
    f->close_code = error_code;
  }
}

// libcurl's own callbacks, called after the facts are noted. One libcurl per process is wrapped: a second,
// different callback for the same slot (another user of nghttp2 in the process) is passed on unwrapped.
std::atomic<nghttp2_on_frame_send_callback> libcurl_frame_send{nullptr};
std::atomic<nghttp2_on_stream_close_callback> libcurl_stream_close{nullptr};

template <typename Fn>
bool adopt(std::atomic<Fn>& slot, Fn callback) {
  Fn expected = nullptr;
  return slot.compare_exchange_strong(expected, callback) || expected == callback;
}

int observe_frame_send(nghttp2_session* session, const nghttp2_frame* frame, void* /*user_data*/) {
  note_frame_sent(session, frame);
  return 0;
}

int observe_then_frame_send(nghttp2_session* session, const nghttp2_frame* frame, void* user_data) {
  note_frame_sent(session, frame);
  return libcurl_frame_send.load(std::memory_order_relaxed)(session, frame, user_data);
}

int observe_then_stream_close(nghttp2_session* session, int32_t stream_id, uint32_t error_code, void* user_data) {
  note_stream_closed(session, stream_id, error_code);  // before libcurl's, which unhooks the stream's data
  return libcurl_stream_close.load(std::memory_order_relaxed)(session, stream_id, error_code, user_data);
}

}  // namespace

void watch(const void* easy) {
  MutexLock lock(registry_mu);
  registry()[easy] = StreamFacts{};
}

void unwatch(const void* easy) {
  {
    MutexLock lock(registry_mu);
    registry().erase(easy);
  }
  MutexLock lock(sessions_mu);
  lifetimes().erase(easy);
}

void clear(const void* easy) {
  MutexLock lock(registry_mu);
  if (auto it = registry().find(easy); it != registry().end()) it->second = StreamFacts{};
}

StreamFacts facts(const void* easy) {
  MutexLock lock(registry_mu);
  auto it = registry().find(easy);
  return it == registry().end() ? StreamFacts{} : it->second;
}

bool active() { return wrapped.load(std::memory_order_relaxed); }

void set_lifetime(const void* easy, std::chrono::steady_clock::duration lifetime) {
  MutexLock lock(sessions_mu);
  lifetimes()[easy] = lifetime;
}

uint64_t sessions_aged() { return aged_sessions.load(std::memory_order_relaxed); }

std::string error_name(uint32_t code) {
  static const char* const names[] = {"NO_ERROR",           "PROTOCOL_ERROR",  "INTERNAL_ERROR",
                                      "FLOW_CONTROL_ERROR", "SETTINGS_TIMEOUT", "STREAM_CLOSED",
                                      "FRAME_SIZE_ERROR",   "REFUSED_STREAM",  "CANCEL",
                                      "COMPRESSION_ERROR",  "CONNECT_ERROR",   "ENHANCE_YOUR_CALM",
                                      "INADEQUATE_SECURITY", "HTTP_1_1_REQUIRED"};
  if (code < sizeof names / sizeof names[0]) return names[code];
  char buf[24];
  std::snprintf(buf, sizeof buf, "error 0x%x", code);
  return buf;
}

}  // namespace humus::transport::h2

// --- The nghttp2 functions libcurl calls, defined here so that its calls come here first. -------------------

#define HUMUS_INTERPOSE extern "C" __attribute__((visibility("default")))

namespace h2 = humus::transport::h2;

// A new callback set gets the observer's frame callback at once: libcurl 7.88 never sets one of its own.
HUMUS_INTERPOSE int nghttp2_session_callbacks_new(nghttp2_session_callbacks** callbacks_ptr) {
  static const auto make = h2::real<int (*)(nghttp2_session_callbacks**)>("nghttp2_session_callbacks_new");
  static const auto set_frame_send = h2::real<void (*)(nghttp2_session_callbacks*, nghttp2_on_frame_send_callback)>(
      "nghttp2_session_callbacks_set_on_frame_send_callback");
  const int rc = make(callbacks_ptr);
  if (rc == 0) set_frame_send(*callbacks_ptr, h2::observe_frame_send);
  return rc;
}

HUMUS_INTERPOSE void nghttp2_session_callbacks_set_on_frame_send_callback(nghttp2_session_callbacks* cbs,
                                                                          nghttp2_on_frame_send_callback callback) {
  static const auto set = h2::real<void (*)(nghttp2_session_callbacks*, nghttp2_on_frame_send_callback)>(
      "nghttp2_session_callbacks_set_on_frame_send_callback");
  if (callback == nullptr) {
    set(cbs, h2::observe_frame_send);
  } else if (h2::adopt(h2::libcurl_frame_send, callback)) {
    set(cbs, h2::observe_then_frame_send);
  } else {
    set(cbs, callback);
  }
}

HUMUS_INTERPOSE void nghttp2_session_callbacks_set_on_stream_close_callback(
    nghttp2_session_callbacks* cbs, nghttp2_on_stream_close_callback callback) {
  static const auto set = h2::real<void (*)(nghttp2_session_callbacks*, nghttp2_on_stream_close_callback)>(
      "nghttp2_session_callbacks_set_on_stream_close_callback");
  if (callback != nullptr && h2::adopt(h2::libcurl_stream_close, callback)) {
    set(cbs, h2::observe_then_stream_close);
    h2::wrapped.store(true, std::memory_order_relaxed);
  } else {
    set(cbs, callback);
  }
}

// A fatal error reading the connection (nghttp2 stops; libcurl reports a failed read or a framing error) is
// noted. And a frame whose last bytes were its DATA is finished: libcurl 7.88 pauses nghttp2 on a DATA chunk
// its receive buffer has no room for (a large head just filled it), and once it handed the chunk over calls
// nghttp2 again only when bytes are left — none are, so the frame's end (END_STREAM: the response is whole)
// would wait for bytes the server never sends. A call with no bytes lets nghttp2 finish it, as it does
// nothing else without input.
HUMUS_INTERPOSE ssize_t nghttp2_session_mem_recv(nghttp2_session* session, const uint8_t* in, size_t inlen) {
  static const auto recv = h2::real<ssize_t (*)(nghttp2_session*, const uint8_t*, size_t)>("nghttp2_session_mem_recv");
  const ssize_t n = recv(session, in, inlen);
  if (n < 0) {
    h2::connection_failed(session, static_cast<int>(n));
  } else if (inlen > 0 && static_cast<size_t>(n) == inlen) {
    if (const ssize_t rest = recv(session, in + inlen, 0); rest < 0) {
      h2::connection_failed(session, static_cast<int>(rest));
      return rest;
    }
  }
  return n;
}

// A session past its lifetime allows no new request (set_lifetime): libcurl asks before it multiplexes a
// transfer onto the connection (its concurrency limit is then the streams it has) and after each read (it
// then marks the connection "no new requests", to be closed once its last transfer is done). nghttp2 itself
// never calls this function, so nothing changes for the streams the session has.
HUMUS_INTERPOSE int nghttp2_session_check_request_allowed(nghttp2_session* session) {
  static const auto allowed = h2::real<int (*)(nghttp2_session*)>("nghttp2_session_check_request_allowed");
  const int rc = allowed(session);
  return rc != 0 && h2::session_aged(session) ? 0 : rc;
}

// A session freed is forgotten: its address may be given to the next one.
HUMUS_INTERPOSE void nghttp2_session_del(nghttp2_session* session) {
  static const auto del = h2::real<void (*)(nghttp2_session*)>("nghttp2_session_del");
  if (session != nullptr) h2::forget_session(session);
  del(session);
}
