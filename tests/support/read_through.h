#pragma once

// Runs one call the way a caller chooses to take its body: buffered (Client::execute), streamed
// (Client::open, then Response::stream read to its end in small pieces), or streamed on the loop
// (Client::submit_open, then ResponseStream::read_async likewise), folded into one CallResult so a test of
// the wire asks the same question of each. A streamed body's failure becomes the result's error.

#include <string>

#include "client/client.h"

namespace humus::test {

enum class BodyMode { kBuffered, kStreamed, kStreamedOnTheLoop };

inline constexpr BodyMode kEveryBodyMode[] = {BodyMode::kBuffered, BodyMode::kStreamed,
                                              BodyMode::kStreamedOnTheLoop};

std::string to_string(BodyMode mode);  // "buffered", "streamed", "streamed on the loop"

client::CallResult call_with(client::Client& c, const client::Request& r, BodyMode mode);

}  // namespace humus::test
