// Ownership of a C callback table (log sink, span sink): the table's `destroy` runs once, when the last
// holder — the runtime, a call in flight, or a delivery in progress — lets go of its shared_ptr.
#pragma once

namespace humus::capi {

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
