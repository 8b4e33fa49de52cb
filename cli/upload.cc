#include "upload.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

#include "exit_codes.h"

namespace humus::cli {

std::optional<Outcome> Upload::open(const std::string& name, const std::string& shown,
                                    std::unique_ptr<Upload>& out) {
  const bool from_stdin = name == "-";
  const int fd = from_stdin ? STDIN_FILENO : ::open(name.c_str(), O_RDONLY | O_CLOEXEC);
  const auto failed = [&](int error) {
    return Outcome{exit_code::kRead, shown + ": cannot read: " + std::generic_category().message(error)};
  };
  if (fd < 0) return failed(errno);
  std::unique_ptr<Upload> upload(new Upload(fd, name, shown));
  struct stat st {};
  if (fstat(fd, &st) != 0) return failed(errno);
  if (S_ISDIR(st.st_mode)) return failed(EISDIR);
  if (S_ISREG(st.st_mode)) {
    const off_t at = lseek(fd, 0, SEEK_CUR);
    if (at >= 0) {
      upload->start_ = at;
      upload->length_ = st.st_size > at ? st.st_size - at : 0;
      // stdin is read once, whatever it is: the pipe or file behind it is the caller's, not to be re-read.
      upload->seekable_ = !from_stdin;
    }
  }
  out = std::move(upload);
  return std::nullopt;
}

Upload::~Upload() {
  if (fd_ != STDIN_FILENO) ::close(fd_);
}

humus_status Upload::attach(humus_request* r, humus_error** err) {
  humus_body_reader reader = HUMUS_BODY_READER_INIT;
  reader.user_data = this;
  reader.length = length_;
  reader.read = &Upload::read;
  reader.rewind = seekable_ ? &Upload::rewind : nullptr;
  return humus_request_set_body_reader(r, &reader, err);
}

humus_status Upload::read(void* self, void* buf, size_t cap, size_t* n) {
  auto* u = static_cast<Upload*>(self);
  ssize_t got = 0;
  do {
    got = ::read(u->fd_, buf, cap);
  } while (got < 0 && errno == EINTR);
  if (got < 0) {
    u->read_errno_ = errno;
    return HUMUS_E_CALLBACK;
  }
  *n = static_cast<size_t>(got);
  if (u->progress_ != nullptr) u->progress_->add_sent(*n);
  return HUMUS_OK;
}

humus_status Upload::rewind(void* self) {
  auto* u = static_cast<Upload*>(self);
  if (lseek(u->fd_, u->start_, SEEK_SET) < 0) {
    u->read_errno_ = errno;
    return HUMUS_E_CALLBACK;
  }
  return HUMUS_OK;
}

std::string Upload::describe() const {
  std::string what = "streamed from " + (name_ == "-" ? std::string("stdin") : name_) + ", ";
  what += length_ >= 0 ? std::to_string(length_) + " bytes" : std::string("length unknown, sent chunked");
  if (!seekable_) what += "; not replayable: one attempt";
  return what;
}

std::optional<Outcome> Upload::read_failure() const {
  if (read_errno_ == 0) return std::nullopt;
  return Outcome{exit_code::kRead, shown_ + ": cannot read: " + std::generic_category().message(read_errno_)};
}

}  // namespace humus::cli
