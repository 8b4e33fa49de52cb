#pragma once
// The demo's timeline as an SVG chart: calls, attempts, successes, failed calls, rejections and throttled
// retries per second as lines, the breaker's state as a band under them (a half-open stretch at least a few
// pixels wide, however short), the upstream's phases as a band above. Plain SVG 1.1, no script, no external
// resource: any browser renders it.

#include <string>

#include "demo/run.h"

namespace humus::cli::demo {

// Writes the chart to `path`; false with the reason.
bool write_svg(const Run& run, const std::string& path, std::string& why);

// The chart's text (what write_svg writes).
std::string render_svg(const Run& run);

}  // namespace humus::cli::demo
