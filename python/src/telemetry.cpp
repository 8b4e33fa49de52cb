// humus_http._native, telemetry (docs/telemetry.md §13) and readiness (docs/upstreams.md §15.2): the span and log sinks' callbacks into
// Python, and the metrics and readiness reports as text. Registered on the module by module.cpp
// (register_telemetry). Like the other files of the module, it knows only the C header.
//
// The sinks run on whichever thread ends an attempt or changes a breaker (a caller's thread, the event-loop
// thread), possibly several at once: each delivery takes the GIL. A sink cannot fail a call (the C ABI gives
// it no status to return), so an exception it raises is reported through sys.unraisablehook, naming the
// user's callable, and the call goes on — except KeyboardInterrupt, which is handed back to the signal
// machinery.
#include <pybind11/pybind11.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "humus_http.h"
#include "native.h"

namespace humus_py {

namespace {

// user_data of a sink table: the Python adapter the sink calls and the user's own callable, which names the
// sink when its exception is reported. Released (with the GIL) by the table's destroy.
struct SinkCallable {
  py::object adapter;
  py::object user;
};

void destroy_sink(void* user_data) {
  auto* sink = static_cast<SinkCallable*>(user_data);
  if (interpreter_finalizing()) {
    (void)sink->adapter.release();  // no GIL to be had: leak the references rather than crash
    (void)sink->user.release();
    delete sink;
    return;
  }
  Gil gil;
  delete sink;
}

// GIL held: calls the adapter with what `build` returns; whatever it raises goes to sys.unraisablehook. An
// error already set on this thread (none is expected: sinks run while the GIL is released around C calls) is
// kept aside.
template <typename Build>
void deliver(const SinkCallable& sink, const char* what, const Build& build) {
  PyObject *type = nullptr, *value = nullptr, *traceback = nullptr;
  PyErr_Fetch(&type, &value, &traceback);
  try {
    sink.adapter(build());
  } catch (py::error_already_set& e) {
    if (e.matches(PyExc_KeyboardInterrupt)) {
      // Ctrl-C ran its handler inside the sink (the main thread runs Python's signal handlers in whatever
      // Python code it runs): the exception is dropped and SIGINT tripped again, so that the blocking call is
      // cancelled and raises KeyboardInterrupt itself (or the next bytecode does).
      PyErr_SetInterrupt();
    } else {
      e.discard_as_unraisable(sink.user);
    }
  } catch (const std::exception& e) {
    py::set_error(PyExc_RuntimeError, (std::string(what) + " adapter: " + e.what()).c_str());
    PyErr_WriteUnraisable(sink.user.ptr());
  }
  PyErr_Restore(type, value, traceback);
}

py::str str_of(const char* s) { return py::str(s == nullptr ? "" : s); }

// The span as the Python adapter takes it: (name, trace_id, span_id, parent_span_id, tracestate, trace_flags,
// start_unix_ns, end_unix_ns, status, attributes).
void span_trampoline(void* user_data, const humus_span* span) {
  if (interpreter_finalizing()) return;
  Gil gil;
  deliver(*static_cast<SinkCallable*>(user_data), "span sink", [span]() -> py::object {
    py::dict attributes;
    for (size_t i = 0; i < span->attribute_count; ++i) {
      const humus_span_attribute& a = span->attributes[i];
      if (a.key == nullptr) continue;
      if (a.type == HUMUS_ATTRIBUTE_INT) {
        attributes[py::str(a.key)] = py::int_(a.int_value);
      } else {
        attributes[py::str(a.key)] = str_of(a.string_value);
      }
    }
    return py::make_tuple(str_of(span->name), str_of(span->trace_id), str_of(span->span_id),
                          str_of(span->parent_span_id), str_of(span->tracestate),
                          static_cast<int>(span->trace_flags), span->start_unix_ns, span->end_unix_ns,
                          span->status, attributes);
  });
}

// The record as the Python adapter takes it: (event, message, server_address, server_port, previous_state,
// new_state, counts (ten integers, as the breaker policy adapters take them), time_unix_ms, upstream).
void log_trampoline(void* user_data, const humus_log_record* record) {
  if (interpreter_finalizing()) return;
  Gil gil;
  deliver(*static_cast<SinkCallable*>(user_data), "log sink", [record]() -> py::object {
    const humus_breaker_counts& c = *record->counts;
    py::tuple counts =
        py::make_tuple(c.state, c.successes, c.failures, c.consecutive_successes, c.consecutive_failures,
                       c.timed_out_probes, c.window_results, c.window_failures, c.slow_results, c.window_slow);
    return py::make_tuple(str_of(record->event), str_of(record->message), str_of(record->server_address),
                          record->server_port, record->previous_state, record->new_state, counts,
                          record->time_unix_ms, str_of(record->upstream));
  });
}

// GIL held: installs a sink table (or with `adapter` None removes the sink). The previous sink's destroy may
// run inside the C call, taking the GIL itself: the GIL is released around it.
template <typename Table, typename Install>
void set_sink(const py::handle& runtime, const py::object& adapter, const py::object& user, Table table,
              Install install) {
  humus_runtime* rt = runtime_of(runtime);
  humus_error* err = nullptr;
  humus_status st = HUMUS_OK;
  if (adapter.is_none()) {
    py::gil_scoped_release nogil;
    st = install(rt, nullptr, &err);
  } else {
    auto* owned = new SinkCallable{adapter, user};
    table.user_data = owned;
    table.destroy = destroy_sink;
    {
      py::gil_scoped_release nogil;
      st = install(rt, &table, &err);
    }
    if (st != HUMUS_OK) delete owned;  // not taken on failure
  }
  if (st != HUMUS_OK) raise_failure(st, err);
}

void set_span_sink(const py::handle& runtime, const py::object& adapter, const py::object& user) {
  humus_span_sink table = HUMUS_SPAN_SINK_INIT;
  table.span = span_trampoline;
  set_sink(runtime, adapter, user, table, [](humus_runtime* rt, const humus_span_sink* t, humus_error** err) {
    return humus_runtime_set_span_sink(rt, t, err);
  });
}

void set_log_sink(const py::handle& runtime, const py::object& adapter, const py::object& user) {
  humus_log_sink table = HUMUS_LOG_SINK_INIT;
  table.record = log_trampoline;
  set_sink(runtime, adapter, user, table, [](humus_runtime* rt, const humus_log_sink* t, humus_error** err) {
    return humus_runtime_set_log_sink(rt, t, err);
  });
}

// GIL held: a report the library writes as a string of its own. Read without the GIL: collecting takes the
// breakers' locks, which a breaker policy callback waiting for the GIL may hold.
template <typename Report>
std::string report_text(const py::handle& runtime, Report report) {
  humus_runtime* rt = runtime_of(runtime);
  char* out = nullptr;
  size_t len = 0;
  humus_error* err = nullptr;
  humus_status st;
  {
    py::gil_scoped_release nogil;
    st = report(rt, &out, &len, &err);
  }
  if (st != HUMUS_OK) raise_failure(st, err);
  std::string text(out, len);
  humus_string_free(out);
  return text;
}

}  // namespace

void register_telemetry(py::module_& m) {
  m.def("set_span_sink", &set_span_sink, py::arg("runtime"), py::arg("adapter"), py::arg("user"),
        "Installs (or with adapter None removes) the span sink of a runtime for the calls that start "
        "afterwards; "
        "adapter(tuple) receives each attempt's span, and an exception it raises is reported against `user` "
        "through sys.unraisablehook.");
  m.def("set_log_sink", &set_log_sink, py::arg("runtime"), py::arg("adapter"), py::arg("user"),
        "Installs (or with adapter None removes) the log sink of a runtime; adapter(tuple) receives each log "
        "record, and an exception it raises is reported against `user` through sys.unraisablehook.");
  m.def(
      "metrics_prometheus",
      [](const py::handle& runtime) { return report_text(runtime, humus_runtime_metrics_prometheus); },
      py::arg("runtime"), "The runtime's metrics in the Prometheus text format 0.0.4.");
  m.def(
      "metrics_json",
      [](const py::handle& runtime) { return report_text(runtime, humus_runtime_metrics_json); },
      py::arg("runtime"), "The runtime's metrics as JSON text.");
  m.def(
      "readiness_json",
      [](const py::handle& runtime) { return report_text(runtime, humus_runtime_readiness_json); },
      py::arg("runtime"), "The readiness report of every live client of the runtime, as JSON text.");
}

}  // namespace humus_py
