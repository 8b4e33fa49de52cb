// S21: the client's own copies of a private key are wiped before their memory goes back to the heap. A binary
// of its own (tests/CMakeLists.txt), because it replaces the global operator new and delete: while armed, every
// block freed through operator delete is scanned for a slice of the key before it is freed.
#include <arpa/inet.h>
#include <malloc.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <new>
#include <string>

#include "client/client.h"

namespace {

std::atomic<bool> armed{false};
std::atomic<int> found{0};
char marker[64];
size_t marker_size = 0;

void scan_and_free(void* p) noexcept {
  if (p != nullptr && armed.load(std::memory_order_relaxed) &&
      memmem(p, malloc_usable_size(p), marker, marker_size) != nullptr) {
    found.fetch_add(1, std::memory_order_relaxed);
  }
  std::free(p);
}

void* allocate(size_t n) {
  void* p = std::malloc(n == 0 ? 1 : n);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

}  // namespace

void* operator new(size_t n) { return allocate(n); }
void* operator new[](size_t n) { return allocate(n); }
void* operator new(size_t n, const std::nothrow_t&) noexcept { return std::malloc(n == 0 ? 1 : n); }
void* operator new[](size_t n, const std::nothrow_t&) noexcept { return std::malloc(n == 0 ? 1 : n); }
void operator delete(void* p) noexcept { scan_and_free(p); }
void operator delete[](void* p) noexcept { scan_and_free(p); }
void operator delete(void* p, size_t) noexcept { scan_and_free(p); }
void operator delete[](void* p, size_t) noexcept { scan_and_free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { scan_and_free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { scan_and_free(p); }

namespace humus::client {
namespace {

class SecretWipeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::system("command -v openssl >/dev/null 2>&1") != 0) GTEST_SKIP() << "the openssl CLI is not on PATH";
    char tmpl[] = "/tmp/humus-s21-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    const std::string cmd = "cd '" + dir_ +
                            "' && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "
                            "client.key -out client.pem -days 1 -subj /CN=s21 >/dev/null 2>&1";
    ASSERT_EQ(std::system(cmd.c_str()), 0);
    std::ifstream key(dir_ + "/client.key");
    std::string line, base64;
    while (std::getline(key, line)) {
      if (line.rfind("-----", 0) != 0) base64 += line;
    }
    ASSERT_GE(base64.size(), 48u);
    marker_size = 24;  // from the middle of the key's base64: in no other file or message
    std::memcpy(marker, base64.data() + 20, marker_size);
  }
  void TearDown() override {
    if (!dir_.empty()) std::system(("rm -rf '" + dir_ + "'").c_str());
  }

  std::string dir_;
};

// The scan sees a freed copy of the key (the control), and sees none once a client that read, checked and
// used the key is gone.
// S21
TEST_F(SecretWipeTest, S21NoFreedBlockHoldsThePrivateKeyOnceTheClientIsGone) {
  armed = true;
  delete new std::string(std::string(marker, marker_size) + std::string(64, 'x'));
  armed = false;
  ASSERT_GE(found.exchange(0), 1) << "the scan does not see a freed copy: the test would test nothing";

  armed = true;
  {
    // A listener that never accepts: the kernel completes the TCP handshake, libcurl loads the key and sends
    // its ClientHello, and the handshake times out at the connect timeout.
    const int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    ASSERT_EQ(listen(listener, 4), 0);
    ASSERT_EQ(getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len), 0);
    Runtime runtime{RuntimeOptions{}};
    settings::Settings s;
    s.base_url = "https://127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
    s.max_attempts = 1;
    s.connect_timeout = std::chrono::milliseconds(200);
    s.tls.emplace();
    s.tls->ca_file = dir_ + "/client.pem";
    s.tls->cert_file = dir_ + "/client.pem";
    s.tls->key_file = dir_ + "/client.key";
    Result<std::unique_ptr<Client>> c = Client::create(runtime, s);
    ASSERT_TRUE(c.ok()) << c.status().message();
    std::unique_ptr<Client> client = std::move(c).value();
    Request r;
    r.url = s.base_url + "/";
    CallResult out = client->execute(r);
    EXPECT_FALSE(out.ok());
    client.reset();  // the client goes before the listener
    close(listener);
  }
  armed = false;
  EXPECT_EQ(found.load(), 0) << "a block holding the private key went back to the heap unwiped";
}

}  // namespace
}  // namespace humus::client
