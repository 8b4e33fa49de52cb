#pragma once
// A request body streamed from a file or stdin as the client sends it (--data-binary @FILE, -T FILE), through
// humus_request_set_body_reader: the file is never held in memory. A regular file has a length and a rewind,
// so every attempt resends it; stdin (or a pipe) has neither: sent chunked, once (one attempt).

#include <humus_http.h>

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "output.h"
#include "progress.h"

namespace humus::cli {

class Upload {
 public:
  // Opens `name` ("-" is stdin); `shown` names it in messages ("-T big.iso", "--data-binary @big.iso").
  // Exit 26 when it cannot be opened.
  static std::optional<Outcome> open(const std::string& name, const std::string& shown,
                                     std::unique_ptr<Upload>& out);
  Upload(const Upload&) = delete;
  Upload& operator=(const Upload&) = delete;
  ~Upload();

  // Makes this the request's body. The request does not own it (no destroy): the Upload must outlive the
  // request and every call sending it.
  humus_status attach(humus_request* r, humus_error** err);
  // Whether another attempt can resend it (a rewind), and its length (-1 when unknown).
  [[nodiscard]] bool replayable() const { return seekable_; }
  [[nodiscard]] int64_t length() const { return length_; }
  // For -v: "> (body: ...)".
  [[nodiscard]] std::string describe() const;
  // When a call failed with HUMUS_E_CALLBACK because a read of the file failed: that failure (exit 26).
  [[nodiscard]] std::optional<Outcome> read_failure() const;
  // Where the bytes sent are counted (the meter's "Sent"); nullptr for nowhere.
  void count_on(Progress* progress) { progress_ = progress; }

 private:
  Upload(int fd, std::string name, std::string shown)
      : fd_(fd), name_(std::move(name)), shown_(std::move(shown)) {}
  static humus_status read(void* self, void* buf, size_t cap, size_t* n);
  static humus_status rewind(void* self);

  int fd_;
  std::string name_;  // the file's, "-" for stdin
  std::string shown_;
  bool seekable_ = false;
  int64_t length_ = -1;
  off_t start_ = 0;     // where the body starts in the file (stdin may have been read from already)
  int read_errno_ = 0;  // the last failed read's, for the message
  Progress* progress_ = nullptr;
};

}  // namespace humus::cli
