#include "common/duration.h"

#include <array>
#include <cstdint>

#include "common/text.h"

namespace humus {
namespace {

// GCC and Clang both have it; __extension__ keeps -Wpedantic quiet. Only the fraction's product needs it.
__extension__ typedef __int128 Int128;  // NOLINT(modernize-use-using): __extension__ needs typedef

struct Unit {
  std::string_view name;
  int64_t ns;
};

// Go's time.ParseDuration units, micro sign included, so a Go service's config reads the same here.
constexpr std::array<Unit, 8> kUnits{{
    {"ns", 1},
    {"us", 1'000},
    {"\xC2\xB5s", 1'000},  // U+00B5 MICRO SIGN
    {"\xCE\xBCs", 1'000},  // U+03BC GREEK SMALL LETTER MU
    {"ms", 1'000'000},
    {"s", 1'000'000'000},
    {"m", 60'000'000'000},
    {"h", 3'600'000'000'000},
}};

Status invalid(std::string_view text, std::string_view why) {
  return Status(Code::kInvalidArgument, "invalid duration " + quote_for_message(text, 40) + ": " + std::string(why));
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

Result<Duration> parse_duration(std::string_view text) {
  if (text.empty()) return invalid(text, "empty (write e.g. \"250ms\" or \"5s\")");
  if (text.front() == '-' || text.front() == '+') return invalid(text, "a sign is not allowed");
  int64_t total = 0;
  size_t i = 0;
  while (i < text.size()) {
    // <whole>[.<fraction>]: digits on at least one side of the point, as Go accepts ".5s" and "1.s".
    int64_t whole = 0;
    bool overflow = false;
    const size_t whole_start = i;
    for (; i < text.size() && is_digit(text[i]); ++i) {
      if (__builtin_mul_overflow(whole, int64_t{10}, &whole) ||
          __builtin_add_overflow(whole, int64_t{text[i] - '0'}, &whole)) {
        overflow = true;
      }
    }
    bool any_digit = i > whole_start;
    std::string_view fraction;
    if (i < text.size() && text[i] == '.') {
      const size_t fraction_start = ++i;
      while (i < text.size() && is_digit(text[i])) ++i;
      fraction = text.substr(fraction_start, i - fraction_start);
      any_digit = any_digit || !fraction.empty();
    }
    if (!any_digit) return invalid(text, "expected a number before the unit");
    const size_t unit_start = i;
    while (i < text.size() && !is_digit(text[i]) && text[i] != '.') ++i;
    const std::string_view unit_name = text.substr(unit_start, i - unit_start);
    if (unit_name.empty()) return invalid(text, "missing unit (ns, us, ms, s, m, h)");
    const Unit* unit = nullptr;
    for (const Unit& u : kUnits) {
      if (u.name == unit_name) unit = &u;
    }
    if (unit == nullptr) {
      return invalid(text, "unknown unit " + quote_for_message(unit_name, 40) + " (ns, us, ms, s, m, h)");
    }
    if (overflow) return invalid(text, "too large");

    int64_t part = 0;
    if (__builtin_mul_overflow(whole, unit->ns, &part)) return invalid(text, "too large");
    while (!fraction.empty() && fraction.back() == '0') fraction.remove_suffix(1);
    if (!fraction.empty()) {
      // A fraction with k significant digits (last one non-zero) times a unit of at most 2^13·3^2·5^11 ns is
      // a whole number of nanoseconds only if k <= 13, so longer ones are refused without arithmetic.
      if (fraction.size() > 13) return invalid(text, "finer than 1ns");
      Int128 numerator = 0;
      Int128 scale = 1;
      for (char c : fraction) {
        numerator = numerator * 10 + (c - '0');
        scale *= 10;
      }
      const Int128 product = numerator * unit->ns;
      if (product % scale != 0) return invalid(text, "finer than 1ns");
      if (__builtin_add_overflow(part, static_cast<int64_t>(product / scale), &part)) {
        return invalid(text, "too large");
      }
    }
    if (__builtin_add_overflow(total, part, &total)) return invalid(text, "too large");
  }
  return Duration(total);
}

std::string format_duration(Duration d) {
  const int64_t count = d.count();
  if (count == 0) return "0s";
  // The magnitude as unsigned, so the most negative duration has one too.
  const uint64_t magnitude =
      count < 0 ? uint64_t{0} - static_cast<uint64_t>(count) : static_cast<uint64_t>(count);
  std::string out = count < 0 ? "-" : "";
  static constexpr std::array<Unit, 6> kDescending{{
      {"h", 3'600'000'000'000},
      {"m", 60'000'000'000},
      {"s", 1'000'000'000},
      {"ms", 1'000'000},
      {"us", 1'000},
      {"ns", 1},
  }};
  for (const Unit& u : kDescending) {
    const auto ns = static_cast<uint64_t>(u.ns);
    if (magnitude % ns == 0) {
      out += std::to_string(magnitude / ns);
      out += u.name;
      break;
    }
  }
  return out;
}

}  // namespace humus
