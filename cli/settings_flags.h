#pragma once
// The client's settings from the command line: the --settings file with every flag over it, and an error
// of the library blamed on what the user typed (a flag, the URL or the file).

#include <humus_http.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "args.h"
#include "output.h"

namespace humus::cli {

// Where each settings key came from, so an error names what the user typed.
struct Sources {
  std::vector<std::pair<std::string, std::string>> flag_of_key;  // "timeout" -> "--max-time"
  bool base_url_from_url = false;
  std::string url;  // as given
  std::optional<std::string> settings_file;
  std::vector<std::string> tls_flags;  // which of --cacert, --cert, --key were given

  [[nodiscard]] const std::string* flag_for(const std::string& key) const;
};

// The settings JSON: the --settings file, then every flag over it, base_url from the URL when absent. -m 0
// takes the largest timeout of the settings schema, with a note on stderr unless --silent.
std::optional<Outcome> settings_json(const FetchOptions& o, nlohmann::json& j, Sources& src);

// A settings or client error, blamed on the flags (or the URL, or the --settings file) that set its keys.
Outcome settings_error(const humus_error* e, const Sources& src);

// JSON text of a document built from the command line (bytes that are not UTF-8 become U+FFFD).
std::string json_text_of(const nlohmann::json& j);

// The effective settings for -v, with a private key's PEM left out.
std::string redacted_settings(const nlohmann::json& effective);

}  // namespace humus::cli
