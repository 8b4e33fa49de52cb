#include "client/read_ahead.h"

#include <memory>
#include <string>
#include <utility>

namespace humus::client {
namespace {

// One read of the step. A read completed in place (a blocking body) is left for the loop in read_ahead() to
// go on with, so a body served in many small pieces does not grow the stack.
struct Progress {
  bool inside = true;  // read() has not returned yet
  bool done = false;   // the read completed in place
  bool more = false;   // and the step goes on
  transport::BodyRead last;
};

}  // namespace

void read_ahead(Call& call, std::function<void(Step)> then) {
  for (;;) {
    auto progress = std::make_shared<Progress>();
    std::string& into = call.held_bytes();
    const size_t at = into.size();
    into.resize(kReadAheadBytes);
    call.held_body().read(into.data() + at, kReadAheadBytes - at,
                          [&call, then, progress, at](transport::BodyRead r) {
                            std::string& bytes = call.held_bytes();
                            bytes.resize(at + r.n);
                            const bool more = r.error == Code::kOk && r.n > 0 && bytes.size() < kReadAheadBytes;
                            if (progress->inside) {
                              progress->done = true;
                              progress->more = more;
                              progress->last = std::move(r);
                            } else if (more) {
                              read_ahead(call, then);
                            } else {
                              then(call.on_read_ahead(std::move(r)));
                            }
                          });
    progress->inside = false;
    if (!progress->done) return;  // a body on the loop: its completion goes on
    if (!progress->more) {
      then(call.on_read_ahead(std::move(progress->last)));
      return;
    }
  }
}

std::optional<Step> read_ahead_ready(Call& call, transport::BodyWait& wait) {
  for (;;) {
    std::string& into = call.held_bytes();
    const size_t at = into.size();
    into.resize(kReadAheadBytes);
    transport::BodyRead r = call.held_body().read_ready(into.data() + at, kReadAheadBytes - at, &wait);
    into.resize(at + r.n);
    if (r.error == Code::kOk && r.n == 0 && wait.fd >= 0) return std::nullopt;  // nothing has come yet
    if (r.error != Code::kOk || r.n == 0 || into.size() >= kReadAheadBytes) return call.on_read_ahead(std::move(r));
  }
}

}  // namespace humus::client
