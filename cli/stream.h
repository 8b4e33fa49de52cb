#pragma once
// A response body copied to its output as it arrives, one fixed buffer at a time: memory stays flat
// whatever the body's size (humus_response_read, docs/bodies.md §7).

#include <humus_http.h>

#include <cstdint>
#include <optional>

#include "capi.h"
#include "output.h"
#include "progress.h"

namespace humus::cli {

struct CopiedBody {
  uint64_t bytes = 0;                  // written to the output, for -w %{size_download}
  Error read_error;                    // the body broke off (reset, deadline): what came stays written
  std::optional<Outcome> write_error;  // the output refused the bytes: the command ends
};

// Reads `resp` to its end (or its first failure) into `out`, counting on `progress`. The output is opened
// even for an empty body, so the file exists.
CopiedBody copy_body(humus_response* resp, Output& out, Progress& progress);

// The Content-Length the server sent, when it sent one the client kept (a decoded body has none).
std::optional<uint64_t> content_length(const humus_response* resp);

}  // namespace humus::cli
