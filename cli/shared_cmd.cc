// humus-http shared ls|show|reset: see shared_cmd.h.
#include "shared_cmd.h"

#include <humus_http.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "exit_codes.h"

namespace humus::cli::shared {
namespace {

using Json = nlohmann::ordered_json;

constexpr char kUsage[] =
    "usage: humus-http shared ls [--json] | show NAME [--json] | reset NAME\n";

// A failed humus_shared_* call: an unknown name said plainly, anything else as the library put it.
int fail(const std::string& name, humus_status status, humus_error* err) {
  if (status == HUMUS_E_INVALID_ARGUMENT && !name.empty()) {
    std::fprintf(stderr,
                 "humus-http: shared: no segment \"%s\" on this host (/dev/shm/humus_http.%s); "
                 "humus-http shared ls lists them\n",
                 name.c_str(), name.c_str());
  } else {
    std::fprintf(stderr, "humus-http: shared: %s\n", humus_error_message(err));
  }
  humus_error_free(err);
  return exit_code::kFailure;
}

std::string number(const Json& v) {
  if (v.is_number_float()) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f", v.get<double>());
    return buf;
  }
  return v.dump();
}

int ls(bool json) {
  char* out = nullptr;
  humus_error* err = nullptr;
  if (humus_status st = humus_shared_list_json(&out, nullptr, &err); st != HUMUS_OK) return fail("", st, err);
  const std::string text(out);
  humus_string_free(out);
  if (json) {
    std::printf("%s\n", text.c_str());
    return exit_code::kOk;
  }
  const Json doc = Json::parse(text);
  if (doc["segments"].empty()) {
    std::printf("no shared segments on this host\n");
    return exit_code::kOk;
  }
  std::printf("%-24s %10s %9s  %s\n", "NAME", "SIZE", "PROCESSES", "ORIGINS");
  for (const Json& s : doc["segments"]) {
    if (s.contains("error")) {
      std::printf("%-24s %10s %9s  (%s)\n", s["name"].get<std::string>().c_str(), s["size"].dump().c_str(), "-",
                  s["error"].get<std::string>().c_str());
      continue;
    }
    std::string origins;
    for (const Json& o : s["origins"]) origins += (origins.empty() ? "" : " ") + o.get<std::string>();
    std::printf("%-24s %10s %9s  %s\n", s["name"].get<std::string>().c_str(), s["size"].dump().c_str(),
                s["live_processes"].dump().c_str(), origins.empty() ? "-" : origins.c_str());
  }
  return exit_code::kOk;
}

int show(const std::string& name, bool json) {
  char* out = nullptr;
  humus_error* err = nullptr;
  if (humus_status st = humus_shared_show_json(name.c_str(), &out, nullptr, &err); st != HUMUS_OK) {
    return fail(name, st, err);
  }
  const std::string text(out);
  humus_string_free(out);
  if (json) {
    std::printf("%s\n", text.c_str());
    return exit_code::kOk;
  }
  const Json s = Json::parse(text);
  std::printf("segment %s: %s bytes, layout version %s, %s live processes, %s repairs\n", name.c_str(),
              s["size"].dump().c_str(), s["version"].dump().c_str(), s["live_processes"].dump().c_str(),
              s["repairs"].dump().c_str());
  for (const Json& p : s["processes"]) {
    std::printf("  process %s: %s clients%s\n", p["pid"].dump().c_str(), p["clients"].dump().c_str(),
                p["alive"].get<bool>() ? "" : " (dead)");
  }
  if (s["origins"].empty()) std::printf("  no origins yet\n");
  for (const Json& o : s["origins"]) {
    const Json& c = o["counts"];
    std::printf("  %s\n", o["origin"].get<std::string>().c_str());
    std::printf("    breaker   %s (generation %s), probes in flight %s\n", o["state"].get<std::string>().c_str(),
                o["generation"].dump().c_str(), o["probes_in_flight"].dump().c_str());
    std::printf("    counts    successes %s, failures %s, consecutive successes %s, consecutive failures %s, "
                "window %s/%s failed, timed-out probes %s\n",
                c["successes"].dump().c_str(), c["failures"].dump().c_str(), c["consecutive_successes"].dump().c_str(),
                c["consecutive_failures"].dump().c_str(), c["window_failures"].dump().c_str(),
                c["window_results"].dump().c_str(), c["timed_out_probes"].dump().c_str());
    std::printf("    budget    %s, %s tokens\n", o["budget"]["policy"].get<std::string>().c_str(),
                number(o["budget"]["tokens"]).c_str());
    std::printf("    bulkhead  %s in flight of %s\n", o["bulkhead"]["in_flight"].dump().c_str(),
                o["bulkhead"]["max_concurrent"].dump().c_str());
  }
  return exit_code::kOk;
}

int reset(const std::string& name) {
  humus_error* err = nullptr;
  if (humus_status st = humus_shared_remove(name.c_str(), &err); st != HUMUS_OK) return fail(name, st, err);
  std::printf("removed shared segment %s\n", name.c_str());
  return exit_code::kOk;
}

}  // namespace

int run_shared(const std::vector<std::string>& args) {
  bool json = false;
  std::vector<std::string> words;
  for (const std::string& a : args) {
    if (a == "--json") {
      json = true;
    } else if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      return exit_code::kOk;
    } else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "humus-http: shared: unknown option %s\n%s", a.c_str(), kUsage);
      return exit_code::kUsage;
    } else {
      words.push_back(a);
    }
  }
  if (words.size() == 1 && words[0] == "ls") return ls(json);
  if (words.size() == 2 && words[0] == "show") return show(words[1], json);
  if (words.size() == 2 && words[0] == "reset" && !json) return reset(words[1]);
  std::fputs("humus-http: shared: ", stderr);
  std::fputs(kUsage, stderr);
  return exit_code::kUsage;
}

}  // namespace humus::cli::shared
