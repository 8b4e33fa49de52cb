// A scripted dependency for tests on the mock transport: replies per attempt (the last repeats) and what
// the dependency received, plus builders for the replies. Thread-safe.
#pragma once

#include <algorithm>
#include <mutex>
#include <string>
#include <vector>

#include "testing/mock_transport.h"

namespace humus::test::mock {

using humus::testing::MockReply;

// Scripted replies per attempt (the last repeats), and what the dependency received.
class Script {
 public:
  explicit Script(std::vector<MockReply> replies) : replies_(std::move(replies)) {}

  Result<MockReply> next(const transport::WireRequest& r) {
    std::lock_guard<std::mutex> lock(mu_);
    received_.push_back(r);
    const size_t i = std::min(received_.size() - 1, replies_.size() - 1);
    return replies_[i];
  }
  size_t count() {
    std::lock_guard<std::mutex> lock(mu_);
    return received_.size();
  }
  transport::WireRequest received(size_t i) {
    std::lock_guard<std::mutex> lock(mu_);
    return received_.at(i);
  }

 private:
  std::mutex mu_;
  std::vector<MockReply> replies_;
  std::vector<transport::WireRequest> received_;
};

inline MockReply status(int code, Headers headers = {}, std::string body = "") {
  MockReply r;
  r.status = code;
  r.headers = std::move(headers);
  r.body = std::move(body);
  return r;
}

inline MockReply error(Code code) {
  MockReply r;
  r.error = code;
  r.error_message = "scripted";
  return r;
}

inline MockReply hang() {
  MockReply r;
  r.hang = true;
  return r;
}

inline Headers header(std::string name, std::string value) {
  Headers h;
  h.add(std::move(name), std::move(value));
  return h;
}

}  // namespace humus::test::mock
