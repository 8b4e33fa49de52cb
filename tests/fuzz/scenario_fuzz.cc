// W3C baggage and the fault scenario it may carry (docs/failure-injection.md §14): scenario_from_baggage never crashes, reads only
// probabilities in [0, 1], and the baggage without_scenario leaves carries no scenario any more.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "faults/scenario.h"
#include "fuzz_check.h"

namespace faults = humus::faults;

// S25: the libFuzzer target `scenario`; its corpus replays as the ctest fuzz.scenario.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view baggage(reinterpret_cast<const char*>(data), size);
  humus::Result<std::optional<faults::Scenario>> scenario = faults::scenario_from_baggage(baggage);
  if (scenario.ok() && scenario->has_value()) {
    for (const faults::Rule& rule : (*scenario)->rules) {
      FUZZ_CHECK(rule.fault.probability >= 0 && rule.fault.probability <= 1, rule.point.c_str());
      FUZZ_CHECK((*scenario)->fault_for(rule.point) != nullptr, rule.point.c_str());
      if (rule.fault.kind == faults::Fault::Kind::kDelay) {
        FUZZ_CHECK(rule.fault.delay.count() >= 0, "delay >= 0");
      }
    }
  } else if (!scenario.ok()) {
    const std::vector<std::string> fields = scenario.status().fields();
    FUZZ_CHECK(!fields.empty() && fields[0] == "baggage", "names baggage");
  }
  const std::string rest = faults::without_scenario(baggage);
  humus::Result<std::optional<faults::Scenario>> left = faults::scenario_from_baggage(rest);
  FUZZ_CHECK(left.ok() && !left->has_value(), rest.c_str());
  FUZZ_CHECK(faults::without_scenario(rest) == rest, "removing twice changes nothing");
  return 0;
}
