#include "fetch.h"

#include <humus_http.h>
#include <strings.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>
#include <unistd.h>
#include <vector>

#include "capi.h"
#include "exit_codes.h"
#include "faults.h"
#include "hints.h"
#include "output.h"
#include "progress.h"
#include "redirects.h"
#include "request_body.h"
#include "settings_flags.h"
#include "stream.h"
#include "trace.h"
#include "upload.h"
#include "urls.h"
#include "write_out.h"

namespace humus::cli {

using Json = nlohmann::json;

namespace {

std::string base64(const std::string& in) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const uint32_t n = (static_cast<unsigned char>(in[i]) << 16) |
                       (static_cast<unsigned char>(in[i + 1]) << 8) | static_cast<unsigned char>(in[i + 2]);
    for (int k = 18; k >= 0; k -= 6) out += kAlphabet[(n >> k) & 63];
  }
  if (i < in.size()) {
    uint32_t n = static_cast<unsigned char>(in[i]) << 16;
    if (i + 1 < in.size()) n |= static_cast<unsigned char>(in[i + 1]) << 8;
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += i + 1 < in.size() ? kAlphabet[(n >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

// The file a body is streamed from: -T FILE, or a lone --data-binary @FILE (sent as it is, unlike -d @FILE).
std::optional<std::string> streamable_body_file(const FetchOptions& o) {
  if (o.upload_file) return o.upload_file;
  if (o.data.size() != 1 || o.get_query) return std::nullopt;
  const DataPiece& p = o.data.front();
  if (p.kind != DataPiece::Kind::kRaw || !p.from_file || p.strip_newlines) return std::nullopt;
  return p.text;
}

bool has_header(const FetchOptions& o, const char* name) {
  return std::any_of(o.headers.begin(), o.headers.end(),
                     [&](const auto& h) { return strcasecmp(h.first.c_str(), name) == 0; });
}

// One call, from its start to its -w line. A streamed call's body is read while it is written.
struct CallResult {
  Response response;
  Error error;
  std::chrono::steady_clock::time_point start;
  CallTrace trace;  // read once the call is over: for --trace, --trace-json and -w
  std::optional<std::string> redirect_refused;  // the hop --max-redirs kept from being sent
  int64_t headers_ms = 0;  // from the start to the response's headers (or the failure)
  int64_t elapsed_us = 0;  // from the start to the end of the body
  int32_t http_code = 0;   // 0 when no response came
  int32_t attempts = 0;
  std::string url_effective;
  std::string breaker_state;  // just after the call, for -w
  std::string after_it;       // for --trace: the breaker and budget just after the call
  // For -w, read while the response is at hand: a streamed one is closed before the -w line.
  std::string content_type, http_version, redirect_url;
  int32_t redirects = 0;
  bool past_max_redirs = false;  // a redirect the client would follow, past --max-redirs
};

int64_t ms_since(std::chrono::steady_clock::time_point start) {
  const auto elapsed = std::chrono::steady_clock::now() - start;
  return std::chrono::duration_cast<std::chrono::milliseconds>(elapsed).count();
}

std::string attempts_text(int32_t n) { return std::to_string(n) + (n == 1 ? " attempt" : " attempts"); }

}  // namespace

int run_fetch(const FetchOptions& o) {
  // Its style is chosen once the output is known; every message first ends the meter's row.
  Progress progress(Progress::Style::kNone);
  const auto report = [&](const Outcome& out) {
    progress.end();
    if (!o.silent && !out.message.empty())
      std::fprintf(stderr, "humus-http: (%d) %s\n", out.code, out.message.c_str());
    return out.code;
  };

  // The body: streamed from its file when one call at a time sends it (stdin only once), else in memory.
  // The Upload outlives the request, which does not own it.
  std::unique_ptr<Upload> upload;
  std::string body;
  std::string boundary;
  const std::optional<std::string> body_file = streamable_body_file(o);
  const std::string body_shown =
      o.upload_file ? "-T " + *o.upload_file : "--data-binary @" + body_file.value_or("");
  if (body_file && o.concurrency == 1 && !(*body_file == "-" && o.repeat > 1)) {
    if (auto failed = Upload::open(*body_file, body_shown, upload)) return report(*failed);
  } else if (o.upload_file) {
    std::string why;
    if (!read_file(*o.upload_file, body, why)) return report({exit_code::kRead, body_shown + ": " + why});
  } else if (auto failed = request_body(o, body, boundary)) {
    return report(*failed);
  }
  std::string url = o.url;
  const bool has_body = !o.form.empty() || (!o.data.empty() && !o.get_query) || o.upload_file.has_value();
  if (o.get_query) {
    url = with_query(o.url, body);
    body.clear();
  }
  std::optional<std::string> output_path = o.output;
  if (o.remote_name) {
    output_path = remote_name_of(o.url);
    if (output_path->empty())
      return report({exit_code::kWrite, "-O: the URL '" + shown_url(o.url) + "' names no file in its path"});
  }

  // Settings, then the client.
  Json json;
  Sources sources;
  if (auto failed = settings_json(o, json, sources)) return report(*failed);
  humus_error* raw_error = nullptr;
  humus_settings* raw_settings = nullptr;
  const std::string json_text = json_text_of(json);
  if (humus_settings_from_json(json_text.data(), json_text.size(), &raw_settings, &raw_error) != HUMUS_OK) {
    Error e(raw_error);
    return report(settings_error(e.get(), sources));
  }
  Settings settings(raw_settings);

  Json effective;
  {
    char* text = nullptr;
    size_t len = 0;
    if (humus_settings_to_json(settings.get(), &text, &len, &raw_error) != HUMUS_OK) {
      Error e(raw_error);
      return report({exit_code::kFailure, describe(e.get())});
    }
    LibString owned(text);
    effective = Json::parse(std::string(text, len), nullptr, false);
    if (!effective.is_object())
      return report({exit_code::kFailure, "the effective settings are not a JSON object"});
  }
  const Json budget = effective.value("retry_budget", Json::object());
  Tracer tracer(budget.value("policy", "token_bucket"), budget.value("tokens", 0.0));

  Json runtime_options = Json::object();
  if (!o.faults.empty()) runtime_options["faults"] = true;
  if (!o.resolve.empty()) {
    Json& resolve = runtime_options["resolve"];
    resolve = Json::object();
    for (const auto& [from, to] : o.resolve) resolve[from] = to;
  }
  const std::string options_text = json_text_of(runtime_options);
  humus_runtime* raw_runtime = nullptr;
  if (humus_runtime_new(options_text.data(), options_text.size(), &raw_runtime, &raw_error) != HUMUS_OK) {
    Error e(raw_error);
    return report({exit_code::kUsage, "--resolve: " + describe(e.get())});
  }
  Runtime runtime(raw_runtime);
  if (o.trace && tracer.install_log_sink(runtime.get(), &raw_error) != HUMUS_OK) {
    Error e(raw_error);
    return report({exit_code::kFailure, "--trace: " + describe(e.get())});
  }
  humus_client* raw_client = nullptr;
  if (humus_client_new(runtime.get(), settings.get(), &raw_client, &raw_error) != HUMUS_OK) {
    Error e(raw_error);
    return report(settings_error(e.get(), sources));
  }
  Client client(raw_client);
  tracer.attach(client.get());

  // The request.
  humus_request* raw_request = nullptr;
  if (o.upload_file) url = upload_url(url, *o.upload_file);
  if (humus_request_new(o.method.c_str(), url.c_str(), &raw_request, &raw_error) != HUMUS_OK) {
    Error e(raw_error);
    const bool method =
        humus_error_field_count(e.get()) == 1 && std::strcmp(humus_error_field(e.get(), 0), "method") == 0;
    if (method) return report({exit_code::kUsage, "-X '" + o.method + "': " + describe(e.get())});
    const std::string hint = shown_url(url) != url ? " (give a user and password with -u)" : "";
    return report({exit_code::kUrl, "URL '" + shown_url(url) + "': " + describe(e.get()) + hint});
  }
  Request request(raw_request);
  std::vector<std::pair<std::string, std::string>> sent_headers;
  // curl's: what -A, -u, --oauth2-bearer, -r and --json imply comes first, and a -H of the same name replaces
  // it, or leaves it out ('Name:').
  const bool json_body = !o.data.empty() && o.data.front().kind == DataPiece::Kind::kJson;
  if (o.user_agent && !has_header(o, "User-Agent")) sent_headers.emplace_back("User-Agent", *o.user_agent);
  if (o.user && !has_header(o, "Authorization"))
    sent_headers.emplace_back("Authorization", "Basic " + base64(*o.user));
  if (o.oauth2_bearer && !has_header(o, "Authorization"))
    sent_headers.emplace_back("Authorization", "Bearer " + *o.oauth2_bearer);
  if (o.range && !has_header(o, "Range")) sent_headers.emplace_back("Range", "bytes=" + *o.range);
  if (json_body && !has_header(o, "Accept")) sent_headers.emplace_back("Accept", "application/json");
  if (has_body && !has_header(o, "Content-Type")) {
    // -T: curl sends none, but libcurl would then add its form default to any body: a file is bytes.
    sent_headers.emplace_back("Content-Type", o.upload_file     ? "application/octet-stream"
                                              : !o.form.empty() ? "multipart/form-data; boundary=" + boundary
                                              : json_body       ? "application/json"
                                                                : "application/x-www-form-urlencoded");
  }
  for (const std::string& name : o.unset_headers) {
    std::erase_if(sent_headers, [&](const auto& h) { return strcasecmp(h.first.c_str(), name.c_str()) == 0; });
    // And the ones the client and libcurl add themselves (Accept, User-Agent, Accept-Encoding), as curl does;
    // a -H of the name still goes.
    if (humus_request_remove_header(request.get(), name.c_str(), &raw_error) != HUMUS_OK) {
      Error e(raw_error);
      return report({exit_code::kUsage, "-H '" + name + ":': " + describe(e.get())});
    }
  }
  sent_headers.insert(sent_headers.end(), o.headers.begin(), o.headers.end());
  // The fault scenario joins the baggage a -H gives, else it is the call context's baggage.
  std::string fault_member;
  if (!o.faults.empty()) fault_member = cli::fault_member(o.faults, cli::fault_point(effective.value("base_url", "")));
  for (auto& [name, value] : sent_headers) {
    if (!fault_member.empty() && strcasecmp(name.c_str(), "baggage") == 0) {
      value += "," + fault_member;
      fault_member.clear();
    }
    if (humus_request_set_header(request.get(), name.c_str(), value.c_str(), &raw_error) != HUMUS_OK) {
      Error e(raw_error);
      return report({exit_code::kUsage, "-H '" + name + "': " + describe(e.get())});
    }
  }
  if (!fault_member.empty() &&
      humus_request_set_context(request.get(), nullptr, nullptr, fault_member.c_str(), nullptr, nullptr,
                                &raw_error) != HUMUS_OK) {
    Error e(raw_error);
    return report({exit_code::kUsage, "--inject-fault: " + describe(e.get())});
  }
  if (o.idempotency_key &&
      humus_request_set_idempotency_key(request.get(), o.idempotency_key->c_str(), &raw_error) != HUMUS_OK) {
    Error e(raw_error);
    return report({exit_code::kUsage, "--idempotency-key: " + describe(e.get())});
  }
  if (upload && upload->attach(request.get(), &raw_error) != HUMUS_OK) {
    Error e(raw_error);
    return report({exit_code::kFailure, "the body could not be set: " + describe(e.get())});
  }
  if (!upload && has_body && humus_request_set_body(request.get(), body.data(), body.size()) != HUMUS_OK) {
    return report({exit_code::kFailure, "the body could not be set"});
  }
  if (o.retry_all_errors &&
      humus_request_set_retry(request.get(), HUMUS_RETRY_MODE_FORCE, &raw_error) != HUMUS_OK) {
    Error e(raw_error);
    return report({exit_code::kFailure, "--retry-all-errors: " + describe(e.get())});
  }
  RedirectLimit redirect_limit(o.max_redirs.value_or(-1));
  if (redirect_limit.install(request.get(), &raw_error) != HUMUS_OK) {
    Error e(raw_error);
    return report({exit_code::kFailure, "--max-redirs: " + describe(e.get())});
  }
  if (o.retry_max_time_ms &&
      humus_request_set_timeout_ms(request.get(), *o.retry_max_time_ms, &raw_error) != HUMUS_OK) {
    Error e(raw_error);
    return report({exit_code::kFailure, "--retry-max-time: " + describe(e.get())});
  }

  if (o.verbose) {
    std::fprintf(stderr, "* humus-http %s, libhumus_http %s\n", HUMUS_VERSION_STRING, humus_version());
    std::fprintf(stderr, "* settings: %s\n", redacted_settings(effective).c_str());
    for (const auto& [from, to] : o.resolve)
      std::fprintf(stderr, "* resolve: %s -> %s\n", from.c_str(), to.c_str());
    std::fprintf(stderr, "> %s %s\n", o.method.c_str(), shown_url(url).c_str());
    for (const auto& [name, value] : sent_headers) {
      // Credentials are never printed: the scheme stays, the rest is hidden.
      const bool secret = strcasecmp(name.c_str(), "Authorization") == 0 ||
                          strcasecmp(name.c_str(), "Proxy-Authorization") == 0;
      const std::string v = secret ? value.substr(0, value.find(' ')) + " (hidden)" : value;
      std::fprintf(stderr, "> %s: %s\n", name.c_str(), v.c_str());
    }
    if (o.idempotency_key) std::fprintf(stderr, "> Idempotency-Key: %s\n", o.idempotency_key->c_str());
    if (upload) {
      std::fprintf(stderr, "> (body: %s)\n", upload->describe().c_str());
    } else if (has_body) {
      std::fprintf(stderr, "> (body: %zu bytes)\n", body.size());
    }
  }
  if (o.trace) {
    std::fprintf(stderr, "trace: client for %s: max_attempts %d, timeout %s, attempt_timeout %s; %s; %s\n",
                 effective.value("base_url", "").c_str(), effective.value("max_attempts", 0),
                 effective.value("timeout", "").c_str(), effective.value("attempt_timeout", "").c_str(),
                 tracer.breaker_summary().c_str(), tracer.budget_summary().c_str());
  }


  // The calls: --repeat of them through the one client. One at a time, each streams its body to the output
  // as it arrives, then the next starts; with --concurrency, they run on threads with buffered bodies,
  // written in call order once all are done.
  Output out(output_path, o.remote_name ? "-O" : "-o");
  Output headers_out(o.dump_header == "-" ? std::nullopt : o.dump_header, "-D");
  Output write_out(std::nullopt);
  if (o.concurrency == 1) {
    progress.set_style(Progress::choose(o.silent || o.no_progress, o.progress_bar,
                                        o.verbose || o.trace || o.trace_json, output_path.has_value()));
  }
  if (upload) upload->count_on(&progress);
  const auto begin_call = [&](CallResult& r) {
    RedirectLimit::begin_call();
    r.start = std::chrono::steady_clock::now();
    std::optional<uint64_t> send_total;
    if (upload && upload->length() >= 0) send_total = static_cast<uint64_t>(upload->length());
    progress.begin(send_total);
  };
  // What the call answered, once its headers are in (or it failed).
  const auto headers_in = [&](CallResult& r, humus_response* resp, humus_error* err) {
    r.response.reset(resp);
    r.error.reset(err);
    r.headers_ms = ms_since(r.start);
    if (resp != nullptr) {
      r.http_code = humus_response_status(resp);
      r.attempts = humus_response_attempts(resp);
      r.url_effective = shown_url(humus_response_url(resp));
      progress.set_total(content_length(resp));
      const char* type = humus_response_header(resp, "Content-Type");
      r.content_type = type != nullptr ? type : "";
      r.http_version = humus_response_http_version(resp);
      r.redirect_url = shown_url(redirect_target(resp).value_or(""));
      r.redirects = static_cast<int32_t>(humus_response_redirect_count(resp));
      // The client's own limit (10) reached at --max-redirs 10 and up; below it the hook ends the call.
      r.past_max_redirs = o.max_redirs && *o.max_redirs >= 0 && r.redirects >= *o.max_redirs && followable(resp);
    } else {
      r.attempts = humus_error_attempts(err);
      r.url_effective = shown_url(url);
      if (humus_error_status(err) == HUMUS_E_CALLBACK) r.redirect_refused = RedirectLimit::refused_url();
    }
  };
  // The call is over (its body read, or closed): its time, the breaker after it, its trace.
  const bool stderr_terminal = isatty(STDERR_FILENO) == 1;
  const auto end_call = [&](CallResult& r) {
    const auto elapsed = std::chrono::steady_clock::now() - r.start;
    r.elapsed_us = std::chrono::duration_cast<std::chrono::microseconds>(elapsed).count();
    int32_t state = -1;
    if (o.write_out && humus_client_breaker_state(client.get(), &state) == HUMUS_OK)
      r.breaker_state = circuit_name(state);
    if (o.trace) r.after_it = tracer.breaker_summary() + ", " + tracer.budget_summary();
    if (r.response == nullptr) r.redirects = redirects_followed(r.trace);
    if (r.redirect_refused) {
      // The trace's last record is the refused hop; curl's variables say where the limit stopped the call.
      r.redirects = *o.max_redirs;
      r.redirect_url = shown_url(*r.redirect_refused);
    }
  };
  // --trace-json, then --trace: the call's attempts and where the breaker and budget stand after it.
  const auto print_trace = [&](int32_t i, const CallResult& r) {
    if (o.trace_json) std::fprintf(stderr, "%s\n", r.trace.json.c_str());
    if (!o.trace) return;
    std::string what = r.http_code != 0 ? std::to_string(r.http_code)
                                        : std::string(humus_status_name(humus_error_status(r.error.get())));
    what += " after " + attempts_text(r.attempts) + " in " + std::to_string(r.elapsed_us / 1000) + " ms";
    const std::string call = "trace: call " + std::to_string(i + 1) + " of " + std::to_string(o.repeat) + ": " +
                             what + " | after it: " + r.after_it + "\n";
    const std::string text = stderr_terminal ? call + trace_table(r.trace) : trace_lines(r.trace) + call;
    std::fputs(text.c_str(), stderr);
  };

  // What -i, -I and -D write: every redirect's head, then the final response's, as curl -L does.
  const auto heads = [](const humus_response* resp) {
    return redirects_block(resp, "", "\r\n") + headers_block(resp, "", "\r\n");
  };
  // Writes one call's output: its head, its body (read as it comes, for a streamed call), its -w line. A
  // value is the command's end: an output could not be written.
  int status = exit_code::kOk;
  const auto emit = [&](int32_t i, CallResult& r, bool streamed) -> std::optional<int> {
    const std::string which =
        o.repeat > 1 ? "call " + std::to_string(i + 1) + " of " + std::to_string(o.repeat) + ": " : "";
    int call_status = exit_code::kOk;
    uint64_t body_bytes = 0;
    if (humus_response* resp = r.response.get()) {
      const int32_t code = r.http_code;
      if (o.verbose) {
        std::fputs((redirects_block(resp, "< ", "\n") + headers_block(resp, "< ", "\n")).c_str(), stderr);
        std::fprintf(stderr, "* %s%d after %s in %lld ms\n", which.c_str(), code,
                     attempts_text(r.attempts).c_str(), static_cast<long long>(r.headers_ms));
      }
      if (o.dump_header) {
        if (auto failed = headers_out.write(heads(resp) + "\r\n")) return report(*failed);
      }
      if (r.past_max_redirs) {
        if (o.include || o.method == "HEAD") {
          if (auto failed = out.write(heads(resp) + "\r\n")) return report(*failed);
        }
        call_status = report({exit_code::kTooManyRedirects,
                              which + "Maximum (" + std::to_string(*o.max_redirs) + ") redirects followed"});
      } else if (o.fail && code >= 400) {
        call_status = report(
            {exit_code::kHttpError, which + "the server answered " + std::to_string(code) + " (--fail)"});
      } else {
        if (o.include || o.method == "HEAD") {
          if (auto failed = out.write(heads(resp) + "\r\n")) return report(*failed);
        }
        const CopiedBody copied = copy_body(resp, out, progress);
        progress.end();
        body_bytes = copied.bytes;
        if (copied.write_error) return report(*copied.write_error);
        if (const humus_error* e = copied.read_error.get()) {
          // What came stays written, as with curl.
          const std::string broke_off = " (the body broke off after " + std::to_string(body_bytes) + " bytes)";
          call_status = report({exit_code::for_call_error(e), which + humus_status_name(humus_error_status(e)) +
                                                                 ": " + describe(e) + broke_off});
        } else if (o.fail_with_body && code >= 400) {
          const std::string answered = "the server answered " + std::to_string(code);
          call_status = report({exit_code::kHttpError, which + answered + " (--fail-with-body)"});
        }
      }
    } else {
      const humus_error* e = r.error.get();
      const std::optional<Outcome> unreadable =
          upload && humus_error_status(e) == HUMUS_E_CALLBACK ? upload->read_failure() : std::nullopt;
      if (r.redirect_refused) {
        const std::string limit = "Maximum (" + std::to_string(*o.max_redirs) + ") redirects followed";
        call_status = report({exit_code::kTooManyRedirects,
                              which + limit + "; the next, to " + shown_url(*r.redirect_refused) + ", was not made"});
      } else if (unreadable) {
        call_status = report({unreadable->code, which + unreadable->message});
      } else if (!o.faults.empty() && humus_error_field_count(e) == 1 &&
                 std::strcmp(humus_error_field(e, 0), "baggage") == 0) {
        // The scenario cannot be read.
        call_status = report({exit_code::kUsage, "--inject-fault: " + describe(e)});
      } else {
        std::string message = which + humus_status_name(humus_error_status(e)) + ": " + describe(e) +
                              " (after " + attempts_text(r.attempts) + ")" + hint_for(e, o);
        if (humus_error_status(e) == HUMUS_E_REJECTED) {
          message += "; the breaker stays open " + std::to_string(humus_error_retry_after_ms(e)) + " ms more";
        }
        call_status = report({exit_code::for_call_error(e), message});
      }
    }
    if (streamed) {
      r.trace = trace_of(r.response.get(), r.error.get());
      r.response.reset();  // closes a body not read (--fail): the breaker counts the call now
      end_call(r);
    }
    print_trace(i, r);
    if (o.write_out) {
      WriteOutValues v;
      v.time_total_us = r.elapsed_us;
      v.exitcode = call_status;
      v.breaker_state = r.breaker_state;
      v.http_code = r.http_code;
      v.size_download = body_bytes;
      v.attempts = r.attempts;
      v.url_effective = r.url_effective;
      v.retries = retries_made(r.trace);
      v.redirects = r.redirects;
      v.redirect_url = r.redirect_url;
      v.content_type = r.content_type;
      v.http_version = r.http_version;
      if (auto failed = write_out.write(render_write_out(*o.write_out, v))) return report(*failed);
    }
    if (call_status != exit_code::kOk) status = call_status;
    return std::nullopt;
  };

  if (o.concurrency == 1) {
    for (int32_t i = 0; i < o.repeat; ++i) {
      CallResult r;
      begin_call(r);
      humus_response* resp = nullptr;
      humus_error* err = nullptr;
      (void)humus_client_open(client.get(), request.get(), &resp, &err);
      headers_in(r, resp, err);
      if (std::optional<int> end = emit(i, r, /*streamed=*/true)) return *end;
    }
  } else {
    std::vector<CallResult> results(static_cast<size_t>(o.repeat));
    std::atomic<int32_t> next{0};
    const auto worker = [&] {
      for (;;) {
        // Relaxed: the counter only hands out indexes; join() orders the results for the output below.
        const int32_t i = next.fetch_add(1, std::memory_order_relaxed);
        if (i >= o.repeat) return;
        CallResult& r = results[static_cast<size_t>(i)];
        begin_call(r);
        humus_response* resp = nullptr;
        humus_error* err = nullptr;
        (void)humus_client_do(client.get(), request.get(), &resp, &err);
        headers_in(r, resp, err);
        r.trace = trace_of(resp, err);
        end_call(r);
      }
    };
    std::vector<std::thread> helpers;
    for (int32_t t = 1; t < o.concurrency; ++t) helpers.emplace_back(worker);
    worker();
    for (std::thread& t : helpers) t.join();
    for (int32_t i = 0; i < o.repeat; ++i) {
      if (std::optional<int> end = emit(i, results[static_cast<size_t>(i)], /*streamed=*/false)) return *end;
    }
  }
  if (o.dump_header && o.dump_header != "-") {
    if (auto failed = headers_out.finish()) return report(*failed);
  }
  if (o.metrics) {
    char* text = nullptr;
    size_t len = 0;
    if (humus_runtime_metrics_prometheus(runtime.get(), &text, &len, &raw_error) != HUMUS_OK) {
      Error e(raw_error);
      return report({exit_code::kFailure, "--metrics: " + describe(e.get())});
    }
    LibString owned(text);
    // After the body on stdout, the metrics start on a line of their own.
    if (!out.stdout_ends_line()) {
      if (auto failed = out.write("\n")) return report(*failed);
    }
    if (auto failed = out.finish()) return report(*failed);
    Output metrics_out(std::nullopt);
    if (auto failed = metrics_out.write(text, len)) return report(*failed);
    if (auto failed = metrics_out.finish()) return report(*failed);
    return status;
  }
  if (auto failed = out.finish()) return report(*failed);
  return status;
}

}  // namespace humus::cli
