// An ordered list of HTTP header fields with case-insensitive lookup; duplicates are kept in order.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace humus {

bool equals_ignore_case(std::string_view a, std::string_view b);

// Why a header may not be sent by a caller or configured, or "" when it may (docs/transport.md §10.5):
// the name must be an RFC 9110 token; the value may hold no control character but HTAB; and a header the
// client owns — the framing (Content-Length, Transfer-Encoding), the origin (Host), the connection's
// management (Connection, Keep-Alive, Upgrade, TE, Trailer, Proxy-Connection) and HTTP/2 pseudo-headers
// (":path") — would let a caller smuggle a request or bypass the origin lock. The text names the header,
// never its value (a value may be a credential).
std::string header_problem(std::string_view name, std::string_view value);

class Headers {
 public:
  using Field = std::pair<std::string, std::string>;

  void add(std::string name, std::string value) { fields_.emplace_back(std::move(name), std::move(value)); }
  // Replaces every field of that name with one.
  void set(std::string name, std::string value);
  void remove(std::string_view name);
  // Replaces the value of the i-th field (reusing its storage when it fits).
  void replace_value(size_t i, std::string_view value) { fields_[i].second.assign(value); }
  // The first value of `name`, or nullptr.
  const std::string* find(std::string_view name) const;
  bool contains(std::string_view name) const { return find(name) != nullptr; }

  const std::vector<Field>& fields() const { return fields_; }
  void reserve(size_t n) { fields_.reserve(n); }
  // Drops every field and keeps the room they took.
  void clear() { fields_.clear(); }
  bool empty() const { return fields_.empty(); }
  size_t size() const { return fields_.size(); }

 private:
  std::vector<Field> fields_;
};

}  // namespace humus
