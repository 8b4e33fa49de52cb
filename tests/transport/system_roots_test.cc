// The system's trust roots for a client given no CA (src/transport/system_roots.h): the bundle libcurl was
// built with when it exists here, else the first of the distributions' places, SSL_CERT_FILE above both.
#include "transport/system_roots.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

namespace humus::transport {
namespace {
namespace HUMUS_UNITY_ID {

namespace fs = std::filesystem;

class SystemRootsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/humus-roots-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string file(const std::string& name) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path) << "-----BEGIN CERTIFICATE-----\n";
    return path;
  }
  std::string missing(const std::string& name) const { return (dir_ / name).string(); }

  fs::path dir_;
};

TEST_F(SystemRootsTest, LibcurlsOwnBundleStandsWhereItExists) {
  const std::string builtin = file("builtin.pem"), other = file("other.pem");
  const std::vector<std::string_view> places = {other};
  EXPECT_EQ(pick_ca_bundle(nullptr, builtin, places), "");
}

TEST_F(SystemRootsTest, AMissingBuiltinBundleFallsBackToTheFirstReadablePlace) {
  const std::string second = file("second.pem"), third = file("third.pem");
  const std::string first = missing("first.pem");
  const std::vector<std::string_view> places = {first, second, third};
  EXPECT_EQ(pick_ca_bundle(nullptr, missing("builtin.pem"), places), second);
}

TEST_F(SystemRootsTest, NoBundleAnywhereLeavesLibcurlsDefault) {
  const std::string first = missing("first.pem");
  const std::vector<std::string_view> places = {first};
  EXPECT_EQ(pick_ca_bundle(nullptr, missing("builtin.pem"), places), "");
}

TEST_F(SystemRootsTest, AnUnknownBuiltinIsLeftAlone) {
  // An older libcurl that does not say where its bundle is: it keeps its own default.
  const std::string other = file("other.pem");
  const std::vector<std::string_view> places = {other};
  EXPECT_EQ(pick_ca_bundle(nullptr, "", places), "");
}

TEST_F(SystemRootsTest, SslCertFileWinsEvenWhenItIsMissing) {
  // The operator's choice is followed: a missing file then fails verification instead of trusting others.
  const std::string builtin = file("builtin.pem"), env = missing("mine.pem");
  const std::vector<std::string_view> places = {builtin};
  EXPECT_EQ(pick_ca_bundle(env.c_str(), builtin, places), env);
  EXPECT_EQ(pick_ca_bundle("", builtin, places), "") << "an empty variable is unset";
}

TEST(SystemRoots, OnThisMachineTheChoiceIsAReadableFileOrLibcurlsOwn) {
  const std::string& bundle = system_ca_bundle();
  if (!bundle.empty()) {
    EXPECT_EQ(::access(bundle.c_str(), R_OK), 0) << bundle;
  }
  EXPECT_EQ(&bundle, &system_ca_bundle()) << "computed once";
}

}  // namespace HUMUS_UNITY_ID
}  // namespace
}  // namespace humus::transport
