// humus_http._native: thin wrappers over the C ABI (include/humus_http.h) for the plain-Python API in
// python/humus_http. Every handle lives in an RAII owner; the GIL is released around every call that may wait
// (the network, the bulkhead, a breaker lock a callback may hold, the event loop); callbacks into Python take
// it. Nothing here knows the C++ core: the C header is the whole contract.
#include "native.h"

#include <fcntl.h>
#include <pthread.h>
#include <pybind11/pybind11.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "humus_http.h"

namespace py = pybind11;

namespace {

// ---- Interpreter helpers ----------------------------------------------------------------------------------

using humus_py::Gil;  // native.h: shared with testing.cpp
using humus_py::destroy_callable;
using humus_py::interpreter_finalizing;
using humus_py::PyCallable;
using humus_py::release_shared;
using humus_py::without_gil;

// threading.main_thread().ident: the only thread Python runs signal handlers on.
unsigned long g_main_thread = 0;

// ---- Owners of the C handles ------------------------------------------------------------------------------

template <typename T, void (*Free)(T*)>
struct Deleter {
  void operator()(T* p) const noexcept { Free(p); }
};
using ErrorPtr = std::unique_ptr<humus_error, Deleter<humus_error, humus_error_free>>;
using SettingsPtr = std::unique_ptr<humus_settings, Deleter<humus_settings, humus_settings_free>>;
using RequestPtr = std::unique_ptr<humus_request, Deleter<humus_request, humus_request_free>>;
using ResponsePtr = std::unique_ptr<humus_response, Deleter<humus_response, humus_response_free>>;
using CallPtr = std::unique_ptr<humus_call, Deleter<humus_call, humus_call_free>>;

// ---- Exceptions raised inside Python callbacks ------------------------------------------------------------

// A callback that raises stores its exception here, on the thread that ran it, and returns a non-OK status;
// the call then ends with HUMUS_E_CALLBACK on that same thread (the caller's for a blocking call, the loop
// thread for an asynchronous one), which takes the exception back. An owned reference (or null): moving the
// pointer needs no GIL, dropping it does.
thread_local PyObject* t_callback_exception = nullptr;

// GIL held, a Python error set: keeps the first exception of the call (a later one, e.g. a breaker policy
// raising after the classifier did, is dropped), with its traceback.
void store_callback_exception() {
  PyObject *type = nullptr, *value = nullptr, *traceback = nullptr;
  PyErr_Fetch(&type, &value, &traceback);
  PyErr_NormalizeException(&type, &value, &traceback);
  if (value != nullptr && traceback != nullptr) PyException_SetTraceback(value, traceback);
  Py_XDECREF(type);
  Py_XDECREF(traceback);
  if (t_callback_exception == nullptr) {
    t_callback_exception = value;
  } else {
    Py_XDECREF(value);
  }
}

PyObject* take_callback_exception() {
  PyObject* e = t_callback_exception;
  t_callback_exception = nullptr;
  return e;
}

// ---- Errors -----------------------------------------------------------------------------------------------

// What a humus_error said, copied out (the error is freed at once). `exception` is the Python exception a
// callback raised when the status is HUMUS_E_CALLBACK, else None.
struct ErrorInfo {
  int32_t status = 0;
  std::string status_name;
  std::string message;
  int32_t attempts = 0;
  std::vector<std::string> fields;
  int64_t retry_after_ms = 0;
  // How long the call took on the runtime's clock (docs/testing-kit.md §16.1), in microseconds
  // (Runtime::now_us); -1 when the error did not come from a call (settings, a request refused before it was
  // sent).
  int64_t elapsed_us = -1;
  py::object exception = py::none();
};

// GIL held. `err` is null for the few functions without one, whose status says everything (the header
// gives the reason beside each): the message is then the status's name.
ErrorInfo make_error(humus_status status, ErrorPtr err, PyObject* callback_exception) {
  ErrorInfo info;
  info.status = status;
  info.status_name = humus_status_name(status);
  if (const humus_error* e = err.get(); e != nullptr) {
    info.message = humus_error_message(e);
    info.attempts = humus_error_attempts(e);
    info.retry_after_ms = humus_error_retry_after_ms(e);
    const size_t n = humus_error_field_count(e);
    for (size_t i = 0; i < n; ++i) {
      const char* f = humus_error_field(e, i);
      if (f != nullptr) info.fields.emplace_back(f);
    }
  } else {
    info.message = info.status_name;
  }
  if (callback_exception != nullptr) info.exception = py::reinterpret_steal<py::object>(callback_exception);
  return info;
}

// Raised by the functions that build things (runtime, client, request); humus_http turns it into the
// matching UpstreamError. Its single argument is an ErrorInfo.
PyObject* g_failure_type = nullptr;

struct Failure {
  ErrorInfo info;
};

[[noreturn]] void fail(humus_status status, ErrorPtr err) {
  throw Failure{make_error(status, std::move(err), nullptr)};
}

// ---- Runtime ----------------------------------------------------------------------------------------------

class Runtime {
 public:
  explicit Runtime(const std::string& options_json) {
    humus_error* err = nullptr;
    const humus_status st = humus_runtime_new(options_json.data(), options_json.size(), &rt_, &err);
    if (st != HUMUS_OK) fail(st, ErrorPtr(err));
    // Advancing by 0 changes nothing on a virtual clock; a real clock refuses it with HUMUS_E_MISUSE.
    virtual_clock_ = humus_runtime_advance_ms(rt_, 0, nullptr) == HUMUS_OK;
  }
  ~Runtime() {
    // Joins the event-loop thread, which may be waiting for the GIL in a callback.
    if (rt_ == nullptr) return;
    without_gil([this] { humus_runtime_free(rt_); });
  }
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;
  humus_runtime* get() const { return rt_; }

  // The virtual clock (docs/testing-kit.md §16.1). Advancing wakes the waits that come due, whose callbacks need the GIL.
  void advance_ms(int64_t ms) {
    humus_error* err = nullptr;
    humus_status st;
    {
      py::gil_scoped_release nogil;
      st = humus_runtime_advance_ms(rt_, ms, &err);
    }
    if (st != HUMUS_OK) fail(st, ErrorPtr(err));
  }
  int64_t elapsed_ms() const { return humus_runtime_elapsed_ms(rt_); }
  // What a call's elapsed time is measured on, in microseconds: a virtual clock's own time, or on a real
  // clock the steady clock (the C ABI reads the runtime's clock in whole milliseconds; Response.elapsed is
  // finer). Any thread, no GIL needed.
  int64_t now_us() const {
    if (virtual_clock_) return humus_runtime_elapsed_ms(rt_) * 1000;
    return std::chrono::duration_cast<std::chrono::microseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }

 private:
  humus_runtime* rt_ = nullptr;
  bool virtual_clock_ = false;  // set once at construction
};

// ---- Callbacks: the classifier and the breaker policy -----------------------------------------------------

// One attempt as a classifier sees it; valid only during the callback (the C attempt is borrowed).
class Attempt {
 public:
  explicit Attempt(const humus_attempt* a) : a_(a) {}
  void invalidate() { a_ = nullptr; }
  const humus_attempt* get() const {
    if (a_ == nullptr) {
      throw std::runtime_error("an Attempt is valid only during the classifier call that received it");
    }
    return a_;
  }

 private:
  const humus_attempt* a_;
};

py::tuple classification_tuple(const humus_classification& c) {
  return py::make_tuple(c.retry, c.breaker, c.retry_after_ms);
}

humus_status classify_trampoline(void* user_data, const humus_attempt* attempt, humus_classification* out) {
  if (interpreter_finalizing()) return HUMUS_E_CALLBACK;
  Gil gil;
  humus_status result = HUMUS_OK;
  auto* view = new Attempt(attempt);
  py::object handle = py::cast(view, py::return_value_policy::take_ownership);
  try {
    // The Python adapter calls the user's classifier and returns (retry, breaker, retry_after_ms).
    const py::tuple t = static_cast<PyCallable*>(user_data)->fn(handle);
    out->retry = t[0].cast<int32_t>();
    out->breaker = t[1].cast<int32_t>();
    out->retry_after_ms = t[2].cast<int64_t>();
  } catch (py::error_already_set& e) {
    e.restore();
    store_callback_exception();
    result = HUMUS_E_CALLBACK;
  } catch (const std::exception& e) {
    py::set_error(PyExc_RuntimeError, (std::string("classifier adapter: ") + e.what()).c_str());
    store_callback_exception();
    result = HUMUS_E_CALLBACK;
  }
  view->invalidate();
  return result;
}

// ---- Request bodies read from Python ----------------------------------------------------------------------

// user_data of a request body streamed from Python (content= an iterator of bytes or a binary file, adapted
// by humus_http._response): `read(cap)` returns at most cap bytes (b"" at the end), `rewind()` starts over.
// The callbacks run on the thread driving the attempt with the GIL released by the call, and take it only
// for the Python call; an exception they raise ends the attempt with HUMUS_E_CALLBACK and is re-raised.
struct PyBodyReader {
  py::object read;
  py::object rewind;  // None: not replayable
};

// Runs `work` (a Python call) holding the GIL: HUMUS_OK, or HUMUS_E_CALLBACK with the exception kept for
// the call it ends (`what` names the adapter when a C++ exception is the cause).
template <typename Work>
humus_status with_python(const char* what, Work work) {
  if (interpreter_finalizing()) return HUMUS_E_CALLBACK;
  Gil gil;
  try {
    work();
    return HUMUS_OK;
  } catch (py::error_already_set& e) {
    e.restore();
  } catch (const std::exception& e) {
    py::set_error(PyExc_RuntimeError, (std::string(what) + ": " + e.what()).c_str());
  }
  store_callback_exception();
  return HUMUS_E_CALLBACK;
}

humus_status body_read_trampoline(void* user_data, void* buf, size_t cap, size_t* n) {
  return with_python("request body reader", [&] {
    const py::object chunk = static_cast<PyBodyReader*>(user_data)->read(cap);
    char* data = nullptr;
    Py_ssize_t len = 0;
    if (!PyBytes_Check(chunk.ptr())) throw py::type_error("a request body reader must return bytes");
    if (PyBytes_AsStringAndSize(chunk.ptr(), &data, &len) != 0) throw py::error_already_set();
    if (static_cast<size_t>(len) > cap) {
      throw py::value_error("a request body reader returned more than asked");
    }
    std::memcpy(buf, data, static_cast<size_t>(len));
    *n = static_cast<size_t>(len);
  });
}

humus_status body_rewind_trampoline(void* user_data) {
  return with_python("request body rewind", [&] { (void)static_cast<PyBodyReader*>(user_data)->rewind(); });
}

// The reader's destroy (and its owner's deleter before the request takes it): drops the callables with the
// GIL, or leaks them once the interpreter is finalizing.
void destroy_body_reader(void* user_data) {
  auto* reader = static_cast<PyBodyReader*>(user_data);
  if (interpreter_finalizing()) {
    (void)reader->read.release();
    (void)reader->rewind.release();
    delete reader;
    return;
  }
  Gil gil;
  delete reader;
}

struct BodyReaderDeleter {
  void operator()(PyBodyReader* r) const noexcept { destroy_body_reader(r); }
};
using BodyReaderPtr = std::unique_ptr<PyBodyReader, BodyReaderDeleter>;

// ---- Callbacks: attempt hooks (event_hooks per attempt) ---------------------------------------------------

// user_data of one call's attempt hooks (humus_request_set_attempt_hooks), from humus_http._client's adapter:
// `before(method, url, attempt, headers)` returns the (name, value) pairs to set on this attempt, or None;
// `after(attempt, status, headers)` records what the attempt brought (status 0: no response). They run on the
// thread that drives the attempt with the GIL released by the call, and take it for the Python call. An
// exception from `before` ends the call with HUMUS_E_CALLBACK and is re-raised (with_python); `after` only
// records, and the adapter runs a retried attempt's response hooks from the next `before`, so every hook's
// exception ends the call at once.
struct PyAttemptHooks {
  py::object before;
  py::object after;
};

// GIL held: (name, value) pairs; values latin-1, as Response.headers() reads them.
template <typename Name, typename Value>
py::list header_list(size_t n, Name name, Value value) {
  py::list out(n);
  for (size_t i = 0; i < n; ++i) {
    const char* v = value(i);
    PyObject* decoded =
        PyUnicode_DecodeLatin1(v, static_cast<Py_ssize_t>(std::char_traits<char>::length(v)), "strict");
    if (decoded == nullptr) throw py::error_already_set();
    out[i] = py::make_tuple(py::str(name(i)), py::reinterpret_steal<py::object>(decoded));
  }
  return out;
}

humus_status before_trampoline(void* user_data, humus_attempt_request* r) {
  return with_python("request hook adapter", [&] {
    const py::list headers = header_list(
        humus_attempt_request_header_count(r),
        [&](size_t i) { return humus_attempt_request_header_name(r, i); },
        [&](size_t i) { return humus_attempt_request_header_value(r, i); });
    const py::object changes = static_cast<PyAttemptHooks*>(user_data)->before(
        humus_attempt_request_method(r), humus_attempt_request_url(r), humus_attempt_request_number(r),
        headers);
    if (changes.is_none()) return;
    for (const py::handle pair : changes) {
      const py::tuple t = py::reinterpret_borrow<py::tuple>(pair);
      const std::string name = t[0].cast<std::string>();
      const std::string value = t[1].cast<std::string>();
      humus_error* err = nullptr;
      if (humus_attempt_request_set_header(r, name.c_str(), value.c_str(), &err) != HUMUS_OK) {
        const ErrorPtr e(err);
        py::set_error(PyExc_ValueError, (std::string("a request hook set a header the client refuses: ") +
                                         humus_error_message(e.get()))
                                            .c_str());
        throw py::error_already_set();
      }
    }
  });
}

void after_trampoline(void* user_data, const humus_attempt* a) {
  // The adapter only records, and never raises: what could fail here (memory) is reported as unraisable
  // rather than kept on this thread, where it might end another call of the event loop.
  if (interpreter_finalizing()) return;
  Gil gil;
  try {
    const py::list headers = header_list(
        humus_attempt_header_count(a), [&](size_t i) { return humus_attempt_header_name(a, i); },
        [&](size_t i) { return humus_attempt_header_value(a, i); });
    static_cast<PyAttemptHooks*>(user_data)->after(humus_attempt_number(a), humus_attempt_status(a), headers);
  } catch (py::error_already_set& e) {
    e.discard_as_unraisable("humus_http response hook adapter");
  } catch (const std::exception& e) {
    py::set_error(PyExc_RuntimeError, (std::string("response hook adapter: ") + e.what()).c_str());
    PyErr_WriteUnraisable(nullptr);
  }
}

void destroy_attempt_hooks(void* user_data) {
  auto* hooks = static_cast<PyAttemptHooks*>(user_data);
  if (interpreter_finalizing()) {
    (void)hooks->before.release();
    (void)hooks->after.release();
    delete hooks;
    return;
  }
  Gil gil;
  delete hooks;
}

struct AttemptHooksDeleter {
  void operator()(PyAttemptHooks* h) const noexcept { destroy_attempt_hooks(h); }
};
using AttemptHooksPtr = std::unique_ptr<PyAttemptHooks, AttemptHooksDeleter>;

// The policy adapters take the counts as eight integers.
py::tuple counts_tuple(const humus_breaker_counts* c) {
  return py::make_tuple(c->state, c->successes, c->failures, c->consecutive_successes,
                        c->consecutive_failures, c->timed_out_probes, c->window_results, c->window_failures);
}

struct PolicyCallables {
  py::object trip;
  py::object probe;
};

template <typename Pick>
humus_status policy_trampoline(void* user_data, const humus_breaker_counts* counts, int32_t* out, Pick pick) {
  if (interpreter_finalizing()) return HUMUS_E_CALLBACK;
  Gil gil;
  try {
    *out = pick(*static_cast<PolicyCallables*>(user_data))(counts_tuple(counts)).template cast<int32_t>();
    return HUMUS_OK;
  } catch (py::error_already_set& e) {
    e.restore();
  } catch (const std::exception& e) {
    py::set_error(PyExc_RuntimeError, (std::string("breaker policy adapter: ") + e.what()).c_str());
  }
  store_callback_exception();
  return HUMUS_E_CALLBACK;
}

humus_status trip_trampoline(void* user_data, const humus_breaker_counts* counts, int32_t* open) {
  return policy_trampoline(user_data, counts, open, [](PolicyCallables& p) -> py::object& { return p.trip; });
}

humus_status probe_trampoline(void* user_data, const humus_breaker_counts* counts, int32_t* decision) {
  return policy_trampoline(user_data, counts, decision,
                           [](PolicyCallables& p) -> py::object& { return p.probe; });
}

void destroy_policy(void* user_data) {
  auto* p = static_cast<PolicyCallables*>(user_data);
  if (interpreter_finalizing()) {
    (void)p->trip.release();
    (void)p->probe.release();
    delete p;
    return;
  }
  Gil gil;
  delete p;
}

// ---- Responses --------------------------------------------------------------------------------------------

class ClientHandle;
class Bridge;

// The buffer a response of Client.submit_open lends to each humus_response_read_async: the response owns
// it, and the read in flight shares it, since it stays lent until on_read ran even after a close().
using ReadBuffer = std::shared_ptr<std::vector<char>>;

// A response: whole in memory, or for Client.open its body still on its connection (read() hands out the
// next bytes), or for Client.submit_open on its connection and read with read_async(). Read-only
// accessors; close() frees it early. A streamed one keeps its client alive: the C ABI wants it freed before
// its client.
class Response {
 public:
  Response(humus_response* r, int64_t elapsed_us, std::shared_ptr<ClientHandle> client = nullptr)
      : client_(std::move(client)), r_(r), elapsed_us_(elapsed_us) {}
  ~Response() {
    // Closing a body may close its connection; the last share of a client waits for its calls.
    if (r_ || client_) {
      without_gil([this] {
        r_.reset();
        client_.reset();
      });
    }
  }
  const humus_response* get() const {
    if (!r_) throw std::runtime_error("the response is closed");
    return r_.get();
  }
  int32_t status() const { return humus_response_status(get()); }
  int32_t attempts() const { return humus_response_attempts(get()); }
  int64_t elapsed_us() const { return elapsed_us_; }
  std::string http_version() const { return humus_response_http_version(get()); }
  std::string url() const { return humus_response_url(get()); }
  // The redirects the call followed, oldest first: (3xx status, URL of the request that got it).
  py::list redirects() const {
    const humus_response* r = get();
    const size_t n = humus_response_redirect_count(r);
    py::list out(n);
    for (size_t i = 0; i < n; ++i) {
      int32_t status = 0;
      const char* url = nullptr;
      if (humus_response_redirect_at(r, i, &status, &url) != HUMUS_OK) {
        throw std::runtime_error("redirect index");
      }
      out[i] = py::make_tuple(status, py::str(url));
    }
    return out;
  }
  py::bytes body() const {
    const void* data = nullptr;
    size_t len = 0;
    humus_error* err = nullptr;
    const humus_status st = humus_response_body(const_cast<humus_response*>(get()), &data, &len, &err);
    if (st != HUMUS_OK) fail(st, ErrorPtr(err));
    return py::bytes(static_cast<const char*>(data), len);
  }
  py::list headers() const {
    const humus_response* r = get();
    const size_t n = humus_response_header_count(r);
    py::list out(n);
    for (size_t i = 0; i < n; ++i) {
      const char* name = nullptr;
      const char* value = nullptr;
      if (humus_response_header_at(r, i, &name, &value) != HUMUS_OK) throw std::runtime_error("header index");
      // Values are bytes on the wire: latin-1 maps each to one code point, as httpx does.
      PyObject* v = PyUnicode_DecodeLatin1(
          value, static_cast<Py_ssize_t>(std::char_traits<char>::length(value)), "strict");
      if (v == nullptr) throw py::error_already_set();
      out[i] = py::make_tuple(py::str(name), py::reinterpret_steal<py::object>(v));
    }
    return out;
  }
  // Up to `cap` next bytes of the body (b"" at its end), read without the GIL straight into the bytes object
  // returned: until then it is this thread's alone, so no copy and no zero-fill (of 64 KiB per read) is needed.
  py::bytes read(size_t cap) {
    humus_response* r = const_cast<humus_response*>(get());
    if (cap == 0) cap = 64 * 1024;
    PyObject* out = PyBytes_FromStringAndSize(nullptr, static_cast<Py_ssize_t>(cap));
    if (out == nullptr) throw py::error_already_set();
    auto owned = py::reinterpret_steal<py::bytes>(out);
    size_t n = 0;
    humus_error* err = nullptr;
    humus_status st = HUMUS_OK;
    {
      py::gil_scoped_release nogil;
      st = humus_response_read(r, PyBytes_AS_STRING(out), cap, &n, &err);
    }
    if (st != HUMUS_OK) fail(st, ErrorPtr(err));
    if (n == cap) return owned;
    out = owned.release().ptr();
    if (_PyBytes_Resize(&out, static_cast<Py_ssize_t>(n)) != 0) throw py::error_already_set();  // out freed
    return py::reinterpret_steal<py::bytes>(out);
  }
  // The rest of the body into memory, without the GIL (within max_response_body).
  py::bytes read_rest() {
    humus_response* r = const_cast<humus_response*>(get());
    const void* data = nullptr;
    size_t len = 0;
    humus_error* err = nullptr;
    humus_status st = HUMUS_OK;
    {
      py::gil_scoped_release nogil;
      st = humus_response_body(r, &data, &len, &err);
    }
    if (st != HUMUS_OK) fail(st, ErrorPtr(err));
    return py::bytes(static_cast<const char*>(data), len);
  }
  void close() {
    without_gil([this] {
      r_.reset();
      client_.reset();
    });
  }
  // Starts the next read of a body from Client.submit_open (at most `cap` bytes into the buffer this
  // response owns): `future` (an asyncio.Future of `bridge`'s loop) receives the bytes (b"" at the end) or
  // an ErrorInfo. One read at a time (Failure HUMUS_E_MISUSE otherwise). Defined after Bridge.
  void read_async(size_t cap, const std::shared_ptr<Bridge>& bridge, py::object future);

 private:
  std::shared_ptr<ClientHandle> client_;  // streamed only; declared first so the response goes first
  ResponsePtr r_;
  ReadBuffer buf_;  // read_async's buffer, grown to the largest cap asked
  int64_t elapsed_us_;  // the call's duration on the runtime's clock (Runtime::now_us)
};

// GIL held: the outcome of a call as a Python object, a Response or an ErrorInfo. `elapsed_us`: the call's
// duration on the runtime's clock (Runtime::now_us).
py::object outcome(humus_status status, humus_response* resp, humus_error* err, PyObject* callback_exception,
                   int64_t elapsed_us) {
  if (status == HUMUS_OK) {
    Py_XDECREF(callback_exception);  // a callback failed yet the call succeeded: nothing to report
    return py::cast(new Response(resp, elapsed_us), py::return_value_policy::take_ownership);
  }
  ResponsePtr drop(resp);
  if (status != HUMUS_E_CALLBACK && callback_exception != nullptr) {
    Py_DECREF(callback_exception);
    callback_exception = nullptr;
  }
  ErrorInfo info = make_error(status, ErrorPtr(err), callback_exception);
  info.elapsed_us = elapsed_us;
  return py::cast(std::move(info));
}

// ---- Asynchronous completions -----------------------------------------------------------------------------

// Delivers completions to one asyncio loop, which watches fileno() (loop.add_reader(fileno, drain), see
// _async.py). The runtime's event-loop thread queues them and, when the queue was empty, writes the eventfd;
// drain() then resolves every queued future on the asyncio loop's own thread. The event-loop thread never
// takes the GIL here: with loop.call_soon_threadsafe it had to, and while it waited for the asyncio thread
// to let go of the GIL every call of the runtime waited with it, so the two threads took turns instead of
// running at once (bench/README.md). Thread-safe.
class Bridge {
 public:
  Bridge() : wake_(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
    if (wake_ < 0) throw std::runtime_error(std::string("eventfd: ") + std::strerror(errno));
  }
  ~Bridge() {
    // The last holder may be a completion on the loop thread: Python references need the GIL.
    std::vector<Item> left;
    left.swap(items_);
    close(wake_);
    if (interpreter_finalizing()) return;
    Gil gil;
    for (Item& item : left) {
      Py_XDECREF(item.future);
      Py_XDECREF(item.exception);
      humus_response_free(item.resp);
      humus_error_free(item.err);
    }
  }

  // The eventfd that turns readable when completions are queued.
  int fileno() const { return wake_; }
  Bridge(const Bridge&) = delete;
  Bridge& operator=(const Bridge&) = delete;

  // Loop thread, no GIL. Takes ownership of every pointer. `client` (may be null): a streamed response's
  // client, which the Response keeps (dropped on the asyncio thread, never on the loop thread).
  void push(PyObject* future, humus_status status, humus_response* resp, humus_error* err,
            PyObject* exception, int64_t elapsed_us, std::shared_ptr<ClientHandle> client = nullptr) {
    enqueue(Item{future, status, resp, err, exception, elapsed_us, std::move(client), nullptr, 0});
  }

  // Loop thread, no GIL: a read_async completion, `n` bytes in `buf` (which the item keeps) or `err`.
  void push_read(PyObject* future, humus_status status, size_t n, humus_error* err, ReadBuffer buf) {
    enqueue(Item{future, status, nullptr, err, nullptr, 0, nullptr, std::move(buf), n});
  }

  // The asyncio loop's thread, GIL held: resolves the queued futures with a Response, bytes or an ErrorInfo.
  void drain() {
    std::vector<Item> batch;
    {
      std::lock_guard<std::mutex> lock(mu_);
      uint64_t wakes = 0;
      (void)!read(wake_, &wakes, sizeof wakes);  // nonblocking: nothing to read is EAGAIN, and fine
      batch.swap(items_);
      scheduled_ = false;
    }
    // Leaked on purpose: a static py::str would be released after the interpreter is gone.
    static PyObject* const done_name = PyUnicode_InternFromString("done");
    static PyObject* const set_result_name = PyUnicode_InternFromString("set_result");
    for (Item& item : batch) {
      py::object future = py::reinterpret_steal<py::object>(item.future);
      py::object result;
      if (item.buf) {
        result = item.status == HUMUS_OK ? py::object(py::bytes(item.buf->data(), item.n))
                                         : py::cast(make_error(item.status, ErrorPtr(item.err), nullptr));
      } else if (item.client && item.status == HUMUS_OK) {
        Py_XDECREF(item.exception);
        result = py::cast(new Response(item.resp, item.elapsed_us, std::move(item.client)),
                          py::return_value_policy::take_ownership);
      } else {
        result = outcome(item.status, item.resp, item.err, item.exception, item.elapsed_us);
      }
      // A Response nobody awaits any more (its task was cancelled) is freed with `result`: closed. Called
      // through the C API's method calls, which bind no method object and build no argument tuple, as
      // pybind11's attr()() did (callgrind: 8.0k -> 7.0k instructions a completion, most of the rest being
      // asyncio's own set_result).
      const py::object done =
          py::reinterpret_steal<py::object>(PyObject_CallMethodNoArgs(future.ptr(), done_name));
      if (!done) throw py::error_already_set();
      const int is_done = PyObject_IsTrue(done.ptr());
      if (is_done < 0) throw py::error_already_set();
      if (is_done == 0) {
        const py::object set = py::reinterpret_steal<py::object>(
            PyObject_CallMethodOneArg(future.ptr(), set_result_name, result.ptr()));
        if (!set) throw py::error_already_set();
      }
      if (item.client) without_gil([&] { item.client.reset(); });
    }
  }

 private:
  struct Item {
    PyObject* future;
    humus_status status;
    humus_response* resp;
    humus_error* err;
    PyObject* exception;
    int64_t elapsed_us;
    std::shared_ptr<ClientHandle> client;  // a streamed response's (submit_open), else null
    ReadBuffer buf;                        // a read completion's, else null
    size_t n;                              // a read completion's byte count
  };

  void enqueue(Item item) {
    bool schedule = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      items_.push_back(std::move(item));
      schedule = !scheduled_;
      scheduled_ = true;
    }
    if (!schedule) return;
    // Cannot fail but for a full counter (2^64 - 2 wakes). A closed loop reads it no more: its futures,
    // awaited by nobody, are released with the bridge.
    const uint64_t one = 1;
    (void)!write(wake_, &one, sizeof one);
  }

  const int wake_;  // the eventfd
  std::mutex mu_;
  std::vector<Item> items_;  // guarded by mu_
  bool scheduled_ = false;   // guarded by mu_: the eventfd was written since the last drain()
};

struct AsyncPending {
  std::shared_ptr<Bridge> bridge;
  PyObject* future;   // owned
  const Runtime* clock;  // outlives the call (the client holds it)
  int64_t start_us;     // Runtime::now_us when the call was submitted
  std::shared_ptr<ClientHandle> client = nullptr;  // submit_open: the client its Response keeps
};

void async_done(void* user_data, humus_status status, humus_response* resp, humus_error* err) {
  std::unique_ptr<AsyncPending> pending(static_cast<AsyncPending*>(user_data));
  const int64_t elapsed = pending->clock->now_us() - pending->start_us;
  pending->bridge->push(pending->future, status, resp, err, take_callback_exception(), elapsed,
                        std::move(pending->client));
}

// One read_async in flight: what its on_read hands to the bridge.
struct ReadPending {
  std::shared_ptr<Bridge> bridge;
  PyObject* future;  // owned
  ReadBuffer buf;    // lent to the core until read_done runs
};

void read_done(void* user_data, humus_status status, size_t n, humus_error* err) {
  std::unique_ptr<ReadPending> pending(static_cast<ReadPending*>(user_data));
  pending->bridge->push_read(pending->future, status, n, err, std::move(pending->buf));
}

void Response::read_async(size_t cap, const std::shared_ptr<Bridge>& bridge, py::object future) {
  humus_response* r = const_cast<humus_response*>(get());
  if (cap == 0) cap = 64 * 1024;
  // A buffer still lent to an earlier read is never written here: a new one replaces it (and the core
  // refuses a second read in flight anyway).
  if (!buf_ || buf_->size() < cap || buf_.use_count() > 1) buf_ = std::make_shared<std::vector<char>>(cap);
  auto pending = std::make_unique<ReadPending>(ReadPending{bridge, future.release().ptr(), buf_});
  humus_error* err = nullptr;
  humus_status st = HUMUS_OK;
  {
    py::gil_scoped_release nogil;
    st = humus_response_read_async(r, buf_->data(), cap, read_done, pending.get(), &err);
  }
  if (st != HUMUS_OK) {
    Py_DECREF(pending->future);
    fail(st, ErrorPtr(err));
  }
  (void)pending.release();  // read_done owns it now
}

// A blocking call made on the main thread while another wakeup fd is installed (see SignalWatch) runs on the
// event loop while the main thread waits here, waking every 50 ms to run Python's signal handlers (Ctrl-C)
// and cancel the call.
struct SyncWaiter {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;  // guarded by mu
  humus_status status = HUMUS_OK;
  humus_response* resp = nullptr;
  humus_error* err = nullptr;
  PyObject* exception = nullptr;
  const Runtime* clock = nullptr;
  int64_t start_us = 0;    // Runtime::now_us when the call was submitted
  int64_t elapsed_us = 0;  // guarded by mu
};

void sync_done(void* user_data, humus_status status, humus_response* resp, humus_error* err) {
  auto* w = static_cast<SyncWaiter*>(user_data);
  PyObject* exception = take_callback_exception();
  const int64_t end_us = w->clock->now_us();
  std::lock_guard<std::mutex> lock(
      w->mu);  // notified under the lock: the waiter may free `w` once it sees done
  w->status = status;
  w->resp = resp;
  w->err = err;
  w->exception = exception;
  w->elapsed_us = end_us - w->start_us;
  w->done = true;
  w->cv.notify_one();
}

// ---- Cancel tokens ----------------------------------------------------------------------------------------

using CancelPtr = std::unique_ptr<humus_cancel, Deleter<humus_cancel, humus_cancel_free>>;

// A caller's cancel token: set on the request of every call made with it (humus_request_set_cancel), which
// the core honours for blocking and submitted calls alike. Triggered once, it cancels every call made with
// it, now and later. Thread-safe; needs no GIL.
class Cancel {
 public:
  Cancel() {
    humus_cancel* raw = nullptr;
    if (humus_cancel_new(&raw) != HUMUS_OK) throw std::bad_alloc();
    token_.reset(raw);
  }
  humus_cancel* token() const { return token_.get(); }

  void trigger() {
    // Release pairs with triggered()'s acquire: whoever sees the flag sees the token triggered first.
    humus_cancel_trigger(token_.get());
    triggered_.store(true, std::memory_order_release);
  }
  bool triggered() const { return triggered_.load(std::memory_order_acquire); }

 private:
  CancelPtr token_;  // the request and every call made with it hold the core's token too
  std::atomic<bool> triggered_{false};
};

// A call's `cancel` argument: a Cancel, or None for none. Taken as a handle rather than as a typed argument
// because pybind11 tries a None against the types of other modules first, through a failing getattr whose
// AttributeError it formats and drops (callgrind: 5.6k of a sync call's 126k instructions).
std::shared_ptr<Cancel> cancel_of(py::handle cancel) {
  if (cancel.is_none()) return nullptr;
  if (!py::isinstance<Cancel>(cancel)) throw py::type_error("cancel must be a Cancel or None");
  return cancel.cast<std::shared_ptr<Cancel>>();
}

// The handle of an asynchronous call: cancel() ends it early (the future still receives its outcome).
class Call {
 public:
  explicit Call(CallPtr c) : c_(std::move(c)) {}
  void cancel() { humus_call_cancel(c_.get()); }

 private:
  CallPtr c_;
};

// ---- Ctrl-C during a blocking call on the main thread -----------------------------------------------------

PyObject* g_set_wakeup_fd = nullptr;  // signal.set_wakeup_fd; leaked on purpose (outlives the interpreter)

// GIL held, main thread: installs `fd` as Python's signal wakeup fd, returning the previous one (-1: none).
int set_wakeup_fd(int fd) {
  PyObject* arg = PyLong_FromLong(fd);
  if (arg == nullptr) throw py::error_already_set();
  PyObject* previous = PyObject_CallOneArg(g_set_wakeup_fd, arg);
  Py_DECREF(arg);
  if (previous == nullptr) throw py::error_already_set();
  const long value = PyLong_AsLong(previous);
  Py_DECREF(previous);
  if (value == -1 && PyErr_Occurred() != nullptr) throw py::error_already_set();
  return static_cast<int>(value);
}

// This process's id, set again in a forked child: getpid() is a system call, which every blocking call on
// the main thread would make otherwise. GIL held.
pid_t process_id() {
  static pid_t pid = [] {
    pthread_atfork(nullptr, nullptr, [] { pid = getpid(); });
    return getpid();
  }();
  return pid;
}

// Python runs signal handlers only on the main thread, between bytecodes; a main thread blocked in
// humus_client_do would run them only when the call ends. While such a call runs, the watch installs its own
// pipe as Python's wakeup fd (signal.set_wakeup_fd): Python's C-level
// handler writes the signal number there, and the watch's thread, blocked reading the pipe, cancels the call
// on SIGINT. Back on the main thread with the GIL, PyErr_CheckSignals() runs the handler (KeyboardInterrupt).
// The call itself runs on the main thread like any other blocking call: no hop through another thread.
class SignalWatch {
 public:
  // GIL held. The watch of this process (made again in a forked child, whose threads did not survive).
  static SignalWatch* instance() {
    static SignalWatch* watch = nullptr;
    static pid_t owner = 0;
    if (watch == nullptr || owner != process_id()) {
      watch = new SignalWatch();  // never freed: its thread blocks in read() for the life of the process
      owner = process_id();
      if (!watch->ok()) return nullptr;
    }
    return watch->ok() ? watch : nullptr;
  }

  bool ok() const { return write_fd_ >= 0; }
  int write_fd() const { return write_fd_; }

  // The main thread's token for the next call (a token cancels for good, so a triggered one is replaced).
  humus_cancel* token() {
    std::lock_guard<std::mutex> lock(mu_);
    if (!token_ || triggered_) {
      humus_cancel* raw = nullptr;
      if (humus_cancel_new(&raw) != HUMUS_OK) throw std::bad_alloc();
      retired_ = std::move(token_);  // freed on the next replacement: no call uses it any more
      token_.reset(raw);
      triggered_ = false;
    }
    return token_.get();
  }
  void arm() {
    std::lock_guard<std::mutex> lock(mu_);
    armed_ = true;
  }
  // True when a SIGINT cancelled the call.
  bool disarm() {
    std::lock_guard<std::mutex> lock(mu_);
    armed_ = false;
    return triggered_;
  }

 private:
  SignalWatch() {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return;
    // Python's handler must never block on a full pipe; the watch's read end blocks.
    if (fcntl(fds[1], F_SETFL, fcntl(fds[1], F_GETFL) | O_NONBLOCK) != 0) {
      close(fds[0]);
      close(fds[1]);
      return;
    }
    read_fd_ = fds[0];
    write_fd_ = fds[1];
    std::thread([this] { run(); }).detach();
  }

  void run() {
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, nullptr);  // signals are the main thread's to take, not this one's
    unsigned char buf[64];
    for (;;) {
      const ssize_t n = read(read_fd_, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;
      for (ssize_t i = 0; i < n; ++i) {
        if (buf[i] != SIGINT) continue;
        std::lock_guard<std::mutex> lock(mu_);
        if (armed_ && token_ && !triggered_) {
          humus_cancel_trigger(token_.get());
          triggered_ = true;
        }
      }
    }
  }

  int read_fd_ = -1;
  int write_fd_ = -1;
  std::mutex mu_;
  CancelPtr token_;         // guarded by mu_
  CancelPtr retired_;       // guarded by mu_
  bool armed_ = false;      // guarded by mu_: a main-thread call uses token_
  bool triggered_ = false;  // guarded by mu_: token_ was triggered
};

// ---- Client -----------------------------------------------------------------------------------------------

// An upstreams registry (docs/upstreams.md §15.1) and the runtime it was built on. Shared by the Upstreams object and by
// every client handle over one of its clients (the registry owns those clients): freed with the last of them.
class UpstreamsHandle {
 public:
  UpstreamsHandle(std::shared_ptr<Runtime> runtime, humus_upstreams* u)
      : runtime_(std::move(runtime)), u_(u) {}
  ~UpstreamsHandle() {
    // Frees the registry's clients, waiting for their asynchronous calls, whose completions may need the GIL.
    without_gil([this] { humus_upstreams_free(u_); });
  }
  UpstreamsHandle(const UpstreamsHandle&) = delete;
  UpstreamsHandle& operator=(const UpstreamsHandle&) = delete;
  humus_upstreams* get() const { return u_; }
  const std::shared_ptr<Runtime>& runtime() const { return runtime_; }

 private:
  std::shared_ptr<Runtime> runtime_;  // outlives the registry
  humus_upstreams* u_;
};

// The C client and the runtime it was built from. Shared by the calls in flight, so that close() while a
// blocking call runs frees the client only when that call is done (humus_client_free must not overlap one).
// A client of an upstreams registry is the registry's to free: its handle holds the registry instead.
class ClientHandle {
 public:
  ClientHandle(std::shared_ptr<Runtime> runtime, humus_client* c) : runtime_(std::move(runtime)), c_(c) {}
  ClientHandle(std::shared_ptr<UpstreamsHandle> registry, humus_client* c)
      : runtime_(registry->runtime()), registry_(std::move(registry)), c_(c) {}
  ~ClientHandle() {
    // Waits for the asynchronous calls in flight, whose completions may need the GIL.
    without_gil([this] { release(); });
  }
  ClientHandle(const ClientHandle&) = delete;
  ClientHandle& operator=(const ClientHandle&) = delete;
  humus_client* get() const { return c_; }
  humus_runtime* runtime() const { return runtime_->get(); }
  const Runtime& clock() const { return *runtime_; }

 private:
  void release() {
    if (registry_) {
      registry_.reset();  // the last holder of the registry frees it, and this client with it
    } else {
      humus_client_free(c_);
    }
  }

  std::shared_ptr<Runtime> runtime_;           // outlives the client
  std::shared_ptr<UpstreamsHandle> registry_;  // the owner of c_, or empty when c_ is this handle's own
  humus_client* c_;
};

// GIL held: a UTF-8 view of a str that is part of a request; a TypeError naming it for another type. A NUL
// is refused as the core refuses CR and LF (HUMUS_E_INVALID_ARGUMENT naming `field`, before any I/O): a C
// string would silently end there, and "/x\0evil" go out as "/x". `describe()` gives its name, called only to
// report an error (a header's name built for every value of every call cost an allocation each).
template <typename Describe>
const char* utf8(PyObject* o, const char* field, const Describe& describe) {
  if (!PyUnicode_Check(o)) {
    throw py::type_error(std::string(describe()) + " must be str, not " + Py_TYPE(o)->tp_name);
  }
  Py_ssize_t size = 0;
  const char* s = PyUnicode_AsUTF8AndSize(o, &size);
  if (s == nullptr) throw py::error_already_set();
  if (std::char_traits<char>::length(s) != static_cast<size_t>(size)) {
    ErrorInfo info;
    info.status = HUMUS_E_INVALID_ARGUMENT;
    info.status_name = humus_status_name(HUMUS_E_INVALID_ARGUMENT);
    info.message = std::string(describe()) + " contains a NUL character";
    info.fields = {field};
    throw Failure{std::move(info)};
  }
  return s;
}
const char* utf8(PyObject* o, const char* field) {
  return utf8(o, field, [field] { return field; });
}

class Client {
 public:
  Client(std::shared_ptr<Runtime> runtime, const std::string& settings_json, py::object classifier,
         py::object trip, py::object probe) {
    humus_error* err = nullptr;
    humus_settings* raw = nullptr;
    humus_status st = humus_settings_from_json(settings_json.data(), settings_json.size(), &raw, &err);
    if (st != HUMUS_OK) fail(st, ErrorPtr(err));
    SettingsPtr settings(raw);
    if (!classifier.is_none()) {
      humus_classifier table = HUMUS_CLASSIFIER_INIT;
      table.classify = classify_trampoline;
      table.user_data = new PyCallable{classifier};
      table.destroy = destroy_callable;
      st = humus_settings_set_classifier(settings.get(), &table, &err);
      if (st != HUMUS_OK) {
        delete static_cast<PyCallable*>(table.user_data);  // not taken on failure
        fail(st, ErrorPtr(err));
      }
    }
    if (!trip.is_none() || !probe.is_none()) {
      humus_breaker_policy table = HUMUS_BREAKER_POLICY_INIT;
      table.trip = trip.is_none() ? nullptr : trip_trampoline;
      table.probe = probe.is_none() ? nullptr : probe_trampoline;
      table.user_data = new PolicyCallables{trip, probe};
      table.destroy = destroy_policy;
      st = humus_settings_set_breaker_policy(settings.get(), &table, &err);
      if (st != HUMUS_OK) {
        delete static_cast<PolicyCallables*>(table.user_data);
        fail(st, ErrorPtr(err));
      }
    }
    humus_client* c = nullptr;
    {
      py::gil_scoped_release nogil;
      st = humus_client_new(runtime->get(), settings.get(), &c, &err);
      // The client holds its own copy and shares the callbacks; on failure this runs their destroy, which
      // takes the GIL itself.
      settings.reset();
    }
    if (st != HUMUS_OK) fail(st, ErrorPtr(err));
    handle_ = std::make_shared<ClientHandle>(std::move(runtime), c);
  }

  // An owner of the C client of `handle` (its own, or a registry's).
  explicit Client(std::shared_ptr<ClientHandle> handle) : handle_(std::move(handle)) {}

  // Another owner of this client's C client (its connections, breaker, budget, bulkhead): each owner closes
  // its own share; the C client is freed with the last one.
  static std::unique_ptr<Client> share(Client& of) {
    return std::unique_ptr<Client>(new Client(of.acquire()));
  }

  ~Client() { close(); }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Releases this owner's share: the C client is freed now, or by the last call still using it.
  void close() {
    release_shared(mu_, handle_);
  }
  bool closed() {
    std::lock_guard<std::mutex> lock(mu_);
    return !handle_;
  }

  std::string breaker_state() {
    std::shared_ptr<ClientHandle> h = acquire();
    int32_t state = -1;
    humus_status st;
    {
      // The breaker's lock may be held by a policy callback waiting for the GIL.
      py::gil_scoped_release nogil;
      st = humus_client_breaker_state(h->get(), &state);
      h.reset();
    }
    if (st != HUMUS_OK) fail(st, nullptr);
    switch (state) {
      case HUMUS_CIRCUIT_CLOSED:
        return "closed";
      case HUMUS_CIRCUIT_OPEN:
        return "open";
      case HUMUS_CIRCUIT_HALF_OPEN:
        return "half_open";
      default:
        return "unknown";
    }
  }

  // The breaker's counts (docs/breaker.md §9.3) as the eight integers of the policy adapters.
  py::tuple breaker_counts() {
    std::shared_ptr<ClientHandle> h = acquire();
    humus_breaker_counts counts = HUMUS_BREAKER_COUNTS_INIT;
    humus_status st;
    {
      py::gil_scoped_release nogil;  // as breaker_state: a policy callback may hold the breaker's lock
      st = humus_client_breaker_counts(h->get(), &counts);
      h.reset();
    }
    if (st != HUMUS_OK) fail(st, nullptr);
    return counts_tuple(&counts);
  }

  // The retry budget's balance (docs/retries.md §6.4).
  double budget_tokens() {
    std::shared_ptr<ClientHandle> h = acquire();
    double tokens = 0;
    humus_status st;
    {
      py::gil_scoped_release nogil;
      st = humus_client_budget_tokens(h->get(), &tokens);
      h.reset();
    }
    if (st != HUMUS_OK) fail(st, nullptr);
    return tokens;
  }

  // A blocking call: a Response, or an ErrorInfo when no response came. Argument errors raise Failure.
  // `cancel` (may be null) ends it early.
  py::object request(py::handle method, py::handle url, py::handle headers, py::handle body, py::handle key,
                     int32_t retry, int32_t follow, int64_t timeout_ms, py::handle context,
                     py::handle cancel_arg, py::handle hooks) {
    const std::shared_ptr<Cancel> cancel = cancel_of(cancel_arg);
    std::shared_ptr<ClientHandle> h = acquire();
    const Prepared p = prepare(method, url, headers, body, key, retry, follow, timeout_ms, context, hooks);
    Py_XDECREF(take_callback_exception());  // nothing stale from a call that ended otherwise
    if (PyThread_get_thread_ident() == g_main_thread) {
      // The main thread's own token is Ctrl-C's (SignalWatch); a caller's token goes on the request of a
      // submitted call instead, while this thread polls for signals.
      if (cancel) {
        RequestPtr req = build_or_fail(p);
        humus_request_set_cancel(req.get(), cancel->token());
        return request_polling(std::move(h), std::move(req));
      }
      return request_on_main(std::move(h), build_or_fail(p));
    }
    // Built and sent without the GIL: other threads run while this one parses, allocates and waits.
    Built b;
    humus_response* resp = nullptr;
    humus_error* err = nullptr;
    humus_status st = HUMUS_OK;
    int64_t elapsed = 0;
    {
      py::gil_scoped_release nogil;
      b = build(p);
      if (b.status == HUMUS_OK) {
        if (cancel) humus_request_set_cancel(b.req.get(), cancel->token());
        const int64_t start = h->clock().now_us();
        st = humus_client_do(h->get(), b.req.get(), &resp, &err);
        elapsed = h->clock().now_us() - start;
        b.req.reset();
      }
      h.reset();  // may be the last share after a close(): frees the client without the GIL
    }
    if (b.status != HUMUS_OK) fail(b.status, std::move(b.err));
    return outcome(st, resp, err, st == HUMUS_E_CALLBACK ? take_callback_exception() : nullptr, elapsed);
  }

  // A streamed call (humus_client_open): a Response whose body is read with read(), or an ErrorInfo. Runs
  // without the GIL on any thread; `cancel` (may be null) ends it, its body reads included.
  py::object open(py::handle method, py::handle url, py::handle headers, py::handle body, py::handle key,
                  int32_t retry, int32_t follow, int64_t timeout_ms, py::handle context,
                  py::handle cancel_arg, py::handle hooks) {
    const std::shared_ptr<Cancel> cancel = cancel_of(cancel_arg);
    std::shared_ptr<ClientHandle> h = acquire();
    const Prepared p = prepare(method, url, headers, body, key, retry, follow, timeout_ms, context, hooks);
    Py_XDECREF(take_callback_exception());
    Built b;
    humus_response* resp = nullptr;
    humus_error* err = nullptr;
    humus_status st = HUMUS_OK;
    int64_t elapsed = 0;
    {
      py::gil_scoped_release nogil;
      b = build(p);
      if (b.status == HUMUS_OK) {
        if (cancel) humus_request_set_cancel(b.req.get(), cancel->token());
        const int64_t start = h->clock().now_us();
        st = humus_client_open(h->get(), b.req.get(), &resp, &err);
        elapsed = h->clock().now_us() - start;
        b.req.reset();
      }
    }
    if (b.status != HUMUS_OK) fail(b.status, std::move(b.err));
    if (st == HUMUS_OK) {
      Py_XDECREF(take_callback_exception());
      return py::cast(new Response(resp, elapsed, std::move(h)), py::return_value_policy::take_ownership);
    }
    py::object out = outcome(st, resp, err, st == HUMUS_E_CALLBACK ? take_callback_exception() : nullptr, elapsed);
    {
      py::gil_scoped_release nogil;
      h.reset();
    }
    return out;
  }

  // An asynchronous call: `future` (an asyncio.Future of `bridge`'s loop) receives a Response or an
  // ErrorInfo.
  Call submit(py::handle method, py::handle url, py::handle headers, py::handle body, py::handle key,
              int32_t retry, int32_t follow, int64_t timeout_ms, const std::shared_ptr<Bridge>& bridge,
              py::object future, py::handle context, py::handle cancel, py::handle hooks) {
    return start_async(false,
                       prepare(method, url, headers, body, key, retry, follow, timeout_ms, context, hooks),
                       bridge, std::move(future), cancel_of(cancel));
  }

  // An asynchronous streamed call (humus_client_submit_open): `future` receives a Response once the
  // headers are in, its body read with Response.read_async(), or an ErrorInfo. `cancel` (may be null)
  // ends the call and its body reads; Call.cancel() ends only the call before its headers.
  Call submit_open(py::handle method, py::handle url, py::handle headers, py::handle body, py::handle key,
                   int32_t retry, int32_t follow, int64_t timeout_ms, const std::shared_ptr<Bridge>& bridge,
                   py::object future, py::handle context, py::handle cancel, py::handle hooks) {
    return start_async(true,
                       prepare(method, url, headers, body, key, retry, follow, timeout_ms, context, hooks),
                       bridge, std::move(future), cancel_of(cancel));
  }

 private:
  // humus_client_do on this thread with the GIL released.
  static py::object outcome_of_do(std::shared_ptr<ClientHandle> h, RequestPtr req) {
    humus_response* resp = nullptr;
    humus_error* err = nullptr;
    humus_status st;
    int64_t elapsed = 0;
    {
      py::gil_scoped_release nogil;
      const int64_t start = h->clock().now_us();
      st = humus_client_do(h->get(), req.get(), &resp, &err);
      elapsed = h->clock().now_us() - start;
      req.reset();
      h.reset();  // may be the last share after a close(): frees the client without the GIL
    }
    return outcome(st, resp, err, st == HUMUS_E_CALLBACK ? take_callback_exception() : nullptr, elapsed);
  }

  // The main thread: the call runs here, cancelled by the signal watch on SIGINT; when another wakeup fd is
  // installed (an asyncio loop runs on this thread), it runs on the event loop instead while this thread
  // polls for signals.
  static py::object request_on_main(std::shared_ptr<ClientHandle> h, RequestPtr req) {
    SignalWatch* watch = SignalWatch::instance();
    if (watch == nullptr) return request_polling(std::move(h), std::move(req));
    const int previous = set_wakeup_fd(watch->write_fd());
    if (previous != -1) {
      set_wakeup_fd(previous);
      return request_polling(std::move(h), std::move(req));
    }
    struct Restore {
      ~Restore() {
        PyObject *type = nullptr, *value = nullptr, *traceback = nullptr;
        PyErr_Fetch(&type, &value, &traceback);  // an exception on its way out stays the one raised
        try {
          set_wakeup_fd(-1);
        } catch (py::error_already_set& e) {
          e.discard_as_unraisable("humus_http: restoring the signal wakeup fd");
        }
        PyErr_Restore(type, value, traceback);
      }
    } restore;
    if (PyErr_CheckSignals() != 0) throw py::error_already_set();  // a signal that came before the fd was set
    humus_request_set_cancel(req.get(), watch->token());
    watch->arm();
    py::object result = outcome_of_do(std::move(h), std::move(req));
    if (watch->disarm() && PyErr_CheckSignals() != 0) throw py::error_already_set();
    return result;
  }
  std::shared_ptr<ClientHandle> acquire() {
    std::lock_guard<std::mutex> lock(mu_);
    if (!handle_) throw std::runtime_error("the client is closed");
    return handle_;
  }

  // The parts of a request as pointers into Python objects it holds, so that the C request can be built
  // without the GIL: str and bytes are immutable, and a str's UTF-8 form lives as long as the str.
  struct Prepared {
    const char* method = nullptr;  // the caller's arguments, alive for the whole call
    const char* url = nullptr;
    std::vector<std::pair<const char*, const char*>> headers;
    std::vector<py::object> keep;  // released with the GIL held (Prepared lives in a frame that holds it)
    const char* body = nullptr;
    size_t body_len = 0;
    bool has_body = false;
    // A streamed body: (read, rewind or None, length or -1) from Python. Owned here until build() hands it to
    // the request (mutable: build takes a const Prepared, and is its only taker).
    mutable BodyReaderPtr reader;
    bool reader_rewinds = false;
    int64_t reader_length = -1;
    // The call's attempt hooks: (before, after) from Python, owned here until build() hands them to the
    // request.
    mutable AttemptHooksPtr hooks;
    const char* key = nullptr;
    int32_t retry = HUMUS_RETRY_MODE_DEFAULT;
    int32_t follow = -1;  // follow_redirects: -1 not given (the core follows within the origin), else 0 or 1
    int64_t timeout_ms = 0;
    bool has_context = false;
    // traceparent, tracestate, baggage, X-Request-ID, Authorization of the request being served (docs/telemetry.md §12)
    const char* context[5] = {nullptr, nullptr, nullptr, nullptr, nullptr};
  };

  // GIL held: checks the Python types (TypeError, or Failure HUMUS_E_INVALID_ARGUMENT for a NUL) and takes the
  // pointers.
  static Prepared prepare(py::handle method, py::handle url, py::handle headers, py::handle body,
                          py::handle key, int32_t retry, int32_t follow, int64_t timeout_ms,
                          py::handle context, py::handle hooks) {
    Prepared p;
    if (!hooks.is_none()) {
      if (!PyTuple_Check(hooks.ptr()) || PyTuple_GET_SIZE(hooks.ptr()) != 2) {
        throw py::type_error("hooks must be a (before, after) tuple or None");
      }
      const py::tuple t = py::reinterpret_borrow<py::tuple>(hooks);
      p.hooks.reset(new PyAttemptHooks{t[0], t[1]});
    }
    // Pointers into the caller's str objects, which outlive the call (pybind11's const char* caster copied
    // each into a std::string first).
    p.method = utf8(method.ptr(), "method");
    p.url = utf8(url.ptr(), "url");
    p.retry = retry;
    p.follow = follow;
    p.timeout_ms = timeout_ms;
    if (!context.is_none()) {
      if (!PyTuple_Check(context.ptr()) || PyTuple_GET_SIZE(context.ptr()) != 5) {
        throw py::type_error("context must be a tuple of 5 strings or None");
      }
      static const char* const kParts[] = {"context traceparent", "context tracestate", "context baggage",
                                           "context X-Request-ID", "context Authorization"};
      for (Py_ssize_t i = 0; i < 5; ++i) {
        PyObject* part = PyTuple_GET_ITEM(context.ptr(), i);
        if (part == Py_None) continue;
        p.context[i] = utf8(part, "context", [i] { return kParts[i]; });
      }
      p.keep.push_back(py::reinterpret_borrow<py::object>(context));
      p.has_context = true;
    }
    if (!headers.is_none()) {
      if (!PyList_Check(headers.ptr()))
        throw py::type_error("headers must be a list of (name, value) tuples");
      const Py_ssize_t n = PyList_GET_SIZE(headers.ptr());
      p.headers.reserve(static_cast<size_t>(n));
      p.keep.reserve(static_cast<size_t>(n));
      for (Py_ssize_t i = 0; i < n; ++i) {
        PyObject* pair = PyList_GET_ITEM(headers.ptr(), i);
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
          throw py::type_error("headers must be a list of (name, value) tuples");
        }
        p.keep.push_back(py::reinterpret_borrow<py::object>(pair));  // keeps its name and value alive
        const char* name = utf8(PyTuple_GET_ITEM(pair, 0), "headers", [] { return "a header name"; });
        const char* value = utf8(PyTuple_GET_ITEM(pair, 1), name,
                                 [name] { return std::string("header ") + name + ": the value"; });
        p.headers.emplace_back(name, value);
      }
    }
    if (PyTuple_Check(body.ptr())) {
      if (PyTuple_GET_SIZE(body.ptr()) != 3) throw py::type_error("a body reader is (read, rewind, length)");
      const py::tuple t = py::reinterpret_borrow<py::tuple>(body);
      p.reader_length = t[2].cast<int64_t>();
      p.reader_rewinds = !t[1].is_none();
      p.reader.reset(new PyBodyReader{t[0], t[1]});
    } else if (!body.is_none()) {
      char* data = nullptr;
      Py_ssize_t len = 0;
      if (PyBytes_AsStringAndSize(body.ptr(), &data, &len) != 0) throw py::error_already_set();
      p.keep.push_back(py::reinterpret_borrow<py::object>(body));
      p.body = data;
      p.body_len = static_cast<size_t>(len);
      p.has_body = true;
    }
    if (!key.is_none()) {
      p.key = utf8(key.ptr(), "idempotency_key");
      p.keep.push_back(py::reinterpret_borrow<py::object>(key));
    }
    return p;
  }

  // The C request; no GIL needed. On failure `req` is empty and `status`/`err` say why.
  struct Built {
    RequestPtr req;
    humus_status status = HUMUS_OK;
    ErrorPtr err;
  };
  static Built build(const Prepared& p) {
    Built b;
    humus_request* raw = nullptr;
    humus_error* err = nullptr;
    auto failed = [&](humus_status st) {
      b.req.reset();
      b.status = st;
      b.err.reset(err);
      return std::move(b);
    };
    humus_status st = humus_request_new(p.method, p.url, &raw, &err);
    if (st != HUMUS_OK) return failed(st);
    b.req.reset(raw);
    for (const auto& [name, value] : p.headers) {
      st = humus_request_set_header(b.req.get(), name, value, &err);
      if (st != HUMUS_OK) return failed(st);
    }
    if (p.has_body && (st = humus_request_set_body(b.req.get(), p.body, p.body_len)) != HUMUS_OK)
      return failed(st);
    if (p.reader) {
      humus_body_reader reader = HUMUS_BODY_READER_INIT;
      reader.user_data = p.reader.get();
      reader.length = p.reader_length;
      reader.read = body_read_trampoline;
      reader.rewind = p.reader_rewinds ? body_rewind_trampoline : nullptr;
      reader.destroy = destroy_body_reader;
      if ((st = humus_request_set_body_reader(b.req.get(), &reader, &err)) != HUMUS_OK) return failed(st);
      (void)p.reader.release();  // the request's now: its destroy frees it
    }
    if (p.hooks) {
      humus_attempt_hooks hooks = HUMUS_ATTEMPT_HOOKS_INIT;
      hooks.user_data = p.hooks.get();
      hooks.before = before_trampoline;
      hooks.after = after_trampoline;
      hooks.destroy = destroy_attempt_hooks;
      if ((st = humus_request_set_attempt_hooks(b.req.get(), &hooks, &err)) != HUMUS_OK) return failed(st);
      (void)p.hooks.release();  // the request's (and its calls') now: destroy frees it
    }
    if (p.key != nullptr && (st = humus_request_set_idempotency_key(b.req.get(), p.key, &err)) != HUMUS_OK) {
      return failed(st);
    }
    if (p.retry != HUMUS_RETRY_MODE_DEFAULT &&
        (st = humus_request_set_retry(b.req.get(), p.retry, &err)) != HUMUS_OK) {
      return failed(st);
    }
    if (p.follow != -1 &&
        (st = humus_request_set_follow_redirects(b.req.get(), p.follow, &err)) != HUMUS_OK) {
      return failed(st);
    }
    // 0: none given; the core refuses a negative one.
    if (p.timeout_ms != 0 && (st = humus_request_set_timeout_ms(b.req.get(), p.timeout_ms, &err)) != HUMUS_OK) {
      return failed(st);
    }
    if (p.has_context &&
        (st = humus_request_set_context(b.req.get(), p.context[0], p.context[1], p.context[2], p.context[3],
                                        p.context[4], &err)) != HUMUS_OK) {
      return failed(st);
    }
    return b;
  }

  // GIL held: the C request, or Failure.
  static RequestPtr build_or_fail(const Prepared& p) {
    Built b = build(p);
    if (b.status != HUMUS_OK) fail(b.status, std::move(b.err));
    return std::move(b.req);
  }

  // humus_client_submit, or with `open` humus_client_submit_open (whose Response keeps the client alive).
  Call start_async(bool open, const Prepared& p, const std::shared_ptr<Bridge>& bridge, py::object future,
                   const std::shared_ptr<Cancel>& cancel) {
    std::shared_ptr<ClientHandle> h = acquire();
    RequestPtr req = build_or_fail(p);
    // The core cancels the submitted call through the token (one already triggered: before anything is sent).
    if (cancel) humus_request_set_cancel(req.get(), cancel->token());
    auto pending = std::make_unique<AsyncPending>(AsyncPending{
        bridge, future.release().ptr(), &h->clock(), h->clock().now_us(), open ? h : nullptr});
    humus_call* call = nullptr;
    humus_error* err = nullptr;
    const humus_status st =
        open ? humus_client_submit_open(h->get(), req.get(), async_done, pending.get(), &call, &err)
             : humus_client_submit(h->get(), req.get(), async_done, pending.get(), &call, &err);
    if (st != HUMUS_OK) {
      Py_DECREF(pending->future);
      fail(st, ErrorPtr(err));
    }
    (void)pending.release();  // async_done owns it now
    return Call(CallPtr(call));
  }

  // `req` carries the caller's token, if any: the core cancels the submitted call through it.
  static py::object request_polling(std::shared_ptr<ClientHandle> h, RequestPtr req) {
    SyncWaiter w;
    w.clock = &h->clock();
    w.start_us = w.clock->now_us();
    humus_call* raw = nullptr;
    humus_error* err = nullptr;
    const humus_status st = humus_client_submit(h->get(), req.get(), sync_done, &w, &raw, &err);
    req.reset();
    if (st != HUMUS_OK) fail(st, ErrorPtr(err));
    CallPtr call(raw);
    bool interrupted = false;
    for (;;) {
      bool done = false;
      {
        py::gil_scoped_release nogil;
        std::unique_lock<std::mutex> lock(w.mu);
        done = w.cv.wait_for(lock, std::chrono::milliseconds(50), [&] { return w.done; });
      }
      if (done) break;
      if (PyErr_CheckSignals() != 0) {  // a handler raised (KeyboardInterrupt): end the call, then re-raise
        interrupted = true;
        humus_call_cancel(call.get());
        py::gil_scoped_release nogil;
        std::unique_lock<std::mutex> lock(w.mu);
        w.cv.wait(lock, [&] { return w.done; });
        break;
      }
    }
    {
      py::gil_scoped_release nogil;
      call.reset();
      h.reset();
    }
    if (interrupted) {
      PyObject *type = nullptr, *value = nullptr, *traceback = nullptr;
      PyErr_Fetch(&type, &value, &traceback);  // kept aside while the outcome is dropped
      outcome(w.status, w.resp, w.err, w.exception, w.elapsed_us);
      PyErr_Restore(type, value, traceback);
      throw py::error_already_set();
    }
    return outcome(w.status, w.resp, w.err, w.exception, w.elapsed_us);
  }

  std::mutex mu_;
  std::shared_ptr<ClientHandle> handle_;  // guarded by mu_; empty once closed
};

// ---- Upstreams --------------------------------------------------------------------------------------------

// An upstreams registry (docs/upstreams.md §15.1): clients by name, built from one JSON document. close() releases this
// object's share; the registry and its clients are freed once no client handed out still uses them.
class Upstreams {
 public:
  Upstreams(std::shared_ptr<Runtime> runtime, const std::string& document) {
    humus_upstreams* raw = nullptr;
    humus_error* err = nullptr;
    humus_status st;
    {
      // Building may deliver a log record (an environment override of a base_url), which takes the GIL.
      py::gil_scoped_release nogil;
      st = humus_upstreams_from_json(runtime->get(), document.data(), document.size(), &raw, &err);
    }
    if (st != HUMUS_OK) fail(st, ErrorPtr(err));
    handle_ = std::make_shared<UpstreamsHandle>(std::move(runtime), raw);
  }
  ~Upstreams() { close(); }
  Upstreams(const Upstreams&) = delete;
  Upstreams& operator=(const Upstreams&) = delete;

  void close() {
    release_shared(mu_, handle_);
  }
  bool closed() {
    std::lock_guard<std::mutex> lock(mu_);
    return !handle_;
  }

  // The names in sorted order.
  py::tuple names() {
    std::shared_ptr<UpstreamsHandle> h = acquire();
    const size_t n = humus_upstreams_count(h->get());
    py::tuple out(n);
    for (size_t i = 0; i < n; ++i) {
      const char* name = humus_upstreams_name(h->get(), i);
      out[i] = py::str(name == nullptr ? "" : name);
    }
    return out;
  }

  // A Client over the registry's client `name`, holding the registry; Failure (HUMUS_E_INVALID_ARGUMENT, the
  // message listing the configured names) for an unknown name.
  std::unique_ptr<Client> client(const std::string& name) {
    std::shared_ptr<UpstreamsHandle> h = acquire();
    humus_client* c = nullptr;
    humus_error* err = nullptr;
    const humus_status st = humus_upstreams_client(h->get(), name.c_str(), &c, &err);
    if (st != HUMUS_OK) fail(st, ErrorPtr(err));
    return std::make_unique<Client>(std::make_shared<ClientHandle>(std::move(h), c));
  }

  std::string readiness_json() {
    std::shared_ptr<UpstreamsHandle> h = acquire();
    char* out = nullptr;
    size_t len = 0;
    humus_error* err = nullptr;
    humus_status st;
    {
      py::gil_scoped_release nogil;  // reads the breakers, whose locks a policy callback may hold
      st = humus_upstreams_readiness_json(h->get(), &out, &len, &err);
      h.reset();
    }
    if (st != HUMUS_OK) fail(st, ErrorPtr(err));
    std::string text(out, len);
    humus_string_free(out);
    return text;
  }

 private:
  std::shared_ptr<UpstreamsHandle> acquire() {
    std::lock_guard<std::mutex> lock(mu_);
    if (!handle_) throw std::runtime_error("the upstreams registry is closed");
    return handle_;
  }

  std::mutex mu_;
  std::shared_ptr<UpstreamsHandle> handle_;  // guarded by mu_; empty once closed
};

}  // namespace

// ---- Shared with the other translation units (native.h) ---------------------------------------------------

namespace humus_py {

void keep_callback_exception() { store_callback_exception(); }

void raise_failure(humus_status status, humus_error* err) { fail(status, ErrorPtr(err)); }

humus_runtime* runtime_of(py::handle runtime) { return runtime.cast<Runtime&>().get(); }

}  // namespace humus_py

PYBIND11_MODULE(_native, m) {
  m.doc() = "humus_http's extension: thin wrappers over the C ABI of libhumus_http (include/humus_http.h).";

  if (humus_abi_version() != HUMUS_ABI_VERSION) {
    throw std::runtime_error("humus_http: the linked core's ABI major differs from the header's");
  }
  g_main_thread = py::module_::import("threading").attr("main_thread")().attr("ident").cast<unsigned long>();
  g_set_wakeup_fd = py::object(py::module_::import("signal").attr("set_wakeup_fd")).release().ptr();

  g_failure_type = PyErr_NewExceptionWithDoc(
      "humus_http._native.Failure",
      "A C ABI call failed before any request was made; args[0] is the ErrorInfo.", nullptr, nullptr);
  if (g_failure_type == nullptr) throw py::error_already_set();
  m.add_object("Failure", py::handle(g_failure_type));
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (Failure& f) {
      py::object info = py::cast(std::move(f.info));
      PyErr_SetObject(g_failure_type, py::make_tuple(info).ptr());
    }
  });

  m.attr("VERSION") = humus_version();

  py::class_<ErrorInfo>(m, "ErrorInfo", "What a failed C call reported (copied out of its humus_error).")
      .def_readonly("status", &ErrorInfo::status)
      .def_readonly("status_name", &ErrorInfo::status_name)
      .def_readonly("message", &ErrorInfo::message)
      .def_readonly("attempts", &ErrorInfo::attempts)
      .def_property_readonly("fields",
                             [](const ErrorInfo& e) {
                               py::tuple t(e.fields.size());
                               for (size_t i = 0; i < e.fields.size(); ++i) t[i] = py::str(e.fields[i]);
                               return t;
                             })
      .def_readonly("retry_after_ms", &ErrorInfo::retry_after_ms)
      .def_readonly("elapsed_us", &ErrorInfo::elapsed_us)
      .def_readonly("exception", &ErrorInfo::exception);

  py::class_<Runtime, std::shared_ptr<Runtime>>(m, "Runtime",
                                                "A humus_runtime: event loop, clock, name overrides.")
      .def(py::init<const std::string&>(), py::arg("options_json"))
      .def("advance_ms", &Runtime::advance_ms, py::arg("ms"),
           "Moves a virtual clock forward (humus_runtime_advance_ms).")
      .def("elapsed_ms", &Runtime::elapsed_ms, py::call_guard<py::gil_scoped_release>(),
           "Milliseconds the runtime's clock has advanced since it was made.");

  py::class_<Attempt>(m, "Attempt", "One attempt as a classifier sees it; valid only during that call.")
      .def_property_readonly("method",
                             [](const Attempt& a) { return std::string(humus_attempt_method(a.get())); })
      .def_property_readonly("status", [](const Attempt& a) { return humus_attempt_status(a.get()); })
      .def_property_readonly("error",
                             [](const Attempt& a) -> py::object {
                               const humus_status e = humus_attempt_error(a.get());
                               if (e == HUMUS_OK) return py::none();
                               return py::str(humus_status_name(e));
                             })
      .def_property_readonly(
          "error_message", [](const Attempt& a) { return std::string(humus_attempt_error_message(a.get())); })
      .def_property_readonly("number", [](const Attempt& a) { return humus_attempt_number(a.get()); })
      .def(
          "header",
          [](const Attempt& a, const std::string& name) -> py::object {
            const char* v = humus_attempt_header(a.get(), name.c_str());
            if (v == nullptr) return py::none();
            return py::str(v);
          },
          py::arg("name"));

  m.def(
      "settings_schema_json",
      [] {
        char* out = nullptr;
        size_t len = 0;
        humus_error* err = nullptr;
        const humus_status st = humus_settings_schema_json(&out, &len, &err);
        if (st != HUMUS_OK) fail(st, ErrorPtr(err));
        std::string text(out, len);
        humus_string_free(out);
        return text;
      },
      "The settings schema (humus_settings_schema_json): every key with its kind, default, bounds and doc.");
  m.def(
      "classify_default",
      [](const Attempt& a) {
        humus_classification c{};
        const humus_status st = humus_classify_default(a.get(), &c);
        if (st != HUMUS_OK) fail(st, nullptr);
        return classification_tuple(c);
      },
      py::arg("attempt"), "The default classifier (docs/retries.md §5.3): (retry, breaker, retry_after_ms).");
  m.def(
      "classify_preset",
      [](const std::string& preset, const Attempt& a) {
        humus_classification c{};
        const humus_status st = humus_classify_preset(preset.c_str(), a.get(), &c);
        if (st != HUMUS_OK) fail(st, nullptr);
        return classification_tuple(c);
      },
      py::arg("preset"), py::arg("attempt"), "A named preset classifier: (retry, breaker, retry_after_ms).");

  py::class_<Response>(m, "Response", "A whole response (humus_response); close() frees it.")
      .def_property_readonly("status", &Response::status)
      .def_property_readonly("attempts", &Response::attempts)
      .def_property_readonly("elapsed_us", &Response::elapsed_us)
      .def("redirects", &Response::redirects)
      .def_property_readonly("http_version", &Response::http_version)
      .def_property_readonly("url", &Response::url)
      .def("body", &Response::body)
      .def("read", &Response::read, py::arg("cap"))
      .def("read_rest", &Response::read_rest)
      .def("read_async", &Response::read_async, py::arg("cap"), py::arg("bridge"), py::arg("future"))
      .def("headers", &Response::headers)
      .def("close", &Response::close);

  py::class_<Bridge, std::shared_ptr<Bridge>>(m, "Bridge",
                                             "Delivers completions to the asyncio loop that watches fileno().")
      .def(py::init<>())
      .def("fileno", &Bridge::fileno)
      .def("drain", &Bridge::drain);

  py::class_<Call>(m, "Call", "An asynchronous call in flight; cancel() ends it early.")
      .def("cancel", &Call::cancel, py::call_guard<py::gil_scoped_release>());

  py::class_<Cancel, std::shared_ptr<Cancel>>(
      m, "Cancel", "A cancel token (humus_cancel): the core cancels blocking and submitted calls through it.")
      .def(py::init<>())
      .def("trigger", &Cancel::trigger, py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("triggered", &Cancel::triggered);

  py::class_<Client>(m, "Client", "A humus_client and its runtime.")
      .def(py::init<std::shared_ptr<Runtime>, const std::string&, py::object, py::object, py::object>(),
           py::arg("runtime"), py::arg("settings_json"), py::arg("classifier"), py::arg("trip"),
           py::arg("probe"))
      .def("close", &Client::close)
      .def_property_readonly("closed", &Client::closed)
      .def_property_readonly("breaker_state", &Client::breaker_state)
      .def("breaker_counts", &Client::breaker_counts)
      .def("budget_tokens", &Client::budget_tokens)
      .def("share", &Client::share, "Another owner of the same C client.")
      .def("request", &Client::request, py::arg("method"), py::arg("url"), py::arg("headers"),
           py::arg("body"), py::arg("idempotency_key"), py::arg("retry"), py::arg("follow"),
           py::arg("timeout_ms"), py::arg("context") = py::none(), py::arg("cancel") = py::none(),
           py::arg("hooks") = py::none())
      .def("open", &Client::open, py::arg("method"), py::arg("url"), py::arg("headers"), py::arg("body"),
           py::arg("idempotency_key"), py::arg("retry"), py::arg("follow"), py::arg("timeout_ms"),
           py::arg("context") = py::none(), py::arg("cancel") = py::none(), py::arg("hooks") = py::none())
      .def("submit", &Client::submit, py::arg("method"), py::arg("url"), py::arg("headers"), py::arg("body"),
           py::arg("idempotency_key"), py::arg("retry"), py::arg("follow"), py::arg("timeout_ms"),
           py::arg("bridge"), py::arg("future"), py::arg("context") = py::none(),
           py::arg("cancel") = py::none(), py::arg("hooks") = py::none())
      .def("submit_open", &Client::submit_open, py::arg("method"), py::arg("url"), py::arg("headers"),
           py::arg("body"), py::arg("idempotency_key"), py::arg("retry"), py::arg("follow"),
           py::arg("timeout_ms"), py::arg("bridge"), py::arg("future"), py::arg("context") = py::none(),
           py::arg("cancel") = py::none(), py::arg("hooks") = py::none());

  py::class_<Upstreams>(m, "Upstreams", "A humus_upstreams registry: clients by name (docs/upstreams.md §15.1).")
      .def(py::init<std::shared_ptr<Runtime>, const std::string&>(), py::arg("runtime"), py::arg("document"))
      .def("close", &Upstreams::close, "Releases this share of the registry.")
      .def_property_readonly("closed", &Upstreams::closed)
      .def("names", &Upstreams::names, "The upstreams' names, sorted.")
      .def("client", &Upstreams::client, py::arg("name"),
           "A Client over the registry's client of that name (the registry stays alive while it is open).")
      .def("readiness_json", &Upstreams::readiness_json, "The readiness report of the registry's clients.");

  humus_py::register_testing(m);
  humus_py::register_telemetry(m);
}
