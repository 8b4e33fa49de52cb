#pragma once
// humus-http get|head|post|put|delete: one call (or --repeat N calls) through one client, curl-style output.

#include "args.h"

namespace humus::cli {

// Runs the command; returns the exit status (exit_codes.h). Errors go to stderr unless --silent.
int run_fetch(const FetchOptions& options);

}  // namespace humus::cli
