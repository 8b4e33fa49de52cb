#include "settings/json_text.h"

#include <set>
#include <vector>

#include "common/text.h"

namespace humus::settings {
namespace {

using schema::join_path;
using schema::Json;
using schema::Problems;

// The schema is three levels deep; far deeper input is refused before the parser builds it.
constexpr int kMaxDepth = 64;

// The parser's reason for refusing the text, without its "last read" excerpt (which may hold a secret).
class SyntaxErrorCatcher final : public nlohmann::json_sax<Json> {
 public:
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return true; }
  bool key(string_t&) override { return true; }
  bool end_object() override { return true; }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& ex) override {
    std::string what = ex.what();
    if (const size_t start = what.find("] "); start != std::string::npos) what.erase(0, start + 2);
    if (const size_t cut = what.find("; last read"); cut != std::string::npos) what.erase(cut);
    reason = what;
    return false;
  }

  std::string reason = "not valid JSON";
};

// Nesting depth of the text, counted outside strings; stops counting past kMaxDepth.
bool too_deep(std::string_view text) {
  int depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > kMaxDepth) return true;
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return false;
}

}  // namespace

bool parse_document(std::string_view text, const std::string& root, Json& out, Problems& p) {
  const std::string what = root.empty() ? "settings" : root;
  if (too_deep(text)) {
    p.add(root, what + ": not valid JSON: nested deeper than " + std::to_string(kMaxDepth) + " levels");
    return false;
  }
  struct Frame {
    bool object;
    std::string key;
    std::set<std::string> seen;
  };
  std::vector<Frame> frames;
  Problems duplicates;
  const Json::parser_callback_t on_event = [&](int, Json::parse_event_t event, Json& parsed) {
    switch (event) {
      case Json::parse_event_t::object_start:
        frames.push_back({true, {}, {}});
        break;
      case Json::parse_event_t::array_start:
        frames.push_back({false, {}, {}});
        break;
      case Json::parse_event_t::object_end:
      case Json::parse_event_t::array_end:
        if (!frames.empty()) frames.pop_back();
        break;
      case Json::parse_event_t::key:
        if (!frames.empty() && frames.back().object && parsed.is_string()) {
          Frame& frame = frames.back();
          frame.key = parsed.get_ref<const std::string&>();
          if (!frame.seen.insert(frame.key).second) {
            std::string path = root;
            for (size_t i = 0; i + 1 < frames.size(); ++i) {
              if (frames[i].object) path = join_path(path, frames[i].key);
            }
            path = join_path(path, frame.key);
            duplicates.add(path, "duplicate key " + quote_for_message(path) + " (only one may be given)");
          }
        }
        break;
      default:
        break;
    }
    return true;
  };
  out = Json::parse(text.begin(), text.end(), on_event, /*allow_exceptions=*/false);
  if (out.is_discarded()) {
    SyntaxErrorCatcher catcher;
    (void)Json::sax_parse(text.begin(), text.end(), &catcher);
    p.add(root, what + ": not valid JSON: " + catcher.reason);
    return false;
  }
  p.add(duplicates.status(Code::kConfig));
  return true;
}

}  // namespace humus::settings
