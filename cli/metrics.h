#pragma once
// Reading the client's counters (docs/telemetry.md §13.2) through humus_runtime_metrics_collect.

#include <humus_http.h>

#include <cstdint>
#include <map>
#include <string>

namespace humus::cli {

// The counter `name` (e.g. "humus.retry.decisions") of every client of `rt`, summed per value of its third
// attribute ("again", "throttled", ...). Empty if the collection fails.
std::map<std::string, uint64_t> counter_by_attribute(humus_runtime* rt, const std::string& name);

// The retry decisions in docs/telemetry.md §13.2's order, e.g. "again 1, done 1"; "none" when all are zero.
// `now` minus `before`, per decision.
std::string decisions_text(const std::map<std::string, uint64_t>& now,
                           const std::map<std::string, uint64_t>& before = {});

}  // namespace humus::cli
