// The fault catalogue's certificate cases (tests/fault-coverage.md) against `openssl s_server` on loopback,
// with certificates made at test time by tests/support/make_bad_certs.sh (the openssl CLI). Each bad
// certificate is HUMUS_E_TLS: one attempt, never retried, a breaker failure (docs/transport.md §10.3,
// docs/retries.md §5.3). Each case has a control that succeeds against the same kind of server, so a broken
// setup cannot pass as a refusal. Without the openssl CLI the tests skip, saying so.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <openssl/ssl.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "client/client.h"
#include "support/raw_peer.h"

namespace humus::client {
namespace {
namespace HUMUS_UNITY_ID {

bool have_openssl() { return std::system("command -v openssl >/dev/null 2>&1") == 0; }

std::string certs_dir() { return std::string(HUMUS_TEST_CERTS_DIR) + "/bad"; }

// `openssl s_server -www` on 127.0.0.1, an ephemeral port read from its "ACCEPT" line; killed when destroyed.
class SServer {
 public:
  explicit SServer(const std::vector<std::string>& extra) {
    int out[2];
    if (pipe(out) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      dup2(out[1], STDOUT_FILENO);
      close(out[0]);
      close(out[1]);
      FILE* null = std::freopen("/dev/null", "r", stdin);
      (void)null;
      if (chdir(certs_dir().c_str()) != 0) _exit(126);
      std::vector<std::string> args = {"openssl", "s_server", "-accept", "127.0.0.1:0", "-www"};
      args.insert(args.end(), extra.begin(), extra.end());
      std::vector<char*> argv;
      for (std::string& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execvp("openssl", argv.data());
      _exit(127);
    }
    close(out[1]);
    FILE* in = fdopen(out[0], "r");
    char line[512];
    while (in != nullptr && std::fgets(line, sizeof line, in) != nullptr) {
      const std::string l(line);
      if (l.rfind("ACCEPT ", 0) == 0) {
        port_ = std::atoi(l.substr(l.rfind(':') + 1).c_str());
        break;
      }
    }
    out_ = in;  // kept open: s_server writes to it as it serves
  }
  ~SServer() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      waitpid(pid_, nullptr, 0);
    }
    if (out_ != nullptr) std::fclose(out_);
  }
  SServer(const SServer&) = delete;
  SServer& operator=(const SServer&) = delete;

  int port() const { return port_; }

 private:
  pid_t pid_ = -1;
  int port_ = 0;
  FILE* out_ = nullptr;
};

class TlsPeerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!have_openssl()) return;
    const std::string cmd = "bash " + std::string(HUMUS_SOURCE_DIR) + "/tests/support/make_bad_certs.sh '" +
                            certs_dir() + "' >/dev/null 2>&1";
    made_ = std::system(cmd.c_str()) == 0;
  }

  void SetUp() override {
    if (!have_openssl()) GTEST_SKIP() << "the openssl CLI is not on PATH: certificate fault cases not run";
    ASSERT_TRUE(made_) << "tests/support/make_bad_certs.sh failed";
  }

  // One GET to an s_server presenting `cert` (and whatever else `extra` asks), as `host` (resolved to
  // 127.0.0.1) or the IP literal, trusting `ca` only.
  CallResult call(const std::string& cert, std::vector<std::string> extra = {}, const std::string& host = "",
                  const std::string& ca = "root", settings::TlsSettings tls = {}) {
    std::vector<std::string> args = {"-cert", cert + ".pem", "-key", cert + ".key"};
    args.insert(args.end(), extra.begin(), extra.end());
    SServer server(args);
    EXPECT_GT(server.port(), 0) << "openssl s_server did not start";
    const std::string port = std::to_string(server.port());
    RuntimeOptions o;
    if (!host.empty()) o.resolve.emplace_back(host + ":" + port, "127.0.0.1:" + port);
    Runtime runtime(o);
    settings::Settings s;
    s.base_url = "https://" + (host.empty() ? std::string("127.0.0.1") : host) + ":" + port;
    s.backoff_base = std::chrono::milliseconds(1);
    s.backoff_max = std::chrono::milliseconds(2);
    s.tls = tls;
    s.tls->ca_file = certs_dir() + "/" + ca + ".pem";
    Result<std::unique_ptr<Client>> c = Client::create(runtime, s);
    EXPECT_TRUE(c.ok()) << c.status().message();
    if (!c.ok()) return CallResult{};
    Request r;
    r.url = s.base_url + "/";
    CallResult out = (*c)->execute(r);
    failures_ = (*c)->breaker().counts().failures;
    return out;
  }

  void expect_tls_refusal(const CallResult& out, const std::string& what, Code code = Code::kTls) {
    ASSERT_FALSE(out.ok()) << what << " was accepted: " << out.response->status;
    EXPECT_EQ(out.error.code(), code) << what << ": " << out.error.message();
    EXPECT_EQ(out.attempts, 1) << what << ": a certificate failure is not retried";
    EXPECT_EQ(failures_, 1u) << what << ": a certificate failure is a breaker failure";
  }

  static void expect_ok(const CallResult& out, const std::string& what) {
    ASSERT_TRUE(out.ok()) << what << " (the control) failed: " << out.error.message();
    EXPECT_EQ(out.response->status, 200) << what;
  }

  static inline bool made_ = false;
  uint64_t failures_ = 0;
};

// F35, S2: an IP literal against an IP SAN is accepted (the control of every case below).
TEST_F(TlsPeerTest, AnIpLiteralMatchesAnIpSubjectAltName) { expect_ok(call("good"), "IP SAN"); }

// F14, S1, S2
TEST_F(TlsPeerTest, AHostnameMismatchIsRefused) {
  expect_ok(call("wronghost", {}, "wrong.host.test"), "the name the certificate carries");
  expect_tls_refusal(call("wronghost"), "a certificate for another name");
}

// F15, S1
TEST_F(TlsPeerTest, AnExpiredCertificateIsRefused) {
  expect_tls_refusal(call("expired"), "an expired certificate");
}

// F16, S1
TEST_F(TlsPeerTest, ANotYetValidCertificateIsRefused) {
  expect_tls_refusal(call("notyet"), "a certificate not yet valid");
}

// F18, S1, S4: the CA given replaces every other root; a leaf from another root is refused.
TEST_F(TlsPeerTest, ALeafFromAnotherRootIsRefused) {
  expect_ok(call("fromrogue", {}, "", "rogue"), "the rogue root trusted");
  expect_tls_refusal(call("fromrogue"), "a leaf from an untrusted root");
}

// F19, S1: a server that leaves out its intermediate is refused; sending the chain fixes it.
TEST_F(TlsPeerTest, AMissingIntermediateIsRefused) {
  expect_ok(call("chained", {"-cert_chain", "inter.pem"}), "the full chain");
  expect_tls_refusal(call("chained"), "a leaf without its intermediate");
}

// F20, S1: a leaf issued by another leaf (CA:FALSE) is refused.
TEST_F(TlsPeerTest, AnIssuerThatIsNotACaIsRefused) {
  expect_tls_refusal(call("notca", {"-cert_chain", "good.pem"}), "a leaf issued by a leaf");
}

// F21, S1: a certificate for client authentication only cannot serve.
TEST_F(TlsPeerTest, AWrongExtendedKeyUsageIsRefused) {
  expect_tls_refusal(call("badeku"), "a clientAuth-only certificate");
}

// F22, S1, S3: an RSA-1024 leaf, even from a server that lowers its own security level.
TEST_F(TlsPeerTest, AWeakKeyIsRefused) {
  expect_tls_refusal(call("weak", {"-cipher", "DEFAULT@SECLEVEL=0"}), "an RSA-1024 certificate");
}

// F28, F29, S5: a server requiring a client certificate accepts one from its CA and refuses one from another.
TEST_F(TlsPeerTest, AClientCertificateFromAnotherCaIsRefused) {
  const std::vector<std::string> require = {"-Verify", "1", "-CAfile", "root.pem", "-verify_return_error"};
  settings::TlsSettings good;
  good.cert_file = certs_dir() + "/client.pem";
  good.key_file = certs_dir() + "/client.key";
  expect_ok(call("good", require, "", "root", good), "a client certificate from the server's CA");
  settings::TlsSettings rogue;
  rogue.cert_file = certs_dir() + "/rogueclient.pem";
  rogue.key_file = certs_dir() + "/rogueclient.key";
  expect_tls_refusal(call("good", require, "", "root", rogue), "a client certificate from another CA",
                     Code::kTlsClientCert);
}

// S5: a client certificate and a key that do not belong together are refused when the client is built.
TEST_F(TlsPeerTest, AClientCertificateWithAnotherKeyIsRefusedAtBuild) {
  Runtime runtime{RuntimeOptions{}};
  settings::Settings s;
  s.base_url = "https://127.0.0.1:1";
  s.tls.emplace();
  s.tls->ca_file = certs_dir() + "/root.pem";
  s.tls->cert_file = certs_dir() + "/client.pem";
  s.tls->key_file = certs_dir() + "/rogueclient.key";
  Result<std::unique_ptr<Client>> c = Client::create(runtime, s);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), Code::kConfig);
  EXPECT_NE(c.status().message().find("does not match"), std::string::npos) << c.status().message();
}

// A server TLS context with the good certificate, choosing HTTP/1.1 by ALPN; null if it cannot be made.
using TlsServerContext = std::unique_ptr<SSL_CTX, void (*)(SSL_CTX*)>;
TlsServerContext http11_server_context() {
  TlsServerContext ctx(SSL_CTX_new(TLS_server_method()), SSL_CTX_free);
  if (SSL_CTX_use_certificate_chain_file(ctx.get(), (certs_dir() + "/good.pem").c_str()) != 1 ||
      SSL_CTX_use_PrivateKey_file(ctx.get(), (certs_dir() + "/good.key").c_str(), SSL_FILETYPE_PEM) != 1) {
    return TlsServerContext(nullptr, SSL_CTX_free);
  }
  SSL_CTX_set_alpn_select_cb(
      ctx.get(),
      [](SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* in, unsigned int inlen,
         void*) {
        static const unsigned char kHttp11[] = "\x08http/1.1";
        unsigned char* selected = nullptr;
        if (SSL_select_next_proto(&selected, outlen, kHttp11, sizeof kHttp11 - 1, in, inlen) !=
            OPENSSL_NPN_NEGOTIATED) {
          return SSL_TLSEXT_ERR_NOACK;
        }
        *out = selected;
        return SSL_TLSEXT_ERR_OK;
      },
      nullptr);
  return ctx;
}

// Reads a request's head from `ssl` (its end, or the connection's).
void read_request_head(SSL* ssl) {
  std::string got;
  char buf[4096];
  while (got.find("\r\n\r\n") == std::string::npos) {
    const int n = SSL_read(ssl, buf, sizeof buf);
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
  }
}

// A close-delimited HTTP/1.0 body over TLS ended by a bare FIN, without close_notify, may have been cut
// by anyone on the path: a dropped connection (retried for a GET), never a complete answer. The control, the
// same peer sending close_notify, is a success. (libcurl 7.88 sets SSL_OP_IGNORE_UNEXPECTED_EOF, which took
// the bare EOF as the body's end; the client clears it, docs/transport.md §10.7.)
// F32
TEST_F(TlsPeerTest, ACloseDelimitedBodyEndedWithoutCloseNotifyIsConnectionLost) {
  const TlsServerContext ctx = http11_server_context();
  ASSERT_NE(ctx, nullptr);
  for (bool notify : {true, false}) {
    humus::test::RawPeer peer([&ctx, notify](humus::test::RawConnection& c) {
      SSL* ssl = SSL_new(ctx.get());
      SSL_set_fd(ssl, c.fd());
      if (SSL_accept(ssl) == 1) {
        read_request_head(ssl);
        const std::string reply =
            "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\n" + std::string(20000, 'b');
        SSL_write(ssl, reply.data(), static_cast<int>(reply.size()));
        if (notify) SSL_shutdown(ssl);
      }
      SSL_free(ssl);  // without SSL_shutdown no close_notify goes out: the peer's FIN follows the body
    });
    Runtime runtime{RuntimeOptions{}};
    settings::Settings s;
    s.base_url = "https://127.0.0.1:" + std::to_string(peer.port());
    s.backoff_base = std::chrono::milliseconds(1);
    s.backoff_max = std::chrono::milliseconds(2);
    s.tls.emplace();
    s.tls->ca_file = certs_dir() + "/root.pem";
    Result<std::unique_ptr<Client>> c = Client::create(runtime, s);
    ASSERT_TRUE(c.ok()) << c.status().message();
    Request r;
    r.url = s.base_url + "/";
    CallResult out = (*c)->execute(r);
    if (notify) {
      ASSERT_TRUE(out.ok()) << "with close_notify (the control): " << out.error.message();
      EXPECT_EQ(out.response->body.size(), 20000u);
    } else {
      ASSERT_FALSE(out.ok()) << "a body ended without close_notify was taken as complete ("
                             << out.response->body.size() << " bytes)";
      EXPECT_EQ(out.error.code(), Code::kConnectionLost) << out.error.message();
      EXPECT_EQ(out.attempts, 3);
      EXPECT_EQ(peer.connections(), 3);
    }
  }
}

// A chunked body over TLS that libcurl fails to read is told apart by the connection, not by libcurl's words
// (curl_errors.cc, connection_cut): a malformed chunk size on a connection the peer keeps open is the peer
// breaking HTTP, one attempt; cut by a bare FIN (no close_notify) it is a dropped connection, retried for a
// GET (libcurl 7.88 reports that cut as a cut already; other versions as a failed read, which the peer's
// end of the connection, seen when libcurl closes it, makes a cut).
// F32, F46
TEST_F(TlsPeerTest, AChunkedBodyCutIsLostAndAMalformedOneIsAProtocolErrorOverTls) {
  const TlsServerContext ctx = http11_server_context();
  ASSERT_NE(ctx, nullptr);
  const std::string head = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
  for (bool cut : {true, false}) {
    SCOPED_TRACE(cut ? "cut" : "malformed");
    humus::test::RawPeer peer([&ctx, &head, cut](humus::test::RawConnection& c) {
      SSL* ssl = SSL_new(ctx.get());
      SSL_set_fd(ssl, c.fd());
      if (SSL_accept(ssl) == 1) {
        read_request_head(ssl);
        const std::string reply = head + (cut ? "5\r\nhello\r\n" : "zz\r\nhello\r\n");
        SSL_write(ssl, reply.data(), static_cast<int>(reply.size()));
        if (!cut) {
          while (!c.read_some(10'000).empty()) {  // open until the client leaves (its close_notify, its FIN)
          }
        }
      }
      SSL_free(ssl);  // no close_notify: the FIN follows
    });
    Runtime runtime{RuntimeOptions{}};
    settings::Settings s;
    s.base_url = "https://127.0.0.1:" + std::to_string(peer.port());
    s.backoff_base = std::chrono::milliseconds(1);
    s.backoff_max = std::chrono::milliseconds(2);
    s.tls.emplace();
    s.tls->ca_file = certs_dir() + "/root.pem";
    Result<std::unique_ptr<Client>> c = Client::create(runtime, s);
    ASSERT_TRUE(c.ok()) << c.status().message();
    Request r;
    r.url = s.base_url + "/";
    CallResult out = (*c)->execute(r);
    ASSERT_FALSE(out.ok()) << "a broken chunked body was taken as an answer";
    EXPECT_EQ(out.error.code(), cut ? Code::kConnectionLost : Code::kProtocol) << out.error.message();
    EXPECT_EQ(out.attempts, cut ? 3 : 1);
    EXPECT_EQ(peer.connections(), out.attempts);
  }
}

}  // namespace HUMUS_UNITY_ID
}  // namespace
}  // namespace humus::client
