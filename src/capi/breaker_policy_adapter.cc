// A C breaker policy table (humus_breaker_policy) as a breaker::Policy, and the counts as the C ABI carries
// them, written to a caller's struct up to the version it declared.
#include "capi/breaker_policy_adapter.h"

#include <cstddef>
#include <cstring>
#include <iterator>
#include <string>
#include <utility>

#include "capi/c_tables.h"

namespace humus::capi {
namespace {

// Owns the table's user_data: the last shared_ptr holder's release runs `destroy`, exactly once.
class CPolicy final : public breaker::Policy {
 public:
  explicit CPolicy(const humus_breaker_policy& table) : table_(table) {}
  ~CPolicy() override {
    if (table_.destroy != nullptr) table_.destroy(table_.user_data);
  }
  CPolicy(const CPolicy&) = delete;
  CPolicy& operator=(const CPolicy&) = delete;

  Result<bool> trip(const breaker::Counts& counts) const override {
    const humus_breaker_counts c = to_c_counts(counts);
    int32_t open = 0;
    const humus_status s = table_.trip(table_.user_data, &c, &open);
    if (s != HUMUS_OK) {
      return Status(Code::kCallback, "breaker policy: trip callback returned status " + std::to_string(s));
    }
    return open != 0;  // a C boolean: any non-zero value opens
  }

  Result<breaker::ProbeDecision> probe(const breaker::Counts& counts) const override {
    const humus_breaker_counts c = to_c_counts(counts);
    int32_t decision = HUMUS_PROBE_CONTINUE;
    const humus_status s = table_.probe(table_.user_data, &c, &decision);
    if (s != HUMUS_OK) {
      return Status(Code::kCallback, "breaker policy: probe callback returned status " + std::to_string(s));
    }
    if (decision < HUMUS_PROBE_CONTINUE || decision > HUMUS_PROBE_REOPEN) {
      return Status(Code::kProgram, "breaker policy: probe callback returned invalid decision " +
                                        std::to_string(decision));
    }
    return static_cast<breaker::ProbeDecision>(decision);
  }

 private:
  const humus_breaker_policy table_;
};

}  // namespace

humus_breaker_counts to_c_counts(const breaker::Counts& counts) {
  humus_breaker_counts c{};
  c.version = HUMUS_BREAKER_COUNTS_VERSION;
  c.state = static_cast<int32_t>(counts.state);
  c.successes = counts.successes;
  c.failures = counts.failures;
  c.consecutive_successes = counts.consecutive_successes;
  c.consecutive_failures = counts.consecutive_failures;
  c.timed_out_probes = counts.timed_out_probes;
  c.window_results = counts.window_results;
  c.window_failures = counts.window_failures;
  c.slow_results = counts.slow_results;
  c.window_slow = counts.window_slow;
  return c;
}

namespace {

// The bytes of humus_breaker_counts each version has: a caller declaring version v gets exactly these
// written: each older version's entry is the offset of the first member the next one added.
constexpr size_t kCountsSize[] = {0, offsetof(humus_breaker_counts, slow_results), sizeof(humus_breaker_counts)};
static_assert(std::size(kCountsSize) == HUMUS_BREAKER_COUNTS_VERSION + 1, "one size per known version");

}  // namespace

Status write_c_counts(const humus_breaker_counts& counts, humus_breaker_counts& out) {
  const uint32_t version = out.version;
  if (version == 0 || version > HUMUS_BREAKER_COUNTS_VERSION) {
    return Status(Code::kInvalidArgument,
                  "humus_breaker_counts: unknown version " + std::to_string(version) +
                      " (set it to HUMUS_BREAKER_COUNTS_VERSION; this library knows 1 to " +
                      std::to_string(HUMUS_BREAKER_COUNTS_VERSION) + ")",
                  {"version"});
  }
  // Written up to the caller's size only; the version member keeps the caller's value.
  constexpr size_t kAfterVersion = offsetof(humus_breaker_counts, state);
  std::memcpy(reinterpret_cast<char*>(&out) + kAfterVersion, reinterpret_cast<const char*>(&counts) + kAfterVersion,
              kCountsSize[version] - kAfterVersion);
  return Status();
}

Result<std::shared_ptr<const breaker::Policy>> make_c_policy(const humus_breaker_policy& caller) {
  Result<humus_breaker_policy> accepted = accept_table(caller);
  if (!accepted.ok()) return accepted.status();
  const humus_breaker_policy& table = *accepted;
  if (table.trip == nullptr) return Status(Code::kProgram, "breaker policy: trip callback is NULL", {"trip"});
  if (table.probe == nullptr) {
    return Status(Code::kProgram, "breaker policy: probe callback is NULL", {"probe"});
  }
  // Validated before taking ownership: on failure the caller keeps user_data and destroy is not called.
  return std::shared_ptr<const breaker::Policy>(std::make_shared<const CPolicy>(table));
}

}  // namespace humus::capi
