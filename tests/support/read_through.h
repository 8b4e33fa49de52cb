#pragma once

// Runs one call the way a caller chooses to take its body: buffered (Client::execute) or streamed
// (Client::open, then Response::stream read to its end in small pieces), folded into one CallResult so a
// test of the wire asks the same question of both. A streamed body's failure becomes the result's error.

#include <string>

#include "client/client.h"

namespace humus::test {

enum class BodyMode { kBuffered, kStreamed };

std::string to_string(BodyMode mode);  // "buffered", "streamed"

client::CallResult call_with(client::Client& c, const client::Request& r, BodyMode mode);

}  // namespace humus::test
