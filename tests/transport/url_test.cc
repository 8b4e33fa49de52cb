#include "transport/url.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>

namespace humus::transport {
namespace {
namespace HUMUS_UNITY_ID {

Url parsed(std::string_view text) {
  Result<Url> r = parse_url(text);
  EXPECT_TRUE(r.ok()) << text << ": " << r.status().message();
  return r.ok() ? *r : Url{};
}

TEST(ParseUrl, PartsAndDefaultPorts) {
  const Url u = parsed("https://payments.internal:8443/v1/charges?limit=10#frag");
  EXPECT_EQ(u.scheme, "https");
  EXPECT_EQ(u.host, "payments.internal");
  EXPECT_EQ(u.port, 8443);
  EXPECT_EQ(u.path, "/v1/charges");
  EXPECT_EQ(u.query, "limit=10");
  EXPECT_FALSE(u.has_userinfo);

  EXPECT_EQ(parsed("https://payments").port, 443);
  EXPECT_EQ(parsed("http://payments").port, 80);
  EXPECT_EQ(parsed("http://payments").path, "/");
  EXPECT_EQ(parsed("http://payments").query, "");
  EXPECT_EQ(parsed("http://payments:/x").port, 80);
}

TEST(ParseUrl, SchemeAndHostAreLowercased) {
  const Url u = parsed("HTTPS://PAYMENTS.Example:443/Path");
  EXPECT_EQ(u.scheme, "https");
  EXPECT_EQ(u.host, "payments.example");
  EXPECT_EQ(u.path, "/Path");  // paths are case-sensitive
}

TEST(ParseUrl, Ipv6) {
  const Url u = parsed("http://[::1]:8080/x");
  EXPECT_EQ(u.host, "::1");
  EXPECT_EQ(u.port, 8080);
  EXPECT_EQ(origin_of(u).to_string(), "http://[::1]:8080");
  EXPECT_EQ(parsed("https://[FE80::A]/").host, "fe80::a");
  const Url zoned = parsed("http://[fe80::1%25eth0]/");
  EXPECT_EQ(zoned.host, "fe80::1%eth0");
  EXPECT_EQ(origin_of(zoned).to_string(), "http://[fe80::1%25eth0]:80");
  EXPECT_FALSE(parse_url("http://[::1/").ok());
}

// F111, S10
TEST(ParseUrl, UserInfoIsDetectedButNotKept) {
  for (const char* url : {"https://user:secret@payments/", "https://user@payments/", "https://@payments/",
                          "https://:secret@payments/"}) {
    const Url u = parsed(url);
    EXPECT_TRUE(u.has_userinfo) << url;
    EXPECT_EQ(u.host, "payments") << url;
  }
}

TEST(ParseUrl, Refused) {
  for (const char* bad : {"", "/relative/path", "payments:8443", "payments", "http:/host", "http:///path",
                          "http://", "http://:80/", "http://host:0/", "http://host:65536/", "http://host:-1/",
                          "http://ho st/", "http://host/a b", " http://host/", "://host", "1http://host"}) {
    EXPECT_FALSE(parse_url(bad).ok()) << bad;
  }
  EXPECT_FALSE(parse_url(std::string_view("http://host\0.evil/", 18)).ok());
  EXPECT_EQ(parse_url("/relative").status().code(), Code::kInvalidArgument);
}

// S10
TEST(ParseUrl, MessageNeverRepeatsTheUrl) {
  const Result<Url> r = parse_url("http://user:hunter2@ho st/");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message().find("hunter2"), std::string::npos) << r.status().message();
}

TEST(ParseUrl, OtherSchemesParseForTheCallerToRefuse) {
  const Url ftp = parsed("ftp://files.example/x");
  EXPECT_EQ(ftp.scheme, "ftp");
  EXPECT_EQ(ftp.port, 21);
  const Url custom = parsed("foo://x/");
  EXPECT_EQ(custom.scheme, "foo");
  EXPECT_EQ(custom.port, 0);  // no default known
}

TEST(Origin, DefaultPortAndCaseMakeOneOrigin) {
  // docs/origin.md §2: https://payments and https://PAYMENTS:443 are one origin.
  const Origin a = origin_of(parsed("https://payments"));
  const Origin b = origin_of(parsed("https://PAYMENTS:443/other/path?q=1"));
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.to_string(), "https://payments:443");
  EXPECT_NE(a, origin_of(parsed("http://payments")));
  EXPECT_NE(a, origin_of(parsed("https://payments:8443")));
  EXPECT_NE(a, origin_of(parsed("https://ledger")));
  EXPECT_EQ(origin_of(parsed("https://payments:8443")).to_string(), "https://payments:8443");
}

// Found by tests/fuzz (url): libcurl decodes a host's percent-encoding, so the origin's spelling of
// "http://.EX%25AA.E:80/", "http://.ex%aa.e:80", parsed again was another host (byte 0xAA); "0%7f.1" held a
// DEL; "0x%651" decoded to "0xe1", which parsed again is 0.0.0.225. A decoded host must spell itself; zones
// still work.
TEST(ParseUrl, AHostThatDoesNotSpellItselfIsRefused) {
  EXPECT_FALSE(parse_url("http://.EX%25AA.E:80/").ok());
  EXPECT_FALSE(parse_url("http://a%2541/").ok());
  EXPECT_FALSE(parse_url("h://[fe80::12%5%th0]:8080/").ok());  // the zone "5%th0"
  EXPECT_FALSE(parse_url("https://0%7f.1/").ok());  // a DEL once decoded
  EXPECT_FALSE(parse_url("http://a%20b/").ok());
  // "0x%651" decodes to "0xe1", which libcurl and the resolver read as 0.0.0.225 (a number spelled in hex).
  EXPECT_FALSE(parse_url("https://0x%651/").ok());
  EXPECT_FALSE(parse_url("http://0%2e1/").ok());  // "0.1", read as 0.0.0.1
  EXPECT_EQ(parsed("http://a%2db.example/").host, "a-b.example");
  EXPECT_EQ(parsed("http://0xe1/").host, "0.0.0.225");  // not encoded: libcurl's own reading stands
  EXPECT_EQ(parsed("http://a-b_c~d.example:8080/").host, "a-b_c~d.example");
  EXPECT_EQ(parsed("http://[fe80::1%25eth0]:8080/").host, "fe80::1%eth0");
  const Origin o = origin_of(parsed("http://[fe80::1%25eth0]:8080/"));
  EXPECT_EQ(origin_of(parsed(o.to_string())), o);
}

// humus_request_new takes a URL spelled plainly without libcurl's parse: each of these the full parse
// accepts, and anything else, valid or not, goes to the full parse.
TEST(PlainHttpUrl, OnlyThePlainestSpellingsSkipTheFullParse) {
  for (const char* plain :
       {"http://a", "https://payments.internal:8443/v1/x?q=1#f", "http://127.0.0.1:65535/",
        "http://A-B.example?q", "https://h/%zz/\xc3\xa9", "http://0x7f.1/", "http://-a/", "http://a..b/",
        "http://./", "http://1.2.3.4.5/", "http://99999999999999/"}) {
    EXPECT_TRUE(is_plain_http_url(plain)) << plain;
    EXPECT_TRUE(parse_url(plain).ok()) << plain;
  }
  for (const char* other : {"HTTP://a/", "ftp://a/", "http://", "http://:80/", "http://a:/", "http://a:0/",
                            "http://a:080/", "http://a:65536/", "http://a:1234567/", "http://user@a/",
                            "http://a%41/", "http://[::1]/", "http://a b/", "http://a/b c", "http://a/b\\c",
                            "http://a/\x7f", "http://a\\b/", "http://a_b/", "http:/a/"}) {
    EXPECT_FALSE(is_plain_http_url(other)) << other;
  }
  EXPECT_FALSE(is_plain_http_url("http://a/" + std::string(9000, 'x')));  // left to libcurl's own limit
}

// S25
TEST(ParseUrl, TruncatedPrefixesNeverCrash) {
  const std::string url = "https://user:pw@[fe80::1%25eth0]:8443/a/b?c=d&e=f#g";
  for (size_t n = 0; n <= url.size(); ++n) (void)parse_url(std::string_view(url).substr(0, n));
}

// A redirect's Location (docs/origin.md §2), resolved by the same parser as every other URL.
TEST(ResolveReference, ResolvesAsRfc3986Says) {
  const std::string base = "https://payments:8443/v1/orders/7?q=1";
  const std::pair<const char*, const char*> cases[] = {
      {"/v2/x", "https://payments:8443/v2/x"},
      {"next", "https://payments:8443/v1/orders/next"},
      {"../items?a=b", "https://payments:8443/v1/items?a=b"},
      {"?page=2", "https://payments:8443/v1/orders/7?page=2"},
      {"//other/x", "https://other/x"},
      {"http://elsewhere:81/y", "http://elsewhere:81/y"},
  };
  for (const auto& [reference, want] : cases) {
    Result<std::string> got = resolve_reference(base, reference);
    ASSERT_TRUE(got.ok()) << reference << ": " << got.status().message();
    EXPECT_EQ(*got, want) << reference;
  }
}

TEST(ResolveReference, AMalformedLocationIsAProtocolError) {
  const Result<std::string> got = resolve_reference("https://payments/", "http://[::1/");
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), Code::kProtocol);
  EXPECT_EQ(got.status().message(), "malformed Location \"http://[::1/\"");
}

}  // namespace HUMUS_UNITY_ID
}  // namespace
}  // namespace humus::transport
