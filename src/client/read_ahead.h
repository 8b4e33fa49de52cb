// The kReadAhead step of a call (call.h), one function for both drivers: the held body is read onto the
// call's buffered bytes, up to kReadAheadBytes, one read at a time, and the last read goes to
// Call::on_read_ahead(). A body the blocking driver opened completes each read in place, so the whole step is
// done when read_ahead() returns; one opened on the event loop completes each read as a task of its own.
#pragma once

#include <functional>
#include <optional>

#include "client/call.h"

namespace humus::client {

// `then` gets the step on_read_ahead() returned, exactly once: before read_ahead() returns for a blocking
// body, on the loop thread later for a loop body. `call` must stay alive until then (`then` may hold what owns
// it).
void read_ahead(Call& call, std::function<void(Step)> then);

// The kReadAhead step for a driver that must not wait (stepped_call.h): reads what has come, without waiting
// for the network; the step on_read_ahead() returned once the body is read as far as it goes, else nothing,
// with `wait` naming the socket to wait for before reading on.
std::optional<Step> read_ahead_ready(Call& call, transport::BodyWait& wait);

}  // namespace humus::client
