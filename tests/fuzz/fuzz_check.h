// The one way a fuzz target reports a broken property: print what held and what did not, then abort, so
// libFuzzer saves the input and the replay test fails on it. Works the same in the replay (gcc) build.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <utility>

#define FUZZ_CHECK(cond, what)                                                                        \
  do {                                                                                                \
    if (!(cond)) {                                                                                    \
      std::fprintf(stderr, "fuzz check failed at %s:%d: %s (%s)\n", __FILE__, __LINE__, #cond, what); \
      std::abort();                                                                                   \
    }                                                                                                 \
  } while (0)

namespace humus::fuzz {

// Splits the input at the first `sep`: {before, after}; no separator: {all, ""}.
inline std::pair<std::string_view, std::string_view> split_once(std::string_view in, char sep) {
  const size_t at = in.find(sep);
  if (at == std::string_view::npos) return {in, {}};
  return {in.substr(0, at), in.substr(at + 1)};
}

}  // namespace humus::fuzz
