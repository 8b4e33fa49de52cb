#include "demo/svg.h"

#include <humus_http.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "capi.h"

namespace humus::cli::demo {
namespace {

constexpr double kWidth = 1000;
constexpr double kHeight = 470;
constexpr double kLeft = 70;  // plot area
constexpr double kRight = 970;
constexpr double kTop = 76;
constexpr double kBottom = 330;
constexpr double kBreakerTop = 352;
constexpr double kBreakerHeight = 20;
constexpr double kPhaseTop = 40;
constexpr double kPhaseHeight = 22;

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

// The smallest 1, 2, 2.5 or 5 times a power of ten at or above v.
double nice_ceiling(double v) {
  if (v <= 0) return 1;
  const double p = std::pow(10.0, std::floor(std::log10(v)));
  for (const double m : {1.0, 2.0, 2.5, 5.0, 10.0}) {
    if (m * p >= v) return m * p;
  }
  return 10 * p;
}

const char* breaker_fill(int32_t state) {
  switch (state) {
    case HUMUS_CIRCUIT_CLOSED:
      return "#4caf50";
    case HUMUS_CIRCUIT_OPEN:
      return "#e53935";
    case HUMUS_CIRCUIT_HALF_OPEN:
      return "#fbc02d";
    default:
      return "#9e9e9e";
  }
}

const char* phase_fill(Phase p) {
  switch (p) {
    case Phase::kHealthy:
      return "#e8f5e9";
    case Phase::kSlow:
      return "#fff8e1";
    case Phase::kFailing:
      return "#ffebee";
    case Phase::kRecovering:
      return "#e3f2fd";
  }
  return "#ffffff";
}

using Attributes = std::vector<std::pair<std::string, std::string>>;

// Text and attribute values escaped for XML.
std::string escape(std::string_view text) {
  std::string out;
  for (const char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// "<name a="v" ...>".
std::string start_tag(std::string_view name, const Attributes& attributes) {
  std::string o = "<" + std::string(name);
  for (const auto& [key, value] : attributes) o += " " + key + "=\"" + escape(value) + "\"";
  return o + ">";
}

// The start of an element whose children follow on the next lines.
std::string open_tag(std::string_view name, const Attributes& attributes) {
  return start_tag(name, attributes) + "\n";
}

// A whole element: empty ("<rect .../>") or holding text.
std::string element(std::string_view name, const Attributes& attributes, std::string_view text = {}) {
  std::string o = start_tag(name, attributes);
  if (text.empty()) {
    o.insert(o.size() - 1, "/");
  } else {
    o += escape(text) + "</" + std::string(name) + ">";
  }
  return o + "\n";
}

struct Series {
  const char* id;
  const char* label;
  const char* color;
  const char* dash;  // stroke-dasharray, "" for solid
  std::function<int64_t(const Second&)> value;
};

}  // namespace

std::string render_svg(const Run& run) {
  const auto seconds = static_cast<double>(run.seconds.size());
  const double duration_s = std::max(1.0, static_cast<double>(run.schedule.duration_ms) / 1000.0);
  const auto x_of = [&](double s) { return kLeft + (kRight - kLeft) * s / duration_s; };

  const Series series[] = {
      {"series-calls", "calls", "#1565c0", "", [](const Second& s) { return s.calls; }},
      {"series-attempts", "attempts", "#ef6c00", "", [](const Second& s) { return s.attempts; }},
      {"series-ok", "ok (2xx)", "#2e7d32", "", [](const Second& s) { return s.ok; }},
      {"series-failed", "failed", "#6d4c41", "4 2", [](const Second& s) { return s.failed; }},
      {"series-rejected", "rejected (breaker open)", "#c62828", "6 3",
       [](const Second& s) { return s.rejected; }},
      {"series-throttled", "throttled (budget)", "#6a1b9a", "2 3",
       [](const Second& s) { return s.throttled; }},
  };
  int64_t top = 1;
  for (const Second& s : run.seconds) {
    for (const Series& se : series) top = std::max(top, se.value(s));
  }
  const double y_max = nice_ceiling(static_cast<double>(top));
  const auto y_of = [&](double v) { return kBottom - (kBottom - kTop) * v / y_max; };
  const auto line = [](double x1, double y1, double x2, double y2, Attributes more = {}) {
    Attributes a = {{"x1", num(x1)}, {"y1", num(y1)}, {"x2", num(x2)}, {"y2", num(y2)}};
    a.insert(a.end(), more.begin(), more.end());
    return element("line", a);
  };
  const auto stroke = [](const Series& se) {
    Attributes a = {{"stroke", se.color}, {"stroke-width", "2"}};
    if (se.dash[0] != '\0') a.emplace_back("stroke-dasharray", se.dash);
    return a;
  };

  std::string o = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  o += open_tag("svg", {{"xmlns", "http://www.w3.org/2000/svg"},
                        {"version", "1.1"},
                        {"width", num(kWidth)},
                        {"height", num(kHeight)},
                        {"viewBox", "0 0 " + num(kWidth) + " " + num(kHeight)},
                        {"font-family", "sans-serif"},
                        {"font-size", "12"},
                        {"data-seconds", std::to_string(run.seconds.size())}});
  o += element("title", {}, "humus-http demo: calls, attempts and breaker state per second");
  o += element(
      "rect",
      {{"x", "0"}, {"y", "0"}, {"width", num(kWidth)}, {"height", num(kHeight)}, {"fill", "#ffffff"}});
  o += element("text", {{"x", num(kLeft)}, {"y", "24"}, {"font-size", "16"}, {"font-weight", "bold"}},
               "humus-http demo: " + std::to_string(run.rate) + " calls/s through one client");

  // Phases of the upstream: a labelled band above, their spans faintly behind the lines.
  o += open_tag("g", {{"id", "phases"}});
  for (const Phase p : kPhases) {
    const double x0 = x_of(static_cast<double>(run.schedule.start_of(p)) / 1000.0);
    const double x1 = x_of(static_cast<double>(run.schedule.end_of(p)) / 1000.0);
    o += element("rect", {{"class", std::string("phase-") + phase_name(p)},
                          {"x", num(x0)},
                          {"y", num(kPhaseTop)},
                          {"width", num(x1 - x0)},
                          {"height", num(kPhaseHeight)},
                          {"fill", phase_fill(p)},
                          {"stroke", "#bdbdbd"}});
    o += element("text", {{"x", num((x0 + x1) / 2)}, {"y", num(kPhaseTop + 15)}, {"text-anchor", "middle"}},
                 phase_name(p));
    o += element("rect", {{"x", num(x0)},
                          {"y", num(kTop)},
                          {"width", num(x1 - x0)},
                          {"height", num(kBottom - kTop)},
                          {"fill", phase_fill(p)},
                          {"fill-opacity", "0.6"}});
  }
  o += "</g>\n";

  // Axes and grid.
  o += open_tag("g", {{"id", "axes"}, {"stroke", "#9e9e9e"}});
  for (int i = 0; i <= 5; ++i) {
    const double v = y_max * i / 5;
    const double y = y_of(v);
    o += line(kLeft, y, kRight, y, {{"stroke-opacity", "0.3"}});
    o += element("text",
                 {{"x", num(kLeft - 6)}, {"y", num(y + 4)}, {"text-anchor", "end"}, {"stroke", "none"}},
                 std::to_string(static_cast<int64_t>(v)));
  }
  const double step = duration_s <= 15    ? 1
                      : duration_s <= 40  ? 5
                      : duration_s <= 120 ? 10
                                          : nice_ceiling(duration_s / 12);
  for (double s = 0; s <= duration_s + 1e-9; s += step) {
    const double x = x_of(s);
    o += line(x, kBottom, x, kBottom + 4);
    o += element("text",
                 {{"x", num(x)},
                  {"y", num(kBreakerTop + kBreakerHeight + 16)},
                  {"text-anchor", "middle"},
                  {"stroke", "none"}},
                 std::to_string(static_cast<int64_t>(s)) + "s");
  }
  o += line(kLeft, kBottom, kRight, kBottom);
  o += line(kLeft, kTop, kLeft, kBottom);
  const std::string mid = num((kTop + kBottom) / 2);
  o += element("text",
               {{"x", "16"},
                {"y", mid},
                {"transform", "rotate(-90 16 " + mid + ")"},
                {"text-anchor", "middle"},
                {"stroke", "none"}},
               "per second");
  o += "</g>\n";

  // One line per series, a point per second at its middle.
  for (const Series& se : series) {
    std::string points;
    for (size_t i = 0; i < run.seconds.size(); ++i) {
      if (!points.empty()) points += ' ';
      points += num(x_of(static_cast<double>(i) + 0.5)) + "," +
                num(y_of(static_cast<double>(se.value(run.seconds[i]))));
    }
    Attributes a = {{"id", se.id}, {"data-label", se.label}, {"points", points}, {"fill", "none"}};
    const Attributes s = stroke(se);
    a.insert(a.end(), s.begin(), s.end());
    o += element("polyline", a);
  }

  // The breaker's state, from the client's log records: one rectangle per stretch of one state. A half-open
  // stretch lasts as long as its probes, often a few milliseconds, a fraction of a pixel: it is drawn at
  // least kMinHalfOpenWidth wide, after the others so that the next stretch does not cover it.
  constexpr double kMinHalfOpenWidth = 4;
  o += open_tag("g", {{"id", "series-breaker"}});
  o += element("text", {{"x", num(kLeft - 6)}, {"y", num(kBreakerTop + 14)}, {"text-anchor", "end"}},
               "breaker");
  std::string half_open;
  for (size_t i = 0; i < run.breaker.size(); ++i) {
    const double from = static_cast<double>(run.breaker[i].ms) / 1000.0;
    const double to =
        i + 1 < run.breaker.size() ? static_cast<double>(run.breaker[i + 1].ms) / 1000.0 : seconds;
    if (to <= from) continue;
    const int32_t st = run.breaker[i].state;
    const bool is_half_open = st == HUMUS_CIRCUIT_HALF_OPEN;
    const double width = std::max(is_half_open ? kMinHalfOpenWidth : 0.5, x_of(to) - x_of(from));
    std::string& into = is_half_open ? half_open : o;
    into += start_tag("rect", {{"class", std::string("breaker-") + circuit_name(st)},
                               {"x", num(std::min(x_of(from), kRight - width))},
                               {"y", num(kBreakerTop)},
                               {"width", num(width)},
                               {"height", num(kBreakerHeight)},
                               {"fill", breaker_fill(st)}});
    into += element("title", {}, std::string(circuit_name(st)) + " " + num(from) + "-" + num(to) + "s");
    into += "</rect>\n";
  }
  o += half_open;
  o += "</g>\n";

  // Legend: the series on one row, the breaker's states on the next.
  o += open_tag("g", {{"id", "legend"}});
  double lx = kLeft;
  double ly = kHeight - 36;
  for (const Series& se : series) {
    o += line(lx, ly, lx + 22, ly, stroke(se));
    o += element("text", {{"x", num(lx + 28)}, {"y", num(ly + 4)}}, se.label);
    lx += 40 + 7.0 * static_cast<double>(std::strlen(se.label));
  }
  lx = kLeft;
  ly += 20;
  o += element("text", {{"x", num(lx)}, {"y", num(ly + 4)}}, "breaker:");
  lx += 64;
  for (const int32_t st : {HUMUS_CIRCUIT_CLOSED, HUMUS_CIRCUIT_HALF_OPEN, HUMUS_CIRCUIT_OPEN}) {
    o += element(
        "rect",
        {{"x", num(lx)}, {"y", num(ly - 6)}, {"width", "14"}, {"height", "12"}, {"fill", breaker_fill(st)}});
    o += element("text", {{"x", num(lx + 18)}, {"y", num(ly + 4)}}, circuit_name(st));
    lx += 30 + 7.0 * static_cast<double>(std::strlen(circuit_name(st)));
  }
  o += "</g>\n";
  o += "</svg>\n";
  return o;
}

bool write_svg(const Run& run, const std::string& path, std::string& why) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) {
    const int error = errno;
    why = "cannot write " + path + ": " + std::generic_category().message(error);
    return false;
  }
  out << render_svg(run);
  out.close();
  if (!out) {
    const int error = errno;
    why = "cannot write " + path + ": " + std::generic_category().message(error);
    return false;
  }
  return true;
}

}  // namespace humus::cli::demo
