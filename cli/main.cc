// humus-http: a resilient HTTP client on the command line (curl's spellings where they exist), and a
// self-contained demo of the client riding out an outage. Uses libhumus_http through its C ABI only.

#include <humus_http.h>

#include <csignal>
#include <cstdio>
#include <string>
#include <vector>

#include "args.h"
#include "demo/demo.h"
#include "exit_codes.h"
#include "fetch.h"

int main(int argc, char** argv) {
  using humus::cli::Invocation;
  // A closed stdout (| head) is a write error reported as exit 23, as curl does, not a silent death.
  (void)std::signal(SIGPIPE, SIG_IGN);
  const std::vector<std::string> args(argv + 1, argv + argc);
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
      std::printf("humus-http %s (libhumus_http %s)\n", HUMUS_VERSION_STRING, humus_version());
      return humus::cli::exit_code::kOk;
    case Invocation::Command::kFetch:
      return humus::cli::run_fetch(inv.fetch);
    case Invocation::Command::kDemo:
      return humus::cli::demo::run_demo(inv.demo);
  }
  return humus::cli::exit_code::kFailure;
}
