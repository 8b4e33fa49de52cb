// The runtime (docs/README.md §1): what every client of a process shares — the clock (real or virtual), the name
// overrides (§10.6), the mock transport when tests install one, and the random source.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/mutex.h"
#include "common/random.h"
#include "common/status.h"
#include "telemetry/telemetry.h"
#include "testing/mock_transport.h"
#include "testing/virtual_clock.h"
#include "transport/event_loop.h"
#include "transport/fork.h"
#include "transport/transport.h"

namespace humus::client {

struct RuntimeOptions {
  // "host:port" → "address:port": connections for the name go to the address; TLS still checks the name.
  std::vector<std::pair<std::string, std::string>> resolve;
  bool faults = false;          // failure injection (§14) enabled
  bool virtual_clock = false;   // every wait on the virtual clock (needs the mock transport)
  uint64_t seed = 0;            // with a virtual clock: the random source's seed (reproducible waits)
  bool caller_loop = false;     // the event loop has no thread: the caller drives it (humus_runtime_loop_run)
};

// Parses {"resolve": {"host:port": "address:port"}, "faults": bool, "clock": "real"|"virtual", "seed": n,
// "loop": "thread"|"caller"};
// an empty document means the defaults. Every bad key is reported (kConfig).
Result<RuntimeOptions> runtime_options_from_json(std::string_view json);

// Thread-safe once built; set_mock_handler() affects clients built afterwards.
class Runtime {
 public:
  explicit Runtime(RuntimeOptions options);
  // In a forked child, a loop made in the parent is abandoned rather than stopped (docs/fork.md §23).
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  Clock& clock() { return *clock_; }
  testing::VirtualClock* virtual_clock() { return virtual_clock_.get(); }
  Random& random() { return *random_; }
  const RuntimeOptions& options() const { return options_; }
  // When the runtime was made, on its own clock.
  Instant started_at() const { return started_at_; }

  // Metrics registry and log sink (docs/telemetry.md §13). Thread-safe.
  telemetry::Telemetry& telemetry() { return telemetry_; }

  void set_mock_handler(testing::MockHandler handler);
  bool has_mock() const;

  // The event loop of asynchronous calls, started on first use. Thread-safe. In a forked child the parent's
  // loop (whose thread the child does not have) is abandoned and a new one started (docs/fork.md §23).
  transport::EventLoop& loop() {
    if (transport::EventLoop* current = current_loop()) [[likely]] return *current;
    return make_loop();
  }
  // The event loop when it was started already (in this process, not a parent's), else null (a caller that
  // only waits for it must not start it).
  transport::EventLoop* existing_loop() const { return current_loop(); }
  // Whether the calling thread is the event loop's: a blocking call from there would wait on itself.
  bool on_loop_thread() const;

  // The transport for a new client: the mock when installed, else libcurl with the name overrides; wrapped
  // in the fault transport when the runtime injects faults (docs/failure-injection.md §14).
  Result<std::unique_ptr<transport::Transport>> make_transport(transport::TransportConfig config);

 private:
  Result<std::unique_ptr<transport::Transport>> make_base_transport(transport::TransportConfig config);
  transport::EventLoop& make_loop();
  // The loop if it was made in this process's fork generation. The generation is read first: once it is this
  // process's, the pointer read after it (make_loop() cleared it before writing the generation) is not the
  // parent's loop.
  transport::EventLoop* current_loop() const {
    if (loop_generation_.load(std::memory_order_acquire) != transport::fork_generation()) return nullptr;
    // Acquire pairs with the release in make_loop(): a thread that sees the pointer sees the loop built.
    return loop_ptr_.load(std::memory_order_acquire);
  }

  const RuntimeOptions options_;
  std::unique_ptr<testing::VirtualClock> virtual_clock_;
  Clock* clock_;
  std::unique_ptr<Random> owned_random_;
  Random* random_;
  Instant started_at_;
  telemetry::Telemetry telemetry_;
  mutable Mutex mu_;
  std::shared_ptr<const testing::MockHandler> mock_ GUARDED_BY(mu_);
  // Declared last: destroyed (stopped and joined) first, while the clock it may sleep on still exists.
  std::unique_ptr<transport::EventLoop> loop_ GUARDED_BY(mu_);  // made on first use; never replaced
  std::atomic<transport::EventLoop*> loop_ptr_{nullptr};
  // The fork generation loop_ptr_ belongs to (docs/fork.md §23).
  std::atomic<uint64_t> loop_generation_{transport::fork_generation()};
};

}  // namespace humus::client
