// humus_http._native, Ctrl-C during a blocking call on the main thread: a call made there is cancelled on
// SIGINT (SignalWatch), or runs on the event loop while the main thread polls for signals (main_thread.cpp).
#pragma once

#include <pybind11/pybind11.h>

#include <memory>

#include "client_handle.h"
#include "handles.h"

namespace humus_py {

// threading.main_thread().ident: the only thread Python runs signal handlers on. Set by the module's init.
extern unsigned long g_main_thread;

// signal.set_wakeup_fd; leaked on purpose (outlives the interpreter). Set by the module's init.
extern PyObject* g_set_wakeup_fd;

// The main thread: the call runs here, cancelled by the signal watch on SIGINT; when another wakeup fd is
// installed (an asyncio loop runs on this thread), it runs on the event loop instead while this thread
// polls for signals.
py::object request_on_main(std::shared_ptr<ClientHandle> h, RequestPtr req);

// A blocking call run on the event loop while this thread, the main one, polls for signals (SyncWaiter).
// `req` carries the caller's token, if any: the core cancels the submitted call through it.
py::object request_polling(std::shared_ptr<ClientHandle> h, RequestPtr req);

}  // namespace humus_py
