#pragma once
// The request body built in memory from -d, --data-binary, --data-urlencode, --json and -F, as curl
// builds it. A lone --data-binary @FILE or -T FILE is streamed instead (upload.h).

#include <optional>
#include <string>

#include "args.h"
#include "output.h"

namespace humus::cli {

// Reads FILE whole ("-" is stdin); false with the reason.
bool read_file(const std::string& name, std::string& out, std::string& why);

// The body of the data flags (joined with '&' as curl does; --json pieces as given), or of the -F parts as
// multipart/form-data with the `boundary` chosen to appear in none of them. Exit 26 when a file cannot be
// read.
std::optional<Outcome> request_body(const FetchOptions& o, std::string& body, std::string& boundary);

}  // namespace humus::cli
