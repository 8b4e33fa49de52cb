#include "args.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <string_view>

#include "exit_codes.h"
#include "suggest.h"
#include "write_out.h"

namespace humus::cli {
namespace {

enum class Scope { kFetch, kDemo };

struct Flag {
  std::string_view long_name;  // without "--"
  char short_name;             // 0 for none
  bool takes_value;
  Scope scope;
  // A value that may be left out (--plot alone): the next argument is taken only when it is not a flag.
  bool value_optional = false;
};

constexpr Flag kFlags[] = {
    {"header", 'H', true, Scope::kFetch},
    {"data", 'd', true, Scope::kFetch},
    {"data-binary", 0, true, Scope::kFetch},
    {"output", 'o', true, Scope::kFetch},
    {"include", 'i', false, Scope::kFetch},
    {"fail", 'f', false, Scope::kFetch},
    {"silent", 's', false, Scope::kFetch},
    {"verbose", 'v', false, Scope::kFetch},
    {"cacert", 0, true, Scope::kFetch},
    {"cert", 0, true, Scope::kFetch},
    {"key", 0, true, Scope::kFetch},
    {"retry", 0, true, Scope::kFetch},
    {"max-time", 'm', true, Scope::kFetch},
    {"connect-timeout", 0, true, Scope::kFetch},
    {"resolve", 0, true, Scope::kFetch},
    {"attempt-timeout", 0, true, Scope::kFetch},
    {"idempotency-key", 0, true, Scope::kFetch},
    {"inject-fault", 0, true, Scope::kFetch},
    {"settings", 0, true, Scope::kFetch},
    {"trace", 0, false, Scope::kFetch},
    {"metrics", 0, false, Scope::kFetch},
    {"repeat", 0, true, Scope::kFetch},
    {"concurrency", 0, true, Scope::kFetch},
    {"request", 'X', true, Scope::kFetch},
    {"head", 'I', false, Scope::kFetch},
    {"location", 'L', false, Scope::kFetch},
    {"write-out", 'w', true, Scope::kFetch},
    {"json", 0, true, Scope::kFetch},
    {"user", 'u', true, Scope::kFetch},
    {"user-agent", 'A', true, Scope::kFetch},
    {"form", 'F', true, Scope::kFetch},
    {"get", 'G', false, Scope::kFetch},
    {"data-urlencode", 0, true, Scope::kFetch},
    {"remote-name", 'O', false, Scope::kFetch},
    {"dump-header", 'D', true, Scope::kFetch},
    {"http1.1", 0, false, Scope::kFetch},
    {"http2", 0, false, Scope::kFetch},
    {"fail-with-body", 0, false, Scope::kFetch},
    {"retry-delay", 0, true, Scope::kFetch},
    {"retry-max-time", 0, true, Scope::kFetch},
    {"retry-all-errors", 0, false, Scope::kFetch},
    {"upload-file", 'T', true, Scope::kFetch},
    {"compressed", 0, false, Scope::kFetch},
    {"progress-bar", '#', false, Scope::kFetch},
    {"no-progress-meter", 0, false, Scope::kFetch},
    {"range", 'r', true, Scope::kFetch},
    {"oauth2-bearer", 0, true, Scope::kFetch},
    {"max-redirs", 0, true, Scope::kFetch},
    {"trace-json", 0, false, Scope::kFetch},
    {"duration", 0, true, Scope::kDemo},
    {"rate", 0, true, Scope::kDemo},
    {"plot", 0, true, Scope::kDemo, true},
    {"slow-call-trip", 0, false, Scope::kDemo},
};

// The value of a flag given without its optional value: --plot alone writes the chart beside the system's
// temporary files, not into the directory the demo runs in (a checkout, for a newcomer).
std::string default_value(const Flag& flag) {
  if (flag.long_name != "plot") return {};
  const char* tmp = std::getenv("TMPDIR");
  const std::string dir = tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
  return dir + (dir.back() == '/' ? "" : "/") + "humus-http-demo.svg";
}

const Flag* find_long(std::string_view name) {
  for (const Flag& f : kFlags) {
    if (f.long_name == name) return &f;
  }
  return nullptr;
}

const Flag* find_short(char c) {
  for (const Flag& f : kFlags) {
    if (f.short_name == c) return &f;
  }
  return nullptr;
}

std::string quoted(std::string_view s) {
  constexpr size_t kMax = 80;
  std::string out = "'";
  for (char c : s.substr(0, kMax)) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[(static_cast<unsigned char>(c) >> 4) & 0xf];
      out += kHex[static_cast<unsigned char>(c) & 0xf];
    } else {
      out += c;
    }
  }
  if (s.size() > kMax) out += "...";
  return out + "'";
}

// A whole number in [lo, hi], or an error naming the flag.
std::optional<std::string> parse_int(const std::string& flag, const std::string& text, int32_t lo, int32_t hi,
                                     int32_t& out) {
  int64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end || value < lo || value > hi) {
    return flag + ": expected a whole number " + std::to_string(lo) + ".." + std::to_string(hi) + ", got " +
           quoted(text);
  }
  out = static_cast<int32_t>(value);
  return std::nullopt;
}

std::optional<std::string> duration_of(const std::string& flag, const std::string& text, std::string& out) {
  std::optional<std::string> ms = parse_duration(text);
  if (!ms) {
    return flag + ": expected seconds (like 2.5) or a duration (like 250ms, 5s, 1m) above zero, got " +
           quoted(text);
  }
  out = *ms;
  return std::nullopt;
}

// --resolve HOST:PORT:ADDRESS, as curl spells it; HOST and ADDRESS may be bracketed IPv6 literals.
std::optional<std::string> parse_resolve(const std::string& text, std::pair<std::string, std::string>& out) {
  const std::string bad =
      "--resolve: expected HOST:PORT:ADDRESS (like payments:8443:127.0.0.1), got " + quoted(text);
  size_t host_end = 0;
  if (!text.empty() && text[0] == '[') {
    host_end = text.find(']');
    if (host_end == std::string::npos) return bad;
    ++host_end;
  } else {
    host_end = text.find(':');
  }
  if (host_end == 0 || host_end == std::string::npos || host_end >= text.size() || text[host_end] != ':') {
    return bad;
  }
  const size_t port_end = text.find(':', host_end + 1);
  if (port_end == std::string::npos) return bad;
  const std::string host = text.substr(0, host_end);
  const std::string port = text.substr(host_end + 1, port_end - host_end - 1);
  std::string address = text.substr(port_end + 1);
  int32_t port_number = 0;
  if (parse_int("--resolve", port, 1, 65535, port_number)) {
    return "--resolve: the port in " + quoted(text) + " must be 1..65535, got " + quoted(port);
  }
  if (address.empty()) return bad;
  if (address.find(':') != std::string::npos && address.front() != '[') address = "[" + address + "]";
  out = {host + ":" + port, address + ":" + port};
  return std::nullopt;
}

// -H as curl reads it: "Name: value"; "Name:" leaves out a header that would be sent; "Name;" sends it empty.
std::optional<std::string> parse_header(const std::string& text, FetchOptions& f) {
  const size_t colon = text.find(':');
  if (colon == std::string::npos && text.size() > 1 && text.back() == ';') {
    f.headers.emplace_back(text.substr(0, text.size() - 1), "");
    return std::nullopt;
  }
  if (colon == std::string::npos || colon == 0) {
    return "-H: expected 'Name: value' (or 'Name:' to send none, 'Name;' to send it empty), got " + quoted(text);
  }
  std::string value = text.substr(colon + 1);
  const size_t start = value.find_first_not_of(" \t");
  if (start == std::string::npos) {
    f.unset_headers.push_back(text.substr(0, colon));
    return std::nullopt;
  }
  f.headers.emplace_back(text.substr(0, colon), value.substr(start));
  return std::nullopt;
}

// -r/--range as curl takes it: "0-499", "500-", "-500", "0-0,-1"; a lone number N is "N-", as curl makes it.
std::optional<std::string> parse_range(const std::string& shown, const std::string& text, std::string& out) {
  if (text.empty() || text.find_first_not_of("0123456789-,") != std::string::npos) {
    return shown + ": expected byte ranges (like 0-499, 500-, -500 or 0-0,-1), got " + quoted(text);
  }
  out = text.find('-') == std::string::npos ? text + "-" : text;
  return std::nullopt;
}

DataPiece data_piece(const std::string& flag, const std::string& text) {
  DataPiece piece;
  piece.flag = flag;
  if (!text.empty() && text[0] == '@') {
    piece.from_file = true;
    piece.text = text.substr(1);
    piece.strip_newlines = flag == "-d";
  } else {
    piece.text = text;
  }
  return piece;
}

// --data-urlencode, as curl reads it: CONTENT, =CONTENT, NAME=CONTENT, @FILE or NAME@FILE.
DataPiece urlencode_piece(const std::string& text) {
  DataPiece piece;
  piece.kind = DataPiece::Kind::kUrlencode;
  piece.flag = "--data-urlencode";
  const size_t eq = text.find('=');
  const size_t at = text.find('@');
  if (eq != std::string::npos && (at == std::string::npos || eq < at)) {
    piece.name = text.substr(0, eq);
    piece.has_name = eq > 0;
    piece.text = text.substr(eq + 1);
  } else if (at != std::string::npos) {
    piece.name = text.substr(0, at);
    piece.has_name = at > 0;
    piece.text = text.substr(at + 1);
    piece.from_file = true;
  } else {
    piece.text = text;
  }
  return piece;
}

// -F NAME=VALUE | NAME=@FILE[;type=T][;filename=F] | NAME=<FILE[;type=T].
std::optional<std::string> parse_form(const std::string& text, FormPart& out) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0) {
    return "-F: expected NAME=VALUE, NAME=@FILE or NAME=<FILE, got " + quoted(text);
  }
  out.name = text.substr(0, eq);
  std::string rest = text.substr(eq + 1);
  if (rest.empty() || (rest[0] != '@' && rest[0] != '<')) {
    out.value = rest;
    return std::nullopt;
  }
  out.from_file = true;
  out.upload = rest[0] == '@';
  rest.erase(0, 1);
  size_t semi = rest.find(';');
  out.value = rest.substr(0, semi);
  while (semi != std::string::npos) {
    const size_t next = rest.find(';', semi + 1);
    const std::string param = rest.substr(semi + 1, next == std::string::npos ? next : next - semi - 1);
    if (param.rfind("type=", 0) == 0 && param.size() > 5) {
      out.type = param.substr(5);
    } else if (param.rfind("filename=", 0) == 0 && param.size() > 9 && out.upload) {
      out.filename = param.substr(9);
    } else {
      return "-F: unknown parameter " + quoted(param) + " in " + quoted(text) + " (type=, filename=)";
    }
    semi = next;
  }
  if (out.value.empty()) return "-F: needs a file name after " + quoted(text.substr(eq + 1, 1));
  // The part's headers are written as given: no CR, LF or quote may break out of them.
  const std::string* fields[] = {&out.name, out.type ? &*out.type : nullptr,
                                 out.filename ? &*out.filename : nullptr};
  for (const std::string* p : fields) {
    if (p != nullptr && p->find_first_of("\r\n\"") != std::string::npos)
      return "-F: a quote or line break in " + quoted(text);
  }
  return std::nullopt;
}

bool is_token(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
    if (!ok) return false;
  }
  return true;
}

// Applies one flag. `shown` is how the user spelt it, for messages.
std::optional<std::string> apply(const Flag& flag, const std::string& shown, const std::string& value,
                                 Invocation& inv) {
  FetchOptions& f = inv.fetch;
  DemoOptions& d = inv.demo;
  const std::string_view n = flag.long_name;
  if (n == "header") {
    return parse_header(value, f);
  } else if (n == "data") {
    f.data.push_back(data_piece("-d", value));
  } else if (n == "data-binary") {
    f.data.push_back(data_piece("--data-binary", value));
  } else if (n == "output") {
    if (value.empty()) return shown + ": needs a file name";
    f.output = value;
  } else if (n == "include") {
    f.include = true;
  } else if (n == "fail") {
    f.fail = true;
  } else if (n == "silent") {
    f.silent = true;
  } else if (n == "verbose") {
    f.verbose = true;
  } else if (n == "cacert" || n == "cert" || n == "key") {
    if (value.empty()) return shown + ": needs a file name";
    (n == "cacert" ? f.cacert : n == "cert" ? f.cert : f.key) = value;
  } else if (n == "retry") {
    int32_t retries = 0;
    if (auto e = parse_int(shown, value, 0, 9, retries)) return *e + " (retries after the first attempt)";
    f.retry = retries;
  } else if (n == "max-time" && is_zero_duration(value)) {
    // curl's "no deadline"; the client always has one: the longest its settings allow (fetch.cc).
    f.max_time.reset();
    f.max_time_longest = true;
  } else if (n == "max-time" || n == "connect-timeout" || n == "attempt-timeout") {
    if (n == "max-time") f.max_time_longest = false;
    std::string ms;
    if (auto e = duration_of(shown, value, ms)) return e;
    (n == "max-time" ? f.max_time : n == "connect-timeout" ? f.connect_timeout : f.attempt_timeout) = ms;
  } else if (n == "resolve") {
    std::pair<std::string, std::string> entry;
    if (auto e = parse_resolve(value, entry)) return e;
    f.resolve.push_back(std::move(entry));
  } else if (n == "idempotency-key") {
    if (value.empty()) return shown + ": needs a key";
    f.idempotency_key = value;
  } else if (n == "inject-fault") {
    // The scenario travels as a baggage member: its separators and spaces cannot be part of it.
    if (value.empty() || value.find_first_of(" \t,;\"\\") != std::string::npos) {
      return shown + ": expected ACTION[@P] or POINT=ACTION[@P] (like status:503@0.5), got " + quoted(value);
    }
    f.faults.push_back(value);
  } else if (n == "settings") {
    if (value.empty()) return shown + ": needs a file name";
    f.settings_file = value;
  } else if (n == "trace") {
    f.trace = true;
  } else if (n == "trace-json") {
    f.trace_json = true;
  } else if (n == "range") {
    std::string range;
    if (auto e = parse_range(shown, value, range)) return e;
    f.range = range;
  } else if (n == "oauth2-bearer") {
    if (value.empty()) return shown + ": needs a token";
    f.oauth2_bearer = value;
  } else if (n == "max-redirs") {
    int32_t redirs = 0;
    // curl's -1 is "no limit": the client's own, 10 (docs/origin.md §2).
    if (auto e = parse_int(shown, value, -1, 1000000, redirs)) return e;
    f.max_redirs = redirs;
  } else if (n == "metrics") {
    f.metrics = true;
  } else if (n == "repeat") {
    return parse_int(shown, value, 1, 1000000, f.repeat);
  } else if (n == "concurrency") {
    return parse_int(shown, value, 1, 1000, f.concurrency);
  } else if (n == "request") {
    if (!is_token(value)) return shown + ": expected a method (a token like PATCH), got " + quoted(value);
    f.method_flag = value;
  } else if (n == "head") {
    f.head = true;
  } else if (n == "location") {
    // The client follows same-origin redirects always, and never another origin's (docs/origin.md).
  } else if (n == "write-out") {
    if (auto e = write_out_error(value)) return shown == "-w" ? e : shown + e->substr(2);
    f.write_out = value;
  } else if (n == "json") {
    DataPiece piece = data_piece("--json", value);
    piece.kind = DataPiece::Kind::kJson;
    f.data.push_back(std::move(piece));
  } else if (n == "user") {
    // The password is never repeated in a message.
    if (value.find(':') == std::string::npos)
      return shown + ": expected USER:PASSWORD (humus-http does not prompt for a password)";
    f.user = value;
  } else if (n == "user-agent") {
    f.user_agent = value;
  } else if (n == "form") {
    FormPart part;
    if (auto e = parse_form(value, part)) return shown == "-F" ? e : shown + e->substr(2);
    f.form.push_back(std::move(part));
  } else if (n == "get") {
    f.get_query = true;
  } else if (n == "data-urlencode") {
    f.data.push_back(urlencode_piece(value));
  } else if (n == "remote-name") {
    f.remote_name = true;
  } else if (n == "dump-header") {
    if (value.empty()) return shown + ": needs a file name (or - for stdout)";
    f.dump_header = value;
  } else if (n == "http1.1" || n == "http2") {
    f.http_version = n == "http2" ? "2" : "1.1";
  } else if (n == "fail-with-body") {
    f.fail_with_body = true;
  } else if (n == "retry-delay" && is_zero_duration(value)) {
    // curl's 0: its own default backoff, here the client's (backoff_base, backoff_max).
    f.retry_delay.reset();
  } else if (n == "retry-delay") {
    std::string ms;
    if (auto e = duration_of(shown, value, ms)) return e;
    f.retry_delay = ms;
  } else if (n == "retry-max-time") {
    std::string ms;
    if (auto e = duration_of(shown, value, ms)) return e;
    f.retry_max_time_ms = std::stoll(ms);
  } else if (n == "retry-all-errors") {
    f.retry_all_errors = true;
  } else if (n == "upload-file") {
    if (value.empty()) return shown + ": needs a file name (or - for stdin)";
    f.upload_file = value;
  } else if (n == "compressed") {
    // The client asks for every coding it decodes, and decodes, by default (docs/bodies.md §7).
  } else if (n == "progress-bar") {
    f.progress_bar = true;
  } else if (n == "no-progress-meter") {
    f.no_progress = true;
  } else if (n == "duration") {
    return parse_int(shown, value, 5, 3600, d.duration_s);
  } else if (n == "rate") {
    return parse_int(shown, value, 1, 2000, d.rate);
  } else if (n == "plot") {
    if (value.empty()) return shown + ": needs a file name";
    d.plot = value;
  } else if (n == "slow-call-trip") {
    d.slow_call_trip = true;
  }
  return std::nullopt;
}

std::optional<std::string> check_scope(const Flag& flag, const std::string& shown,
                                       Invocation::Command command) {
  const bool demo = command == Invocation::Command::kDemo;
  if (flag.scope == Scope::kDemo && !demo) return shown + ": only for 'humus-http demo'";
  if (flag.scope == Scope::kFetch && demo)
    return shown + ": not for 'humus-http demo' (see humus-http --help)";
  return std::nullopt;
}

constexpr std::string_view kCommands = "get, head, post, put, patch, delete, options";

bool is_command(const std::string& s) {
  return s == "get" || s == "head" || s == "post" || s == "put" || s == "patch" || s == "delete" ||
         s == "options";
}

// The index in `args` of the first word that is neither a flag nor a flag's value (args.size() when none): the
// command, or curl's URL. An unknown flag is taken to have no value; parse_args refuses it afterwards.
size_t first_word(const std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") return i + 1;
    if (a.size() < 2 || a[0] != '-') return i;
    if (a.rfind("--", 0) == 0) {
      const Flag* flag = find_long(a.substr(2));  // --name=value holds its value and matches no name
      if (flag != nullptr && flag->takes_value) ++i;
      continue;
    }
    // A cluster's flag that takes a value takes the rest of the cluster, or the next argument.
    for (size_t j = 1; j < a.size(); ++j) {
      const Flag* flag = find_short(a[j]);
      if (flag == nullptr || !flag->takes_value) continue;
      if (j + 1 == a.size()) ++i;
      break;
    }
  }
  return args.size();
}

// "unknown option '--retyr' (did you mean '--retry'?)".
std::string unknown_long(const std::string& name) {
  std::vector<std::string> names;
  for (const Flag& f : kFlags) names.emplace_back(f.long_name);
  const std::optional<std::string> near = nearest_word(name, names);
  return "unknown option " + quoted("--" + name) +
         (near ? " (did you mean " + quoted("--" + *near) + "?)" : " (see humus-http --help)");
}

// The method, from -X, then -I, then the command, then curl's rule (a body makes a POST); and the checks
// across the body's flags.
std::optional<std::string> settle_method(FetchOptions& f, const std::string& subcommand) {
  bool json = false;
  bool plain = false;
  for (const DataPiece& p : f.data) (p.kind == DataPiece::Kind::kJson ? json : plain) = true;
  if (json && plain) return "--json: not with -d, --data-binary or --data-urlencode (one body)";
  if (!f.form.empty() && !f.data.empty()) return "-F: not with " + f.data.front().flag + " (one body)";
  if (f.get_query && (json || !f.form.empty()))
    return "-G: puts -d and --data-urlencode in the query; not " + std::string(json ? "--json" : "-F");
  if (f.upload_file && (!f.data.empty() || !f.form.empty()))
    return "-T: not with " + (f.form.empty() ? f.data.front().flag : std::string("-F")) + " (one body)";
  if (f.head && !subcommand.empty() && subcommand != "head")
    return "-I: the command " + subcommand + " already names the method (use head, or -X HEAD)";
  const bool has_body = !f.form.empty() || (!f.data.empty() && !f.get_query) || f.upload_file;
  if (f.method_flag) {
    f.method = *f.method_flag;
  } else if (f.head) {
    f.method = "HEAD";
  } else if (subcommand.empty()) {
    // curl's: -T uploads with a PUT, a body of the data flags is a POST.
    f.method = f.upload_file ? "PUT" : has_body ? "POST" : "GET";
  }
  if (has_body && (f.method == "GET" || f.method == "HEAD")) {
    const std::string flag = f.upload_file ? "-T" : f.form.empty() ? f.data.front().flag : "-F";
    if (!subcommand.empty() && !f.method_flag)
      return flag + ": " + subcommand + " sends no body (use post, put, patch or delete)";
    return flag + ": a " + f.method + " sends no body (use -G to put the data in the query)";
  }
  return std::nullopt;
}

// The milliseconds a duration's text stands for (curl's seconds, or a number with ms, s, m, h), unrounded;
// nullopt when it is no such text.
std::optional<double> duration_value_ms(const std::string& text) {
  size_t i = 0;
  while (i < text.size() && ((text[i] >= '0' && text[i] <= '9') || text[i] == '.')) ++i;
  const std::string number = text.substr(0, i);
  const std::string unit = text.substr(i);
  if (number.empty() || number == "." || number.find('.') != number.rfind('.')) return std::nullopt;
  double scale = 0;
  if (unit.empty() || unit == "s") {
    scale = 1000;  // curl's spelling: seconds
  } else if (unit == "ms") {
    scale = 1;
  } else if (unit == "m") {
    scale = 60'000;
  } else if (unit == "h") {
    scale = 3'600'000;
  } else {
    return std::nullopt;
  }
  char* end = nullptr;
  errno = 0;
  const double value = std::strtod(number.c_str(), &end);
  if (errno != 0 || end != number.c_str() + number.size() || !std::isfinite(value)) return std::nullopt;
  return value * scale;
}

}  // namespace

std::optional<std::string> parse_duration(const std::string& text) {
  const std::optional<double> value = duration_value_ms(text);
  if (!value) return std::nullopt;
  const double ms = std::round(*value);
  // Above zero, and small enough to be exact; the settings' own checks bound it further (timeout <= 1h).
  if (ms < 1 || ms > 1e12) return std::nullopt;
  return std::to_string(static_cast<int64_t>(ms)) + "ms";
}

bool is_zero_duration(const std::string& text) {
  const std::optional<double> value = duration_value_ms(text);
  return value && *value == 0;
}

std::optional<std::string> parse_args(const std::vector<std::string>& args, Invocation& out) {
  using Command = Invocation::Command;
  for (const std::string& a : args) {
    if (a == "--") break;
    if (a == "--help" || a == "-h") {
      out.command = Command::kHelp;
      return std::nullopt;
    }
  }
  if (args.empty()) return "no command given (see humus-http --help)";
  if (args[0] == "--version" || args[0] == "-V") {
    out.command = Command::kVersion;
    return std::nullopt;
  }
  // The command is the first word that is neither a flag nor a flag's value: curl users put flags first
  // (humus-http -v get URL). Without one, the line is curl's: the method follows from the flags (-X, -I, the
  // data).
  const size_t at = first_word(args);
  const std::string command = at < args.size() ? args[at] : std::string();
  std::string subcommand;
  if (command == "demo") {
    out.command = Command::kDemo;
  } else if (is_command(command)) {
    out.command = Command::kFetch;
    subcommand = command;
    for (char c : command) out.fetch.method += static_cast<char>(c - 'a' + 'A');
  } else if (at == args.size() || command.find("://") != std::string::npos) {
    out.command = Command::kFetch;
  } else {
    return "unknown command " + quoted(command) + " (commands: " + std::string(kCommands) +
           ", demo; or a URL, as curl takes it)";
  }
  const bool has_command = out.command == Command::kDemo || !subcommand.empty();
  // Messages of a command name it; curl's form has no name to add to the program's own.
  const std::string who = subcommand.empty() ? std::string() : subcommand + ": ";

  bool options_done = false;
  std::vector<std::string> positional;
  for (size_t i = 0; i < args.size(); ++i) {
    if (has_command && i == at) continue;
    const std::string& a = args[i];
    if (options_done || a.size() < 2 || a[0] != '-') {
      positional.push_back(a);
      continue;
    }
    if (a == "--") {
      options_done = true;
      continue;
    }
    // The value of the flag at args[i]: attached (--x=v, -Hv) or the next argument.
    const auto take_value = [&](const std::string& shown, std::optional<std::string> attached,
                                std::string& value) -> std::optional<std::string> {
      if (attached) {
        value = *attached;
        return std::nullopt;
      }
      if (i + 1 >= args.size()) return shown + ": needs a value (see humus-http --help)";
      value = args[++i];
      return std::nullopt;
    };
    // A flag whose value may be left out takes the next argument only when that is not a flag.
    const auto value_left_out = [&](const Flag& flag, bool attached) {
      return flag.value_optional && !attached && (i + 1 >= args.size() || args[i + 1].rfind('-', 0) == 0);
    };
    if (a.rfind("--", 0) == 0) {
      const size_t eq = a.find('=');
      const std::string name = a.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
      const std::string shown = "--" + name;
      const Flag* flag = find_long(name);
      if (flag == nullptr) return unknown_long(name);
      if (auto e = check_scope(*flag, shown, out.command)) return e;
      std::string value;
      if (flag->takes_value) {
        std::optional<std::string> attached;
        if (eq != std::string::npos) attached = a.substr(eq + 1);
        if (value_left_out(*flag, attached.has_value())) {
          value = default_value(*flag);
        } else if (auto e = take_value(shown, attached, value)) {
          return e;
        }
      } else if (eq != std::string::npos) {
        return shown + ": takes no value, got " + quoted(a.substr(eq + 1));
      }
      if (auto e = apply(*flag, shown, value, out)) return e;
      continue;
    }
    // A cluster of short flags: -sfi, -H 'X: y', -HX:y, -o file.
    for (size_t j = 1; j < a.size(); ++j) {
      const std::string shown = std::string("-") + a[j];
      const Flag* flag = find_short(a[j]);
      if (flag == nullptr) return "unknown option " + quoted(shown) + " (see humus-http --help)";
      if (auto e = check_scope(*flag, shown, out.command)) return e;
      std::string value;
      if (flag->takes_value) {
        std::optional<std::string> attached;
        if (j + 1 < a.size()) attached = a.substr(j + 1);
        if (auto e = take_value(shown, attached, value)) return e;
        if (auto e = apply(*flag, shown, value, out)) return e;
        break;
      }
      if (auto e = apply(*flag, shown, value, out)) return e;
    }
  }

  if (out.command == Command::kDemo) {
    if (!positional.empty())
      return "demo: unexpected argument " + quoted(positional[0]) + " (it takes no URL)";
    return std::nullopt;
  }
  if (subcommand.empty()) {
    // curl's form: a command after the URL is a command put in the wrong place.
    for (const std::string& p : positional) {
      if (is_command(p) || p == "demo") {
        return "expected the command " + quoted(p) + " before the URL " + quoted(positional[0]) +
               " (see humus-http --help)";
      }
    }
  }
  if (positional.empty()) return who + "no URL given (see humus-http --help)";
  if (positional.size() > 1) {
    return who + "one URL per command, got a second: " + quoted(positional[1]) +
           " (to call it again, use --repeat N)";
  }
  FetchOptions& f = out.fetch;
  f.url = positional[0];
  if (auto e = settle_method(f, subcommand)) return e;
  if (f.key && !f.cert) return "--key: needs --cert (the client certificate the key belongs to)";
  if (f.fail && f.fail_with_body) return "--fail-with-body: choose it or -f, not both";
  if (f.oauth2_bearer && f.user) return "--oauth2-bearer: choose it or -u, not both";
  if (f.remote_name && f.output) return "-O: choose it or -o, not both";
  if (f.concurrency > f.repeat) {
    return "--concurrency: " + std::to_string(f.concurrency) + " is more than the calls to make (--repeat " +
           std::to_string(f.repeat) + ")";
  }
  return std::nullopt;
}

std::string help_text() {
  std::string text =
      R"(humus-http — a resilient HTTP client on the command line, and a demo of what resilience looks like.

Usage:
  humus-http [options] URL                        as curl: GET, or POST with a body, -X to name another
  humus-http [options] get|head|post|put|patch|delete|options [options] URL
  humus-http demo [--duration SECONDS] [--rate N] [--plot [FILE.svg]] [--slow-call-trip]
  humus-http replay --settings FILE [--compare FILE2] [--seed N] TRAFFIC.jsonl
  humus-http shared ls [--json] | show NAME [--json] | reset NAME
  humus-http --help | --version

Each call goes through one humus_http client (libhumus_http): deadlines, retries within a budget, a circuit
breaker and a bulkhead, with the client's defaults unless a flag or --settings says otherwise. Same-origin
redirects are always followed by the client itself (up to 10), with or without -L; a redirect to another
origin is never followed: it is returned as it came, its Location for you to judge. A URL with a user and
password in it is refused without echoing them: use -u.

Options as curl spells them (short flags combine: -sfi):
  -X, --request METHOD         the method, as given (PATCH, OPTIONS, ...), over the command's
  -I, --head                   a HEAD request; prints the status line and headers
  -L, --location               accepted for curl's sake: same-origin redirects are followed anyway, another
                               origin's never (there is no flag to stop following: the client always does)
      --max-redirs N           follow at most N redirects (-1: the client's limit, 10); past N, exit 47 and
                               the next hop is not made (at 10 and over, the client stops at 10 itself)
  -H, --header 'Name: value'   add a request header (repeatable). 'Name:' leaves out a header this program
                               or the client would add (from -A, -u, --json, -r, a body's Content-Type, the
                               settings' headers, and Accept, User-Agent, Accept-Encoding), as curl does; not
                               Host. 'Name;' sends the header with an empty value
  -r, --range RANGE            ask for byte ranges: Range: bytes=RANGE (0-499, 500-, -500, 0-0,-1; a lone N
                               is N-, as curl makes it); the body comes as the server sends it, undecoded
      --oauth2-bearer TOKEN    send Authorization: Bearer TOKEN (a -H Authorization wins; not with -u); the
                               token is never printed
  -d, --data DATA              request body (repeatable, joined with '&'); @FILE reads FILE without its
                               newlines, @- reads stdin; Content-Type defaults to
                               application/x-www-form-urlencoded. Not for get or head (see -G)
      --data-binary DATA       as -d, but @FILE is sent byte for byte; a lone --data-binary @FILE is
                               streamed from the file, never held in memory (resent from the start on a
                               retry), and @- streams stdin (once: one attempt)
      --data-urlencode DATA    as -d, URL-encoded: CONTENT, =CONTENT, NAME=CONTENT, @FILE or NAME@FILE
                               (NAME is sent as given, the content encoded)
      --json DATA              a JSON body (repeatable, joined as given; @FILE, @-), with Content-Type and
                               Accept: application/json; a POST unless a command or -X says otherwise
  -F, --form NAME=VALUE        a multipart/form-data part (repeatable); NAME=@FILE uploads FILE with its
                               filename and a content type (from its extension, or ;type=T; ;filename=F
                               to send another name); NAME=<FILE sends FILE's text as the value
  -G, --get                    put the -d and --data-urlencode data in the URL's query (after a '&' if it
                               has one) and make a GET (a HEAD with -I)
  -u, --user USER:PASSWORD     Basic authentication; the password is never printed (-v, --trace, errors)
  -A, --user-agent NAME        send User-Agent: NAME (a -H User-Agent wins)
  -o, --output FILE            write the body to FILE instead of stdout. Bodies are streamed, to FILE or
                               stdout, as they arrive: memory stays flat whatever their size, and what came
                               before a failure (a cut connection, the deadline) stays written
  -T, --upload-file FILE       send FILE as the body, streamed from disk and resent on a retry: a PUT unless
                               a command or -X says otherwise, Content-Type application/octet-stream unless -H
                               gives one; a URL ending in '/' gets FILE's name appended, as curl does.
                               - reads stdin: sent chunked, once (one attempt). Sending it is part of an
                               attempt: raise --attempt-timeout (default 5s) for a large file
  -O, --remote-name            write the body to a file in the current directory named after the URL's
                               last path segment (exit 23 when it has none)
  -D, --dump-header FILE       write the status line and response headers to FILE (- for stdout)
  -w, --write-out FORMAT       after each call, print FORMAT on stdout with curl's %{http_code},
                               %{time_total}, %{size_download}, %{num_retries} (retries, not redirects),
                               %{num_redirects}, %{redirect_url} (where a redirect not followed points),
                               %{content_type}, %{http_version} (1.1, 2; 0 without a response),
                               %{url_effective}, %{exitcode} and the client's %{attempts} and
                               %{breaker_state} (after the call: closed, open, half-open) replaced; \n, \t,
                               \r and %% as curl reads them
  -i, --include                print the status line and response headers before the body (head always
                               prints them)
  -f, --fail                   exit 22, printing no body, when the status is 400 or more
      --fail-with-body         exit 22 when the status is 400 or more, after printing the body
  -s, --silent                 print no error message, note or progress meter (the exit status still tells)
  -#, --progress-bar           show the progress as a bar instead of the meter
      --no-progress-meter      show no progress, keeping the error messages
                               The meter (percent, received, total, sent, speed, time spent and left) is
                               drawn on stderr when stderr is a terminal and the body goes to a file (or
                               stdout is not a terminal), as curl does; never with -v or --trace
      --compressed             accepted for curl's sake, changing nothing: the client already asks for
                               gzip, deflate, br and zstd and writes the body decoded. A -H Accept-Encoding
                               of your own gets the bytes as the server sent them, undecoded
  -v, --verbose                print the effective settings, the request as given to the client, the
                               response's status line and headers, and the attempts made, on stderr
      --cacert FILE            trust only this CA (PEM) for https; without it, the system's roots
      --cert FILE              client certificate (PEM) for mutual TLS; its key too, unless --key
      --key FILE               the client certificate's private key (PEM)
      --retry N                at most N retries after the first attempt, 0..9 (the client's setting
                               max_attempts = N+1; default: the client's, 2 retries). Retries happen only
                               where the client's rules allow: a safe method or an idempotency key, a
                               retryable result, budget left, time left
      --retry-delay T          wait up to T before each retry (backoff_base and backoff_max = T; the wait
                               is a random draw below it, and a Retry-After the server sends still counts);
                               0, as in curl, keeps the default backoff (the client's)
      --retry-max-time T       retry only within T: the call's own deadline (the earlier of it and
                               --max-time ends the call)
      --retry-all-errors       retry even a request the client would send once (a post without an
                               idempotency key): the call's retry mode is force; budget, deadline and
                               breaker still apply, and only results the client classifies retryable
  -m, --max-time T             deadline of the whole call: attempts, waits and body (setting timeout,
                               default 10s). T is seconds as in curl (2.5) or a duration (250ms, 5s, 1m);
                               0, curl's "no deadline", is the longest the client allows (the setting's
                               maximum, 1h), said in a note on stderr
      --connect-timeout T      bound on dialling and the TLS handshake (connect_timeout, default 2s)
      --resolve HOST:PORT:ADDR connect to ADDR for HOST:PORT, still verifying TLS for HOST (repeatable)
      --http1.1                HTTP/1.1 only (setting http_version "1.1")
      --http2                  HTTP/2 only (http_version "2"; https only, there is no HTTP/2 over plain text)

The client's own options:
      --attempt-timeout T      bound on one attempt, dial to response headers (attempt_timeout, default 5s)
      --idempotency-key KEY    send Idempotency-Key: KEY, making a post retryable
      --inject-fault FAULT     make the client fail on purpose (docs/failure-injection.md §14, repeatable): ACTION[@P] for the
                               URL's own origin, or POINT=ACTION[@P] for another (http:HOST:PORT). ACTION is
                               abort (the connection is lost), delay:T (wait T before sending, within
                               --attempt-timeout) or status:N (answer N without sending); P the probability
                               of each attempt, 0..1 (default 1). The client treats these as real outcomes:
                               classified, retried, counted. The scenario is not sent to the server
      --settings FILE          the client's settings as JSON (docs/settings.md §3: base_url, timeout, retry_budget,
                               breaker, trip, probe, bulkhead, tls, classify, ...); the flags above win
                               over the file; base_url defaults to the URL's origin
      --trace                  after each call, print on stderr its decision trace (docs/trace.md): per
                               attempt its request (a redirect hop's too), result (status, error or not
                               sent), how long it took, what reached the wire, how the classifier judged it
                               (retry again|done, breaker success|failure|ignored, Retry-After), the breaker
                               and the retry budget before and after it, the decision (done, again,
                               throttled, exhausted, expired, stopped, rejected), the wait before the next
                               attempt and where it came from (backoff, capped, retry_after), and the time
                               left; then the call's outcome with the breaker's counts and the budget after
                               it. A table on a terminal, a line per attempt otherwise. Also a line for the
                               client and one for each breaker state change, as the client logs it
      --trace-json             after each call, print its decision trace on stderr as the library gives it:
                               one JSON array per call, on one line (docs/trace.md §20.1)
      --metrics                after the output, print the client's metrics on stdout in the Prometheus text
                               format (request durations, breaker state, transitions and calls, retry decisions);
                               with -o the body goes to the file and only the metrics to stdout
      --repeat N               make N calls through the same client, one after another (default 1): the
                               breaker and budget carry over, as in a service. Bodies are streamed in order
      --concurrency N          with --repeat, up to N calls at once (threads on one client); each body is
                               then buffered whole (up to max_response_body) and written in call order, and
                               a file body (-T, --data-binary @FILE) is read into memory once

Demo:
  humus-http demo starts a built-in upstream on 127.0.0.1 that goes healthy -> slow -> failing (503 with
  Retry-After, connection resets) -> recovering, sends a steady load through one client, prints a timeline
  (one line per second) and a summary. No network, no setup.
      --duration SECONDS       length of the run, 5..3600 (default 30); the phases scale with it
      --rate N                 calls started per second, 1..2000 (default 200)
      --plot [FILE]            also write the timeline as an SVG chart (open it in a browser); without
                               FILE, to $TMPDIR/humus-http-demo.svg (/tmp when TMPDIR is unset)
      --slow-call-trip         the breaker also counts attempts over 100ms as slow and opens when 20% of its
                               window were: the slow phase then opens it (docs/breaker.md §9.3a)

Replay:
  humus-http replay runs recorded traffic (JSON lines: time, method, status or error, latency, Retry-After)
  through a client of the settings on a virtual clock and prints what it would have done: calls, attempts,
  retries, throttled, rejected, breaker transitions with their times, load amplification, p50/p99 latency.
      --settings FILE          the client's settings (JSON; base_url may be left out); required
      --compare FILE2          also replay with these settings, in a column beside the first
      --seed N                 the virtual clock's random seed (default 1): the same seed, the same report

Shared state (docs/shared.md §22.5): the segments that share.name makes in /dev/shm, one per name.
  humus-http shared ls         each segment: name, size, origins, live processes
  humus-http shared show NAME  per origin: breaker state and generation, counts, budget balance, bulkhead
                               in flight/max; the processes attached (--json: the whole report as JSON)
  humus-http shared reset NAME removes the segment; attached processes keep theirs until they detach.
                               An unknown NAME is an error (exit 1)

)";
  text += exit_code::help_table();
  return text;
}

}  // namespace humus::cli
