// Ownership of a C callback table (log sink, span sink): the table's `destroy` runs once, when the last
// holder — the runtime, a call in flight, or a delivery in progress — lets go of its shared_ptr.
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"

namespace humus::capi {

// The checks every C sink table gets: its version (kInvalidArgument), then its callback (kProgram). `what`
// names the table ("span sink"), `callback` its function field ("span").
inline Status check_sink_table(uint32_t version, uint32_t expected, bool has_callback, const std::string& what,
                               const std::string& callback) {
  if (version != expected) {
    return Status(Code::kInvalidArgument, what + ": unknown version " + std::to_string(version), {"version"});
  }
  if (!has_callback) return Status(Code::kProgram, what + ": " + callback + " is NULL", {callback});
  return Status();
}

template <typename Table>
struct SinkTable {
  explicit SinkTable(const Table& t) : table(t) {}
  SinkTable(const SinkTable&) = delete;
  SinkTable& operator=(const SinkTable&) = delete;
  ~SinkTable() {
    if (table.destroy != nullptr) table.destroy(table.user_data);
  }
  const Table table;
};

}  // namespace humus::capi
