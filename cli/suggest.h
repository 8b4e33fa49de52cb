#pragma once
// "Did you mean": the known word nearest a mistyped one, as the settings' unknown keys already get it.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace humus::cli {

// The candidate nearest `word` when it is near enough to be a slip of the keyboard (an edit distance, a swap
// of neighbours counting one, of at most 2 or a third of the word), else nullopt; the one candidate that
// `word` begins, if only one does. Case-insensitive.
std::optional<std::string> nearest_word(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace humus::cli
