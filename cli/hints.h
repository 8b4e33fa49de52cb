#pragma once
// What to try next, for failures whose usual cause is on the command line: curl users know its hints.

#include <humus_http.h>

#include <string>

#include "args.h"

namespace humus::cli {

// "; …" to add to the message of a call that failed with `e`, or "" when there is nothing to suggest.
std::string hint_for(const humus_error* e, const FetchOptions& o);

}  // namespace humus::cli
