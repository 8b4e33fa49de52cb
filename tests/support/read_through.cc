#include "support/read_through.h"

#include <future>
#include <memory>
#include <utility>

#include "client/body_stream.h"

namespace humus::test {
namespace {

// Smaller than any body the tests send, so the end comes from a read of its own.
constexpr size_t kPiece = 7;

client::CallResult failed(Status error, int attempts) {
  client::CallResult out;
  out.error = std::move(error);
  out.attempts = attempts;
  return out;
}

client::CallResult read_blocking(client::CallResult out) {
  std::shared_ptr<client::ResponseStream> stream = std::move(out.response->stream);
  char piece[kPiece];
  for (;;) {
    Result<size_t> n = stream->read(piece, sizeof piece);
    if (!n.ok()) return failed(n.status(), out.attempts);
    if (n.value() == 0) return out;
    out.response->body.append(piece, n.value());
  }
}

// One call on the loop: the head, then reads chained from each completion, all on the loop thread, where the
// stream also ends.
class LoopReader : public std::enable_shared_from_this<LoopReader> {
 public:
  explicit LoopReader(transport::EventLoop& loop) : loop_(loop) {}
  std::future<client::CallResult> result() { return done_.get_future(); }

  void headed(client::CallResult head) {
    if (!head.ok() || head.response->stream == nullptr) return done_.set_value(std::move(head));
    stream_ = std::move(head.response->stream);
    out_ = std::move(head);
    next();
  }

 private:
  void next() {
    stream_->read_async(piece_, sizeof piece_, [self = shared_from_this()](Result<size_t> n) {
      if (n.ok() && n.value() > 0) {
        self->out_.response->body.append(self->piece_, n.value());
        return self->next();
      }
      // The stream is not destroyed inside its own completion: a task after it does that, on the loop.
      self->loop_.post([stream = std::move(self->stream_)] {});
      self->done_.set_value(n.ok() ? std::move(self->out_) : failed(n.status(), self->out_.attempts));
    });
  }

  transport::EventLoop& loop_;
  std::promise<client::CallResult> done_;
  std::shared_ptr<client::ResponseStream> stream_;
  client::CallResult out_;
  char piece_[kPiece];
};

}  // namespace

std::string to_string(BodyMode mode) {
  switch (mode) {
    case BodyMode::kBuffered:
      return "buffered";
    case BodyMode::kStreamed:
      return "streamed";
    case BodyMode::kStreamedOnTheLoop:
      return "streamed on the loop";
  }
  return "?";
}

client::CallResult call_with(client::Client& c, const client::Request& r, BodyMode mode) {
  switch (mode) {
    case BodyMode::kBuffered:
      return c.execute(r);
    case BodyMode::kStreamed: {
      client::CallResult out = c.open(r);
      return out.ok() && out.response->stream != nullptr ? read_blocking(std::move(out)) : out;
    }
    case BodyMode::kStreamedOnTheLoop: {
      auto reader = std::make_shared<LoopReader>(c.runtime().loop());
      std::future<client::CallResult> result = reader->result();
      c.submit_open(r, [reader](client::CallResult head) { reader->headed(std::move(head)); });
      return result.get();
    }
  }
  return c.execute(r);
}

}  // namespace humus::test
