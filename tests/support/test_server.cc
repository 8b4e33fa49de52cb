#include "support/test_server.h"

#include <curl/curl.h>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <system_error>
#include <thread>

#ifndef HUMUS_SOURCE_DIR
#error "HUMUS_SOURCE_DIR must name the source tree (tests/CMakeLists.txt defines it)"
#endif
#ifndef HUMUS_TEST_CERTS_DIR
#define HUMUS_TEST_CERTS_DIR ""
#endif

extern char** environ;

namespace humus::test {
namespace {

constexpr std::chrono::seconds kReadyTimeout{10};
constexpr std::chrono::seconds kStopGrace{2};
constexpr std::string_view kServerName = "payments";

std::string env_or(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);  // NOLINT(concurrency-mt-unsafe): tests do not setenv concurrently
  return value != nullptr && *value != '\0' ? std::string(value) : fallback;
}

// std::strerror is not thread-safe; the error category's message is.
std::string error_text(int code) { return std::error_code(code, std::generic_category()).message(); }

[[noreturn]] void fail(const std::string& what) { throw std::runtime_error("TestServer: " + what); }

void close_fd(int& fd) {
  if (fd >= 0) {
    ::close(fd);
    fd = -1;
  }
}

// Reads one line within the timeout, so a server that never starts fails the test instead of hanging it.
std::string read_line(int fd, std::chrono::steady_clock::duration timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string line;
  while (line.empty() || line.back() != '\n') {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) fail("no ready line within 10 s");
    pollfd pfd{fd, POLLIN, 0};
    const int ready = ::poll(&pfd, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno != EINTR) fail("poll: " + error_text(errno));
    if (ready <= 0) continue;
    char buffer[512];
    const ssize_t got = ::read(fd, buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      fail(
          "the server exited before it was ready (its stderr says why; are the packages of "
          "tests/server/requirements.txt installed for this python?)");
    }
    line.append(buffer, static_cast<size_t>(got));
  }
  return line;
}

// libcurl's global state is set up once per process; it is never torn down (other tests may use it).
void init_curl_once() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

size_t append_body(char* data, size_t size, size_t count, void* user) {
  static_cast<std::string*>(user)->append(data, size * count);
  return size * count;
}

struct CurlDeleter {
  void operator()(CURL* curl) const { curl_easy_cleanup(curl); }
};
struct SlistDeleter {
  void operator()(curl_slist* list) const { curl_slist_free_all(list); }
};

std::string escape(CURL* curl, std::string_view text) {
  char* escaped = curl_easy_escape(curl, text.data(), static_cast<int>(text.size()));
  if (escaped == nullptr) fail("curl_easy_escape failed");
  std::string result(escaped);
  curl_free(escaped);
  return result;
}

// Spawns `python script args...` with its stdin and stdout on close-on-exec pipes; fills `pid`, `stdin_fd`
// (closing it is the child's signal to exit) and `stdout_fd`.
void spawn_python(const std::string& python, const std::string& script, const std::vector<std::string>& extra,
                  pid_t& pid, int& stdin_fd, int& stdout_fd) {
  // Close-on-exec pipes: only the dup2'd copies reach the child, so no other spawned process holds them.
  int to_child[2];
  int from_child[2];
  if (::pipe2(to_child, O_CLOEXEC) != 0) fail("pipe2: " + error_text(errno));
  if (::pipe2(from_child, O_CLOEXEC) != 0) {
    ::close(to_child[0]);
    ::close(to_child[1]);
    fail("pipe2: " + error_text(errno));
  }
  stdin_fd = to_child[1];
  stdout_fd = from_child[0];

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, to_child[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, from_child[1], STDOUT_FILENO);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
  // Sockets the test process opened without CLOEXEC must not stay open in the server.
  posix_spawn_file_actions_addclosefrom_np(&actions, STDERR_FILENO + 1);
#endif
  std::vector<std::string> args = {python, script};
  args.insert(args.end(), extra.begin(), extra.end());
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  for (auto& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  const int spawned = ::posix_spawnp(&pid, python.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(to_child[0]);
  ::close(from_child[1]);
  if (spawned != 0) {
    pid = -1;
    fail("cannot run " + python + ": " + error_text(spawned));
  }
}

// Closes the child's stdin and waits for it to exit; kills it if it has not after kStopGrace.
void stop_child(pid_t& pid, int& stdin_fd) {
  close_fd(stdin_fd);
  if (pid > 0) {
    const auto deadline = std::chrono::steady_clock::now() + kStopGrace;
    int status = 0;
    pid_t done = 0;
    while ((done = ::waitpid(pid, &status, WNOHANG)) == 0 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (done == 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
    }
    pid = -1;
  }
}

}  // namespace

TestServer::TestServer() : TestServer(Options{}) {}

TestServer::TestServer(const Options& options) {
  init_curl_once();
  try {
    start(options);
  } catch (...) {
    stop();
    throw;
  }
}

TestServer::~TestServer() { stop(); }

TestServer& TestServer::shared() {
  static TestServer instance;
  return instance;
}

// $HUMUS_TEST_CERTS_DIR, else the build tree's directory shared by every test process.
static std::string default_certs_dir() {
  const std::string certs = env_or("HUMUS_TEST_CERTS_DIR", HUMUS_TEST_CERTS_DIR);
  return certs.empty() ? "/tmp/humus-test-certs" : certs;
}

void TestServer::start(const Options& options) {
  const std::string python = options.python.empty() ? env_or("HUMUS_TEST_PYTHON", "python3") : options.python;
  const std::string certs = options.certs_dir.empty() ? default_certs_dir() : options.certs_dir;
  const std::string script = std::string(HUMUS_SOURCE_DIR) + "/tests/server/humus_test_server.py";
  spawn_python(python, script, {"--certs", certs}, pid_, stdin_fd_, stdout_fd_);
  const std::string line = read_line(stdout_fd_, kReadyTimeout);
  ready_ = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!ready_.is_object() || !ready_.contains("http")) fail("unexpected ready line: " + line);
}

void TestServer::stop() {
  stop_child(pid_, stdin_fd_);  // EOF on its stdin is the server's signal to exit
  close_fd(stdout_fd_);
}

H2FaultPeer::H2FaultPeer(std::string_view mode, const std::vector<std::string>& options, std::string_view script)
    : certs_dir_(default_certs_dir()) {
  const std::string python = env_or("HUMUS_TEST_PYTHON", "python3");
  const std::string path = std::string(HUMUS_SOURCE_DIR) + "/tests/support/" + std::string(script);
  std::vector<std::string> args = {"--certs", certs_dir_, "--mode", std::string(mode)};
  args.insert(args.end(), options.begin(), options.end());
  try {
    spawn_python(python, path, args, pid_, stdin_fd_, stdout_fd_);
    const nlohmann::json ready = nlohmann::json::parse(read_line(stdout_fd_, kReadyTimeout), nullptr, false);
    if (!ready.is_object() || !ready.contains("port")) fail(std::string(script) + ": unexpected ready line");
    port_ = ready["port"].get<int>();
  } catch (...) {
    stop_child(pid_, stdin_fd_);
    close_fd(stdout_fd_);
    throw;
  }
}

H2FaultPeer::~H2FaultPeer() {
  stop_child(pid_, stdin_fd_);
  close_fd(stdout_fd_);
}

nlohmann::json H2FaultPeer::finish() {
  close_fd(stdin_fd_);
  const nlohmann::json counters = nlohmann::json::parse(read_line(stdout_fd_, kReadyTimeout), nullptr, false);
  stop_child(pid_, stdin_fd_);
  if (!counters.is_object()) fail("the HTTP/2 peer left no counters at exit");
  return counters;
}

int TestServer::port(std::string_view listener) const {
  const auto it = ready_.find(std::string(listener));
  if (it == ready_.end() || listener == "certs" || listener == "notes") {
    fail("no listener named " + std::string(listener));
  }
  return it->is_number_integer() ? it->get<int>() : 0;
}

std::string TestServer::url(std::string_view listener, std::string_view path) const {
  if (listener == "http") return "http://" + address(listener) + std::string(path);
  return "https://" + host_port(listener) + std::string(path);
}

std::string TestServer::host_port(std::string_view listener) const {
  return std::string(kServerName) + ":" + std::to_string(port(listener));
}

std::string TestServer::address(std::string_view listener) const {
  return "127.0.0.1:" + std::to_string(port(listener));
}

std::string TestServer::resolve_entry(std::string_view listener) const {
  return host_port(listener) + ":127.0.0.1";
}

std::string TestServer::certs_dir() const { return ready_.at("certs").get<std::string>(); }
std::string TestServer::ca_file() const { return certs_dir() + "/ca.pem"; }
std::string TestServer::client_cert() const { return certs_dir() + "/client.pem"; }
std::string TestServer::client_key() const { return certs_dir() + "/client.key"; }

void TestServer::script(std::string_view path, const nlohmann::json& steps, bool repeat_last) {
  const nlohmann::json request = {{"path", path}, {"steps", steps}, {"repeat_last", repeat_last}};
  const std::string body = request.dump();
  (void)control("POST", "/_control/script", &body);
}

std::vector<nlohmann::json> TestServer::requests(std::string_view path) {
  std::unique_ptr<CURL, CurlDeleter> curl(curl_easy_init());
  if (!curl) fail("curl_easy_init failed");
  const nlohmann::json records =
      control("GET", "/_control/requests?path=" + escape(curl.get(), path), nullptr);
  return records.get<std::vector<nlohmann::json>>();
}

void TestServer::reset() {
  const std::string empty;
  (void)control("POST", "/_control/reset", &empty);
}

nlohmann::json TestServer::stats() { return control("GET", "/_control/stats", nullptr); }

// Raw libcurl over the plain listener: the harness must not depend on the client it tests.
nlohmann::json TestServer::control(std::string_view method, std::string_view target,
                                   const std::string* body) {
  std::unique_ptr<CURL, CurlDeleter> curl(curl_easy_init());
  if (!curl) fail("curl_easy_init failed");
  const std::string address_url = "http://" + address("http") + std::string(target);
  const std::string verb(method);
  std::string response;
  std::unique_ptr<curl_slist, SlistDeleter> headers(
      curl_slist_append(nullptr, "Content-Type: application/json"));
  CURL* h = curl.get();
  curl_easy_setopt(h, CURLOPT_URL, address_url.c_str());
  curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, verb.c_str());
  curl_easy_setopt(h, CURLOPT_PROXY, "");  // never an ambient proxy
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 10000L);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, append_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &response);
  if (body != nullptr) {
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body->c_str());
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, static_cast<long>(body->size()));
  }
  const CURLcode code = curl_easy_perform(h);
  if (code != CURLE_OK) fail(verb + " " + std::string(target) + ": " + curl_easy_strerror(code));
  long status = 0;
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
  if (status != 200) fail(verb + " " + std::string(target) + ": " + std::to_string(status) + " " + response);
  return nlohmann::json::parse(response);
}

}  // namespace humus::test
