#include "common/headers.h"

#include <algorithm>

namespace humus {

bool equals_ignore_case(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i];
    char y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

void Headers::set(std::string name, std::string value) {
  remove(name);
  add(std::move(name), std::move(value));
}

void Headers::remove(std::string_view name) {
  std::erase_if(fields_, [&](const Field& f) { return equals_ignore_case(f.first, name); });
}

const std::string* Headers::find(std::string_view name) const {
  for (const Field& f : fields_) {
    if (equals_ignore_case(f.first, name)) return &f.second;
  }
  return nullptr;
}

}  // namespace humus
