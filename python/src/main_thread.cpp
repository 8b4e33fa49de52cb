// humus_http._native, Ctrl-C during a blocking call on the main thread (main_thread.h): the signal watch
// that cancels the call on SIGINT, and the polling wait used when another wakeup fd is installed.
#include "main_thread.h"

#include <fcntl.h>
#include <pthread.h>
#include <pybind11/pybind11.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <new>
#include <thread>
#include <utility>

#include "client_handle.h"
#include "errors.h"
#include "handles.h"
#include "humus_http.h"
#include "response.h"
#include "runtime.h"

namespace humus_py {

unsigned long g_main_thread = 0;
PyObject* g_set_wakeup_fd = nullptr;

namespace {

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

// humus_client_do on this thread with the GIL released.
py::object outcome_of_do(std::shared_ptr<ClientHandle> h, RequestPtr req) {
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

}  // namespace

py::object request_on_main(std::shared_ptr<ClientHandle> h, RequestPtr req) {
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

py::object request_polling(std::shared_ptr<ClientHandle> h, RequestPtr req) {
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

}  // namespace humus_py
