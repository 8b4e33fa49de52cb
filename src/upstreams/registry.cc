#include "upstreams/registry.h"

#include <cctype>
#include <cstdint>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "common/text.h"

namespace humus::upstreams {
namespace {

using nlohmann::json;

bool valid_name(std::string_view name) {
  if (name.empty()) return false;
  for (const char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') return false;
  }
  return true;
}

// Whether `s` is UTF-8 (RFC 3629: shortest forms only, no surrogates, nothing past U+10FFFF). The document,
// parsed as JSON, holds nothing else; an environment variable may hold any bytes.
bool valid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const auto b = static_cast<unsigned char>(s[i]);
    size_t n = 0;
    uint32_t cp = 0;
    if (b < 0x80) {
      ++i;
      continue;
    } else if (b >= 0xC2 && b <= 0xDF) {
      n = 1;
      cp = b & 0x1Fu;
    } else if (b >= 0xE0 && b <= 0xEF) {
      n = 2;
      cp = b & 0x0Fu;
    } else if (b >= 0xF0 && b <= 0xF4) {
      n = 3;
      cp = b & 0x07u;
    } else {
      return false;
    }
    if (s.size() - i <= n) return false;
    for (size_t k = 1; k <= n; ++k) {
      const auto c = static_cast<unsigned char>(s[i + k]);
      if ((c & 0xC0u) != 0x80u) return false;
      cp = (cp << 6) | (c & 0x3Fu);
    }
    const bool overlong = (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000);
    if (overlong || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += n + 1;
  }
  return true;
}

// A problem of one upstream's settings, re-addressed to its place in the document.
Status within(const std::string& name, const Status& st) {
  const std::string path = "upstreams." + name;
  std::vector<std::string> fields;
  for (const std::string& f : st.fields()) fields.push_back(path + "." + f);
  return Status(st.code(), path + ": " + st.message(), std::move(fields));
}

void log_override(client::Runtime& runtime, const std::string& name, const std::string& variable,
                  const std::string& from_file, const std::string& from_env) {
  const std::string message = "upstream " + name + ": base_url " + from_env + " from " + variable +
                              " overrides " + from_file + " from the configuration";
  telemetry::LogRecord record;
  record.event = telemetry::kUpstreamBaseUrlOverride;
  record.message = message;
  record.time = runtime.clock().wall_now();
  record.upstream = name;
  runtime.telemetry().log(record);
}

}  // namespace

Environment process_environment() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());  // NOLINT(concurrency-mt-unsafe): read once, at build time
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

std::string base_url_variable(std::string_view upstream) {
  std::string v = "HUMUS_HTTP_UPSTREAMS__";
  for (const char c : upstream) {
    v += c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  return v + "__BASE_URL";
}

Result<std::vector<Upstream>> build_upstreams(client::Runtime& runtime, std::string_view text,
                                              const Environment& env) {
  const json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return Status(Code::kConfig, "upstreams: the document is not valid JSON", {"upstreams"});
  if (!doc.is_object() || !doc.contains("upstreams")) {
    return Status(Code::kConfig, "upstreams: expected {\"upstreams\": {\"<name>\": {settings}}}", {"upstreams"});
  }
  std::vector<std::string> messages, fields;
  auto problem = [&](const Status& st) {
    messages.push_back(st.message());
    fields.insert(fields.end(), st.fields().begin(), st.fields().end());
  };
  for (const auto& [key, value] : doc.items()) {
    if (key != "upstreams") problem(Status(Code::kConfig, key + ": unknown key (the document has only \"upstreams\")", {key}));
  }
  const json& upstreams = doc["upstreams"];
  if (!upstreams.is_object()) {
    problem(Status(Code::kConfig, "upstreams: must be an object of upstreams by name", {"upstreams"}));
  }

  struct Built {
    std::string name;
    settings::Settings settings;
  };
  std::vector<Built> built;
  struct Override {
    std::string name, variable, from_file, from_env;
  };
  std::vector<Override> overrides;
  if (upstreams.is_object()) {
    for (const auto& [name, value] : upstreams.items()) {
      if (!valid_name(name)) {
        problem(Status(Code::kConfig, "upstreams: the name " + quote_for_message(name) +
                                          " may hold only letters, digits, '_' and '-'",
                       {"upstreams." + name}));
        continue;
      }
      if (!value.is_object()) {
        problem(Status(Code::kConfig, "upstreams." + name + ": must be an object of settings", {"upstreams." + name}));
        continue;
      }
      json settings = value;
      const std::string variable = base_url_variable(name);
      if (std::optional<std::string> from_env = env(variable); from_env && !from_env->empty()) {
        if (!valid_utf8(*from_env)) {
          problem(Status(Code::kConfig, variable + ": not valid UTF-8, so not a base_url",
                         {"upstreams." + name + ".base_url"}));
          continue;
        }
        const std::string from_file = settings.value("base_url", json()).is_string() ? settings["base_url"].get<std::string>() : "";
        if (!from_file.empty() && from_file != *from_env) overrides.push_back({name, variable, from_file, *from_env});
        settings["base_url"] = *from_env;
      }
      // Replacing, not throwing, should a byte the check above let through ever reach the serialiser.
      Result<settings::Settings> s =
          settings::from_json(settings.dump(-1, ' ', false, json::error_handler_t::replace));
      if (!s.ok()) {
        problem(within(name, s.status()));
        continue;
      }
      built.push_back({name, std::move(s).value()});
    }
  }
  if (!messages.empty()) {
    std::string message;
    for (const std::string& m : messages) message += (message.empty() ? "" : "; ") + m;
    return Status(Code::kConfig, std::move(message), std::move(fields));
  }

  std::vector<Upstream> out;
  for (Built& b : built) {
    Result<std::unique_ptr<client::Client>> c = client::Client::create(runtime, std::move(b.settings));
    if (!c.ok()) return within(b.name, c.status());
    out.push_back({b.name, std::move(c).value()});
  }
  for (const Override& o : overrides) log_override(runtime, o.name, o.variable, o.from_file, o.from_env);
  return out;
}

Status no_such_upstream(std::string_view name, const std::vector<std::string>& configured) {
  std::string known;
  for (const std::string& n : configured) known += (known.empty() ? "" : ", ") + n;
  return Status(Code::kInvalidArgument,
                "no upstream named " + quote_for_message(name) + "; configured: " + (known.empty() ? "none" : known),
                {"name"});
}

}  // namespace humus::upstreams
