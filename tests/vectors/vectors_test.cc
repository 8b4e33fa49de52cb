// The conformance vectors (docs/vectors.md §18): every tests/vectors/*.json file is one scenario — settings, a script of
// what the dependency does, the calls to make and what must come of them — run here through the C ABI alone,
// as every binding runs the same files through its own API. The format is tests/vectors/README.md; this file
// is its reference runner. It prints one line per vector: "vector <name>: ok" or its first mismatch.
//
// HUMUS_VECTOR_DUMP=1 also prints what each call and step observed, as JSON: the way to write a new vector's
// expectations (then check every value by reasoning against docs/ before committing it).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "humus_http.h"

namespace {
namespace HUMUS_UNITY_ID {

using nlohmann::json;
namespace fs = std::filesystem;

// The header the runner adds to every call so the mock knows which call an attempt belongs to.
constexpr const char* kCallHeader = "Vector-Call";

// HUMUS_VECTORS_DIR runs another set of files (a draft vector, a binding's copy) through this runner.
fs::path vectors_dir() {
  // NOLINTNEXTLINE(concurrency-mt-unsafe): nothing in this process sets the environment.
  if (const char* dir = std::getenv("HUMUS_VECTORS_DIR"); dir != nullptr && *dir != '\0') return {dir};
  return fs::path(HUMUS_SOURCE_DIR) / "tests" / "vectors";
}

std::vector<std::string> vector_files() {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(vectors_dir(), ec)) {
    if (entry.is_regular_file() && entry.path().extension() == ".json")
      files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

bool dumping() {
  const char* v = std::getenv("HUMUS_VECTOR_DUMP");  // NOLINT(concurrency-mt-unsafe): as above
  return v != nullptr && *v != '\0' && std::string(v) != "0";
}

// "HUMUS_E_CONNECT" → its number, by asking the library for every number's name (ABI only).
std::optional<humus_status> status_by_name(const std::string& name) {
  for (humus_status s = 0; s < 1000; ++s) {
    if (name == humus_status_name(s)) return s;
  }
  return std::nullopt;
}

const char* state_name(int32_t state) {
  switch (state) {
    case HUMUS_CIRCUIT_CLOSED:
      return "closed";
    case HUMUS_CIRCUIT_OPEN:
      return "open";
    case HUMUS_CIRCUIT_HALF_OPEN:
      return "half_open";
  }
  return "unknown";
}

// The path and query of an absolute URL: "http://payments:8080/a?b" → "/a?b".
std::string path_of(const std::string& url) {
  const size_t scheme = url.find("://");
  const size_t slash = url.find_first_of("/?#", scheme == std::string::npos ? 0 : scheme + 3);
  if (slash == std::string::npos) return "/";
  std::string rest = url.substr(slash);
  if (rest[0] != '/') rest.insert(rest.begin(), '/');
  return rest;
}

// The origin of an absolute URL: "http://payments:8080/a" → "http://payments:8080".
std::string origin_of(const std::string& url) {
  const size_t scheme = url.find("://");
  const size_t slash = url.find_first_of("/?#", scheme == std::string::npos ? 0 : scheme + 3);
  return slash == std::string::npos ? url : url.substr(0, slash);
}

// --- Mismatches --------------------------------------------------------------------------------------------

class Problems {
 public:
  void add(const std::string& path, const std::string& what) {
    std::lock_guard<std::mutex> lock(mu_);
    list_.push_back(path + ": " + what);
  }
  std::vector<std::string> list() const {
    std::lock_guard<std::mutex> lock(mu_);
    return list_;
  }

  // Refuses keys the format does not know: a misspelt expectation must not pass by checking nothing.
  bool keys(const json& object, const std::string& path, std::initializer_list<const char*> allowed) {
    if (!object.is_object()) {
      add(path, "must be an object");
      return false;
    }
    bool ok = true;
    for (auto it = object.begin(); it != object.end(); ++it) {
      const std::string& key = it.key();
      if (std::none_of(allowed.begin(), allowed.end(), [&](const char* a) { return key == a; })) {
        std::string at = path;
        at += '.';
        at += key;
        add(at, "unknown key");
        ok = false;
      }
    }
    return ok;
  }

  template <typename T>
  void equal(const std::string& path, const json& expected, const T& actual) {
    if constexpr (std::is_same_v<T, json>) {
      if (expected != actual) add(path, "expected " + expected.dump() + ", got " + actual.dump());
    } else {
      equal(path, expected, json(actual));
    }
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::string> list_;
};

// --- The scripted dependency -------------------------------------------------------------------------------

struct Received {
  int call = -1;  // the Vector-Call header; -1 when absent
  std::string method;
  std::string url;
  std::string path;
  int64_t at_ms = 0;  // humus_runtime_elapsed_ms when the attempt reached the mock
  std::map<std::string, std::optional<std::string>> headers;  // the names some expectation asks about
  std::optional<std::string> body;                            // none: no body
};

struct CallControl {
  int cancel_at_attempt = 0;  // 0: never
  int seen = 0;
  humus_cancel* token = nullptr;  // a blocking call's
  humus_call* handle = nullptr;   // an asynchronous call's
};

class Mock {
 public:
  Mock(json script, std::set<std::string> header_names, Problems& problems)
      : script_(std::move(script)), header_names_(std::move(header_names)), problems_(problems) {}

  void attach(humus_runtime* rt) { rt_ = rt; }

  static humus_status respond(void* user, const humus_mock_request* r, humus_mock_reply* reply) {
    return static_cast<Mock*>(user)->on_request(r, reply);
  }

  // While the gate is shut, attempts wait in the mock: the thread driving them stays busy, so the virtual
  // clock cannot move until every call of a concurrent group has been handed to the library.
  void shut_gate() {
    std::lock_guard<std::mutex> lock(mu_);
    gate_open_ = false;
  }
  void open_gate() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      gate_open_ = true;
    }
    cv_.notify_all();
  }

  void control(int call, CallControl c) {
    std::lock_guard<std::mutex> lock(mu_);
    controls_[call] = c;
  }
  void set_handle(int call, humus_call* handle) {
    std::lock_guard<std::mutex> lock(mu_);
    controls_[call].handle = handle;
  }

  std::vector<Received> received() {
    std::lock_guard<std::mutex> lock(mu_);
    return received_;
  }
  std::vector<Received> received_by(int call) {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<Received> out;
    for (const Received& r : received_) {
      if (r.call == call) out.push_back(r);
    }
    return out;
  }

 private:
  humus_status on_request(const humus_mock_request* r, humus_mock_reply* reply) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return gate_open_; });
    Received rec;
    rec.method = humus_mock_request_method(r);
    rec.url = humus_mock_request_url(r);
    rec.path = path_of(rec.url);
    if (const char* id = humus_mock_request_header(r, kCallHeader)) rec.call = std::atoi(id);
    rec.at_ms = humus_runtime_elapsed_ms(rt_);
    for (const std::string& name : header_names_) {
      const char* value = humus_mock_request_header(r, name.c_str());
      rec.headers[name] = value == nullptr ? std::nullopt : std::optional<std::string>(value);
    }
    const void* data = nullptr;
    size_t len = 0;
    humus_mock_request_body(r, &data, &len);
    if (len > 0) rec.body = std::string(static_cast<const char*>(data), len);
    received_.push_back(rec);

    if (auto it = controls_.find(rec.call); it != controls_.end()) {
      CallControl& c = it->second;
      if (++c.seen == c.cancel_at_attempt) {
        if (c.token != nullptr) humus_cancel_trigger(c.token);
        if (c.handle != nullptr) humus_call_cancel(c.handle);
      }
    }

    std::string key = rec.method + " " + rec.path;
    if (!script_.contains(key)) key = "*";
    if (!script_.contains(key)) {
      problems_.add("script", R"(no reply for ")" + rec.method + " " + rec.path + R"(" and no "*")");
      humus_mock_reply_set_error(reply, HUMUS_E_CONNECT, "unscripted request");
      return HUMUS_OK;
    }
    const json& replies = script_[key];
    size_t& next = served_[key];
    const json& one = replies.at(std::min(next, replies.size() - 1));
    ++next;
    apply(one, "script." + key, reply);
    return HUMUS_OK;
  }

  void apply(const json& one, const std::string& path, humus_mock_reply* reply) {
    humus_mock_reply_set_status(reply, one.value("status", 200));
    if (one.contains("headers")) {
      for (const json& h : one["headers"]) {
        humus_mock_reply_add_header(reply, h.at(0).get<std::string>().c_str(),
                                    h.at(1).get<std::string>().c_str());
      }
    }
    if (one.contains("body")) {
      const std::string body = one["body"].get<std::string>();
      humus_mock_reply_set_body(reply, body.data(), body.size());
    } else if (one.contains("body_size")) {
      const std::string body(one["body_size"].get<size_t>(), 'x');
      humus_mock_reply_set_body(reply, body.data(), body.size());
    }
    if (one.contains("delay_ms")) humus_mock_reply_set_delay_ms(reply, one["delay_ms"].get<int64_t>());
    if (one.value("hang", false)) humus_mock_reply_set_hang(reply);
    if (one.contains("error")) {
      const std::string name = one["error"].get<std::string>();
      const std::optional<humus_status> code = status_by_name(name);
      if (!code) problems_.add(path + ".error", "unknown status name " + name);
      humus_mock_reply_set_error(reply, code.value_or(HUMUS_E_CONNECT),
                                 one.value("message", "scripted").c_str());
    }
    if (one.contains("body_error")) {
      const std::string name = one["body_error"].get<std::string>();
      const std::optional<humus_status> code = status_by_name(name);
      if (!code) problems_.add(path + ".body_error", "unknown status name " + name);
      humus_mock_reply_set_body_error(reply, one.value("body_error_after", size_t{0}),
                                      code.value_or(HUMUS_E_CONNECTION_LOST), "scripted");
    }
  }

  const json script_;
  const std::set<std::string> header_names_;
  Problems& problems_;
  humus_runtime* rt_ = nullptr;

  std::mutex mu_;
  std::condition_variable cv_;
  bool gate_open_ = true;                 // guarded by mu_
  std::map<std::string, size_t> served_;  // guarded by mu_: replies served per script key
  std::vector<Received> received_;        // guarded by mu_
  std::map<int, CallControl> controls_;   // guarded by mu_
};

// --- Code-supplied callbacks (docs/retries.md §5.4, docs/breaker.md §9.3): what a binding's user code would install
// ---------------------

struct ClassifierSpec {
  std::set<int32_t> fail_on_status;  // the callback fails (a binding: raises, panics) for these statuses
};

humus_status vector_classify(void* user, const humus_attempt* a, humus_classification* out) {
  const auto* spec = static_cast<const ClassifierSpec*>(user);
  if (spec->fail_on_status.count(humus_attempt_status(a)) != 0) return HUMUS_E_CALLBACK;
  return humus_classify_default(a, out);
}

struct PolicySpec {
  uint64_t consecutive_failures = 5;
  uint64_t successes_to_close = 3;
  std::string fail;  // "trip", "probe" or "": which callback fails every time it is asked
};

humus_status vector_trip(void* user, const humus_breaker_counts* counts, int32_t* open) {
  const auto* spec = static_cast<const PolicySpec*>(user);
  if (spec->fail == "trip") return HUMUS_E_CALLBACK;
  *open = counts->consecutive_failures >= spec->consecutive_failures ? 1 : 0;
  return HUMUS_OK;
}

humus_status vector_probe(void* user, const humus_breaker_counts* counts, int32_t* decision) {
  const auto* spec = static_cast<const PolicySpec*>(user);
  if (spec->fail == "probe") return HUMUS_E_CALLBACK;
  if (counts->failures > 0) {
    *decision = HUMUS_PROBE_REOPEN;
  } else if (counts->successes >= spec->successes_to_close) {
    *decision = HUMUS_PROBE_CLOSE;
  } else {
    *decision = HUMUS_PROBE_CONTINUE;
  }
  return HUMUS_OK;
}

// --- One call's outcome
// --------------------------------------------------------------------------------------

struct Outcome {
  humus_status rc = HUMUS_OK;
  int32_t status = 0;
  int32_t attempts = 0;
  int64_t retry_after_ms = 0;
  std::string message;
  std::vector<std::string> fields;
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string url;
  int64_t start_ms = 0;
  int64_t end_ms = 0;
  std::optional<std::string> read_error;  // an opened call's: the status name of the read that failed
  json trace = json::array();             // the decision trace (docs/trace.md §20), as the C ABI renders it
};

// The call's decision trace from its response or error; a trace that cannot be read is an empty one, which
// any expected record then fails.
json read_trace(const humus_response* resp, const humus_error* err) {
  char* text = nullptr;
  size_t len = 0;
  const humus_status rc =
      resp != nullptr ? humus_response_trace(resp, &text, &len, nullptr) : humus_error_trace(err, &text, &len);
  json out = rc == HUMUS_OK ? json::parse(std::string(text, len), nullptr, false) : json::array();
  humus_string_free(text);
  return out.is_array() ? out : json::array();
}

void fill(Outcome& o, humus_status rc, humus_response* resp, humus_error* err) {
  o.rc = rc;
  if (resp != nullptr) {
    o.status = humus_response_status(resp);
    o.attempts = humus_response_attempts(resp);
    const void* data = nullptr;
    size_t len = 0;
    if (humus_response_body(resp, &data, &len, nullptr) == HUMUS_OK && len > 0) {
      o.body.assign(static_cast<const char*>(data), len);
    }
    for (size_t i = 0; i < humus_response_header_count(resp); ++i) {
      const char* name = nullptr;
      const char* value = nullptr;
      if (humus_response_header_at(resp, i, &name, &value) == HUMUS_OK) o.headers.emplace_back(name, value);
    }
    o.url = humus_response_url(resp);
    o.trace = read_trace(resp, nullptr);
  }
  if (err != nullptr) {
    o.trace = read_trace(nullptr, err);
    o.attempts = humus_error_attempts(err);
    o.retry_after_ms = humus_error_retry_after_ms(err);
    o.message = humus_error_message(err);
    for (size_t i = 0; i < humus_error_field_count(err); ++i)
      o.fields.emplace_back(humus_error_field(err, i));
  }
}

// An asynchronous call's completion, filled on the event-loop thread.
struct Pending {
  humus_runtime* rt = nullptr;
  std::mutex* mu = nullptr;
  std::condition_variable* cv = nullptr;
  Outcome out;
  bool done = false;
};

void on_done(void* user, humus_status status, humus_response* resp, humus_error* err) {
  auto* p = static_cast<Pending*>(user);
  Outcome o;
  fill(o, status, resp, err);
  o.end_ms = humus_runtime_elapsed_ms(p->rt);
  humus_response_free(resp);
  humus_error_free(err);
  // Notified with the lock held: the waiter may destroy the condition variable as soon as it sees `done`.
  std::lock_guard<std::mutex> lock(*p->mu);
  o.start_ms = p->out.start_ms;
  p->out = std::move(o);
  p->done = true;
  p->cv->notify_all();
}

// --- The runner
// ----------------------------------------------------------------------------------------------

class Runner {
 public:
  Runner(json v, Problems& problems) : v_(std::move(v)), problems_(problems) {}

  void run() {
    Problems& p = problems_;
    p.keys(v_, "",
           {"name", "spec", "description", "runtime", "settings", "callbacks", "script", "steps",
            "settings_error"});
    const json runtime = v_.value("runtime", json::object());
    p.keys(runtime, "runtime", {"seed"});
    json options = {{"clock", "virtual"}, {"seed", runtime.value("seed", 0)}};
    const std::string options_text = options.dump();
    if (humus_runtime_new(options_text.c_str(), options_text.size(), &rt_, nullptr) != HUMUS_OK) {
      p.add("runtime", "humus_runtime_new failed");
      return;
    }
    std::set<std::string> names;
    collect_header_names(v_.value("steps", json::array()), names);
    mock_ = std::make_unique<Mock>(v_.value("script", json::object()), names, p);
    check_script(v_.value("script", json::object()));
    mock_->attach(rt_);
    humus_mock_transport t = HUMUS_MOCK_TRANSPORT_INIT;
    t.respond = &Mock::respond;
    t.user_data = mock_.get();
    if (humus_runtime_set_mock_transport(rt_, &t, nullptr) != HUMUS_OK) {
      p.add("runtime", "humus_runtime_set_mock_transport failed");
      return;
    }
    if (!make_client()) return;

    const json& steps = v_.value("steps", json::array());
    if (!steps.is_array()) {
      p.add("steps", "must be an array");
      return;
    }
    for (size_t i = 0; i < steps.size(); ++i) step(steps[i], "steps[" + std::to_string(i) + "]");
  }

  ~Runner() {
    for (Held& h : held_) close_held(h);
    humus_client_free(client_);
    humus_settings_free(settings_);
    humus_runtime_free(rt_);
  }

 private:
  // The names of the request headers some "sent" expectation asks about: the mock records just those.
  static void collect_header_names(const json& node, std::set<std::string>& names) {
    if (node.is_object()) {
      if (node.contains("sent") && node["sent"].is_array()) {
        for (const json& s : node["sent"]) {
          if (s.is_object() && s.contains("headers") && s["headers"].is_object()) {
            for (const auto& [name, value] : s["headers"].items()) names.insert(name);
          }
        }
      }
      for (const auto& [key, value] : node.items()) collect_header_names(value, names);
    } else if (node.is_array()) {
      for (const json& item : node) collect_header_names(item, names);
    }
  }

  void check_script(const json& script) {
    if (!script.is_object()) {
      problems_.add("script", "must be an object");
      return;
    }
    for (const auto& [key, replies] : script.items()) {
      const std::string path = "script." + key;
      if (!replies.is_array() || replies.empty()) {
        problems_.add(path, "must be a non-empty array of replies");
        continue;
      }
      for (size_t i = 0; i < replies.size(); ++i) {
        problems_.keys(
            replies[i], path + "[" + std::to_string(i) + "]",
            {"status", "headers", "body", "body_size", "delay_ms", "hang", "error", "message", "body_error",
             "body_error_after", "note"});
      }
    }
  }

  bool make_client() {
    Problems& p = problems_;
    const json settings = v_.value("settings", json::object());
    const std::string text = settings.dump();
    humus_error* err = nullptr;
    humus_status rc = humus_settings_from_json(text.c_str(), text.size(), &settings_, &err);
    if (rc == HUMUS_OK) {
      install_callbacks();
      rc = humus_client_new(rt_, settings_, &client_, &err);
    }
    const bool want_error = v_.contains("settings_error");
    if (want_error && !v_.value("steps", json::array()).empty())
      p.add("steps", "must be empty with settings_error");
    if (rc == HUMUS_OK) {
      if (want_error) p.add("settings_error", "expected the settings to be refused, the client was built");
      return !want_error;
    }
    if (!want_error) {
      p.add("settings", std::string("refused: ") + humus_status_name(rc) + " " +
                            (err != nullptr ? humus_error_message(err) : ""));
    } else {
      const json& e = v_["settings_error"];
      p.keys(e, "settings_error", {"error", "fields"});
      p.equal("settings_error.error", e.value("error", json()), std::string(humus_status_name(rc)));
      if (e.contains("fields")) {
        std::vector<std::string> got;
        for (size_t i = 0; err != nullptr && i < humus_error_field_count(err); ++i) {
          got.emplace_back(humus_error_field(err, i));
        }
        std::sort(got.begin(), got.end());
        std::vector<std::string> want = e["fields"].get<std::vector<std::string>>();
        std::sort(want.begin(), want.end());
        p.equal("settings_error.fields", json(want), got);
      }
    }
    humus_error_free(err);
    return false;
  }

  void install_callbacks() {
    if (!v_.contains("callbacks")) return;
    const json& cb = v_["callbacks"];
    problems_.keys(cb, "callbacks", {"classifier", "breaker_policy"});
    if (cb.contains("classifier")) {
      problems_.keys(cb["classifier"], "callbacks.classifier", {"fail_on_status"});
      for (const json& s : cb["classifier"].value("fail_on_status", json::array())) {
        classifier_.fail_on_status.insert(s.get<int32_t>());
      }
      humus_classifier table = HUMUS_CLASSIFIER_INIT;
      table.classify = vector_classify;
      table.user_data = &classifier_;
      if (humus_settings_set_classifier(settings_, &table, nullptr) != HUMUS_OK) {
        problems_.add("callbacks.classifier", "humus_settings_set_classifier failed");
      }
    }
    if (cb.contains("breaker_policy")) {
      const json& bp = cb["breaker_policy"];
      problems_.keys(bp, "callbacks.breaker_policy", {"consecutive_failures", "successes_to_close", "fail"});
      policy_.consecutive_failures = bp.value("consecutive_failures", policy_.consecutive_failures);
      policy_.successes_to_close = bp.value("successes_to_close", policy_.successes_to_close);
      policy_.fail = bp.value("fail", std::string());
      humus_breaker_policy table = HUMUS_BREAKER_POLICY_INIT;
      table.trip = vector_trip;
      table.probe = vector_probe;
      table.user_data = &policy_;
      if (humus_settings_set_breaker_policy(settings_, &table, nullptr) != HUMUS_OK) {
        problems_.add("callbacks.breaker_policy", "humus_settings_set_breaker_policy failed");
      }
    }
  }

  void step(const json& s, const std::string& path) {
    Problems& p = problems_;
    p.keys(s, path,
           {"call", "expect", "repeat", "concurrent", "advance_ms", "open", "read", "cancel_after_read", "hold",
            "close", "then", "note"});
    const int kinds = (s.contains("call") ? 1 : 0) + (s.contains("concurrent") ? 1 : 0) +
                      (s.contains("advance_ms") ? 1 : 0) + (s.contains("open") ? 1 : 0) +
                      (s.contains("close") ? 1 : 0);
    if (kinds > 1) p.add(path, "a step is one of call, concurrent, advance_ms, open, close (or only then)");
    if ((s.contains("read") || s.contains("cancel_after_read") || s.contains("hold")) && !s.contains("open"))
      p.add(path, "read, cancel_after_read and hold go with open");
    if (s.contains("open")) {
      const int id = next_id_++;
      Outcome o = opened_call(s, id, path + ".open");
      observe(s.value("expect", json::object()), o, id, path + ".expect");
    } else if (s.contains("close")) {
      for (Held& h : held_) close_held(h);
      held_.clear();
    } else if (s.contains("call")) {
      const int repeat = s.value("repeat", 1);
      for (int i = 0; i < repeat; ++i) {
        const std::string at = repeat == 1 ? path : path + "#" + std::to_string(i);
        const int id = next_id_++;
        Outcome o = blocking_call(s["call"], id, at + ".call");
        observe(s.value("expect", json::object()), o, id, at + ".expect");
      }
    } else if (s.contains("concurrent")) {
      concurrent(s["concurrent"], path + ".concurrent");
    } else if (s.contains("advance_ms")) {
      if (humus_runtime_advance_ms(rt_, s["advance_ms"].get<int64_t>(), nullptr) != HUMUS_OK) {
        p.add(path + ".advance_ms", "humus_runtime_advance_ms failed");
      }
    } else if (s.contains("repeat") || s.contains("expect")) {
      p.add(path, "repeat and expect go with a call");
    }
    then(s.value("then", json::object()), path + ".then");
  }

  // Builds the request; a refusal while building (a bad header, timeout_ms 0) is the call's outcome.
  humus_request* build(const json& call, int id, const std::string& path, CallControl& control,
                       Outcome& refused) {
    Problems& p = problems_;
    p.keys(call, path,
           {"method", "path", "url", "headers", "body", "idempotency_key", "retry", "timeout_ms",
            "cancel_at_attempt", "note"});
    const std::string method = call.value("method", "GET");
    std::string url = call.value("url", std::string());
    if (url.empty()) url = base_origin() + call.value("path", "/");
    humus_request* req = nullptr;
    humus_error* err = nullptr;
    auto refuse = [&](humus_status rc) {
      fill(refused, rc, nullptr, err);
      humus_error_free(err);
      refused.start_ms = refused.end_ms = humus_runtime_elapsed_ms(rt_);
      humus_request_free(req);
      return nullptr;
    };
    humus_status rc = humus_request_new(method.c_str(), url.c_str(), &req, &err);
    if (rc != HUMUS_OK) return refuse(rc);
    for (const json& h : call.value("headers", json::array())) {
      rc = humus_request_set_header(req, h.at(0).get<std::string>().c_str(),
                                    h.at(1).get<std::string>().c_str(), &err);
      if (rc != HUMUS_OK) return refuse(rc);
    }
    const std::string id_text = std::to_string(id);
    if ((rc = humus_request_set_header(req, kCallHeader, id_text.c_str(), &err)) != HUMUS_OK)
      return refuse(rc);
    if (call.contains("body")) {
      const std::string body = call["body"].get<std::string>();
      if ((rc = humus_request_set_body(req, body.data(), body.size())) != HUMUS_OK) return refuse(rc);
    }
    if (call.contains("idempotency_key")) {
      rc = humus_request_set_idempotency_key(req, call["idempotency_key"].get<std::string>().c_str(), &err);
      if (rc != HUMUS_OK) return refuse(rc);
    }
    if (call.contains("retry")) {
      const std::string mode = call["retry"].get<std::string>();
      const int32_t m = mode == "forbid"    ? HUMUS_RETRY_MODE_FORBID
                        : mode == "force"   ? HUMUS_RETRY_MODE_FORCE
                        : mode == "default" ? HUMUS_RETRY_MODE_DEFAULT
                                            : -1;
      if (m < 0) p.add(path + ".retry", R"(must be "default", "forbid" or "force")");
      if ((rc = humus_request_set_retry(req, m < 0 ? HUMUS_RETRY_MODE_DEFAULT : m, &err)) != HUMUS_OK)
        return refuse(rc);
    }
    if (call.contains("timeout_ms")) {
      if ((rc = humus_request_set_timeout_ms(req, call["timeout_ms"].get<int64_t>(), &err)) != HUMUS_OK)
        return refuse(rc);
    }
    control.cancel_at_attempt = call.value("cancel_at_attempt", 0);
    return req;
  }

  [[nodiscard]] std::string base_origin() const {
    const json settings = v_.value("settings", json::object());
    return origin_of(settings.value("base_url", std::string("http://payments:8080")));
  }

  Outcome blocking_call(const json& call, int id, const std::string& path) {
    Outcome o;
    CallControl control;
    humus_request* req = build(call, id, path, control, o);
    if (req == nullptr) return o;
    if (control.cancel_at_attempt > 0) {
      humus_cancel_new(&control.token);
      humus_request_set_cancel(req, control.token);
    }
    mock_->control(id, control);
    humus_response* resp = nullptr;
    humus_error* err = nullptr;
    o.start_ms = humus_runtime_elapsed_ms(rt_);
    const humus_status rc = humus_client_do(client_, req, &resp, &err);
    o.end_ms = humus_runtime_elapsed_ms(rt_);
    fill(o, rc, resp, err);
    humus_response_free(resp);
    humus_error_free(err);
    humus_request_free(req);
    mock_->control(id, CallControl{});
    humus_cancel_free(control.token);
    return o;
  }

  // An "open" step: humus_client_open, reads of up to `read` bytes (absent: to the end), a cancel and one more
  // read when `cancel_after_read`, then humus_response_free unless `hold`.
  struct Held {
    humus_response* resp = nullptr;
    humus_request* req = nullptr;
    humus_cancel* token = nullptr;
  };
  static void close_held(Held& h) {
    humus_response_free(h.resp);
    humus_request_free(h.req);
    humus_cancel_free(h.token);
  }

  Outcome opened_call(const json& s, int id, const std::string& path) {
    Outcome o;
    CallControl control;
    humus_request* req = build(s["open"], id, path, control, o);
    if (req == nullptr) return o;
    humus_cancel_new(&control.token);
    humus_request_set_cancel(req, control.token);
    mock_->control(id, control);
    Held h{nullptr, req, control.token};
    humus_error* err = nullptr;
    o.start_ms = humus_runtime_elapsed_ms(rt_);
    const humus_status rc = humus_client_open(client_, req, &h.resp, &err);
    o.end_ms = humus_runtime_elapsed_ms(rt_);
    o.rc = rc;
    if (rc == HUMUS_OK) {
      o.status = humus_response_status(h.resp);
      o.attempts = humus_response_attempts(h.resp);
      o.url = humus_response_url(h.resp);
      for (size_t i = 0; i < humus_response_header_count(h.resp); ++i) {
        const char* name = nullptr;
        const char* value = nullptr;
        if (humus_response_header_at(h.resp, i, &name, &value) == HUMUS_OK) o.headers.emplace_back(name, value);
      }
      const int64_t limit = s.value("read", int64_t{-1});
      auto read = [&](size_t cap) {
        char buf[16384];
        size_t n = 0;
        const humus_status r = humus_response_read(h.resp, buf, std::min(cap, sizeof buf), &n, nullptr);
        if (r != HUMUS_OK) {
          o.read_error = humus_status_name(r);
          return false;
        }
        o.body.append(buf, n);
        return n > 0;
      };
      while (limit < 0 || static_cast<int64_t>(o.body.size()) < limit) {
        const size_t want = limit < 0 ? SIZE_MAX : static_cast<size_t>(limit) - o.body.size();
        if (!read(want)) break;
      }
      if (s.value("cancel_after_read", false) && !o.read_error) {
        humus_cancel_trigger(control.token);
        (void)read(SIZE_MAX);
      }
      o.trace = read_trace(h.resp, nullptr);  // once read, before it is closed
    } else {
      fill(o, rc, nullptr, err);
    }
    humus_error_free(err);
    mock_->control(id, CallControl{});
    if (s.value("hold", false)) {
      held_.push_back(h);
    } else {
      close_held(h);
    }
    return o;
  }

  void concurrent(const json& group, const std::string& path) {
    Problems& p = problems_;
    if (!group.is_array()) {
      p.add(path, "must be an array");
      return;
    }
    struct Item {
      int id;
      std::string path;
      const json* expect = nullptr;  // within `group`
      std::unique_ptr<Pending> pending;
    };
    std::vector<Item> items;
    std::mutex mu;
    std::condition_variable cv;
    mock_->shut_gate();
    struct Reopen {  // whatever happens while submitting, the gate must open again or the loop stays stuck
      Mock& mock;
      ~Reopen() { mock.open_gate(); }
    } reopen{*mock_};
    const int64_t start = humus_runtime_elapsed_ms(rt_);
    for (size_t i = 0; i < group.size(); ++i) {
      const json& entry = group[i];
      const std::string at = path + "[" + std::to_string(i) + "]";
      p.keys(entry, at, {"call", "expect", "repeat", "note"});
      const int repeat = entry.value("repeat", 1);
      for (int k = 0; k < repeat; ++k) {
        Item item;
        item.id = next_id_++;
        item.path = repeat == 1 ? at : at + "#" + std::to_string(k);
        static const json no_expectations = json::object();
        item.expect = entry.contains("expect") ? &entry["expect"] : &no_expectations;
        item.pending = std::make_unique<Pending>();
        item.pending->rt = rt_;
        item.pending->mu = &mu;
        item.pending->cv = &cv;
        item.pending->out.start_ms = start;
        CallControl control;
        Outcome refused;
        humus_request* req = nullptr;
        try {  // a malformed call must not unwind past calls already in flight (they point at `items`)
          req = build(entry.value("call", json::object()), item.id, item.path + ".call", control, refused);
        } catch (const std::exception& e) {
          p.add(item.path + ".call", e.what());
          refused.rc = HUMUS_E_INVALID_ARGUMENT;
        }
        if (req == nullptr) {
          item.pending->out = refused;
          item.pending->out.start_ms = start;
          item.pending->done = true;
        } else {
          mock_->control(item.id, control);
          humus_call* handle = nullptr;
          humus_error* err = nullptr;
          const humus_status rc =
              humus_client_submit(client_, req, on_done, item.pending.get(), &handle, &err);
          if (rc != HUMUS_OK) {
            fill(item.pending->out, rc, nullptr, err);
            item.pending->out.end_ms = start;
            item.pending->done = true;
          } else {
            mock_->set_handle(item.id, handle);
            handles_.push_back(handle);
          }
          humus_error_free(err);
          humus_request_free(req);
        }
        items.push_back(std::move(item));
      }
    }
    mock_->open_gate();
    {
      std::unique_lock<std::mutex> lock(mu);
      const bool all = cv.wait_for(lock, std::chrono::seconds(20), [&] {
        return std::all_of(items.begin(), items.end(), [](const Item& it) { return it.pending->done; });
      });
      if (!all) {
        p.add(path, "the calls did not all complete within 20 s of real time");
        lock.unlock();
        humus_client_free(client_);  // cancels what is left and waits for every completion
        client_ = nullptr;
        throw std::runtime_error("concurrent group stuck");
      }
    }
    for (Item& item : items) {
      mock_->control(item.id, CallControl{});
      observe(*item.expect, item.pending->out, item.id, item.path + ".expect");
    }
    for (humus_call* h : handles_) humus_call_free(h);
    handles_.clear();
  }

  void observe(const json& e, const Outcome& o, int id, const std::string& path) {
    const std::vector<Received> sent = mock_->received_by(id);
    if (dumping()) std::fprintf(stderr, "  %s observed %s\n", path.c_str(), describe(o, sent).dump().c_str());
    Problems& p = problems_;
    p.keys(e, path,
           {"status", "error", "attempts", "attempt_times_ms", "elapsed_ms", "retry_after_ms", "body",
            "body_size", "headers", "url", "message", "fields", "sent", "read_error", "trace"});
    const std::string outcome = o.rc == HUMUS_OK
                                    ? "status " + std::to_string(o.status)
                                    : std::string(humus_status_name(o.rc)) + " (" + o.message + ")";
    if (e.contains("status")) {
      if (o.rc != HUMUS_OK)
        p.add(path + ".status", "expected " + e["status"].dump() + ", got " + outcome);
      else
        p.equal(path + ".status", e["status"], o.status);
    }
    if (e.contains("error")) {
      if (o.rc == HUMUS_OK)
        p.add(path + ".error", "expected " + e["error"].dump() + ", got " + outcome);
      else
        p.equal(path + ".error", e["error"], std::string(humus_status_name(o.rc)));
    }
    if (!e.contains("status") && !e.contains("error")) p.add(path, "must say status or error");
    if (e.contains("attempts")) p.equal(path + ".attempts", e["attempts"], o.attempts);
    if (e.contains("attempt_times_ms")) {
      std::vector<int64_t> times;
      times.reserve(sent.size());
      for (const Received& r : sent) times.push_back(r.at_ms - o.start_ms);
      p.equal(path + ".attempt_times_ms", e["attempt_times_ms"], times);
    }
    if (e.contains("elapsed_ms")) p.equal(path + ".elapsed_ms", e["elapsed_ms"], o.end_ms - o.start_ms);
    if (e.contains("retry_after_ms"))
      p.equal(path + ".retry_after_ms", e["retry_after_ms"], o.retry_after_ms);
    if (e.contains("read_error") || o.read_error)
      p.equal(path + ".read_error", e.value("read_error", json()), o.read_error ? json(*o.read_error) : json());
    if (e.contains("body")) p.equal(path + ".body", e["body"], o.body);
    if (e.contains("body_size")) p.equal(path + ".body_size", e["body_size"], o.body.size());
    if (e.contains("url")) p.equal(path + ".url", e["url"], o.url);
    if (e.contains("message")) p.equal(path + ".message", e["message"], o.message);
    if (e.contains("fields")) p.equal(path + ".fields", e["fields"], o.fields);
    if (e.contains("headers")) {
      for (const auto& [name, want] : e["headers"].items()) {
        json got = nullptr;
        for (const auto& [n, v] : o.headers) {
          if (std::equal(n.begin(), n.end(), name.begin(), name.end(),
                         [](char a, char b) { return std::tolower(a) == std::tolower(b); })) {
            got = v;
            break;
          }
        }
        p.equal(path + ".headers." += name, want, got);
      }
    }
    if (e.contains("trace")) check_trace(e["trace"], o.trace, path + ".trace");
    if (e.contains("sent")) {
      const json& want = e["sent"];
      if (want.size() != sent.size()) {
        p.add(path + ".sent", "expected " + std::to_string(want.size()) + " requests, the mock received " +
                                  std::to_string(sent.size()));
      }
      for (size_t i = 0; i < std::min(want.size(), sent.size()); ++i) {
        const std::string at = path + ".sent[" + std::to_string(i) + "]";
        const json& w = want[i];
        p.keys(w, at, {"method", "path", "url", "headers", "body"});
        if (w.contains("method")) p.equal(at + ".method", w["method"], sent[i].method);
        if (w.contains("path")) p.equal(at + ".path", w["path"], sent[i].path);
        if (w.contains("url")) p.equal(at + ".url", w["url"], sent[i].url);
        if (w.contains("body")) {
          p.equal(at + ".body", w["body"], sent[i].body ? json(*sent[i].body) : json(nullptr));
        }
        const json headers = w.value("headers", json::object());
        for (const auto& [name, value] : headers.items()) {
          const std::optional<std::string>& got = sent[i].headers.at(name);
          p.equal(at + ".headers." += name, value, got ? json(*got) : json(nullptr));
        }
      }
    }
  }

  // `trace`: one object per record, all of them, in order; each names only the members it checks
  // (tests/vectors/README.md). A `_ms` key is the record's seconds member in milliseconds, and numbers
  // compare within 1e-6 (the JSON carries seconds as doubles).
  void check_trace(const json& want, const json& got, const std::string& path) {
    Problems& p = problems_;
    if (!want.is_array()) {
      p.add(path, "must be an array");
      return;
    }
    if (want.size() != got.size()) {
      p.add(path, "expected " + std::to_string(want.size()) + " records, the trace has " + std::to_string(got.size()) +
                      ": " + trace_for_vector(got).dump());
    }
    for (size_t i = 0; i < std::min(want.size(), got.size()); ++i) {
      const std::string at = path + "[" + std::to_string(i) + "]";
      const json& w = want[i];
      if (!w.is_object()) {
        p.add(at, "must be an object");
        continue;
      }
      const json g = trace_record_for_vector(got[i]);
      for (const auto& [key, value] : w.items()) {
        if (!g.contains(key)) {
          p.add(at + "." += key, "unknown key");
          continue;
        }
        const json& actual = g[key];
        if (value.is_number() && actual.is_number()) {
          if (std::fabs(value.get<double>() - actual.get<double>()) > 1e-6) p.equal(at + "." += key, value, actual);
        } else {
          p.equal(at + "." += key, value, actual);
        }
      }
    }
  }

  static constexpr std::array<const char*, 16> kTraceKeys = {
      "decision",        "wait_ms",        "wait_source",        "status",  "error",         "wire_sends",
      "retry_verdict",   "breaker_verdict", "retry_after_ms",    "retry_after_source", "breaker", "breaker_after",
      "budget_before",   "budget_after",   "redirect",           "resend"};

  // A record of the C ABI's JSON in the vectors' terms: the members `trace` can check, seconds as `_ms`.
  static json trace_record_for_vector(const json& r) {
    json out = json::object();
    for (const char* key : kTraceKeys) {
      const std::string k = key;
      if (k.size() > 3 && k.compare(k.size() - 3, 3, "_ms") == 0) {
        const json& seconds = r.value(k.substr(0, k.size() - 3), json());
        out[k] = seconds.is_number() ? json(seconds.get<double>() * 1000.0) : json();
      } else {
        out[k] = r.value(k, json());
      }
    }
    return out;
  }

  static json trace_for_vector(const json& trace) {
    json out = json::array();
    for (const json& r : trace) out.push_back(trace_record_for_vector(r));
    return out;
  }

  static json describe(const Outcome& o, const std::vector<Received>& sent) {
    json d;
    if (o.rc == HUMUS_OK) {
      d["status"] = o.status;
    } else {
      d["error"] = humus_status_name(o.rc);
      d["message"] = o.message;
      d["retry_after_ms"] = o.retry_after_ms;
    }
    d["attempts"] = o.attempts;
    json times = json::array();
    json paths = json::array();
    for (const Received& r : sent) {
      times.push_back(r.at_ms - o.start_ms);
      paths.push_back(r.method + " " + r.path);
    }
    d["attempt_times_ms"] = times;
    d["sent"] = paths;
    d["elapsed_ms"] = o.end_ms - o.start_ms;
    d["trace"] = trace_for_vector(o.trace);
    if (o.body.size() <= 64)
      d["body"] = o.body;
    else
      d["body_size"] = o.body.size();
    return d;
  }

  // State checks after a step. Only what the vector asks for is read (a breaker read may advance it lazily,
  // docs/breaker.md §9.2), so every runner reads the client at the same points.
  void then(const json& t, const std::string& path) {
    Problems& p = problems_;
    p.keys(t, path, {"breaker", "budget_tokens", "received", "clock_ms", "bulkhead_limit"});
    if (dumping() && !t.empty()) dump_state(path);
    if (t.contains("breaker")) {
      const json& b = t["breaker"];
      p.keys(b, path + ".breaker",
             {"state", "successes", "failures", "consecutive_successes", "consecutive_failures",
              "timed_out_probes", "window_results", "window_failures", "slow_results", "window_slow"});
      int32_t state = -1;
      if (humus_client_breaker_state(client_, &state) != HUMUS_OK) {
        p.add(path + ".breaker", "humus_client_breaker_state failed");
      }
      if (b.contains("state")) p.equal(path + ".breaker.state", b["state"], std::string(state_name(state)));
      humus_breaker_counts counts = HUMUS_BREAKER_COUNTS_INIT;
      if (humus_client_breaker_counts(client_, &counts) != HUMUS_OK) {
        p.add(path + ".breaker", "humus_client_breaker_counts failed");
      }
      const std::pair<const char*, uint64_t> fields[] = {
          {"successes", counts.successes},
          {"failures", counts.failures},
          {"consecutive_successes", counts.consecutive_successes},
          {"consecutive_failures", counts.consecutive_failures},
          {"timed_out_probes", counts.timed_out_probes},
          {"window_results", counts.window_results},
          {"window_failures", counts.window_failures},
          {"slow_results", counts.slow_results},
          {"window_slow", counts.window_slow},
      };
      for (const auto& [name, value] : fields) {
        if (b.contains(name)) p.equal(path + ".breaker." + name, b[name], value);
      }
    }
    if (t.contains("budget_tokens")) {
      double tokens = 0;
      if (humus_client_budget_tokens(client_, &tokens) != HUMUS_OK) {
        p.add(path + ".budget_tokens", "humus_client_budget_tokens failed");
      }
      if (std::fabs(t["budget_tokens"].get<double>() - tokens) > 1e-6) {
        p.add(path + ".budget_tokens",
              "expected " + t["budget_tokens"].dump() + ", got " + json(tokens).dump());
      }
    }
    if (t.contains("received")) p.equal(path + ".received", t["received"], mock_->received().size());
    if (t.contains("clock_ms")) p.equal(path + ".clock_ms", t["clock_ms"], humus_runtime_elapsed_ms(rt_));
    if (t.contains("bulkhead_limit")) {
      uint32_t limit = 0;
      if (humus_client_bulkhead_limit(client_, &limit) != HUMUS_OK) {
        p.add(path + ".bulkhead_limit", "humus_client_bulkhead_limit failed");
      }
      p.equal(path + ".bulkhead_limit", t["bulkhead_limit"], limit);
    }
  }

  void dump_state(const std::string& path) {
    humus_breaker_counts counts = HUMUS_BREAKER_COUNTS_INIT;
    (void)humus_client_breaker_counts(client_, &counts);
    double tokens = 0;
    (void)humus_client_budget_tokens(client_, &tokens);
    uint32_t limit = 0;
    (void)humus_client_bulkhead_limit(client_, &limit);
    const json d = {{"breaker",
                     {{"state", state_name(counts.state)},
                      {"successes", counts.successes},
                      {"failures", counts.failures},
                      {"consecutive_successes", counts.consecutive_successes},
                      {"consecutive_failures", counts.consecutive_failures},
                      {"timed_out_probes", counts.timed_out_probes},
                      {"window_results", counts.window_results},
                      {"window_failures", counts.window_failures},
                      {"slow_results", counts.slow_results},
                      {"window_slow", counts.window_slow}}},
                    {"budget_tokens", tokens},
                    {"received", mock_->received().size()},
                    {"clock_ms", humus_runtime_elapsed_ms(rt_)},
                    {"bulkhead_limit", limit}};
    std::fprintf(stderr, "  %s observed %s\n", path.c_str(), d.dump().c_str());
  }

  const json v_;
  Problems& problems_;
  humus_runtime* rt_ = nullptr;
  humus_settings* settings_ = nullptr;
  humus_client* client_ = nullptr;
  std::unique_ptr<Mock> mock_;
  ClassifierSpec classifier_;
  PolicySpec policy_;
  std::vector<humus_call*> handles_;
  int next_id_ = 1;
  std::vector<Held> held_;  // "open" steps with "hold": closed by a "close" step or at the end
};

// --- GoogleTest --------------------------------------------------------------------------------------------

class ConformanceVector : public ::testing::TestWithParam<std::string> {};

TEST_P(ConformanceVector, Run) {
  const fs::path file(GetParam());
  const std::string stem = file.stem().string();
  Problems problems;
  json v;
  {
    std::ifstream in(file);
    v = json::parse(in, nullptr, /*allow_exceptions=*/false);
  }
  if (v.is_discarded() || !v.is_object()) {
    problems.add("", "not a JSON object");
  } else {
    if (v.value("name", std::string()) != stem)
      problems.add("name", "must be the file's stem \"" + stem + "\"");
    if (dumping()) std::fprintf(stderr, "vector %s\n", stem.c_str());
    try {
      Runner(v, problems).run();
    } catch (const std::exception& e) {
      problems.add("", std::string("runner stopped: ") + e.what());
    }
  }
  const std::vector<std::string> found = problems.list();
  if (found.empty()) {
    std::printf("vector %s: ok\n", stem.c_str());
  } else {
    std::printf("vector %s: FAIL %s\n", stem.c_str(), found.front().c_str());
  }
  std::fflush(stdout);
  for (const std::string& one : found) ADD_FAILURE() << "vector " << stem << ": " << one;
}

std::string test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = fs::path(info.param).stem().string();
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(Vectors, ConformanceVector, ::testing::ValuesIn(vector_files()), test_name);

// The set as a whole: docs/vectors.md §18 asks for the listed properties; the issue for at least 40 scenarios.
TEST(ConformanceVectorSet, HasAtLeastFortyScenarios) { EXPECT_GE(vector_files().size(), 40u); }

// README.md maps docs/vectors.md §18's properties to files: every vector is listed there, and every name listed is a
// file.
TEST(ConformanceVectorSet, ReadmeListsEveryVectorAndOnlyThem) {
  std::ifstream in(fs::path(HUMUS_SOURCE_DIR) / "tests" / "vectors" / "README.md");
  std::stringstream text;
  text << in.rdbuf();
  std::set<std::string> listed;
  std::string line;
  bool coverage = false;  // the tables under "## What the vectors cover"
  while (std::getline(text, line)) {
    if (line.rfind("## ", 0) == 0) coverage = line.rfind("## What the vectors cover", 0) == 0;
    if (!coverage || line.rfind("| ", 0) != 0) continue;
    for (size_t open = line.find('`'); open != std::string::npos; open = line.find('`', open + 1)) {
      const size_t close = line.find('`', open + 1);
      if (close == std::string::npos) break;
      const std::string name = line.substr(open + 1, close - open - 1);
      if (!name.empty() &&
          std::all_of(name.begin(), name.end(),
                      [](char c) {
                        return std::islower(static_cast<unsigned char>(c)) ||
                               std::isdigit(static_cast<unsigned char>(c)) || c == '_';
                      }) &&
          name.find('_') != std::string::npos) {
        listed.insert(name);
      }
      open = close;
    }
  }
  std::set<std::string> files;
  for (const std::string& f : vector_files()) files.insert(fs::path(f).stem().string());
  for (const std::string& f : files) EXPECT_TRUE(listed.count(f) != 0) << f << " is not listed in README.md";
  for (const std::string& n : listed)
    EXPECT_TRUE(files.count(n) != 0) << "README.md lists " << n << ": no such vector";
}

}  // namespace HUMUS_UNITY_ID
}  // namespace
