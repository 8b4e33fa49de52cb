// The transport of a runtime that injects faults (docs/failure-injection.md §14): it wraps the real (or mock) transport and acts
// on the fault the call chose for an attempt — abort fails it as a lost connection, status answers it
// synthetically, delay holds it back within its timeout before the real send. To the client these are
// real outcomes: classified, retried and counted like any other. Installed only when the runtime's "faults"
// option is on, so a production runtime pays nothing for it.
#pragma once

#include <memory>

#include "transport/transport.h"

namespace humus::faults {

class FaultTransport final : public transport::Transport {
 public:
  FaultTransport(std::unique_ptr<transport::Transport> inner, Clock& clock);

  transport::WireResult perform(const transport::WireRequest& request, const transport::AttemptLimits& limits,
                                CancelToken* cancel) override;
  // Without a fault the real transport streams the body; a faulted attempt's body is read whole.
  Opened open(const transport::WireRequest& request, const transport::AttemptLimits& limits,
              CancelToken* cancel) override;
  // Without a fault the real transport's steps; a faulted attempt runs whole at its first step.
  std::unique_ptr<Stepped> open_stepped(const transport::WireRequest& request, const transport::AttemptLimits& limits,
                                        CancelToken* cancel) override;
  std::unique_ptr<transport::AsyncAttempt> start(transport::EventLoop& loop, const transport::WireRequest& request,
                                                 const transport::AttemptLimits& limits,
                                                 transport::AttemptDone done) override;

 private:
  const std::unique_ptr<transport::Transport> inner_;
  Clock& clock_;
};

}  // namespace humus::faults
