// The core defines its own enums and never includes the header (README.md, "Layout"); their numbers are
// the header's pinned ones, so the C ABI converts between the two by a cast. This file holds them together:
// a number changed on one side only stops the build here.
#include "breaker/outcome.h"
#include "breaker/policy.h"
#include "classify/classification.h"
#include "common/status.h"
#include "humus_http.h"

namespace humus::capi {
namespace {

template <typename Enum>
constexpr bool same(Enum core, int32_t abi) {
  return static_cast<int32_t>(core) == abi;
}

static_assert(same(Code::kOk, HUMUS_OK));
static_assert(same(Code::kInvalidArgument, HUMUS_E_INVALID_ARGUMENT));
static_assert(same(Code::kMisuse, HUMUS_E_MISUSE));
static_assert(same(Code::kProgram, HUMUS_E_PROGRAM));
static_assert(same(Code::kCrossOrigin, HUMUS_E_CROSS_ORIGIN));
static_assert(same(Code::kNoMemory, HUMUS_E_NO_MEMORY));
static_assert(same(Code::kInternal, HUMUS_E_INTERNAL));
static_assert(same(Code::kCallback, HUMUS_E_CALLBACK));
static_assert(same(Code::kConfig, HUMUS_E_CONFIG));
static_assert(same(Code::kRejected, HUMUS_E_REJECTED));
static_assert(same(Code::kBulkheadFull, HUMUS_E_BULKHEAD_FULL));
static_assert(same(Code::kTimeout, HUMUS_E_TIMEOUT));
static_assert(same(Code::kCancelled, HUMUS_E_CANCELLED));
static_assert(same(Code::kConnect, HUMUS_E_CONNECT));
static_assert(same(Code::kResolve, HUMUS_E_RESOLVE));
static_assert(same(Code::kConnectionLost, HUMUS_E_CONNECTION_LOST));
static_assert(same(Code::kProtocol, HUMUS_E_PROTOCOL));
static_assert(same(Code::kStreamRefused, HUMUS_E_STREAM_REFUSED));
static_assert(same(Code::kTooLarge, HUMUS_E_TOO_LARGE));
static_assert(same(Code::kResource, HUMUS_E_RESOURCE));
static_assert(same(Code::kTls, HUMUS_E_TLS));
static_assert(same(Code::kTlsClientCert, HUMUS_E_TLS_CLIENT_CERT));

static_assert(same(classify::RetryVerdict::kDone, HUMUS_RETRY_DONE));
static_assert(same(classify::RetryVerdict::kAgain, HUMUS_RETRY_AGAIN));

static_assert(same(breaker::Outcome::kSuccess, HUMUS_BREAKER_SUCCESS));
static_assert(same(breaker::Outcome::kFailure, HUMUS_BREAKER_FAILURE));
static_assert(same(breaker::Outcome::kIgnored, HUMUS_BREAKER_IGNORED));

static_assert(same(breaker::State::kClosed, HUMUS_CIRCUIT_CLOSED));
static_assert(same(breaker::State::kOpen, HUMUS_CIRCUIT_OPEN));
static_assert(same(breaker::State::kHalfOpen, HUMUS_CIRCUIT_HALF_OPEN));

static_assert(same(breaker::ProbeDecision::kContinue, HUMUS_PROBE_CONTINUE));
static_assert(same(breaker::ProbeDecision::kClose, HUMUS_PROBE_CLOSE));
static_assert(same(breaker::ProbeDecision::kReopen, HUMUS_PROBE_REOPEN));

}  // namespace
}  // namespace humus::capi
