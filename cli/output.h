#pragma once
// Where the CLI writes: stdout or a file opened at its first write, and how a response's head is printed.

#include <humus_http.h>

#include <cstdio>
#include <optional>
#include <string>

namespace humus::cli {

// What a step of the command ended with: an exit status (exit_codes.h) and the message for stderr.
struct Outcome {
  int code = 0;
  std::string message;
};

// stdout, or a file (-o, -O, -D) opened at the first write: a call refused by --fail creates none. Bytes are
// written as they come (stdio's buffer, no more), so what was written before a failure stays written.
class Output {
 public:
  // `flag` names the file in messages: "-o", "-D".
  explicit Output(std::optional<std::string> path, std::string flag = "-o")
      : path_(std::move(path)), flag_(std::move(flag)) {}
  Output(const Output&) = delete;
  Output& operator=(const Output&) = delete;
  ~Output();

  // Opens the file on the first call, even for len 0 (an empty body still makes its file).
  std::optional<Outcome> write(const void* data, size_t len);
  std::optional<Outcome> write(const std::string& s) { return write(s.data(), s.size()); }
  // Flushes, and closes a file.
  std::optional<Outcome> finish();
  // Whether what went to stdout (if anything) ends with a newline.
  [[nodiscard]] bool stdout_ends_line() const { return path_.has_value() || file_ == nullptr || ends_line_; }
  // Whether the bytes go to a file rather than stdout.
  [[nodiscard]] bool to_file() const { return path_.has_value(); }

 private:
  [[nodiscard]] Outcome failed() const;

  std::optional<std::string> path_;
  std::string flag_;
  FILE* file_ = nullptr;
  bool ends_line_ = true;
};

// "HTTP/1.1 200 OK", "HTTP/2 200 ": as curl prints it, the reason phrase as the server sent it.
std::string status_line(const humus_response* r);
// The status line and every header, each line after `prefix` and ending with `eol`.
std::string headers_block(const humus_response* r, const char* prefix, const char* eol);
// The head of every redirect the call followed, oldest first, as headers_block writes one, each followed by an
// empty line (`prefix` and `eol`): what curl -L prints before the final response's head.
std::string redirects_block(const humus_response* r, const char* prefix, const char* eol);

}  // namespace humus::cli
