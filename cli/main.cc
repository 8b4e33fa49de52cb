// humus-http: a resilient HTTP client on the command line (curl's spellings where they exist), and a
// self-contained demo of the client riding out an outage. Uses libhumus_http through its C ABI only.

#include <humus_http.h>

#include <csignal>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "args.h"
#include "demo/demo.h"
#include "exit_codes.h"
#include "fetch.h"
#include "replay.h"
#include "shared_cmd.h"

namespace {

// humus-http --version: the program, then one line per library it runs with and the features of the libcurl
// loaded (humus_version_info), as curl --version does, so a bug or security report says what really ran.
int print_version() {
  std::printf("humus-http %s (libhumus_http %s)\n", HUMUS_VERSION_STRING, humus_version());
  char* out = nullptr;
  size_t len = 0;
  humus_error* err = nullptr;
  if (humus_version_info(&out, &len, &err) != HUMUS_OK) {
    std::fprintf(stderr, "humus-http: %s\n", humus_error_message(err));
    humus_error_free(err);
    return humus::cli::exit_code::kFailure;
  }
  // ordered_json keeps the report's order: the library first, then libcurl and what it links.
  const nlohmann::ordered_json info = nlohmann::ordered_json::parse(std::string(out, len), nullptr, false);
  humus_string_free(out);
  if (!info.is_object()) return humus::cli::exit_code::kFailure;
  std::string features;
  for (const auto& [name, value] : info.items()) {
    if (name == "humus_http") continue;
    if (name == "features" && value.is_array()) {
      for (const auto& f : value) features += " " + f.get<std::string>();
    } else if (value.is_string()) {
      std::printf("%s %s\n", name.c_str(), value.get<std::string>().c_str());
    }
  }
  std::printf("features:%s\n", features.c_str());
  return humus::cli::exit_code::kOk;
}

}  // namespace

int main(int argc, char** argv) {
  using humus::cli::Invocation;
  // A closed stdout (| head) is a write error reported as exit 23, as curl does, not a silent death.
  (void)std::signal(SIGPIPE, SIG_IGN);
  const std::vector<std::string> args(argv + 1, argv + argc);
  // replay has flags of its own and runs no request of the command line: it parses them itself.
  if (!args.empty() && args[0] == "replay") return humus::cli::replay::run_replay({args.begin() + 1, args.end()});
  // shared (docs/shared.md §22.5) reads and removes segments of the host, and runs no request either.
  if (!args.empty() && args[0] == "shared") return humus::cli::shared::run_shared({args.begin() + 1, args.end()});
  Invocation inv;
  if (std::optional<std::string> error = humus::cli::parse_args(args, inv)) {
    std::fprintf(stderr, "humus-http: %s\n", error->c_str());
    return humus::cli::exit_code::kUsage;
  }
  switch (inv.command) {
    case Invocation::Command::kHelp:
      std::fputs(humus::cli::help_text().c_str(), stdout);
      return humus::cli::exit_code::kOk;
    case Invocation::Command::kVersion:
      return print_version();
    case Invocation::Command::kFetch:
      return humus::cli::run_fetch(inv.fetch);
    case Invocation::Command::kDemo:
      return humus::cli::demo::run_demo(inv.demo);
  }
  return humus::cli::exit_code::kFailure;
}
