#include "transport/transport.h"

namespace humus::transport {
namespace {

// A transport with nothing to step (the mock answers at once, a faulted attempt is answered by the fault):
// the first advance runs open() whole.
class OpenAtOnce final : public Transport::Stepped {
 public:
  OpenAtOnce(Transport& transport, const WireRequest& request, const AttemptLimits& limits, CancelToken* cancel)
      : transport_(transport), request_(request), limits_(limits), cancel_(cancel) {}
  std::optional<Transport::Opened> advance(StepWait&) override { return transport_.open(request_, limits_, cancel_); }

 private:
  Transport& transport_;
  const WireRequest& request_;
  const AttemptLimits limits_;
  CancelToken* const cancel_;
};

}  // namespace

std::unique_ptr<Transport::Stepped> Transport::open_stepped(const WireRequest& request, const AttemptLimits& limits,
                                                            CancelToken* cancel) {
  return std::make_unique<OpenAtOnce>(*this, request, limits, cancel);
}

}  // namespace humus::transport
