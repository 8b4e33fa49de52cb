#pragma once
// The command line of humus-http, parsed into what each command needs. Every refusal names the flag or value.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace humus::cli {

// One -d / --data-binary / --data-urlencode / --json: the bytes, or a file to read them from ("-" is stdin).
struct DataPiece {
  enum class Kind { kRaw, kUrlencode, kJson } kind = Kind::kRaw;
  std::string flag;  // as given, for messages: "-d", "--data-binary"
  std::string text;  // the literal, or the file name after '@'
  std::string name;  // --data-urlencode NAME=..., NAME@...: sent as NAME=<encoded>
  bool has_name = false;
  bool from_file = false;
  bool strip_newlines = false;  // -d @FILE drops CR and LF, as curl does; --data-binary keeps every byte
};

// One -F part: NAME=VALUE, NAME=<FILE (the file's text as the value) or NAME=@FILE (an upload).
struct FormPart {
  std::string name;
  std::string value;  // the literal, or the file name
  bool from_file = false;
  bool upload = false;                  // '@': sent with a filename and a content type
  std::optional<std::string> type;      // ;type=
  std::optional<std::string> filename;  // ;filename=
};

struct FetchOptions {
  std::string method;  // "GET", "HEAD", "POST", ..., or -X's token as given
  std::string url;
  std::optional<std::string> method_flag;  // -X, as given
  bool head = false;                       // -I
  std::vector<std::pair<std::string, std::string>> headers;  // -H, in order ("Name;" gives an empty value)
  std::vector<std::string> unset_headers;                     // -H 'Name:': not to be sent
  std::vector<DataPiece> data;
  std::optional<std::string> output;  // -o
  bool include = false;               // -i
  bool fail = false;                  // -f
  bool fail_with_body = false;        // --fail-with-body
  bool remote_name = false;           // -O
  std::optional<std::string> dump_header;  // -D FILE, "-" for stdout
  std::optional<std::string> write_out;    // -w, checked by parse_args
  std::optional<std::string> user;         // -u USER:PASSWORD; never printed
  std::optional<std::string> user_agent;   // -A
  std::vector<FormPart> form;              // -F, in order
  bool get_query = false;                  // -G: the data goes into the query string
  std::optional<std::string> http_version;  // --http1.1 "1.1", --http2 "2"
  std::optional<std::string> retry_delay;   // --retry-delay, as backoff_base and backoff_max
  std::optional<int64_t> retry_max_time_ms;  // --retry-max-time: the call's own timeout
  bool retry_all_errors = false;             // --retry-all-errors: the call's retry mode is force
  bool silent = false;                // -s
  bool verbose = false;               // -v
  bool trace = false;                 // --trace
  bool trace_json = false;            // --trace-json
  std::optional<std::string> range;          // -r, as "0-499"
  std::optional<std::string> oauth2_bearer;  // --oauth2-bearer; never printed
  std::optional<int32_t> max_redirs;         // --max-redirs, -1 for the client's limit
  bool metrics = false;               // --metrics
  std::optional<std::string> cacert, cert, key;
  std::optional<int32_t> retry;  // --retry N: N retries, max_attempts N+1
  // Durations in the settings' JSON spelling ("1500ms"), converted from curl's seconds.
  std::optional<std::string> max_time, connect_timeout, attempt_timeout;
  std::optional<std::string> idempotency_key;
  std::optional<std::string> settings_file;
  std::vector<std::pair<std::string, std::string>> resolve;  // "host:port" -> "address:port"
  // --inject-fault, in order: "ACTION[@P]" for the URL's own point, or "POINT=ACTION[@P]" (docs/failure-injection.md §14).
  std::vector<std::string> faults;
  bool max_time_longest = false;  // -m 0: the longest deadline the settings allow
  std::optional<std::string> upload_file;  // -T FILE, "-" for stdin
  bool progress_bar = false;  // -#
  bool no_progress = false;   // --no-progress-meter
  int32_t repeat = 1;
  int32_t concurrency = 1;  // --concurrency
};

struct DemoOptions {
  int32_t duration_s = 30;
  int32_t rate = 200;               // calls per second
  std::optional<std::string> plot;  // SVG file
  bool slow_call_trip = false;       // --slow-call-trip: the breaker also opens on slow attempts
};

struct Invocation {
  enum class Command { kHelp, kVersion, kFetch, kDemo } command = Command::kHelp;
  FetchOptions fetch;
  DemoOptions demo;
};

// Parses argv (argv[0] excluded). On failure returns the one-line reason, naming the flag or value.
std::optional<std::string> parse_args(const std::vector<std::string>& args, Invocation& out);

// The complete --help text.
std::string help_text();

// "250ms" from curl's seconds ("0.25") or a duration with its unit ("250ms", "2s", "1m"); nullopt when the
// text is neither or is not above zero.
std::optional<std::string> parse_duration(const std::string& text);
// Whether the text is a duration of zero ("0", "0.0", "0s"): -m 0, curl's "no deadline".
bool is_zero_duration(const std::string& text);

}  // namespace humus::cli
