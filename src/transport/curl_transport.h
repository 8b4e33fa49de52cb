// The libcurl transport. Each attempt runs on the calling thread over a "lane": an easy handle with a multi
// handle of its own, so the lane's connection cache is the client's (a burst to one dependency never evicts
// another's connections) and the caller's thread drives the transfer itself, as curl_easy_perform would —
// no hand-off to another thread on the blocking path. Driving the multi ourselves, rather than calling
// curl_easy_perform, gives exact attempt deadlines (until the headers, docs/timeouts.md §8) and a cancel that wakes the
// poll at once (curl_multi_wakeup).
//
// Idle lanes are kept, up to max_idle_connections, each with its warm connection; a lane idle longer than
// idle_timeout is closed on the next acquire.
//
// Chosen by measurement (bench/engine_bench, 5 interleaved rounds, client and nginx on one CPU): over raw
// libcurl's reused easy handle, a blocking call on its own lane costs +1.45 us CPU per request on HTTP/1.1
// (+1.80 us on HTTP/2); the same call handed to the event-loop thread and waited for costs +6.9 us (+7.4 us)
// and 0.65x the throughput — the two thread hand-offs raw libcurl does not pay. So blocking calls drive
// lanes, and only asynchronous calls run on the loop, where one multi handle per client lets concurrent
// HTTP/2 calls share a connection. (Blocking calls do not multiplex: each lane holds its own connection.)
#pragma once

#include <memory>

#include "common/status.h"
#include "transport/transport.h"

namespace humus::transport {

// Checks the configuration (files readable, PEM present for the TLS backend) and builds the transport.
Result<std::unique_ptr<Transport>> make_curl_transport(const TransportConfig& config);

// Whether the libcurl loaded at run time can do what the client promises (OpenSSL backend, HTTP/2).
Status check_curl_features();

}  // namespace humus::transport
