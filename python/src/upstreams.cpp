// humus_http._native, upstreams (docs/upstreams.md §15.1): the registry of clients by name, and its Python
// class.
#include <pybind11/pybind11.h>

#include <cstddef>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>

#include "client.h"
#include "client_handle.h"
#include "errors.h"
#include "handles.h"
#include "humus_http.h"
#include "native.h"
#include "runtime.h"

namespace humus_py {

namespace {

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

void register_upstreams(py::module_& m) {
  py::class_<Upstreams>(m, "Upstreams", "A humus_upstreams registry: clients by name (docs/upstreams.md §15.1).")
      .def(py::init<std::shared_ptr<Runtime>, const std::string&>(), py::arg("runtime"), py::arg("document"))
      .def("close", &Upstreams::close, "Releases this share of the registry.")
      .def_property_readonly("closed", &Upstreams::closed)
      .def("names", &Upstreams::names, "The upstreams' names, sorted.")
      .def("client", &Upstreams::client, py::arg("name"),
           "A Client over the registry's client of that name (the registry stays alive while it is open).")
      .def("readiness_json", &Upstreams::readiness_json, "The readiness report of the registry's clients.");
}

}  // namespace humus_py
