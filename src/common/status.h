// Status and Result: how every fallible function of the core reports failure.
// The request path never throws; the C boundary (capi/guard.h) turns a Status into a humus_status plus a
// humus_error. Codes mirror the pinned numbers of include/humus_http.h one to one.
#pragma once

#include <cstdint>
#include <exception>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "humus_http.h"

namespace humus {

enum class Code : int32_t {
  kOk = HUMUS_OK,
  kInvalidArgument = HUMUS_E_INVALID_ARGUMENT,
  kMisuse = HUMUS_E_MISUSE,
  kProgram = HUMUS_E_PROGRAM,
  kCrossOrigin = HUMUS_E_CROSS_ORIGIN,
  kNoMemory = HUMUS_E_NO_MEMORY,
  kInternal = HUMUS_E_INTERNAL,
  kCallback = HUMUS_E_CALLBACK,
  kConfig = HUMUS_E_CONFIG,
  kRejected = HUMUS_E_REJECTED,
  kBulkheadFull = HUMUS_E_BULKHEAD_FULL,
  kTimeout = HUMUS_E_TIMEOUT,
  kCancelled = HUMUS_E_CANCELLED,
  kConnect = HUMUS_E_CONNECT,
  kResolve = HUMUS_E_RESOLVE,
  kConnectionLost = HUMUS_E_CONNECTION_LOST,
  kProtocol = HUMUS_E_PROTOCOL,
  kStreamRefused = HUMUS_E_STREAM_REFUSED,
  kTooLarge = HUMUS_E_TOO_LARGE,
  kResource = HUMUS_E_RESOURCE,
  kTls = HUMUS_E_TLS,
  kTlsClientCert = HUMUS_E_TLS_CLIENT_CERT,
};

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
