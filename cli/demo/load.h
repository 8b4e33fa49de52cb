#pragma once
// The demo's load: a steady rate of GET calls through one client with humus_client_submit. Open-loop, like
// real traffic: calls start on schedule whether or not earlier ones have ended, so a slow or failing upstream
// shows up as calls in flight, retries and rejections rather than as a lower rate. Each completion is counted
// into the Second it ends in.

#include <humus_http.h>

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "capi.h"
#include "demo/run.h"

namespace humus::cli::demo {

class Load {
 public:
  Load(humus_client* client, const Schedule& schedule, int32_t rate);
  ~Load();
  Load(const Load&) = delete;
  Load& operator=(const Load&) = delete;

  // Builds the request for `url` and starts the pacing thread; the schedule counts from `epoch`.
  bool start(const std::string& url, std::chrono::steady_clock::time_point epoch, std::string& why);
  // The counts of second `i`, closed: calls ending later count in the next second still open.
  Second close_second(size_t i);
  // Stops starting calls, waits for the pacing thread, and for the calls in flight (at most `drain`).
  // Returns how many are still in flight.
  int64_t finish(std::chrono::milliseconds drain);
  // Each call's duration per phase (of the second it was counted in).
  std::array<std::vector<double>, 4> latencies() const;

 private:
  struct Pending {
    Load* load;
    std::chrono::steady_clock::time_point started;
  };

  static void on_done(void* user_data, humus_status status, humus_response* resp, humus_error* err);
  void pace();
  // Counts one ended call; `err` and `resp` are borrowed.
  void count(std::chrono::steady_clock::time_point started, humus_status status, const humus_response* resp,
             const humus_error* err);

  humus_client* const client_;
  const Schedule schedule_;
  const int32_t rate_;
  Request request_;
  std::chrono::steady_clock::time_point epoch_;
  std::thread pacer_;
  // Relaxed: a stop flag polled between submissions.
  std::atomic<bool> stop_{false};

  mutable std::mutex mu_;
  std::condition_variable drained_;
  int64_t in_flight_ = 0;                          // guarded by mu_
  std::vector<Second> seconds_;                    // guarded by mu_
  size_t open_from_ = 0;                           // guarded by mu_: seconds before it are closed
  std::array<std::vector<double>, 4> latency_ms_;  // guarded by mu_
};

}  // namespace humus::cli::demo
