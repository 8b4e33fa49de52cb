#pragma once
// humus-http shared ls|show|reset (docs/shared.md §22.5): the share.name segments of this host, through the C
// ABI's humus_shared_* functions.

#include <string>
#include <vector>

namespace humus::cli::shared {

// Runs `humus-http shared ARGS...`; returns the exit code.
int run_shared(const std::vector<std::string>& args);

}  // namespace humus::cli::shared
