// The upstreams document (docs/upstreams.md §15.1) with HUMUS_HTTP_UPSTREAMS__<NAME>__BASE_URL overrides. Input: lines
// "VARIABLE=value" (the environment), a line "%%", then the JSON document; without "%%" all of it is the
// document and the environment is empty. Never crashes; every upstream built has a client; the names come out
// sorted and unique; a failure names at least one field.
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "client/runtime.h"
#include "fuzz_check.h"
#include "plugin/plugin.h"
#include "testing/mock_transport.h"
#include "upstreams/registry.h"

namespace {

humus::client::Runtime& runtime() {
  // One runtime for every input: building it is the expensive part, and upstreams only borrow it. The mock
  // transport keeps clients from opening anything.
  static humus::client::Runtime* rt = [] {
    auto* r = new humus::client::Runtime(humus::client::RuntimeOptions{});
    r->set_mock_handler([](const humus::transport::WireRequest&) -> humus::Result<humus::testing::MockReply> {
      return humus::testing::MockReply{};
    });
    return r;
  }();
  return *rt;
}

}  // namespace

// An input may name a plugin (docs/retries.md §5.4a): a file it names must never run, so none is opened.
extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  humus::plugin::forbid_loading("the fuzz target opens no plugin (an input must never name code to run)");
  return 0;
}

// S25: the libFuzzer target `upstreams`; its corpus replays as the ctest fuzz.upstreams.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  std::map<std::string, std::string> env;
  std::string_view doc = in;
  const size_t sep = in.find("%%\n");
  if (sep != std::string_view::npos && (sep == 0 || in[sep - 1] == '\n')) {
    std::string_view vars = in.substr(0, sep);
    doc = in.substr(sep + 3);
    while (!vars.empty()) {
      auto [line, rest] = humus::fuzz::split_once(vars, '\n');
      vars = rest;
      auto [name, value] = humus::fuzz::split_once(line, '=');
      env.emplace(std::string(name), std::string(value));
    }
  }
  const humus::upstreams::Environment lookup = [&env](const std::string& name) -> std::optional<std::string> {
    const auto it = env.find(name);
    if (it == env.end()) return std::nullopt;
    return it->second;
  };

  humus::Result<std::vector<humus::upstreams::Upstream>> built =
      humus::upstreams::build_upstreams(runtime(), doc, lookup);
  if (!built.ok()) {
    FUZZ_CHECK(!built.status().message().empty(), "a failure says why");
    return 0;
  }
  for (size_t i = 0; i < built->size(); ++i) {
    FUZZ_CHECK((*built)[i].client != nullptr, "every upstream has its client");
    if (i > 0) FUZZ_CHECK((*built)[i - 1].name < (*built)[i].name, "sorted by name, no name twice");
  }
  return 0;
}
