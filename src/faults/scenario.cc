#include "faults/scenario.h"

#include <charconv>

#include "common/duration.h"
#include "common/text.h"

namespace humus::faults {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// One list-member of a baggage header: its key, and its value before any ";property".
struct Member {
  std::string_view key;
  std::string_view value;
};

Member split_member(std::string_view member) {
  const size_t semicolon = member.find(';');
  const std::string_view pair = member.substr(0, semicolon);
  const size_t eq = pair.find('=');
  if (eq == std::string_view::npos) return {trim(pair), {}};
  return {trim(pair.substr(0, eq)), trim(pair.substr(eq + 1))};
}

template <typename Visit>
void for_each_member(std::string_view baggage, Visit visit) {
  while (!baggage.empty()) {
    const size_t comma = baggage.find(',');
    visit(baggage.substr(0, comma));
    if (comma == std::string_view::npos) break;
    baggage.remove_prefix(comma + 1);
  }
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::optional<std::string> percent_decode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out += s[i];
      continue;
    }
    if (i + 2 >= s.size()) return std::nullopt;
    const int hi = hex_digit(s[i + 1]);
    const int lo = hex_digit(s[i + 2]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out += static_cast<char>(hi << 4 | lo);
    i += 2;
  }
  return out;
}

Status bad_item(std::string_view item, std::string_view why) {
  return Status(Code::kInvalidArgument,
                "baggage: humus.fault item " + quote_for_message(item) + ": " + std::string(why), {"baggage"});
}

Result<Rule> parse_rule(std::string_view item) {
  const size_t eq = item.find('=');
  if (eq == std::string_view::npos) return bad_item(item, "expected <point>=<action>");
  Rule rule;
  rule.point = std::string(trim(item.substr(0, eq)));
  if (!rule.point.starts_with("http:") || rule.point.rfind(':') <= 5) {
    return bad_item(item, "the point must be http:<host>:<port>");
  }
  std::string_view action = trim(item.substr(eq + 1));
  if (const size_t at = action.rfind('@'); at != std::string_view::npos) {
    const std::string_view p = action.substr(at + 1);
    double probability = -1;
    const auto [end, ec] = std::from_chars(p.data(), p.data() + p.size(), probability);
    if (ec != std::errc() || end != p.data() + p.size() || !(probability >= 0 && probability <= 1)) {
      return bad_item(item, "the probability after @ must be a number from 0 to 1");
    }
    rule.fault.probability = probability;
    action = action.substr(0, at);
  }
  Fault& f = rule.fault;
  if (action == "abort") {
    f.kind = Fault::Kind::kAbort;
  } else if (action.starts_with("delay:")) {
    f.kind = Fault::Kind::kDelay;
    Result<Duration> d = parse_duration(action.substr(6));
    if (!d.ok()) return bad_item(item, d.status().message());
    f.delay = *d;
  } else if (action.starts_with("status:")) {
    f.kind = Fault::Kind::kStatus;
    const std::string_view code = action.substr(7);
    const auto [end, ec] = std::from_chars(code.data(), code.data() + code.size(), f.status);
    if (ec != std::errc() || end != code.data() + code.size() || f.status < 100 || f.status > 599) {
      return bad_item(item, "the status must be a code from 100 to 599");
    }
  } else {
    return bad_item(item, "the action must be abort, delay:<duration> or status:<code>");
  }
  return rule;
}

}  // namespace

const Fault* Scenario::fault_for(std::string_view point) const {
  for (const Rule& r : rules) {
    if (r.point == point) return &r.fault;
  }
  return nullptr;
}

Result<std::optional<Scenario>> scenario_from_baggage(std::string_view baggage) {
  std::optional<Scenario> scenario;
  Status failed;
  for_each_member(baggage, [&](std::string_view member) {
    const Member m = split_member(member);
    if (m.key != kBaggageKey || !failed.ok()) return;
    std::optional<std::string> value = percent_decode(m.value);
    if (!value) {
      failed = bad_item(m.value, "bad percent-encoding");
      return;
    }
    if (!scenario) scenario.emplace();
    std::string_view rest = *value;
    while (failed.ok()) {
      const size_t bar = rest.find('|');
      const std::string_view item = trim(rest.substr(0, bar));
      if (!item.empty()) {
        Result<Rule> rule = parse_rule(item);
        if (!rule.ok()) {
          failed = rule.status();
          return;
        }
        scenario->rules.push_back(std::move(rule).value());
      }
      if (bar == std::string_view::npos) break;
      rest.remove_prefix(bar + 1);
    }
  });
  if (!failed.ok()) return failed;
  return scenario;
}

std::string without_scenario(std::string_view baggage) {
  std::string out;
  for_each_member(baggage, [&](std::string_view member) {
    if (split_member(member).key == kBaggageKey || trim(member).empty()) return;
    if (!out.empty()) out += ',';
    out += trim(member);
  });
  return out;
}

std::string point_name(std::string_view host, int port) {
  std::string p = "http:";
  const bool v6 = host.find(':') != std::string_view::npos;
  if (v6) p += '[';
  p += host;
  if (v6) p += ']';
  p += ':';
  p += std::to_string(port);
  return p;
}

}  // namespace humus::faults
