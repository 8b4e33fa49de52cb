#pragma once
// The report of humus-http replay (docs/replay.md §21.4): one column per settings file, side by side.

#include <string>
#include <vector>

#include "replay.h"

namespace humus::cli::replay {

struct Column {
  std::string name;  // the settings file, as the report heads its column
  Outcome outcome;
};

// The report: a line on the traffic, the counts side by side, then each column's breaker transitions.
std::string format_report(const std::string& traffic_name, const Traffic& traffic, uint64_t seed,
                          const std::vector<Column>& columns);

}  // namespace humus::cli::replay
