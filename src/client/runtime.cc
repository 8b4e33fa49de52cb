#include "client/runtime.h"

#include <nlohmann/json.hpp>

#include "faults/fault_transport.h"
#include "transport/curl_transport.h"

namespace humus::client {

Result<RuntimeOptions> runtime_options_from_json(std::string_view json) {
  RuntimeOptions options;
  if (json.find_first_not_of(" \t\r\n") == std::string_view::npos) return options;
  const nlohmann::json doc = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return Status(Code::kConfig, "runtime options: not a JSON object");
  }
  std::vector<std::string> bad;
  std::string problems;
  auto fail = [&](const std::string& key, const std::string& why) {
    bad.push_back(key);
    problems += (problems.empty() ? "" : "; ") + key + ": " + why;
  };
  for (const auto& [key, value] : doc.items()) {
    if (key == "resolve") {
      if (!value.is_object()) {
        fail("resolve", "must be an object of \"host:port\": \"address:port\"");
        continue;
      }
      for (const auto& [from, to] : value.items()) {
        const size_t colon = from.rfind(':');
        if (colon == std::string::npos || colon == 0 || !to.is_string() || to.get<std::string>().rfind(':') == std::string::npos) {
          fail("resolve." + from, "must map \"host:port\" to \"address:port\"");
          continue;
        }
        options.resolve.emplace_back(from, to.get<std::string>());
      }
    } else if (key == "faults") {
      if (!value.is_boolean()) fail("faults", "must be true or false");
      else options.faults = value.get<bool>();
    } else if (key == "clock") {
      if (value == "virtual") options.virtual_clock = true;
      else if (value != "real") fail("clock", "must be \"real\" or \"virtual\"");
    } else if (key == "seed") {
      if (!value.is_number_unsigned()) fail("seed", "must be a non-negative integer");
      else options.seed = value.get<uint64_t>();
    } else if (key == "loop") {
      if (value == "caller")
        options.caller_loop = true;
      else if (value != "thread")
        fail("loop", "must be \"thread\" or \"caller\"");
    } else {
      fail(key, "unknown key (known: resolve, faults, clock, seed, loop)");
    }
  }
  if (options.caller_loop && options.virtual_clock) {
    fail("loop",
         "\"caller\" needs the real clock: a virtual clock's loop sleeps on that clock, in a thread of its "
         "own");
  }
  if (!bad.empty()) return Status(Code::kConfig, "runtime options: " + problems, bad);
  return options;
}

Runtime::Runtime(RuntimeOptions options) : options_(std::move(options)) {
  if (options_.virtual_clock) {
    virtual_clock_ = std::make_unique<testing::VirtualClock>();
    virtual_clock_->set_auto_advance(true);
    clock_ = virtual_clock_.get();
    owned_random_ = std::make_unique<SeededRandom>(options_.seed);
    random_ = owned_random_.get();
  } else {
    clock_ = &RealClock::instance();
    random_ = &system_random();
  }
  started_at_ = clock_->now();
  transport::watch_forks();
}

Runtime::~Runtime() {
  MutexLock lock(mu_);
  if (loop_ && loop_generation_.load(std::memory_order_relaxed) != transport::fork_generation()) {
    loop_->abandon_after_fork();
    (void)loop_.release();
  }
}

void Runtime::set_mock_handler(testing::MockHandler handler) {
  auto shared = handler ? std::make_shared<const testing::MockHandler>(std::move(handler)) : nullptr;
  MutexLock lock(mu_);
  mock_ = std::move(shared);
}

transport::EventLoop& Runtime::make_loop() {
  const uint64_t generation = transport::fork_generation();
  // The fork lock before the runtime's: a forked child adopts one loop at a time, and fork() waits for it.
  MutexLock forking(transport::fork_mutex());
  MutexLock lock(mu_);
  if (loop_ && loop_generation_.load(std::memory_order_relaxed) != generation) {
    // Made before a fork, in a parent: its thread is not in this process and its epoll set is the parent's.
    // Abandoned, not destroyed (docs/fork.md §23): what it held is the parent's calls.
    loop_->abandon_after_fork();
    (void)loop_.release();
  }
  if (loop_generation_.load(std::memory_order_relaxed) != generation) {
    // Cleared before the generation is written (release): a reader that sees the new generation then reads
    // no parent's pointer (current_loop()).
    loop_ptr_.store(nullptr, std::memory_order_relaxed);
    loop_generation_.store(generation, std::memory_order_release);
  }
  if (!loop_) {
    loop_ = std::make_unique<transport::EventLoop>(*clock_, virtual_clock_.get(),
                                                   options_.caller_loop
                                                       ? transport::EventLoop::Driver::kCaller
                                                       : transport::EventLoop::Driver::kOwnThread);
    loop_ptr_.store(loop_.get(), std::memory_order_release);
  }
  return *loop_;
}

bool Runtime::on_loop_thread() const {
  const transport::EventLoop* loop = loop_ptr_.load(std::memory_order_acquire);
  if (loop == nullptr || !loop->on_loop_thread()) return false;  // the common answer, at the old cost
  // Not a parent's loop: a caller-driven loop's driver may be the thread that forked.
  return current_loop() == loop;
}

bool Runtime::has_mock() const {
  MutexLock lock(mu_);
  return mock_ != nullptr;
}

Result<std::unique_ptr<transport::Transport>> Runtime::make_transport(transport::TransportConfig config) {
  Result<std::unique_ptr<transport::Transport>> made = make_base_transport(std::move(config));
  if (!made.ok() || !options_.faults) return made;
  return std::unique_ptr<transport::Transport>(std::make_unique<faults::FaultTransport>(std::move(made).value(), *clock_));
}

Result<std::unique_ptr<transport::Transport>> Runtime::make_base_transport(transport::TransportConfig config) {
  std::shared_ptr<const testing::MockHandler> mock;
  {
    MutexLock lock(mu_);
    mock = mock_;
  }
  if (mock) {
    // The handler is shared by every client built while it was installed; each call copies nothing.
    return std::unique_ptr<transport::Transport>(std::make_unique<testing::MockTransport>(
        [mock](const transport::WireRequest& r) { return (*mock)(r); }, *clock_));
  }
  if (virtual_clock_) {
    return Status(Code::kMisuse, "a runtime with a virtual clock needs a mock transport: real sockets run on real time");
  }
  for (const auto& [from, to] : options_.resolve) config.connect_to.push_back(from + ":" + to);
  return transport::make_curl_transport(config);
}

}  // namespace humus::client
