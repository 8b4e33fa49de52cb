// Status and Result: how every fallible function of the core reports failure.
// The request path never throws; the C boundary turns a Status into a humus_status plus a humus_error. Each
// Code carries the pinned number of its HUMUS_* status (docs/bindings.md), so that conversion is a cast: the
// C ABI checks the two lists stay equal (its abi_numbers.cc), the core never reads the header.
#pragma once

#include <cstdint>
#include <exception>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace humus {

enum class Code : int32_t {
  kOk = 0,
  kInvalidArgument = 1,
  kMisuse = 2,
  kProgram = 3,
  kCrossOrigin = 4,
  kNoMemory = 5,
  kInternal = 6,
  kCallback = 7,
  kConfig = 100,
  kRejected = 200,
  kBulkheadFull = 201,
  kTimeout = 202,
  kCancelled = 203,
  kConnect = 300,
  kResolve = 301,
  kConnectionLost = 302,
  kProtocol = 303,
  kStreamRefused = 304,
  kTooLarge = 305,
  kResource = 306,
  kTls = 400,
  kTlsClientCert = 401,
};

// The pinned name of a code ("HUMUS_E_TIMEOUT", "HUMUS_OK"); "HUMUS_E_UNKNOWN" for a number no Code names.
// Static storage; any thread.
const char* code_name(Code code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Code code, std::string message, std::vector<std::string> fields = {})
      : code_(code), message_(std::move(message)), fields_(std::move(fields)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }
  // Names of the settings, keys, headers or arguments the error is about (config errors list every one).
  const std::vector<std::string>& fields() const { return fields_; }

 private:
  Code code_ = Code::kOk;
  std::string message_;
  std::vector<std::string> fields_;
};

// A Status thrown where no Status can be returned (a constructor): the C ABI's guard reports it as it is.
class StatusError : public std::exception {
 public:
  explicit StatusError(Status status) : status_(std::move(status)) {}
  const Status& status() const { return status_; }
  const char* what() const noexcept override { return status_.message().c_str(); }

 private:
  Status status_;
};

// A value or the Status that explains why there is none.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT(google-explicit-constructor): Result<T> r = value;
  Result(Status status) : v_(std::move(status)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return std::holds_alternative<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T& value() & { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  const T& operator*() const& { return value(); }
  const T* operator->() const { return &std::get<T>(v_); }
  // The failure; an ok Result answers an ok Status.
  Status status() const { return ok() ? Status() : std::get<Status>(v_); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace humus
