// humus_http._native, the testing kit (docs/testing-kit.md §16.2): the mock transport's callback into Python, the request
// view it hands over, and the C status names the Python side maps reply errors through. Registered on the
// module by module.cpp (register_testing). Like the other files of the module, it knows only the C header.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "humus_http.h"
#include "native.h"

namespace humus_py {

namespace {

// A request as the mock transport's callback sees it. The C request is borrowed for the duration of the
// callback only: the view is invalidated when the callback returns.
class MockRequestView {
 public:
  explicit MockRequestView(const humus_mock_request* r) : r_(r) {}
  void invalidate() { r_ = nullptr; }
  [[nodiscard]] const humus_mock_request* get() const {
    if (r_ == nullptr) {
      throw std::runtime_error(
          "a MockRequest is readable only during the mock handler call that received it");
    }
    return r_;
  }

 private:
  const humus_mock_request* r_;
};

// GIL held: a UTF-8 copy of a str that must not contain NUL (the C ABI takes C strings).
std::string c_string(const py::handle& o, const char* what) {
  if (!PyUnicode_Check(o.ptr())) throw py::type_error(std::string(what) + " must be str");
  auto s = o.cast<std::string>();
  if (s.find('\0') != std::string::npos)
    throw py::value_error(std::string(what) + " contains a NUL character");
  return s;
}

// Runs on the thread that drives the attempt (the caller's for a blocking call, the event loop's for an
// asynchronous one). The adapter returns (status, headers, body, error, message, delay_ms, hang, body_error,
// body_error_after); anything it raises fails the attempt with HUMUS_E_CALLBACK and is re-raised by the call it ends.
humus_status respond_trampoline(void* user_data, const humus_mock_request* request, humus_mock_reply* reply) {
  if (interpreter_finalizing()) return HUMUS_E_CALLBACK;
  Gil gil;
  humus_status result = HUMUS_OK;
  auto* view = new MockRequestView(request);
  py::object handle = py::cast(view, py::return_value_policy::take_ownership);
  try {
    const py::tuple t = static_cast<PyCallable*>(user_data)->fn(handle);
    if (t.size() != 9) throw std::runtime_error("the adapter must return 9 values");
    const auto status = t[0].cast<int32_t>();
    const auto headers = t[1].cast<py::list>();
    const auto body = t[2].cast<py::bytes>();
    const auto error = t[3].cast<int32_t>();
    const std::string message = c_string(t[4], "MockReply.message");
    const auto delay_ms = t[5].cast<int64_t>();
    const auto hang = t[6].cast<bool>();
    const auto body_error = t[7].cast<int32_t>();
    const auto body_error_after = t[8].cast<size_t>();
    // Checked whole before the reply is touched.
    std::vector<std::pair<std::string, std::string>> pairs;
    pairs.reserve(headers.size());
    for (const py::handle pair : headers) {
      const auto nv = pair.cast<py::tuple>();
      if (nv.size() != 2) throw py::type_error("MockReply.headers must be (name, value) pairs");
      pairs.emplace_back(c_string(nv[0], "a MockReply header name"),
                         c_string(nv[1], "a MockReply header value"));
    }
    humus_mock_reply_set_status(reply, status);
    for (const auto& [name, value] : pairs) humus_mock_reply_add_header(reply, name.c_str(), value.c_str());
    const std::string_view data = body;
    humus_mock_reply_set_body(reply, data.data(), data.size());
    if (error != HUMUS_OK) humus_mock_reply_set_error(reply, error, message.c_str());
    if (delay_ms > 0) humus_mock_reply_set_delay_ms(reply, delay_ms);
    if (hang) humus_mock_reply_set_hang(reply);
    if (body_error != HUMUS_OK) humus_mock_reply_set_body_error(reply, body_error_after, body_error, nullptr);
  } catch (py::error_already_set& e) {
    e.restore();
    keep_callback_exception();
    result = HUMUS_E_CALLBACK;
  } catch (const std::exception& e) {
    py::set_error(PyExc_RuntimeError, (std::string("mock transport adapter: ") + e.what()).c_str());
    keep_callback_exception();
    result = HUMUS_E_CALLBACK;
  }
  view->invalidate();
  return result;
}

// GIL held: installs `respond` (None removes the mock) for the clients built afterwards from `runtime`.
void set_mock_transport(const py::handle& runtime, const py::object& respond) {
  humus_runtime* rt = runtime_of(runtime);
  humus_error* err = nullptr;
  humus_status st = HUMUS_OK;
  if (respond.is_none()) {
    py::gil_scoped_release nogil;  // the previous mock's destroy may run here, taking the GIL itself
    st = humus_runtime_set_mock_transport(rt, nullptr, &err);
  } else {
    humus_mock_transport table = HUMUS_MOCK_TRANSPORT_INIT;
    table.respond = respond_trampoline;
    table.user_data = new PyCallable{respond};
    table.destroy = destroy_callable;
    {
      py::gil_scoped_release nogil;
      st = humus_runtime_set_mock_transport(rt, &table, &err);
    }
    if (st != HUMUS_OK) delete static_cast<PyCallable*>(table.user_data);  // not taken on failure
  }
  if (st != HUMUS_OK) raise_failure(st, err);
}

// The number of a status name ("HUMUS_E_CONNECT" → 300), asking the library for every number's name.
std::optional<int32_t> status_number(const std::string& name) {
  for (humus_status s = 0; s < 1000; ++s) {
    if (name == humus_status_name(s)) return s;
  }
  return std::nullopt;
}

}  // namespace

void register_testing(py::module_& m) {
  py::class_<MockRequestView>(m, "MockRequestView",
                              "A request as the mock transport sees it; valid only during that callback.")
      .def_property_readonly(
          "method", [](const MockRequestView& v) { return std::string(humus_mock_request_method(v.get())); })
      .def_property_readonly(
          "url", [](const MockRequestView& v) { return std::string(humus_mock_request_url(v.get())); })
      .def(
          "header",
          [](const MockRequestView& v, const std::string& name) -> py::object {
            const char* value = humus_mock_request_header(v.get(), name.c_str());
            if (value == nullptr) return py::none();
            return py::str(value);
          },
          py::arg("name"))
      .def("body", [](const MockRequestView& v) {
        const void* data = nullptr;
        size_t len = 0;
        humus_mock_request_body(v.get(), &data, &len);
        return py::bytes(static_cast<const char*>(data), len);
      });

  m.def("set_mock_transport", &set_mock_transport, py::arg("runtime"), py::arg("respond"),
        "Installs (or with None removes) the mock transport of a runtime for the clients built afterwards.");
  m.def(
      "status_name", [](int32_t status) { return std::string(humus_status_name(status)); }, py::arg("status"),
      "The C name of a status number (\"HUMUS_E_UNKNOWN\" for one this version does not know).");
  m.def("status_number", &status_number, py::arg("name"),
        "The number of a C status name (\"HUMUS_E_CONNECT\" -> 300), or None for an unknown name.");
}

}  // namespace humus_py
