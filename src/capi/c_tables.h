// The versioned structs a C caller hands in (STYLE.md "Extensible structs"), in one place: each one's name,
// the newest version this library knows, and how many bytes each version has. A table is accepted when its
// version is 1 to the newest (an older caller keeps working: members added after its version read as zero,
// that is absent) and refused with kInvalidArgument naming the struct for 0 or a newer one. Only the bytes of
// the caller's version are read, so an older caller's smaller struct is never read past its end.
//
// Growing a struct: append members, bump its HUMUS_*_VERSION, and give its CTable a size_of of its own:
// sizeof for the new version, the offset of the first member added for the versions before.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "common/status.h"
#include "humus_http.h"

namespace humus {

template <typename Table>
struct CTable;

// A table none of whose versions has grown yet: every version has the newest one's size.
template <typename Table, uint32_t kNewestVersion>
struct UngrownTable {
  static constexpr uint32_t kNewest = kNewestVersion;
  static constexpr size_t size_of(uint32_t /*version*/) { return sizeof(Table); }
};

template <>
struct CTable<humus_classifier> : UngrownTable<humus_classifier, HUMUS_CLASSIFIER_VERSION> {
  static constexpr const char* kName = "humus_classifier";
};
template <>
struct CTable<humus_attempt_hooks> : UngrownTable<humus_attempt_hooks, HUMUS_ATTEMPT_HOOKS_VERSION> {
  static constexpr const char* kName = "humus_attempt_hooks";
};
template <>
struct CTable<humus_breaker_policy> : UngrownTable<humus_breaker_policy, HUMUS_BREAKER_POLICY_VERSION> {
  static constexpr const char* kName = "humus_breaker_policy";
};
template <>
struct CTable<humus_body_reader> : UngrownTable<humus_body_reader, HUMUS_BODY_READER_VERSION> {
  static constexpr const char* kName = "humus_body_reader";
};
// Version 2 changed no member of the table: it says the sink reads humus_log_record version 2 (counts by
// pointer); a version 1 sink is handed version 1 records (capi/log_record_v1.h).
template <>
struct CTable<humus_log_sink> : UngrownTable<humus_log_sink, HUMUS_LOG_SINK_VERSION> {
  static constexpr const char* kName = "humus_log_sink";
};
template <>
struct CTable<humus_span_sink> : UngrownTable<humus_span_sink, HUMUS_SPAN_SINK_VERSION> {
  static constexpr const char* kName = "humus_span_sink";
};
template <>
struct CTable<humus_mock_transport> : UngrownTable<humus_mock_transport, HUMUS_MOCK_TRANSPORT_VERSION> {
  static constexpr const char* kName = "humus_mock_transport";
};

// The caller's table as this library's newest layout, or kInvalidArgument naming the struct and "version".
template <typename Table>
Result<Table> accept_table(const Table& caller) {
  using Layout = CTable<Table>;
  static_assert(Layout::size_of(Layout::kNewest) == sizeof(Table), "the newest version is the header's struct");
  const uint32_t version = caller.version;
  if (version == 0 || version > Layout::kNewest) {
    return Status(Code::kInvalidArgument,
                  std::string(Layout::kName) + ": unknown version " + std::to_string(version) +
                      " (this library knows 1 to " + std::to_string(Layout::kNewest) + ")",
                  {"version"});
  }
  Table copy{};
  std::memcpy(static_cast<void*>(&copy), static_cast<const void*>(&caller), Layout::size_of(version));
  return copy;
}

}  // namespace humus
