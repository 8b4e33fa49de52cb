#pragma once
// The demo's text output: a legend, one line per second as the run goes, and a summary at the end.

#include <cstdio>
#include <string>

#include "demo/run.h"

namespace humus::cli::demo {

// What the header says about the setup.
struct Setup {
  std::string upstream_url;
  std::string client;  // the client's settings, one line
  std::string phases;  // the upstream's phases, one line
};

class Timeline {
 public:
  explicit Timeline(std::FILE* out) : out_(out) {}

  void header(const Run& run, const Setup& setup);
  // One second's line, flushed at once.
  void line(const Run& run, size_t second);
  // The table per phase, the breaker's changes, and what the run showed.
  void summary(const Run& run);

 private:
  std::FILE* out_;
};

// "closed->open->half-open".
std::string breaker_path(const std::vector<int32_t>& states);

}  // namespace humus::cli::demo
