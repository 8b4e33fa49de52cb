// Failure injection (docs/failure-injection.md §14): the scenario a call carries in its W3C baggage, as the member
//   humus.fault=<point>=<action>[@<probability>]|<point>=<action>…
// where a point is "http:<host>:<port>" (every client is one) and an action is "abort", "delay:<duration>"
// or "status:<code>". The value may be percent-encoded (W3C Baggage); it is decoded before it is read.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "transport/wire.h"

namespace humus::faults {

inline constexpr std::string_view kBaggageKey = "humus.fault";

struct Fault {
  using Kind = transport::FaultKind;  // never kNone: a rule always does something
  Kind kind = Kind::kAbort;
  Duration delay{};        // kDelay
  int status = 0;          // kStatus
  double probability = 1;  // of each attempt to the point, in [0, 1]
};

struct Rule {
  std::string point;  // "http:payments:8443"
  Fault fault;
};

struct Scenario {
  std::vector<Rule> rules;
  // The first rule for `point`, or nullptr.
  const Fault* fault_for(std::string_view point) const;
};

// The scenario of a baggage header: nothing when it has no humus.fault member; kInvalidArgument naming
// "baggage" and quoting the bad item when the member cannot be read, so a mistyped scenario is not
// silently a scenario that injects nothing.
Result<std::optional<Scenario>> scenario_from_baggage(std::string_view baggage);

// The baggage without its humus.fault member(s), the other members untouched and in order; "" when none is
// left.
std::string without_scenario(std::string_view baggage);

// The injection point of a client: "http:<host>:<port>" (an IPv6 host in brackets). The scheme's default
// port is written out, so one point names one origin whatever the URL's spelling.
std::string point_name(std::string_view host, int port);

}  // namespace humus::faults
