// humus_http._native, settings: the settings schema the core exports (humus_settings_schema_json), from
// which humus_http's settings surface is derived. A client's settings themselves are parsed by Client.
#include <pybind11/pybind11.h>

#include <cstddef>
#include <string>

#include "errors.h"
#include "handles.h"
#include "humus_http.h"
#include "native.h"

namespace humus_py {

void register_settings(py::module_& m) {
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
}

}  // namespace humus_py
