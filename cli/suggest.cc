#include "suggest.h"

#include <algorithm>
#include <cctype>
#include <limits>

namespace humus::cli {
namespace {

char folded(char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }

// Optimal string alignment distance: insertions, deletions, substitutions and swaps of neighbours.
size_t slip_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = folded(a[i - 1]) == folded(b[j - 1]) ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && folded(a[i - 1]) == folded(b[j - 2]) && folded(a[i - 2]) == folded(b[j - 1]))
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

}  // namespace

std::optional<std::string> nearest_word(std::string_view word, const std::vector<std::string>& candidates) {
  if (word.size() > 256) return std::nullopt;  // bounds the quadratic distance on hostile input
  // A word cut short ("out" for "output") is nearer to what it starts than to a word as short as itself.
  const std::string* only_extension = nullptr;
  size_t extensions = 0;
  for (const std::string& c : candidates) {
    if (c.size() > word.size() && slip_distance(word, c.substr(0, word.size())) == 0) {
      only_extension = &c;
      ++extensions;
    }
  }
  if (!word.empty() && extensions == 1) return *only_extension;
  const std::string* nearest = nullptr;
  size_t best = std::numeric_limits<size_t>::max();
  for (const std::string& c : candidates) {
    const size_t d = slip_distance(word, c);
    if (d < best) {
      best = d;
      nearest = &c;
    }
  }
  if (nearest == nullptr || best > std::max<size_t>(2, word.size() / 3)) return std::nullopt;
  return *nearest;
}

}  // namespace humus::cli
