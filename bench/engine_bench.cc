// What humus_http costs on top of libcurl, end to end, against one local server (the engine issue's benchmark
// point). In one process and one run it measures, for HTTP/1.1 (plain http) and HTTP/2 (https, ALPN h2):
//
//   raw-seq      libcurl alone: one easy handle reused, curl_easy_perform, body appended to a std::string
//   raw-multi    libcurl alone: curl_multi on one thread, --concurrency transfers kept in flight
//   humus-seq    humus_client_do in a loop, one request built once
//   humus-async  humus_client_submit with --concurrency calls in flight, on the event loop
//   humus-layer  humus_client_do against the mock transport on a real clock: the layer's own cost, no socket
//   humus-layer-trace  humus-layer reading every call's decision trace (humus_response_trace, docs/trace.md)
//   humus-seq-traced / humus-seq-header  humus-seq with span and log sinks / with only a traceparent header
//
// Scenarios run as interleaved rounds (every scenario once per round, the order reversed every other round),
// so slow drift of a shared machine hits raw and humus alike. Each round yields requests/s (wall), p50/p99
// latency, CPU µs per request of this process (CLOCK_PROCESS_CPUTIME_ID; the server runs in another process,
// so its CPU does not count) and, per round, the ratio to the raw libcurl row of the same protocol. The
// table shows medians over rounds. It never passes or fails on time (STYLE.md): it prints ratios to the
// anchors.
//
// Only the C ABI of the shared library is used (include/humus_http.h), plus libcurl for the anchors.
// Run it through bench/run_engine_bench.sh, which builds it, starts nginx and pins both to one CPU.
#include <curl/curl.h>
#include <sched.h>
#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "humus_http.h"

namespace {

// ---- Command line -------------------------------------------------------------------------------------

struct Options {
  int rounds = 7;
  int64_t requests = 10000;  // per scenario per round
  int64_t warmup = 1000;     // per scenario, before the first round
  int concurrency = 64;
  std::string h1_url;        // e.g. http://127.0.0.1:8080/
  std::string h2_url;        // e.g. https://payments:8443/
  std::string ca_file;       // trusted by both raw libcurl and humus for h2
  std::string resolve;       // host:port:addr — the h2 name's connections go to addr
  std::set<std::string> only;  // scenario names (or "h1"/"h2"/"mock"); empty: all
};

[[noreturn]] void usage(const char* argv0, const std::string& why) {
  if (!why.empty()) std::fprintf(stderr, "engine_bench: %s\n", why.c_str());
  std::fprintf(stderr,
               "usage: %s [--rounds N] [--requests N] [--warmup N] [--concurrency N]\n"
               "          [--h1-url URL] [--h2-url URL] [--ca FILE] [--resolve host:port:addr]\n"
               "          [--only NAME[,NAME...]]   NAME: raw-seq raw-multi humus-seq humus-seq-traced\n"
               "                                    humus-seq-header humus-async humus-layer humus-seq-via-loop,\n"
               "                                    and/or\n"
               "                                    h1 h2 mock (a row runs if it matches a protocol and a name given)\n",
               argv0);
  std::exit(2);
}

Options parse_options(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(argv[0], a + " needs a value");
      return argv[++i];
    };
    auto number = [&](int64_t min) -> int64_t {
      const std::string v = value();
      char* end = nullptr;
      const long long n = std::strtoll(v.c_str(), &end, 10);
      if (end == v.c_str() || *end != '\0' || n < min) usage(argv[0], a + ": bad number \"" + v + "\"");
      return n;
    };
    if (a == "--rounds") o.rounds = static_cast<int>(number(1));
    else if (a == "--requests") o.requests = number(1);
    else if (a == "--warmup") o.warmup = number(0);
    else if (a == "--concurrency") o.concurrency = static_cast<int>(number(1));
    else if (a == "--h1-url") o.h1_url = value();
    else if (a == "--h2-url") o.h2_url = value();
    else if (a == "--ca") o.ca_file = value();
    else if (a == "--resolve") o.resolve = value();
    else if (a == "--only") {
      std::stringstream ss(value());
      for (std::string name; std::getline(ss, name, ',');) {
        if (!name.empty()) o.only.insert(name);
      }
    } else if (a == "--help" || a == "-h") usage(argv[0], "");
    else usage(argv[0], "unknown flag " + a);
  }
  if (o.h1_url.empty() && o.h2_url.empty() && !o.only.count("humus-layer") && !o.only.count("mock")) {
    usage(argv[0], "give --h1-url and/or --h2-url (or --only humus-layer)");
  }
  return o;
}

// "scheme://authority" of an absolute URL: the humus client's base_url.
std::string origin_of(const std::string& url) {
  const size_t scheme_end = url.find("://");
  if (scheme_end == std::string::npos) return url;
  const size_t path = url.find_first_of("/?#", scheme_end + 3);
  return path == std::string::npos ? url : url.substr(0, path);
}

// --resolve host:port:addr → the same override for both: libcurl's CURLOPT_CONNECT_TO "host:port:addr:port"
// and the humus runtime's {"resolve": {"host:port": "addr:port"}} (which the transport turns into the same).
struct Resolve {
  std::string host_port, addr_port;
  bool empty() const { return host_port.empty(); }
  std::string connect_to() const {
    return host_port + ":" + addr_port;  // host:port:addr:port
  }
};

Resolve parse_resolve(const std::string& s) {
  if (s.empty()) return {};
  const size_t first = s.find(':');
  const size_t second = first == std::string::npos ? std::string::npos : s.find(':', first + 1);
  if (second == std::string::npos) {
    std::fprintf(stderr, "engine_bench: --resolve wants host:port:addr, got \"%s\"\n", s.c_str());
    std::exit(2);
  }
  const std::string port = s.substr(first + 1, second - first - 1);
  return Resolve{s.substr(0, second), s.substr(second + 1) + ":" + port};
}

// ---- Measuring ------------------------------------------------------------------------------------------

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int64_t cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

struct UserSys {
  int64_t user_us = 0, sys_us = 0;
};

UserSys rusage_now() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return UserSys{static_cast<int64_t>(ru.ru_utime.tv_sec) * 1'000'000 + ru.ru_utime.tv_usec,
                 static_cast<int64_t>(ru.ru_stime.tv_sec) * 1'000'000 + ru.ru_stime.tv_usec};
}

// One scenario's round.
struct Sample {
  int64_t requests = 0;
  int64_t errors = 0;
  double wall_s = 0;
  double cpu_us_per_req = 0;
  double user_us_per_req = 0, sys_us_per_req = 0;
  double rps = 0;
  double p50_us = 0, p99_us = 0;  // NaN when the scenario records no latencies
};

double percentile(std::vector<double>& v, double p) {
  if (v.empty()) return std::nan("");
  const size_t k = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

double median(std::vector<double> v) {
  v.erase(std::remove_if(v.begin(), v.end(), [](double x) { return std::isnan(x); }), v.end());
  if (v.empty()) return std::nan("");
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// A scenario: set up once (connections opened, caches warm), then run `n` requests per round. `run`
// appends one latency (µs) per request and returns the number of failed requests.
class Runner {
 public:
  virtual ~Runner() = default;
  virtual int64_t run(int64_t n, std::vector<double>& latencies_us) = 0;
};

Sample measure(Runner& runner, int64_t n) {
  std::vector<double> lat;
  lat.reserve(static_cast<size_t>(n));
  const UserSys ru0 = rusage_now();
  const int64_t c0 = cpu_ns();
  const int64_t w0 = now_ns();
  const int64_t errors = runner.run(n, lat);
  const int64_t w1 = now_ns();
  const int64_t c1 = cpu_ns();
  const UserSys ru1 = rusage_now();
  Sample s;
  s.requests = n;
  s.errors = errors;
  s.wall_s = static_cast<double>(w1 - w0) / 1e9;
  s.rps = static_cast<double>(n) / s.wall_s;
  s.cpu_us_per_req = static_cast<double>(c1 - c0) / 1e3 / static_cast<double>(n);
  s.user_us_per_req = static_cast<double>(ru1.user_us - ru0.user_us) / static_cast<double>(n);
  s.sys_us_per_req = static_cast<double>(ru1.sys_us - ru0.sys_us) / static_cast<double>(n);
  s.p50_us = percentile(lat, 0.50);
  s.p99_us = percentile(lat, 0.99);
  return s;
}

// ---- Targets --------------------------------------------------------------------------------------------

struct Target {
  std::string proto;  // "h1" or "h2"
  std::string url;
  bool h2 = false;
  std::string ca_file;
  Resolve resolve;
};

// ---- Raw libcurl: the anchors --------------------------------------------------------------------------

size_t append_body(char* data, size_t size, size_t count, void* user) {
  static_cast<std::string*>(user)->append(data, size * count);
  return size * count;
}

// The options a careful raw libcurl user sets, matching what the humus transport sets per lane.
curl_slist* configure_easy(CURL* e, const Target& t, std::string* body, curl_slist* connect_to) {
  curl_easy_setopt(e, CURLOPT_URL, t.url.c_str());
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_PROXY, "");
  curl_easy_setopt(e, CURLOPT_NOPROXY, "*");
  curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
  curl_easy_setopt(e, CURLOPT_PIPEWAIT, 1L);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, append_body);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, body);
  curl_easy_setopt(e, CURLOPT_HTTP_VERSION, t.h2 ? CURL_HTTP_VERSION_2TLS : CURL_HTTP_VERSION_1_1);
  if (t.h2) {
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 2L);
    if (!t.ca_file.empty()) {
      curl_easy_setopt(e, CURLOPT_CAINFO, t.ca_file.c_str());
      curl_easy_setopt(e, CURLOPT_CAPATH, nullptr);
    }
  }
  if (connect_to != nullptr) curl_easy_setopt(e, CURLOPT_CONNECT_TO, connect_to);
  return connect_to;
}

curl_slist* make_connect_to(const Target& t) {
  return t.resolve.empty() ? nullptr : curl_slist_append(nullptr, t.resolve.connect_to().c_str());
}

class RawSequential final : public Runner {
 public:
  explicit RawSequential(const Target& t) : easy_(curl_easy_init()), connect_to_(make_connect_to(t)) {
    configure_easy(easy_, t, &body_, connect_to_);
  }
  ~RawSequential() override {
    curl_easy_cleanup(easy_);
    curl_slist_free_all(connect_to_);
  }
  int64_t run(int64_t n, std::vector<double>& lat) override {
    int64_t errors = 0;
    for (int64_t i = 0; i < n; ++i) {
      const int64_t t0 = now_ns();
      body_.clear();
      const CURLcode rc = curl_easy_perform(easy_);
      long code = 0;
      curl_easy_getinfo(easy_, CURLINFO_RESPONSE_CODE, &code);
      if (rc != CURLE_OK || code != 200) {
        if (errors++ == 0) std::fprintf(stderr, "raw-seq: %s (status %ld)\n", curl_easy_strerror(rc), code);
      }
      lat.push_back(static_cast<double>(now_ns() - t0) / 1e3);
    }
    return errors;
  }

 private:
  CURL* easy_;
  curl_slist* connect_to_;
  std::string body_;
};

// `concurrency` transfers kept in flight on one thread: a finished easy handle is re-added at once with the
// next request. HTTP/1.1 opens one connection per transfer; HTTP/2 multiplexes them on one (PIPEWAIT).
class RawMulti final : public Runner {
 public:
  RawMulti(const Target& t, int concurrency) : multi_(curl_multi_init()), connect_to_(make_connect_to(t)) {
    curl_multi_setopt(multi_, CURLMOPT_MAXCONNECTS, static_cast<long>(concurrency) * 2);
    slots_.resize(static_cast<size_t>(concurrency));
    for (Slot& s : slots_) {
      s.easy = curl_easy_init();
      configure_easy(s.easy, t, &s.body, connect_to_);
      curl_easy_setopt(s.easy, CURLOPT_PRIVATE, &s);
    }
  }
  ~RawMulti() override {
    for (Slot& s : slots_) curl_easy_cleanup(s.easy);
    curl_multi_cleanup(multi_);
    curl_slist_free_all(connect_to_);
  }

  int64_t run(int64_t n, std::vector<double>& lat) override {
    int64_t started = 0, finished = 0, errors = 0;
    auto start = [&](Slot& s) {
      s.body.clear();
      s.started_ns = now_ns();
      curl_multi_add_handle(multi_, s.easy);
      ++started;
    };
    for (Slot& s : slots_) {
      if (started == n) break;
      start(s);
    }
    while (finished < n) {
      int running = 0;
      curl_multi_perform(multi_, &running);
      int queued = 0;
      while (CURLMsg* msg = curl_multi_info_read(multi_, &queued)) {
        if (msg->msg != CURLMSG_DONE) continue;
        CURL* e = msg->easy_handle;
        const CURLcode rc = msg->data.result;
        Slot* s = nullptr;
        curl_easy_getinfo(e, CURLINFO_PRIVATE, reinterpret_cast<char**>(&s));
        long code = 0;
        curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &code);
        if (rc != CURLE_OK || code != 200) {
          if (errors++ == 0) std::fprintf(stderr, "raw-multi: %s (status %ld)\n", curl_easy_strerror(rc), code);
        }
        lat.push_back(static_cast<double>(now_ns() - s->started_ns) / 1e3);
        ++finished;
        curl_multi_remove_handle(multi_, e);
        if (started < n) start(*s);
      }
      if (finished < n) curl_multi_poll(multi_, nullptr, 0, 1000, nullptr);
    }
    return errors;
  }

 private:
  struct Slot {
    CURL* easy = nullptr;
    std::string body;
    int64_t started_ns = 0;
  };
  CURLM* multi_;
  curl_slist* connect_to_;
  std::vector<Slot> slots_;
};

// ---- humus_http through its C ABI ------------------------------------------------------------------------

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

[[noreturn]] void die_humus(const char* what, humus_status st) {
  const humus_error* e = humus_last_error();
  std::fprintf(stderr, "engine_bench: %s: %s: %s\n", what, humus_status_name(st),
               e != nullptr ? humus_error_message(e) : "(no message)");
  std::exit(1);
}

// A runtime, a client and one request, freed in that order's reverse.
struct HumusSetup {
  humus_runtime* rt = nullptr;
  humus_client* client = nullptr;
  humus_request* request = nullptr;

  HumusSetup(const std::string& runtime_json, const std::string& settings_json, const std::string& url,
             const humus_mock_transport* mock) {
    humus_status st = humus_runtime_new(runtime_json.data(), runtime_json.size(), &rt, nullptr);
    if (st != HUMUS_OK) die_humus("humus_runtime_new", st);
    if (mock != nullptr && (st = humus_runtime_set_mock_transport(rt, mock, nullptr)) != HUMUS_OK) {
      die_humus("humus_runtime_set_mock_transport", st);
    }
    humus_settings* s = nullptr;
    if ((st = humus_settings_from_json(settings_json.data(), settings_json.size(), &s, nullptr)) != HUMUS_OK) {
      die_humus("humus_settings_from_json", st);
    }
    st = humus_client_new(rt, s, &client, nullptr);
    humus_settings_free(s);
    if (st != HUMUS_OK) die_humus("humus_client_new", st);
    if ((st = humus_request_new("GET", url.c_str(), &request, nullptr)) != HUMUS_OK) die_humus("humus_request_new", st);
  }
  ~HumusSetup() {
    humus_request_free(request);
    humus_client_free(client);
    humus_runtime_free(rt);
  }
  HumusSetup(const HumusSetup&) = delete;
  HumusSetup& operator=(const HumusSetup&) = delete;
};

// Settings for a benchmark client: the defaults but for the protocol, the CA, and a bulkhead wide enough
// for --concurrency calls at once (the default of 50 would queue the 64 concurrent calls of the async rows).
std::string humus_settings_json(const Target& t, int concurrency) {
  std::string j = "{\"base_url\": " + json_string(origin_of(t.url));
  j += ", \"bulkhead\": {\"max_concurrent\": " + std::to_string(std::max(concurrency, 50)) + "}";
  if (t.h2) {
    j += ", \"http_version\": \"2\"";
    if (!t.ca_file.empty()) j += ", \"tls\": {\"ca_file\": " + json_string(t.ca_file) + "}";
  } else {
    j += ", \"http_version\": \"1.1\"";
  }
  return j + "}";
}

std::string humus_runtime_json(const Target& t) {
  if (t.resolve.empty()) return "";
  return "{\"resolve\": {" + json_string(t.resolve.host_port) + ": " + json_string(t.resolve.addr_port) + "}}";
}

// One humus_client_do per request, the request built once; the body is read as a caller would.
// `read_trace`: each response's decision trace is rendered and freed too (what reading it costs).
int64_t humus_sequential(humus_client* c, const humus_request* r, int64_t n, std::vector<double>& lat,
                         const char* name, bool read_trace = false) {
  int64_t errors = 0;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t t0 = now_ns();
    humus_response* resp = nullptr;
    const humus_status st = humus_client_do(c, r, &resp, nullptr);
    if (st == HUMUS_OK) {
      const void* data = nullptr;
      size_t len = 0;
      (void)humus_response_body(resp, &data, &len, nullptr);
      if (humus_response_status(resp) != 200 || len == 0) ++errors;
      if (read_trace) {
        char* trace = nullptr;
        if (humus_response_trace(resp, &trace, nullptr, nullptr) != HUMUS_OK) ++errors;
        humus_string_free(trace);
      }
      humus_response_free(resp);
    } else if (errors++ == 0) {
      const humus_error* e = humus_last_error();
      std::fprintf(stderr, "%s: %s: %s\n", name, humus_status_name(st), e != nullptr ? humus_error_message(e) : "");
    }
    lat.push_back(static_cast<double>(now_ns() - t0) / 1e3);
  }
  return errors;
}

// Sinks that do nothing: what telemetry costs the call path itself (docs/telemetry.md §13; issue goal: <= 5 % CPU).
void ignore_span(void* /*user*/, const humus_span* /*span*/) {}
void ignore_record(void* /*user*/, const humus_log_record* /*record*/) {}

class HumusSequential final : public Runner {
 public:
  // `traced`: with a span sink and a log sink installed, so every attempt makes its span and traceparent.
  // `header`: no sinks, but the request carries a traceparent of the same length: what libcurl's sending of
  // that header costs, the floor under the traced row's extra CPU.
  HumusSequential(const Target& t, int concurrency, bool traced, bool header = false)
      : setup_(humus_runtime_json(t), humus_settings_json(t, concurrency), t.url, nullptr),
        name_(traced ? "humus-seq-traced" : header ? "humus-seq-header" : "humus-seq") {
    if (header) {
      const humus_status st = humus_request_set_header(
          setup_.request, "traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", nullptr);
      if (st != HUMUS_OK) die_humus("humus_request_set_header", st);
    }
    if (!traced) return;
    humus_span_sink spans = HUMUS_SPAN_SINK_INIT;
    spans.span = ignore_span;
    humus_log_sink logs = HUMUS_LOG_SINK_INIT;
    logs.record = ignore_record;
    humus_status st = humus_runtime_set_span_sink(setup_.rt, &spans, nullptr);
    if (st != HUMUS_OK) die_humus("humus_runtime_set_span_sink", st);
    if ((st = humus_runtime_set_log_sink(setup_.rt, &logs, nullptr)) != HUMUS_OK) die_humus("humus_runtime_set_log_sink", st);
  }
  int64_t run(int64_t n, std::vector<double>& lat) override {
    return humus_sequential(setup_.client, setup_.request, n, lat, name_);
  }

 private:
  HumusSetup setup_;
  const char* name_;
};

// The layer alone: the same call loop, bulkhead, breaker, classifier and budget, answered by the mock
// transport on the real clock (no socket, no libcurl): 200 with a two-byte body, like the server's.
humus_status mock_respond(void* /*user*/, const humus_mock_request* /*req*/, humus_mock_reply* reply) {
  humus_mock_reply_set_status(reply, 200);
  humus_mock_reply_set_body(reply, "ok", 2);
  return HUMUS_OK;
}

class HumusLayer final : public Runner {
 public:
  explicit HumusLayer(bool read_trace)
      : setup_("", "{\"base_url\": \"http://payments\"}", "http://payments/", &kMock), read_trace_(read_trace) {}
  int64_t run(int64_t n, std::vector<double>& lat) override {
    return humus_sequential(setup_.client, setup_.request, n, lat,
                            read_trace_ ? "humus-layer-trace" : "humus-layer", read_trace_);
  }

 private:
  static constexpr humus_mock_transport kMock = {HUMUS_MOCK_TRANSPORT_VERSION, mock_respond, nullptr, nullptr};
  HumusSetup setup_;
  bool read_trace_;
};

// ==== Asynchronous rows ====================================================================================
//
// humus_client_submit with `concurrency_` calls in flight: each completion (on the runtime's event-loop
// thread) submits the next call, as RawMulti re-adds its easy handles; this thread waits for the last. Its
// ratio is taken against raw-multi of the same protocol (see kScenarios).
class HumusAsync final : public Runner {
 public:
  HumusAsync(const Target& t, int concurrency)
      : setup_(humus_runtime_json(t), humus_settings_json(t, concurrency), t.url, nullptr),
        concurrency_(concurrency) {}

  int64_t run(int64_t n, std::vector<double>& lat) override {
    State st;
    st.self = this;
    st.total = n;
    st.lat = &lat;
    lat.reserve(lat.size() + static_cast<size_t>(n));
    const int64_t first = std::min<int64_t>(n, concurrency_);
    st.started = first;
    for (int64_t i = 0; i < first; ++i) submit(st);
    std::unique_lock<std::mutex> lock(st.mu);
    st.cv.wait(lock, [&] { return st.finished == st.total; });
    return st.errors;
  }

 private:
  // Touched only on the event-loop thread once running, except `finished`, under `mu`, for the waiter.
  struct State {
    HumusAsync* self = nullptr;
    int64_t total = 0;
    int64_t started = 0;
    int64_t errors = 0;
    std::vector<double>* lat = nullptr;
    std::mutex mu;
    std::condition_variable cv;
    int64_t finished = 0;
  };
  struct Pending {
    State* state;
    int64_t started_ns;
  };

  void submit(State& st) {
    auto* p = new Pending{&st, now_ns()};
    const humus_status rc = humus_client_submit(setup_.client, setup_.request, &HumusAsync::done, p, nullptr, nullptr);
    if (rc != HUMUS_OK) die_humus("humus_client_submit", rc);
  }

  static void done(void* user, humus_status status, humus_response* resp, humus_error* err) {
    std::unique_ptr<Pending> p(static_cast<Pending*>(user));
    State& st = *p->state;
    if (status != HUMUS_OK || humus_response_status(resp) != 200) {
      if (st.errors++ == 0) {
        std::fprintf(stderr, "humus-async: %s\n", err != nullptr ? humus_error_message(err) : "status not 200");
      }
    }
    humus_response_free(resp);
    humus_error_free(err);
    st.lat->push_back(static_cast<double>(now_ns() - p->started_ns) / 1e3);
    if (st.started < st.total) {
      ++st.started;
      st.self->submit(st);
    }
    std::lock_guard<std::mutex> lock(st.mu);
    if (++st.finished == st.total) st.cv.notify_one();
  }

  HumusSetup setup_;
  int concurrency_;
};

// The design the blocking path did not take, measured so the choice stays justified: each blocking call
// handed to the event-loop thread (humus_client_submit) and waited for on a condition variable, one at a
// time — two thread hand-offs per call that raw libcurl does not pay.
class HumusSeqViaLoop final : public Runner {
 public:
  HumusSeqViaLoop(const Target& t, int concurrency)
      : setup_(humus_runtime_json(t), humus_settings_json(t, concurrency), t.url, nullptr) {}

  int64_t run(int64_t n, std::vector<double>& lat) override {
    int64_t errors = 0;
    for (int64_t i = 0; i < n; ++i) {
      Wait w;
      const int64_t t0 = now_ns();
      const humus_status rc = humus_client_submit(setup_.client, setup_.request, &HumusSeqViaLoop::done, &w, nullptr, nullptr);
      if (rc != HUMUS_OK) die_humus("humus_client_submit", rc);
      std::unique_lock<std::mutex> lock(w.mu);
      w.cv.wait(lock, [&] { return w.finished; });
      lat.push_back(static_cast<double>(now_ns() - t0) / 1e3);
      if (!w.ok) ++errors;
    }
    return errors;
  }

 private:
  struct Wait {
    std::mutex mu;
    std::condition_variable cv;
    bool finished = false;
    bool ok = false;
  };
  static void done(void* user, humus_status status, humus_response* resp, humus_error* err) {
    auto& w = *static_cast<Wait*>(user);
    const bool ok = status == HUMUS_OK && humus_response_status(resp) == 200;
    humus_response_free(resp);
    humus_error_free(err);
    std::lock_guard<std::mutex> lock(w.mu);
    w.ok = ok;
    w.finished = true;
    w.cv.notify_one();
  }

  HumusSetup setup_;
};

std::unique_ptr<Runner> make_humus_async(const Target& t, int concurrency) {
  return std::make_unique<HumusAsync>(t, concurrency);
}

// ==== Scenarios ============================================================================================

struct ScenarioDef {
  const char* name;
  const char* baseline;  // the raw row its ratios are taken against
  bool needs_server;
  const char* what;
};

const ScenarioDef kScenarios[] = {
    {"raw-seq", "raw-seq", true, "libcurl easy handle reused, curl_easy_perform"},
    {"humus-seq", "raw-seq", true, "humus_client_do in a loop (blocking)"},
    {"humus-seq-traced", "raw-seq", true, "humus-seq with a span sink and a log sink that do nothing"},
    {"humus-seq-header", "raw-seq", true, "humus-seq sending a traceparent header, no sinks (the traced floor)"},
    {"raw-multi", "raw-multi", true, "curl_multi, N transfers in flight, one thread"},
    {"humus-async", "raw-multi", true, "humus_client_submit, N calls in flight"},
    {"humus-layer", "raw-seq", false, "humus_client_do on the mock transport (no socket)"},
    {"humus-layer-trace", "raw-seq", false, "humus-layer reading each call's decision trace as JSON"},
    {"humus-seq-via-loop", "raw-seq", true, "blocking calls handed to the event loop (the design not taken)"},
};

struct Row {
  std::string proto;  // "h1", "h2", or "mock" for the layer alone
  const ScenarioDef* def;
  std::unique_ptr<Runner> runner;
  std::vector<Sample> samples;  // one per round
};

std::string row_name(const Row& r) { return r.proto + " " + r.def->name; }

// --only mixes protocols (h1, h2, mock: the layer alone) and scenario names; a row runs when it matches one of
// the protocols given (if any) and one of the names given (if any): "--only h1,raw-seq,humus-seq".
bool wanted(const Options& o, const std::string& proto, const std::string& name) {
  bool any_proto = false, proto_ok = false, any_name = false, name_ok = false;
  for (const std::string& w : o.only) {
    if (w == "h1" || w == "h2" || w == "mock") {
      any_proto = true;
      proto_ok = proto_ok || w == proto;
    } else {
      any_name = true;
      name_ok = name_ok || w == name;
    }
  }
  return (!any_proto || proto_ok) && (!any_name || name_ok);
}

std::string cpu_affinity() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return "?";
  std::string out;
  for (int i = 0; i < CPU_SETSIZE; ++i) {
    if (!CPU_ISSET(i, &set)) continue;
    if (!out.empty()) out += ',';
    out += std::to_string(i);
  }
  return out;
}

const Row* find_row(const std::vector<Row>& rows, const std::string& proto, const std::string& name) {
  for (const Row& r : rows) {
    if (r.proto == proto && r.def->name == name) return &r;
  }
  return nullptr;
}

// The raw row a row is compared with: same protocol; the layer alone against h1 raw-seq.
const Row* baseline_of(const std::vector<Row>& rows, const Row& r) {
  return find_row(rows, r.proto == "mock" ? "h1" : r.proto, r.def->baseline);
}

template <typename F>
std::vector<double> per_round(const Row& a, const Row& b, F f) {
  std::vector<double> out;
  for (size_t i = 0; i < a.samples.size() && i < b.samples.size(); ++i) out.push_back(f(a.samples[i], b.samples[i]));
  return out;
}

template <typename F>
double median_of(const Row& r, F f) {
  std::vector<double> v;
  for (const Sample& s : r.samples) v.push_back(f(s));
  return median(v);
}

std::string fmt(const char* format, double v) {
  if (std::isnan(v)) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  const Options opt = parse_options(argc, argv);
  curl_global_init(CURL_GLOBAL_DEFAULT);
  const Resolve resolve = parse_resolve(opt.resolve);

  std::vector<Target> targets;
  if (!opt.h1_url.empty()) targets.push_back(Target{"h1", opt.h1_url, false, "", {}});
  if (!opt.h2_url.empty()) targets.push_back(Target{"h2", opt.h2_url, true, opt.ca_file, resolve});

  // Build the rows: every scenario of every protocol that is wanted and exists.
  std::vector<Row> rows;
  for (const Target& t : targets) {
    for (const ScenarioDef& def : kScenarios) {
      if (!def.needs_server || !wanted(opt, t.proto, def.name)) continue;
      std::unique_ptr<Runner> runner;
      const std::string name = def.name;
      if (name == "raw-seq") runner = std::make_unique<RawSequential>(t);
      else if (name == "raw-multi") runner = std::make_unique<RawMulti>(t, opt.concurrency);
      else if (name == "humus-seq") runner = std::make_unique<HumusSequential>(t, opt.concurrency, false);
      else if (name == "humus-seq-traced") runner = std::make_unique<HumusSequential>(t, opt.concurrency, true);
      else if (name == "humus-seq-header") runner = std::make_unique<HumusSequential>(t, opt.concurrency, false, true);
      else if (name == "humus-async") runner = make_humus_async(t, opt.concurrency);
      else if (name == "humus-seq-via-loop") runner = std::make_unique<HumusSeqViaLoop>(t, opt.concurrency);
      rows.push_back(Row{t.proto, &def, std::move(runner), {}});
    }
  }
  for (const ScenarioDef& def : kScenarios) {
    if (!def.needs_server && wanted(opt, "mock", def.name)) {
      const bool read_trace = std::string(def.name) == "humus-layer-trace";
      rows.push_back(Row{"mock", &def, std::make_unique<HumusLayer>(read_trace), {}});
    }
  }
  if (rows.empty()) {
    std::fprintf(stderr, "engine_bench: nothing to run\n");
    return 2;
  }

  curl_version_info_data* cv = curl_version_info(CURLVERSION_NOW);
  std::printf("engine_bench: humus_http %s, libcurl %s (%s, nghttp2 %s)\n", humus_version(), cv->version,
              cv->ssl_version != nullptr ? cv->ssl_version : "no TLS",
              cv->nghttp2_version != nullptr ? cv->nghttp2_version : "none");
  std::printf("  h1: %s\n  h2: %s%s%s\n", opt.h1_url.empty() ? "(none)" : opt.h1_url.c_str(),
              opt.h2_url.empty() ? "(none)" : opt.h2_url.c_str(), opt.resolve.empty() ? "" : "  resolve ",
              opt.resolve.c_str());
  std::printf("  %d rounds x %lld requests per scenario (warm-up %lld), concurrency %d, client CPUs: %s\n",
              opt.rounds, static_cast<long long>(opt.requests), static_cast<long long>(opt.warmup),
              opt.concurrency, cpu_affinity().c_str());
  std::fflush(stdout);

  // Warm-up: connections opened, TLS sessions made, allocator and caches warm — none of it counted.
  for (Row& r : rows) {
    if (opt.warmup > 0) {
      const Sample s = measure(*r.runner, opt.warmup);
      if (s.errors == s.requests) {
        std::fprintf(stderr, "engine_bench: %s: every warm-up request failed\n", row_name(r).c_str());
        return 1;
      }
    }
  }

  // Interleaved rounds: every row once per round, the order reversed every other round.
  for (int round = 0; round < opt.rounds; ++round) {
    std::vector<Row*> order;
    for (Row& r : rows) order.push_back(&r);
    if (round % 2 == 1) std::reverse(order.begin(), order.end());
    for (Row* r : order) r->samples.push_back(measure(*r->runner, opt.requests));
    std::fprintf(stderr, "round %d/%d done\n", round + 1, opt.rounds);
  }

  // ---- Table of medians ----
  std::printf("\nMedians over %d rounds (ratios: median of per-round ratios to the raw libcurl row of the same "
              "protocol)\n",
              opt.rounds);
  std::printf("%-24s %10s %9s %9s %9s %8s %8s %9s %9s %7s\n", "scenario", "req/s", "p50 us", "p99 us", "CPU us/req",
              "user", "sys", "x raw r/s", "dCPU us", "errors");
  for (const Row& r : rows) {
    const Row* base = baseline_of(rows, r);
    double ratio = std::nan(""), dcpu = std::nan("");
    if (base != nullptr && base != &r) {
      ratio = median(per_round(r, *base, [](const Sample& a, const Sample& b) { return a.rps / b.rps; }));
      dcpu = median(per_round(r, *base, [](const Sample& a, const Sample& b) {
        return a.cpu_us_per_req - b.cpu_us_per_req;
      }));
    }
    int64_t errors = 0;
    for (const Sample& s : r.samples) errors += s.errors;
    std::printf("%-24s %10s %9s %9s %9s %8s %8s %9s %9s %7lld\n", row_name(r).c_str(),
                fmt("%.0f", median_of(r, [](const Sample& s) { return s.rps; })).c_str(),
                fmt("%.1f", median_of(r, [](const Sample& s) { return s.p50_us; })).c_str(),
                fmt("%.1f", median_of(r, [](const Sample& s) { return s.p99_us; })).c_str(),
                fmt("%.2f", median_of(r, [](const Sample& s) { return s.cpu_us_per_req; })).c_str(),
                fmt("%.2f", median_of(r, [](const Sample& s) { return s.user_us_per_req; })).c_str(),
                fmt("%.2f", median_of(r, [](const Sample& s) { return s.sys_us_per_req; })).c_str(),
                r.proto == "mock" ? "-" : fmt("%.3f", ratio).c_str(), r.proto == "mock" ? "-" : fmt("%+.2f", dcpu).c_str(),
                static_cast<long long>(errors));
  }

  // ---- Per-round ratios ----
  std::printf("\nPer round: throughput ratio to raw (x) and extra CPU us per request (d)\n");
  std::printf("%-24s", "scenario");
  for (int i = 0; i < opt.rounds; ++i) std::printf("   round %-2d     ", i + 1);
  std::printf("\n");
  for (const Row& r : rows) {
    const Row* base = baseline_of(rows, r);
    if (base == nullptr || base == &r || r.proto == "mock") continue;
    std::printf("%-24s", row_name(r).c_str());
    for (size_t i = 0; i < r.samples.size() && i < base->samples.size(); ++i) {
      std::printf("  x%.3f d%+6.2f", r.samples[i].rps / base->samples[i].rps,
                  r.samples[i].cpu_us_per_req - base->samples[i].cpu_us_per_req);
    }
    std::printf("\n");
  }

  // ---- The ratio section: the issue's goals, as numbers (never pass/fail) ----
  std::printf("\nRatio (issue goals: extra CPU <= 0.5 us/attempt over raw sequential; concurrent >= 0.95x "
              "curl_multi; h2 >= 0.95x raw h2)\n");
  for (const std::string proto : {"h1", "h2"}) {
    const Row* raw = find_row(rows, proto, "raw-seq");
    const Row* hs = find_row(rows, proto, "humus-seq");
    if (raw != nullptr && hs != nullptr) {
      std::printf("  %s humus-seq vs raw-seq:    extra CPU %+.2f us/req (raw %.2f, humus %.2f), throughput x%.3f\n",
                  proto.c_str(),
                  median(per_round(*hs, *raw, [](const Sample& a, const Sample& b) {
                    return a.cpu_us_per_req - b.cpu_us_per_req;
                  })),
                  median_of(*raw, [](const Sample& s) { return s.cpu_us_per_req; }),
                  median_of(*hs, [](const Sample& s) { return s.cpu_us_per_req; }),
                  median(per_round(*hs, *raw, [](const Sample& a, const Sample& b) { return a.rps / b.rps; })));
    }
    const Row* traced = find_row(rows, proto, "humus-seq-traced");
    if (traced != nullptr && hs != nullptr) {
      std::printf("  %s telemetry (spans + logs, sinks doing nothing) vs humus-seq: CPU %+.1f %% per request "
                  "(goal <= 5 %%)\n",
                  proto.c_str(), 100 * (median(per_round(*traced, *hs, [](const Sample& a, const Sample& b) {
                                          return a.cpu_us_per_req / b.cpu_us_per_req;
                                        })) - 1));
    }
    const Row* header = find_row(rows, proto, "humus-seq-header");
    if (header != nullptr && hs != nullptr) {
      std::printf("  %s the same traceparent header sent without spans vs humus-seq: CPU %+.1f %% per request%s\n",
                  proto.c_str(), 100 * (median(per_round(*header, *hs, [](const Sample& a, const Sample& b) {
                                          return a.cpu_us_per_req / b.cpu_us_per_req;
                                        })) - 1),
                  traced != nullptr ? "" : " (run humus-seq-traced too for the rest)");
      if (traced != nullptr) {
        std::printf("  %s telemetry beyond that header (traced vs header): CPU %+.1f %% per request (goal <= 2 %%)\n",
                    proto.c_str(), 100 * (median(per_round(*traced, *header, [](const Sample& a, const Sample& b) {
                                            return a.cpu_us_per_req / b.cpu_us_per_req;
                                          })) - 1));
      }
    }
    const Row* multi = find_row(rows, proto, "raw-multi");
    const Row* async = find_row(rows, proto, "humus-async");
    if (multi != nullptr && async != nullptr) {
      std::printf("  %s humus-async vs raw-multi: throughput x%.3f, extra CPU %+.2f us/req\n", proto.c_str(),
                  median(per_round(*async, *multi, [](const Sample& a, const Sample& b) { return a.rps / b.rps; })),
                  median(per_round(*async, *multi, [](const Sample& a, const Sample& b) {
                    return a.cpu_us_per_req - b.cpu_us_per_req;
                  })));
    }
  }
  if (const Row* layer = find_row(rows, "mock", "humus-layer")) {
    std::printf("  layer alone (mock transport, real clock): %.2f us CPU per call, p50 %.2f us\n",
                median_of(*layer, [](const Sample& s) { return s.cpu_us_per_req; }),
                median_of(*layer, [](const Sample& s) { return s.p50_us; }));
    if (const Row* read = find_row(rows, "mock", "humus-layer-trace")) {
      const std::vector<double> extra =
          per_round(*read, *layer, [](const Sample& a, const Sample& b) { return a.cpu_us_per_req - b.cpu_us_per_req; });
      std::printf("  reading the decision trace (humus_response_trace): +%.2f us CPU per call (median of rounds)\n",
                  median(extra));
    }
  }

  // ---- Footer: what was not measured, and why ----
  std::printf("\nNotes:\n");
  std::printf("  CPU is this process's (CLOCK_PROCESS_CPUTIME_ID; user/sys from getrusage); the server's is "
              "not counted.\n");
  std::printf("  p50/p99 of raw-multi/humus-async are per transfer from add to done, queueing included.\n");
  curl_global_cleanup();
  return 0;
}
