// What curl's output needs from a response, through the C ABI alone: the status line's reason phrase as the
// wire had it (bounded and made safe), every redirect hop's head, and headers left out of a request
// (humus_request_remove_header). Raw loopback peers for what the test server never sends; the test server
// for HTTP/1.1 and HTTP/2.
#include <gtest/gtest.h>

#include <cctype>
#include <cstring>
#include <string>
#include <vector>

#include "humus_http.h"
#include "support/raw_peer.h"
#include "support/test_server.h"

namespace {
namespace HUMUS_UNITY_ID {

using humus::test::RawConnection;
using humus::test::RawPeer;

struct Call {
  humus_runtime* rt = nullptr;
  humus_client* client = nullptr;
  humus_response* resp = nullptr;
  ~Call() {
    humus_response_free(resp);
    humus_client_free(client);
    humus_runtime_free(rt);
  }
};

// One GET of `url` on a client made of `settings_json`; `runtime_json` may be "".
humus_status get(Call& c, const std::string& settings_json, const std::string& url,
                 const std::string& runtime_json = "", humus_request** keep = nullptr) {
  const char* options = runtime_json.empty() ? nullptr : runtime_json.c_str();
  EXPECT_EQ(humus_runtime_new(options, runtime_json.size(), &c.rt, nullptr), HUMUS_OK);
  humus_settings* s = nullptr;
  EXPECT_EQ(humus_settings_from_json(settings_json.data(), settings_json.size(), &s, nullptr), HUMUS_OK);
  EXPECT_EQ(humus_client_new(c.rt, s, &c.client, nullptr), HUMUS_OK);
  humus_settings_free(s);
  humus_request* r = nullptr;
  EXPECT_EQ(humus_request_new("GET", url.c_str(), &r, nullptr), HUMUS_OK);
  humus_error* err = nullptr;
  const humus_status st = humus_client_do(c.client, r, &c.resp, &err);
  humus_error_free(err);
  if (keep != nullptr) {
    *keep = r;
  } else {
    humus_request_free(r);
  }
  return st;
}

std::string plain_settings(const RawPeer& peer, const std::string& more = "") {
  return R"({"base_url": "http://127.0.0.1:)" + std::to_string(peer.port()) + R"(", "max_attempts": 1)" + more + "}";
}

// Answers every request with `head` (a status line without its CRLF) and an empty body.
RawPeer::Handler answering(std::string head) {
  return [head = std::move(head)](RawConnection& c) {
    while (c.read_request()) c.write(head + "\r\nContent-Length: 0\r\n\r\n");
  };
}

TEST(ResponseReason, IsThePhraseAsSentACustomOneIncluded) {
  const std::pair<const char*, const char*> cases[] = {
      {"HTTP/1.1 200 OK", "OK"}, {"HTTP/1.1 404 Not Found", "Not Found"}, {"HTTP/1.1 299 Fine, Thanks", "Fine, Thanks"},
      {"HTTP/1.1 200 Not  Quite  OK", "Not  Quite  OK"}, {"HTTP/1.0 200 Old", "Old"}};
  for (const auto& [line, phrase] : cases) {
    RawPeer peer(answering(line));
    Call c;
    ASSERT_EQ(get(c, plain_settings(peer), peer.url("/r")), HUMUS_OK) << line;
    EXPECT_STREQ(humus_response_reason(c.resp), phrase) << line;
  }
}

// F136: a status line with an empty reason phrase, or none at all (no space after the code).
TEST(ResponseReason, F136AnEmptyOrMissingPhraseStaysEmpty) {
  for (const char* line : {"HTTP/1.1 200 ", "HTTP/1.1 200", "HTTP/1.1 204   "}) {
    RawPeer peer(answering(line));
    Call c;
    ASSERT_EQ(get(c, plain_settings(peer), peer.url("/r")), HUMUS_OK) << line;
    EXPECT_STREQ(humus_response_reason(c.resp), "") << line;
    EXPECT_GE(humus_response_status(c.resp), 200);
  }
}

// F135: a hostile peer's reason phrase: 60 KiB of every byte but LF (which ends the line) and NUL (which libcurl
// refuses in a head: a protocol error, tests/transport/wire_fault_test.cc) — control bytes, bare CRs, DEL, bytes
// past ASCII. The attempt succeeds; the phrase is cut to 256 bytes, every control byte a space, others as sent.
TEST(ResponseReason, F135AHostileLongBinaryPhraseIsCutAndMadeSafe) {
  std::string phrase;
  for (size_t i = 0; phrase.size() < 60 * 1024; ++i) {
    const auto b = static_cast<char>(i % 256);
    if (b != '\n' && b != '\0') phrase += b;
  }
  RawPeer peer(answering("HTTP/1.1 200 " + phrase));
  Call c;
  // The whole status line must fit the header block's limit for the attempt to be read at all.
  ASSERT_EQ(get(c, plain_settings(peer, R"(, "max_response_headers": 131072)"), peer.url("/r")), HUMUS_OK);
  const std::string got = humus_response_reason(c.resp);
  ASSERT_EQ(got.size(), 256u);
  for (size_t i = 0; i < got.size(); ++i) {
    const auto sent = static_cast<unsigned char>(phrase[i]);
    const bool control = sent < 0x20 || sent == 0x7f;
    EXPECT_EQ(got[i], control ? ' ' : phrase[i]) << "byte " << i;
  }
  EXPECT_EQ(humus_response_status(c.resp), 200);
  EXPECT_EQ(peer.requests(), 1);
}

TEST(ResponseReason, ABadHandleReadsAsEmpty) {
  EXPECT_STREQ(humus_response_reason(nullptr), "");
  EXPECT_STREQ(humus_response_redirect_reason(nullptr, 0), "");
  EXPECT_STREQ(humus_response_redirect_http_version(nullptr, 0), "");
  EXPECT_EQ(humus_response_redirect_header_count(nullptr, 0), 0u);
  const char* name = nullptr;
  const char* value = nullptr;
  EXPECT_EQ(humus_response_redirect_header_at(nullptr, 0, 0, &name, &value), HUMUS_E_MISUSE);
  EXPECT_EQ(humus_request_remove_header(nullptr, "Accept", nullptr), HUMUS_E_MISUSE);
}

class ResponseHeadServerTest : public humus::test::WithTestServer {
 protected:
  // The client for `listener` ("http" or "https", the latter HTTP/2 over TLS) and the URL of `path` on it.
  std::string settings(const std::string& listener, const std::string& more = "") {
    if (listener == "http") return R"({"base_url": ")" + server().url("http", "") + "\"" + more + "}";
    return R"({"base_url": "https://)" + server().host_port("https") + R"(", "tls": {"ca_file": ")" +
           server().ca_file() + "\"}" + more + "}";
  }
  std::string runtime(const std::string& listener) {
    if (listener == "http") return "";
    return R"({"resolve": {")" + server().host_port("https") + R"(": ")" + server().address("https") + R"("}})";
  }
  std::string url(const std::string& listener, const std::string& path) {
    return listener == "http" ? server().url("http", path) : "https://" + server().host_port("https") + path;
  }
};

// F137: every hop of a redirect chain keeps its head, bounded as a final response's, on HTTP/1.1 and HTTP/2.
TEST_F(ResponseHeadServerTest, F137EveryRedirectHopKeepsItsHead) {
  for (const std::string listener : {"http", "https"}) {
    server().script("/h1", nlohmann::json::parse(
                               R"([{"status": 301, "headers": [["Location", "/h2"], ["X-Hop", "one"]]}])"));
    server().script("/h2", nlohmann::json::parse(R"([{"status": 307, "headers": [["Location", "/h3"],)"
                                                 R"( ["X-Hop", "two"], ["X-Hop", "2b"]]}])"));
    server().script("/h3", nlohmann::json::parse(R"([{"status": 404, "body": "gone"}])"));
    Call c;
    ASSERT_EQ(get(c, settings(listener), url(listener, "/h1"), runtime(listener)), HUMUS_OK) << listener;
    const bool h2 = listener == "https";
    EXPECT_EQ(humus_response_status(c.resp), 404);
    EXPECT_STREQ(humus_response_reason(c.resp), h2 ? "" : "Not Found");
    ASSERT_EQ(humus_response_redirect_count(c.resp), 2u);
    const char* version = h2 ? "2" : "1.1";
    const std::vector<std::vector<std::pair<std::string, std::string>>> want = {
        {{"location", "/h2"}, {"x-hop", "one"}}, {{"location", "/h3"}, {"x-hop", "two"}, {"x-hop", "2b"}}};
    const char* reasons[] = {"Moved Permanently", "Temporary Redirect"};
    for (size_t i = 0; i < 2; ++i) {
      EXPECT_STREQ(humus_response_redirect_reason(c.resp, i), h2 ? "" : reasons[i]);
      EXPECT_STREQ(humus_response_redirect_http_version(c.resp, i), version);
      std::vector<std::pair<std::string, std::string>> got;
      for (size_t j = 0; j < humus_response_redirect_header_count(c.resp, i); ++j) {
        const char* name = nullptr;
        const char* value = nullptr;
        ASSERT_EQ(humus_response_redirect_header_at(c.resp, i, j, &name, &value), HUMUS_OK);
        std::string lower = name;
        for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
        if (lower != "content-length") got.emplace_back(lower, value);
      }
      EXPECT_EQ(got, want[i]) << listener << " hop " << i;
    }
    const char* name = nullptr;
    const char* value = nullptr;
    EXPECT_EQ(humus_response_redirect_header_at(c.resp, 2, 0, &name, &value), HUMUS_E_INVALID_ARGUMENT);
    EXPECT_EQ(humus_response_redirect_header_at(c.resp, 0, 99, &name, &value), HUMUS_E_INVALID_ARGUMENT);
    EXPECT_EQ(humus_response_redirect_header_at(c.resp, 0, 0, nullptr, &value), HUMUS_E_INVALID_ARGUMENT);
    EXPECT_STREQ(humus_response_redirect_reason(c.resp, 2), "");
    EXPECT_EQ(humus_response_redirect_header_count(c.resp, 2), 0u);
    server().reset();
  }
}

// The headers of the one recorded request to `path`, names lowercased.
nlohmann::json sent_headers(humus::test::TestServer& s, const std::string& path) {
  const std::vector<nlohmann::json> records = s.requests(path);
  EXPECT_EQ(records.size(), 1u);
  nlohmann::json out = nlohmann::json::object();
  if (records.empty()) return out;
  for (const auto& pair : records.front()["headers"]) out[pair[0].get<std::string>()] = pair[1];
  return out;
}

// F138: headers left out are not sent by anyone — the caller's, the settings', libcurl's own — on HTTP/1.1 and
// HTTP/2; an empty one is sent empty; one set after the removal is sent.
TEST_F(ResponseHeadServerTest, F138RemovedHeadersAreNotSentByAnyone) {
  for (const std::string listener : {"http", "https"}) {
    const std::string path = "/rm-" + listener;
    humus_runtime* rt = nullptr;
    const std::string rt_json = runtime(listener);
    ASSERT_EQ(humus_runtime_new(rt_json.empty() ? nullptr : rt_json.c_str(), rt_json.size(), &rt, nullptr), HUMUS_OK);
    const std::string s_json = settings(listener, R"(, "headers": {"X-Team": "pay", "X-Keep": "k"})");
    humus_settings* s = nullptr;
    ASSERT_EQ(humus_settings_from_json(s_json.data(), s_json.size(), &s, nullptr), HUMUS_OK);
    humus_client* client = nullptr;
    ASSERT_EQ(humus_client_new(rt, s, &client, nullptr), HUMUS_OK);
    humus_settings_free(s);
    humus_request* r = nullptr;
    ASSERT_EQ(humus_request_new("GET", url(listener, path).c_str(), &r, nullptr), HUMUS_OK);
    ASSERT_EQ(humus_request_set_header(r, "X-Mine", "gone", nullptr), HUMUS_OK);
    for (const char* name : {"accept", "User-Agent", "Accept-Encoding", "x-team", "X-Mine", "X-Never-Set"}) {
      EXPECT_EQ(humus_request_remove_header(r, name, nullptr), HUMUS_OK) << name;
    }
    ASSERT_EQ(humus_request_set_header(r, "X-Empty", "", nullptr), HUMUS_OK);
    ASSERT_EQ(humus_request_remove_header(r, "X-Back", nullptr), HUMUS_OK);
    ASSERT_EQ(humus_request_set_header(r, "X-Back", "again", nullptr), HUMUS_OK);
    for (const char* owned : {"Host", "Content-Length", "Transfer-Encoding", "bad name"}) {
      humus_error* err = nullptr;
      EXPECT_EQ(humus_request_remove_header(r, owned, &err), HUMUS_E_INVALID_ARGUMENT) << owned;
      humus_error_free(err);
    }
    humus_response* resp = nullptr;
    ASSERT_EQ(humus_client_do(client, r, &resp, nullptr), HUMUS_OK) << listener;
    const nlohmann::json got = sent_headers(server(), path);
    for (const char* name : {"accept", "user-agent", "accept-encoding", "x-team", "x-mine", "x-never-set"}) {
      EXPECT_FALSE(got.contains(name)) << listener << ": " << name << " was sent: " << got.dump();
    }
    EXPECT_EQ(got.value("x-empty", "absent"), "") << listener;
    EXPECT_EQ(got.value("x-back", ""), "again") << listener;
    EXPECT_EQ(got.value("x-keep", ""), "k") << listener;
    humus_response_free(resp);
    // Without the removals the same client sends libcurl's Accept and its own User-Agent and Accept-Encoding.
    humus_request* plain = nullptr;
    ASSERT_EQ(humus_request_new("GET", url(listener, path + "-plain").c_str(), &plain, nullptr), HUMUS_OK);
    ASSERT_EQ(humus_client_do(client, plain, &resp, nullptr), HUMUS_OK);
    const nlohmann::json usual = sent_headers(server(), path + "-plain");
    for (const char* name : {"accept", "user-agent", "accept-encoding", "x-team"}) {
      EXPECT_TRUE(usual.contains(name)) << listener << ": " << name << " missing: " << usual.dump();
    }
    humus_response_free(resp);
    humus_request_free(plain);
    humus_request_free(r);
    humus_client_free(client);
    humus_runtime_free(rt);
  }
}

}  // namespace HUMUS_UNITY_ID
}  // namespace
