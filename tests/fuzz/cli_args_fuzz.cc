// The humus-http command line (cli/args.cc). Input: the arguments, separated by NUL bytes. parse_args never
// crashes and what it accepts is in range: counts positive, durations that the settings read back.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "args.h"
#include "common/duration.h"
#include "fuzz_check.h"

namespace {

void check_duration(const std::optional<std::string>& d) {
  if (!d) return;
  humus::Result<humus::Duration> read = humus::parse_duration(*d);
  FUZZ_CHECK(read.ok(), d->c_str());
  FUZZ_CHECK(read->count() > 0, d->c_str());
}

}  // namespace

// S25: the libFuzzer target `cli_args`; its corpus replays as the ctest fuzz.cli_args.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> args;
  while (!in.empty()) {
    auto [arg, rest] = humus::fuzz::split_once(in, '\0');
    args.emplace_back(arg);
    in = rest;
  }
  humus::cli::Invocation inv;
  const std::optional<std::string> error = humus::cli::parse_args(args, inv);
  if (error) {
    FUZZ_CHECK(!error->empty(), "a refusal says why");
    return 0;
  }
  if (inv.command == humus::cli::Invocation::Command::kFetch) {
    const humus::cli::FetchOptions& f = inv.fetch;
    // The URL is the library's to judge (an empty one ends in curl's exit status 3, as curl does).
    FUZZ_CHECK(!f.retry || *f.retry >= 0, "retries >= 0");
    FUZZ_CHECK(f.repeat >= 1 && f.concurrency >= 1, "repeat and concurrency >= 1");
    check_duration(f.max_time);
    check_duration(f.connect_timeout);
    check_duration(f.attempt_timeout);
  } else if (inv.command == humus::cli::Invocation::Command::kDemo) {
    FUZZ_CHECK(inv.demo.duration_s >= 1 && inv.demo.rate >= 1, "demo duration and rate >= 1");
  }
  for (const std::string& a : args) (void)humus::cli::parse_duration(a);
  return 0;
}
