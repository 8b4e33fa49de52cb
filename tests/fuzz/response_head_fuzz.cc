// The response path as the transport really takes it: a libcurl easy handle configured by CurlEasy (its
// header callback on_header included) connects to a loopback listener of this process and reads the fuzz
// input as the server's whole response, then the client's consumers read what came out (Retry-After, a
// redirect's Location). No change to curl_easy.cc, and one thread: the server's side is served from
// libcurl's debug callback, the moment the request has gone out.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <curl/curl.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "client/redirect.h"
#include "fuzz_check.h"
#include "retry/retry_after.h"
#include "transport/curl_easy.h"
#include "transport/response_head.h"
#include "transport/url.h"

namespace {

namespace transport = humus::transport;

struct Listener {
  int fd = -1;
  int port = 0;
};

// A non-blocking loopback listener, made once: libcurl's connect completes in its backlog.
const Listener& listener() {
  static const Listener l = [] {
    Listener out;
    out.fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (out.fd < 0 || bind(out.fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        listen(out.fd, 16) != 0 || getsockname(out.fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      std::abort();
    }
    out.port = ntohs(a.sin_port);
    return out;
  }();
  return l;
}

// The server's side of one transfer: the whole response, then EOF.
struct Server {
  const uint8_t* data;
  size_t size;
  int fd = -1;
};

void serve(Server& s) {
  s.fd = accept4(listener().fd, nullptr, nullptr, 0);
  if (s.fd < 0) return;  // no connection waiting: libcurl then times out, which the fuzz input cannot cause
  size_t written = 0;
  while (written < s.size) {
    const ssize_t n = write(s.fd, s.data + written, s.size - written);
    if (n <= 0) std::abort();
    written += static_cast<size_t>(n);
  }
  shutdown(s.fd, SHUT_WR);
}

int on_debug(CURL* /*easy*/, curl_infotype type, char* /*text*/, size_t /*size*/, void* user) {
  auto& s = *static_cast<Server*>(user);
  if (type == CURLINFO_HEADER_OUT && s.fd < 0) serve(s);
  return 0;
}

// Connections libcurl made but never sent on: closed, so the next input's accept gets its own.
void drain() {
  for (int fd; (fd = accept4(listener().fd, nullptr, nullptr, SOCK_NONBLOCK)) >= 0;) close(fd);
}

}  // namespace

// S25: the libFuzzer target `response_head`; its corpus replays as the ctest fuzz.response_head.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Beyond the loopback socket's buffer the write would block: no response head is anywhere near this.
  if (size > 64 * 1024) return 0;
  transport::ensure_curl_global();
  const int port = listener().port;
  Server server{data, size};

  transport::TransportConfig config;
  config.host = "127.0.0.1";
  const transport::Slist no_connect_to;
  transport::SocketRegistry sockets;  // outlives the handle, whose connection it closes
  transport::OriginMemory learned;
  transport::CurlEasy easy(config, no_connect_to, sockets, learned);
  CURL* e = easy.handle();
  curl_easy_setopt(e, CURLOPT_DEBUGFUNCTION, on_debug);
  curl_easy_setopt(e, CURLOPT_DEBUGDATA, &server);
  curl_easy_setopt(e, CURLOPT_VERBOSE, 1L);  // the debug callback is only called in verbose mode
  curl_easy_setopt(e, CURLOPT_FORBID_REUSE, 1L);
  curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, 5000L);  // a safety net: EOF always ends the transfer first

  transport::WireRequest request;
  request.method = "GET";
  request.url = "http://127.0.0.1:" + std::to_string(port) + "/fuzz";
  const humus::Instant now = humus::Instant::clock::now();
  const transport::AttemptLimits limits{now + std::chrono::seconds(5), now + std::chrono::seconds(5)};
  easy.prepare(request, limits, now);
  // Verbose output would drown libFuzzer's; the debug callback replaces it, so nothing is printed.
  const CURLcode code = curl_easy_perform(e);
  const transport::WireResult result = easy.finish(code, transport::Interrupt::kNone);
  if (server.fd >= 0) close(server.fd);
  drain();
  if (std::getenv("HUMUS_FUZZ_DEBUG") != nullptr) {
    std::fprintf(stderr, "curl %d, error %d: %s; status %d, %zu headers\n", static_cast<int>(code),
                 static_cast<int>(result.error), result.message.c_str(), result.response.status,
                 result.response.headers.size());
  }

  if (result.error != humus::Code::kOk) return 0;
  const transport::WireResponse& r = result.response;
  FUZZ_CHECK(r.status >= 100 && r.status <= 999, "a status libcurl accepted");
  FUZZ_CHECK(r.reason.size() <= transport::kMaxReasonPhrase, "the reason phrase is bounded");
  for (const char c : r.reason) {
    const auto u = static_cast<unsigned char>(c);
    FUZZ_CHECK(u >= 0x20 && u != 0x7f, "no control byte in the reason phrase");
  }
  for (const auto& [name, value] : r.headers.fields()) {
    FUZZ_CHECK(name.find_first_of(std::string_view("\r\n\0", 3)) == std::string::npos, name.c_str());
    FUZZ_CHECK(value.find_first_of(std::string_view("\r\n\0", 3)) == std::string::npos, name.c_str());
  }
  if (const std::string* retry_after = r.headers.find("Retry-After")) {
    (void)humus::retry::parse_retry_after(*retry_after, humus::WallTime::clock::now());
  }
  humus::client::Response response;
  response.status = r.status;
  response.headers = r.headers;
  const transport::Origin origin{"http", "127.0.0.1", port};
  if (auto next = humus::client::follow_redirect(request, response, origin)) {
    humus::Result<transport::Url> target = transport::parse_url(next->url);
    FUZZ_CHECK(target.ok() && transport::origin_of(*target) == origin, next->url.c_str());
  }
  return 0;
}
