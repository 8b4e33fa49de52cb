// humus_http._native, the classifier and breaker policy trampolines (callbacks.h), and their Python side:
// the Attempt a classifier sees, the default and preset classifiers.
#include "callbacks.h"

#include <pybind11/pybind11.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "errors.h"
#include "humus_http.h"
#include "native.h"

namespace humus_py {

namespace {

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

}  // namespace

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

py::tuple counts_tuple(const humus_breaker_counts* c) {
  return py::make_tuple(c->state, c->successes, c->failures, c->consecutive_successes,
                        c->consecutive_failures, c->timed_out_probes, c->window_results, c->window_failures,
                        c->slow_results, c->window_slow);
}

namespace {

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

}  // namespace

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

void register_callbacks(py::module_& m) {
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
}

}  // namespace humus_py
