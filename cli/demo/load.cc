#include "demo/load.h"

#include <memory>

namespace humus::cli::demo {

Load::Load(humus_client* client, const Schedule& schedule, int32_t rate)
    : client_(client),
      schedule_(schedule),
      rate_(rate),
      seconds_(static_cast<size_t>(schedule.duration_ms / 1000)) {}

Load::~Load() {
  stop_.store(true, std::memory_order_relaxed);
  if (pacer_.joinable()) pacer_.join();
}

bool Load::start(const std::string& url, std::chrono::steady_clock::time_point epoch, std::string& why) {
  humus_request* raw = nullptr;
  humus_error* err = nullptr;
  if (humus_request_new("GET", url.c_str(), &raw, &err) != HUMUS_OK) {
    Error e(err);
    why = describe(e.get());
    return false;
  }
  request_.reset(raw);
  epoch_ = epoch;
  pacer_ = std::thread(&Load::pace, this);
  return true;
}

void Load::pace() {
  const auto interval = std::chrono::nanoseconds(1'000'000'000 / rate_);
  const auto end = epoch_ + std::chrono::milliseconds(schedule_.duration_ms);
  for (int64_t k = 0; !stop_.load(std::memory_order_relaxed); ++k) {
    const auto at = epoch_ + k * interval;
    if (at >= end) break;
    std::this_thread::sleep_until(at);
    auto pending = std::make_unique<Pending>(Pending{this, std::chrono::steady_clock::now()});
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++in_flight_;
    }
    humus_error* err = nullptr;
    const humus_status st =
        humus_client_submit(client_, request_.get(), &Load::on_done, pending.get(), nullptr, &err);
    if (st == HUMUS_OK) {
      (void)pending.release();  // on_done owns it now
      continue;
    }
    Error owned(err);
    count(pending->started, st, nullptr, owned.get());
  }
}

void Load::on_done(void* user_data, humus_status status, humus_response* resp, humus_error* err) {
  std::unique_ptr<Pending> pending(static_cast<Pending*>(user_data));
  Response owned_resp(resp);
  Error owned_err(err);
  pending->load->count(pending->started, status, resp, err);
}

void Load::count(std::chrono::steady_clock::time_point started, humus_status status,
                 const humus_response* resp, const humus_error* err) {
  const auto now = std::chrono::steady_clock::now();
  const double latency = std::chrono::duration<double, std::milli>(now - started).count();
  const int64_t ms = std::chrono::duration_cast<std::chrono::milliseconds>(now - epoch_).count();

  int32_t attempts = 0;
  bool ok = false;
  bool rejected = false;
  bool full = false;
  if (status == HUMUS_OK && resp != nullptr) {
    attempts = humus_response_attempts(resp);
    const int32_t code = humus_response_status(resp);
    ok = code >= 200 && code < 300;
  } else {
    const humus_status kind = err != nullptr ? humus_error_status(err) : status;
    attempts = err != nullptr ? humus_error_attempts(err) : 0;
    rejected = kind == HUMUS_E_REJECTED;
    full = kind == HUMUS_E_BULKHEAD_FULL;
  }

  std::lock_guard<std::mutex> lock(mu_);
  // A call ending after the last second's line was printed is not counted: the run reports it as unfinished.
  const size_t i = std::min(std::max(static_cast<size_t>(std::max<int64_t>(ms, 0) / 1000), open_from_),
                            seconds_.empty() ? 0 : seconds_.size() - 1);
  if (i >= open_from_ && i < seconds_.size()) {
    Second& s = seconds_[i];
    ++s.calls;
    s.attempts += attempts;
    s.retries += attempts > 0 ? attempts - 1 : 0;
    if (ok) {
      ++s.ok;
    } else if (rejected) {
      ++s.rejected;
    } else if (full) {
      ++s.full;
    } else {
      ++s.failed;
    }
    latency_ms_[static_cast<size_t>(schedule_.at(static_cast<int64_t>(i) * 1000))].push_back(latency);
  }
  if (--in_flight_ == 0) drained_.notify_all();
}

Second Load::close_second(size_t i) {
  std::lock_guard<std::mutex> lock(mu_);
  if (i >= seconds_.size()) return {};
  open_from_ = std::max(open_from_, i + 1);
  return seconds_[i];
}

int64_t Load::finish(std::chrono::milliseconds drain) {
  if (pacer_.joinable()) pacer_.join();
  std::unique_lock<std::mutex> lock(mu_);
  drained_.wait_for(lock, drain, [&] { return in_flight_ == 0; });
  return in_flight_;
}

std::array<std::vector<double>, 4> Load::latencies() const {
  std::lock_guard<std::mutex> lock(mu_);
  return latency_ms_;
}

}  // namespace humus::cli::demo
