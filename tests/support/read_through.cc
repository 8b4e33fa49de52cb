#include "support/read_through.h"

#include <utility>

#include "client/body_stream.h"

namespace humus::test {

std::string to_string(BodyMode mode) { return mode == BodyMode::kBuffered ? "buffered" : "streamed"; }

client::CallResult call_with(client::Client& c, const client::Request& r, BodyMode mode) {
  if (mode == BodyMode::kBuffered) return c.execute(r);
  client::CallResult out = c.open(r);
  if (!out.ok() || out.response->stream == nullptr) return out;
  std::shared_ptr<client::ResponseStream> stream = std::move(out.response->stream);
  char piece[7];  // smaller than any body the tests send, so the end comes from a read of its own
  for (;;) {
    Result<size_t> n = stream->read(piece, sizeof piece);
    if (!n.ok()) {
      client::CallResult failed;
      failed.error = n.status();
      failed.attempts = out.attempts;
      return failed;
    }
    if (n.value() == 0) return out;
    out.response->body.append(piece, n.value());
  }
}

}  // namespace humus::test
