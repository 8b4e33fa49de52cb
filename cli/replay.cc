#include "replay.h"

#include <humus_http.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <climits>
#include <condition_variable>
#include <cstdlib>
#include <cstdio>
#include <fstream>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>

#include "capi.h"
#include "exit_codes.h"
#include "replay_report.h"

namespace humus::cli::replay {

namespace {

using Json = nlohmann::json;

// The dependency's origin when the settings name none: never resolved, the mock transport answers for it.
constexpr const char* kDefaultBaseUrl = "http://dependency.replay";
// The pacer's origin: a second client whose mock answers come back when the next recorded call is due.
constexpr const char* kPacerUrl = "http://pacer.replay/";
constexpr const char* kPacerHost = "pacer.replay";
constexpr const char* kPacerHopHeader = "X-Replay-Hop-Ms";
// A pacer call waits at most this long; a longer silence in the recording takes several.
constexpr int64_t kMaxHopMs = 10 * 60 * 1000;

// One replay: the traffic, the two clients and what they did. Every callback (mock answers, call outcomes,
// log records) runs on the runtime's event-loop thread; the driving thread only waits for `finished_`.
//
// How time moves (docs/replay.md §21.3): calls are submitted asynchronously, so any number are in flight at
// once and the bulkhead, the breaker and the budget see them overlap as they did. The virtual clock jumps
// whenever the loop sleeps on a timer; a thread submitting from outside could not say "not yet". So the
// submissions happen on the loop itself: a pacer call, answered by the mock after exactly the gap to the next
// recorded call, submits in its outcome callback every call due at that instant, then the next pacer call.
class Replay {
 public:
  Replay(const Traffic& traffic, Outcome& out) : traffic_(traffic), out_(out) {}

  std::optional<Failure> run(humus_runtime* rt, humus_client* dependency, humus_client* pacer,
                             const std::string& url) {
    rt_ = rt;
    dependency_ = dependency;
    pacer_ = pacer;
    url_ = url;
    {
      std::lock_guard<std::recursive_mutex> lock(mu_);
      next_pacer(0);
    }
    std::unique_lock<std::recursive_mutex> lock(mu_);
    finished_cv_.wait(lock, [this] { return finished_; });
    return failure_;
  }

  static humus_status respond(void* ud, const humus_mock_request* req, humus_mock_reply* reply) {
    auto* self = static_cast<Replay*>(ud);
    if (std::string(humus_mock_request_url(req)).rfind(kPacerUrl, 0) == 0) {
      const char* hop = humus_mock_request_header(req, kPacerHopHeader);
      humus_mock_reply_set_delay_ms(reply, hop != nullptr ? std::strtoll(hop, nullptr, 10) : 0);
      return HUMUS_OK;
    }
    const TrafficLine& line = self->traffic_.outcome_at(humus_runtime_elapsed_ms(self->rt_));
    if (line.hang) {
      humus_mock_reply_set_hang(reply);
      return HUMUS_OK;
    }
    humus_mock_reply_set_delay_ms(reply, line.latency_ms);
    if (line.error != HUMUS_OK) {
      humus_mock_reply_set_error(reply, line.error, "replayed from the recording");
      return HUMUS_OK;
    }
    humus_mock_reply_set_status(reply, line.status);
    if (line.retry_after) humus_mock_reply_add_header(reply, "Retry-After", line.retry_after->c_str());
    return HUMUS_OK;
  }

  static void on_log(void* ud, const humus_log_record* r) {
    auto* self = static_cast<Replay*>(ud);
    if (r->new_state < 0 || std::string(r->event) != "humus.circuit.state_change") return;
    if (std::string(r->server_address) == kPacerHost) return;
    const int64_t now = humus_runtime_elapsed_ms(self->rt_);
    std::lock_guard<std::recursive_mutex> lock(self->mu_);
    // A record is dated on the clock's calendar, which the ABI does not give as an offset. A change a result
    // caused (every change but open -> half-open, which is lazy) is dated now, so its date minus the elapsed
    // time is the calendar's start; a lazy change is dated earlier. The largest difference is the start.
    self->calendar_start_ms_ = std::max(self->calendar_start_ms_, r->time_unix_ms - now);
    self->out_.transitions.push_back(Transition{r->time_unix_ms, r->previous_state, r->new_state});
  }

  // Called once the runtime is gone: the records' dates become times from the replay's start.
  void date_transitions() {
    for (Transition& t : out_.transitions) t.ms -= calendar_start_ms_;
  }

 private:
  struct Pending {
    Replay* replay;
    int64_t start_ms;
  };

  static void on_pacer(void* ud, humus_status status, humus_response* resp, humus_error* err) {
    auto* self = static_cast<Replay*>(ud);
    humus_response_free(resp);
    std::lock_guard<std::recursive_mutex> lock(self->mu_);
    if (status != HUMUS_OK) {
      self->fail("the replay's pacer call failed: " + describe(err));
      humus_error_free(err);
      return;
    }
    self->submit_due();
  }

  static void on_call(void* ud, humus_status status, humus_response* resp, humus_error* err) {
    auto* pending = static_cast<Pending*>(ud);
    Replay* self = pending->replay;
    const Response owned_resp(resp);
    const Error owned_err(err);
    const int64_t now = humus_runtime_elapsed_ms(self->rt_);
    char* json = nullptr;
    size_t len = 0;
    if (status == HUMUS_OK) {
      humus_error* trace_err = nullptr;
      if (humus_response_trace(resp, &json, &len, &trace_err) != HUMUS_OK) humus_error_free(trace_err);
    } else {
      (void)humus_error_trace(err, &json, &len);
    }
    const LibString owned_json(json);
    std::lock_guard<std::recursive_mutex> lock(self->mu_);
    Outcome& o = self->out_;
    ++o.calls;
    o.latency_ms.push_back(now - pending->start_ms);
    o.end_ms = std::max(o.end_ms, now);
    if (status == HUMUS_OK) {
      const int32_t code = humus_response_status(resp);
      (code >= 200 && code < 300 ? o.ok : o.answered_else) += 1;
      o.attempts += humus_response_attempts(resp);
    } else {
      o.attempts += humus_error_attempts(err);
      if (status == HUMUS_E_REJECTED) {
        ++o.rejected_calls;
      } else if (status == HUMUS_E_BULKHEAD_FULL) {
        ++o.bulkhead_full;
      } else {
        ++o.failed;
      }
    }
    const Json trace = json != nullptr ? Json::parse(std::string(json, len), nullptr, false) : Json();
    if (trace.is_array()) {
      for (const Json& rec : trace) {
        if (!rec.is_object()) continue;
        o.wire_requests += rec.value("wire_sends", int64_t{0});
        const std::string decision = rec.value("decision", "");
        if (decision == "again") ++o.retries;
        if (decision == "throttled") ++o.throttled;
        if (decision == "rejected") ++o.rejected;
      }
    } else if (json != nullptr) {
      self->fail("a call's decision trace could not be read");
    }
    --self->in_flight_;
    self->maybe_finish();
  }

  // Submits every call recorded at or before now, then the pacer call that comes back at the next one.
  void submit_due() {
    const int64_t now = humus_runtime_elapsed_ms(rt_);
    const std::vector<TrafficLine>& lines = traffic_.lines;
    while (cursor_ < lines.size() && lines[cursor_].time_ms <= now && !failure_) {
      const TrafficLine& line = lines[cursor_++];
      if (line.resend > 0) continue;  // a retry the recording client made: the replayed client decides its own
      humus_request* raw = nullptr;
      humus_error* err = nullptr;
      if (humus_request_new(line.method.c_str(), url_.c_str(), &raw, &err) != HUMUS_OK) {
        fail("line " + std::to_string(line.line_number) + ": " + describe(err));
        humus_error_free(err);
        break;
      }
      const Request request(raw);
      pending_.push_back(std::make_unique<Pending>(Pending{this, now}));
      ++in_flight_;
      out_.max_in_flight = std::max(out_.max_in_flight, in_flight_);
      if (humus_client_submit(dependency_, raw, &Replay::on_call, pending_.back().get(), nullptr, &err) !=
          HUMUS_OK) {
        --in_flight_;
        fail("could not submit a call: " + describe(err));
        humus_error_free(err);
        break;
      }
    }
    if (cursor_ < lines.size() && !failure_) {
      next_pacer(std::min(lines[cursor_].time_ms - now, kMaxHopMs));
    } else {
      maybe_finish();
    }
  }

  void next_pacer(int64_t hop_ms) {
    humus_request* raw = nullptr;
    humus_error* err = nullptr;
    if (humus_request_new("GET", kPacerUrl, &raw, &err) != HUMUS_OK ||
        humus_request_set_header(raw, kPacerHopHeader, std::to_string(hop_ms).c_str(), &err) != HUMUS_OK ||
        humus_client_submit(pacer_, raw, &Replay::on_pacer, this, nullptr, &err) != HUMUS_OK) {
      humus_request_free(raw);
      fail("could not start the replay's pacer: " + describe(err));
      humus_error_free(err);
      return;
    }
    humus_request_free(raw);
  }

  void fail(std::string message) {
    if (!failure_) failure_ = Failure{std::move(message), exit_code::kFailure};
    maybe_finish();
  }

  void maybe_finish() {
    if (in_flight_ > 0 || (cursor_ < traffic_.lines.size() && !failure_)) return;
    finished_ = true;
    finished_cv_.notify_all();
  }

  const Traffic& traffic_;
  Outcome& out_;
  humus_runtime* rt_ = nullptr;
  humus_client* dependency_ = nullptr;
  humus_client* pacer_ = nullptr;
  std::string url_;

  // Guards what follows. The callbacks all run on the loop thread, the waiting thread reads at the end;
  // recursive because a submission may deliver its outcome before it returns.
  std::recursive_mutex mu_;
  std::condition_variable_any finished_cv_;
  bool finished_ = false;
  std::optional<Failure> failure_;
  size_t cursor_ = 0;  // the next line to submit
  int64_t in_flight_ = 0;
  std::vector<std::unique_ptr<Pending>> pending_;
  int64_t calendar_start_ms_ = INT64_MIN;
};

std::optional<Failure> make_settings(const std::string& json, Settings& out, std::string& url) {
  humus_settings* raw = nullptr;
  humus_error* err = nullptr;
  if (humus_settings_from_json(json.data(), json.size(), &raw, &err) != HUMUS_OK) {
    const Error owned(err);
    return Failure{describe(err), exit_code::kConfig};
  }
  out.reset(raw);
  const Json parsed = Json::parse(json, nullptr, false);
  url = parsed.value("base_url", std::string(kDefaultBaseUrl));
  return std::nullopt;
}

}  // namespace

int64_t Outcome::percentile_ms(double p) const {
  if (latency_ms.empty()) return 0;
  const auto rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(latency_ms.size())));
  return latency_ms[std::clamp<size_t>(rank, 1, latency_ms.size()) - 1];
}

std::optional<Failure> simulate(const Traffic& traffic, const std::string& settings_json, uint64_t seed,
                                Outcome& out) {
  out = Outcome{};
  Json settings = Json::parse(settings_json, nullptr, false);
  if (!settings.is_object()) return Failure{"the settings are not a JSON object", exit_code::kConfig};
  if (!settings.contains("base_url")) settings["base_url"] = kDefaultBaseUrl;
  Settings dependency_settings;
  Settings pacer_settings;
  std::string url;
  std::string pacer_url;
  if (auto f = make_settings(settings.dump(), dependency_settings, url)) return f;
  const Json pacer_json{{"base_url", kPacerUrl}, {"timeout", "1h"}, {"attempt_timeout", "1h"}};
  if (auto f = make_settings(pacer_json.dump(), pacer_settings, pacer_url)) return f;

  Replay replay(traffic, out);  // outlives the runtime: the mock and the log sink point at it
  {
    humus_runtime* raw_rt = nullptr;
    humus_error* err = nullptr;
    const std::string options = Json{{"clock", "virtual"}, {"seed", seed}}.dump();
    if (humus_runtime_new(options.data(), options.size(), &raw_rt, &err) != HUMUS_OK) {
      const Error owned(err);
      return Failure{describe(err), exit_code::kFailure};
    }
    const Runtime rt(raw_rt);
    humus_mock_transport mock = HUMUS_MOCK_TRANSPORT_INIT;
    mock.respond = &Replay::respond;
    mock.user_data = &replay;
    humus_log_sink sink = HUMUS_LOG_SINK_INIT;
    sink.record = &Replay::on_log;
    sink.user_data = &replay;
    if (humus_runtime_set_mock_transport(raw_rt, &mock, &err) != HUMUS_OK ||
        humus_runtime_set_log_sink(raw_rt, &sink, &err) != HUMUS_OK) {
      const Error owned(err);
      return Failure{describe(err), exit_code::kFailure};
    }
    humus_client* raw_dep = nullptr;
    if (humus_client_new(raw_rt, dependency_settings.get(), &raw_dep, &err) != HUMUS_OK) {
      const Error owned(err);
      return Failure{describe(err), exit_code::kConfig};
    }
    const Client dependency(raw_dep);
    humus_client* raw_pacer = nullptr;
    if (humus_client_new(raw_rt, pacer_settings.get(), &raw_pacer, &err) != HUMUS_OK) {
      const Error owned(err);
      return Failure{describe(err), exit_code::kFailure};
    }
    const Client pacer(raw_pacer);
    if (std::optional<Failure> f = replay.run(raw_rt, raw_dep, raw_pacer, url)) return f;
  }
  replay.date_transitions();
  std::sort(out.latency_ms.begin(), out.latency_ms.end());
  return std::nullopt;
}

}  // namespace humus::cli::replay

namespace humus::cli::replay {

namespace {

constexpr const char* kReplayUsage =
    "usage: humus-http replay --settings FILE [--compare FILE2] [--seed N] TRAFFIC.jsonl\n";

struct ReplayArgs {
  std::string settings;
  std::optional<std::string> compare;
  uint64_t seed = 1;
  std::string traffic;
  bool help = false;
};

std::optional<std::string> parse_replay_args(const std::vector<std::string>& args, ReplayArgs& out) {
  std::vector<std::string> positional;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string flag = args[i];
    std::optional<std::string> value;
    if (flag == "-h" || flag == "--help") {
      out.help = true;
      return std::nullopt;
    }
    if (flag.rfind("--", 0) != 0 || flag == "--") {
      if (flag == "--") {
        positional.insert(positional.end(), args.begin() + static_cast<std::ptrdiff_t>(i) + 1, args.end());
        break;
      }
      positional.push_back(flag);
      continue;
    }
    if (const size_t eq = flag.find('='); eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag.resize(eq);
    }
    if (flag != "--settings" && flag != "--compare" && flag != "--seed")
      return "replay: unknown option " + flag + " (replay takes --settings, --compare, --seed)";
    if (!value) {
      if (i + 1 >= args.size()) return "replay: " + flag + " needs a value";
      value = args[++i];
    }
    if (flag == "--settings") {
      out.settings = *value;
    } else if (flag == "--compare") {
      out.compare = *value;
    } else {
      char* end = nullptr;
      errno = 0;
      const unsigned long long seed = std::strtoull(value->c_str(), &end, 10);
      if (value->empty() || *end != '\0' || errno != 0 || (*value)[0] == '-')
        return "replay: --seed must be a non-negative integer, got '" + *value + "'";
      out.seed = seed;
    }
  }
  if (out.settings.empty()) return "replay: --settings FILE is required";
  if (positional.size() != 1)
    return positional.empty() ? "replay: which traffic? (one TRAFFIC.jsonl file)"
                              : "replay: one traffic file only, got " + std::to_string(positional.size());
  out.traffic = positional[0];
  return std::nullopt;
}

std::optional<std::string> read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return text.str();
}

// The column heads: the files' names, or their paths when two share a name.
std::vector<std::string> column_names(const std::vector<std::string>& paths) {
  std::vector<std::string> names;
  for (const std::string& p : paths) {
    const size_t slash = p.find_last_of('/');
    names.push_back(slash == std::string::npos ? p : p.substr(slash + 1));
  }
  if (names.size() == 2 && names[0] == names[1]) return paths;
  return names;
}

}  // namespace

int run_replay(const std::vector<std::string>& args) {
  ReplayArgs a;
  if (std::optional<std::string> error = parse_replay_args(args, a)) {
    std::fprintf(stderr, "humus-http: %s\n%s", error->c_str(), kReplayUsage);
    return exit_code::kUsage;
  }
  if (a.help) {
    std::fputs(kReplayUsage, stdout);
    std::fputs("Runs recorded traffic through a client of the settings on a virtual clock and prints what it\n"
               "would have done; --compare prints a second settings file beside the first (docs/replay.md).\n",
               stdout);
    return exit_code::kOk;
  }
  const std::optional<std::string> text = read_text(a.traffic);
  if (!text) {
    std::fprintf(stderr, "humus-http: replay: cannot read %s\n", a.traffic.c_str());
    return exit_code::kRead;
  }
  Traffic traffic;
  if (std::optional<std::string> error = parse_traffic(*text, traffic)) {
    std::fprintf(stderr, "humus-http: replay: %s: %s\n", a.traffic.c_str(), error->c_str());
    return exit_code::kUsage;
  }
  std::vector<std::string> paths{a.settings};
  if (a.compare) paths.push_back(*a.compare);
  const std::vector<std::string> names = column_names(paths);
  std::vector<Column> columns;
  for (size_t i = 0; i < paths.size(); ++i) {
    const std::optional<std::string> settings = read_text(paths[i]);
    if (!settings) {
      std::fprintf(stderr, "humus-http: replay: cannot read %s\n", paths[i].c_str());
      return exit_code::kConfig;
    }
    Column column{names[i], {}};
    if (std::optional<Failure> f = simulate(traffic, *settings, a.seed, column.outcome)) {
      std::fprintf(stderr, "humus-http: replay: %s: %s\n", paths[i].c_str(), f->message.c_str());
      return f->exit_code;
    }
    columns.push_back(std::move(column));
  }
  const std::string report = format_report(a.traffic, traffic, a.seed, columns);
  if (std::fwrite(report.data(), 1, report.size(), stdout) != report.size() || std::fflush(stdout) != 0)
    return exit_code::kWrite;
  return exit_code::kOk;
}

}  // namespace humus::cli::replay
