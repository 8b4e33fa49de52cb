#pragma once
// humus-http demo: the upstream, the load, the timeline and the chart, put together.

#include "args.h"

namespace humus::cli::demo {

// Runs the demo (about options.duration_s seconds); returns the exit status.
int run_demo(const DemoOptions& options);

}  // namespace humus::cli::demo
