// URLs, origins and redirects (docs/origin.md §2). Input: one byte choosing a client's origin, then a URL (or
// a Location reference). Properties:
//  - parse_url never crashes; what it reads is lowercase, with a port in range and a path;
//  - an origin's own spelling (Origin::to_string) parses back to that origin;
//  - the origin fast path (Client::spelled_as_origin) says yes only to URLs the full parse puts on the
//    client's origin, without user-info — otherwise a request could leave its origin unchecked;
//  - a redirect is followed only within the origin, never to a URL with user-info;
//  - a URL is_plain_http_url takes without the full parse is one the full parse accepts.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "client/client.h"
#include "client/redirect.h"
#include "client/runtime.h"
#include "fuzz_check.h"
#include "settings/settings.h"
#include "testing/mock_transport.h"
#include "transport/url.h"

namespace {

namespace transport = humus::transport;

constexpr const char* kOrigins[] = {"http://a.example", "https://a.example:8443", "http://[::1]:8080",
                                    "https://127.0.0.1"};

const std::vector<std::unique_ptr<humus::client::Client>>& clients() {
  static const auto* all = [] {
    auto* rt = new humus::client::Runtime(humus::client::RuntimeOptions{});
    rt->set_mock_handler([](const transport::WireRequest&) -> humus::Result<humus::testing::MockReply> {
      return humus::testing::MockReply{};
    });
    auto* out = new std::vector<std::unique_ptr<humus::client::Client>>;
    for (const char* origin : kOrigins) {
      humus::settings::Settings s;
      s.base_url = origin;
      auto c = humus::client::Client::create(*rt, std::move(s));
      if (!c.ok()) std::abort();
      out->push_back(std::move(c).value());
    }
    return out;
  }();
  return *all;
}

bool lowercase(const std::string& s) {
  for (const char c : s) {
    if (c >= 'A' && c <= 'Z') return false;
  }
  return true;
}

}  // namespace

// S25: the libFuzzer target `url`; its corpus replays as the ctest fuzz.url.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const humus::client::Client& client = *clients()[data[0] % std::size(kOrigins)];
  const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);

  humus::Result<transport::Url> url = transport::parse_url(text);
  if (url.ok()) {
    FUZZ_CHECK(lowercase(url->scheme) && lowercase(url->host), text.c_str());
    FUZZ_CHECK(url->port >= 0 && url->port <= 65535 && !url->path.empty(), text.c_str());
    const transport::Origin origin = transport::origin_of(*url);
    if (origin.port > 0) {
      const std::string spelled = origin.to_string();
      humus::Result<transport::Url> again = transport::parse_url(spelled);
      FUZZ_CHECK(again.ok(), spelled.c_str());
      FUZZ_CHECK(transport::origin_of(*again) == origin, spelled.c_str());
    }
  }

  // The plain spelling a request's URL is taken in without the full parse (humus_request_new) is one the
  // full parse accepts, as an http or https URL without user-info.
  if (transport::is_plain_http_url(text)) {
    FUZZ_CHECK(url.ok(), text.c_str());
    FUZZ_CHECK(url->scheme == "http" || url->scheme == "https", text.c_str());
    FUZZ_CHECK(!url->has_userinfo, text.c_str());
  }

  if (client.spelled_as_origin(text)) {
    FUZZ_CHECK(url.ok(), text.c_str());
    FUZZ_CHECK(!url->has_userinfo, text.c_str());
    FUZZ_CHECK(transport::origin_of(*url) == client.origin(), text.c_str());
  }

  // The same text as a Location answering a request on the client's origin.
  transport::WireRequest request;
  request.method = "POST";
  request.url = client.origin().to_string() + "/a/b?q=1";
  request.headers.add("Content-Type", "text/plain");
  request.body = std::make_shared<const std::string>("body");
  humus::client::Response response;
  response.headers.add("Location", text);
  for (const int status : {301, 303, 307}) {
    response.status = status;
    std::optional<transport::WireRequest> next =
        humus::client::follow_redirect(request, response, client.origin());
    if (!next) continue;
    humus::Result<transport::Url> target = transport::parse_url(next->url);
    FUZZ_CHECK(target.ok(), next->url.c_str());
    FUZZ_CHECK(!target->has_userinfo, next->url.c_str());
    FUZZ_CHECK(transport::origin_of(*target) == client.origin(), next->url.c_str());
    FUZZ_CHECK((next->method == "GET") == (status != 307), next->url.c_str());
    FUZZ_CHECK((next->body == nullptr) == (status != 307), next->url.c_str());
  }
  return 0;
}
