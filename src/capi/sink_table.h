// Ownership of a C callback table (log sink, span sink): the table's `destroy` runs once, when the last
// holder — the runtime, a call in flight, or a delivery in progress — lets go of its shared_ptr.
#pragma once

#include <memory>
#include <string>

#include "capi/c_tables.h"
#include "common/status.h"

namespace humus::capi {

template <typename Table>
struct SinkTable {
  explicit SinkTable(const Table& t) : table(t) {}
  SinkTable(const SinkTable&) = delete;
  SinkTable& operator=(const SinkTable&) = delete;
  ~SinkTable() {
    if (table.destroy != nullptr) table.destroy(table.user_data);
  }
  const Table table;  // the caller's, as this library's newest layout
};

// The checks every C sink table gets — its version (kInvalidArgument), then its callback `callback` named
// `callback_name` (kProgram) — and, when both pass, the owner of its user_data. `what` names the table.
template <typename Table, typename Callback>
Result<std::shared_ptr<const SinkTable<Table>>> adopt_sink(const Table& caller, Callback Table::*callback,
                                                           const std::string& what,
                                                           const std::string& callback_name) {
  Result<Table> accepted = accept_table(caller);
  if (!accepted.ok()) return accepted.status();
  if ((*accepted).*callback == nullptr) {
    return Status(Code::kProgram, what + ": " + callback_name + " is NULL", {callback_name});
  }
  return std::shared_ptr<const SinkTable<Table>>(std::make_shared<const SinkTable<Table>>(*accepted));
}

}  // namespace humus::capi
