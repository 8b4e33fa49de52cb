// State shared by the processes of one host (docs/shared.md §22): a named POSIX shared-memory segment
// (/dev/shm/humus_http.<name>, mode 0600) holding, per origin, one breaker core, one retry budget and one
// bulkhead's permits, so that the workers of a pre-fork server see one dependency the same way.
//
// Crash rules (§22.2): every slot is guarded by a robust process-shared mutex, held only for a few stores and
// never across I/O or a callback; a holder killed while holding it leaves EOWNERDEAD to the next locker, which
// repairs the slot (breaker::repair, permits recounted from their holders) before going on. Bulkhead permits
// are counted per holder process and probe slots carry their holder's pid and start time: a holder found dead
// (by pid and /proc/<pid>/stat start time, so a reused pid is not taken for it) gives them back.
#pragma once

#include <pthread.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "breaker/breaker.h"
#include "bulkhead/bulkhead.h"
#include "common/clock.h"
#include "common/status.h"
#include "retry/budget.h"

namespace humus::shared {

inline constexpr uint32_t kLayoutVersion = 1;
inline constexpr char kNamePrefix[] = "humus_http.";  // /dev/shm/humus_http.<name>
inline constexpr uint32_t kMaxProcesses = 128;        // processes attached at once
inline constexpr uint32_t kMaxOrigins = 16;           // origins per segment
inline constexpr uint32_t kMaxProbes = 64;            // breaker.probes when shared
inline constexpr uint32_t kMaxWindow = 10000;         // breaker.window's bound (docs/settings.md §3)
inline constexpr size_t kOriginBytes = 256;           // an origin's text, NUL included
inline constexpr size_t kMaxNameLength = 64;

// A segment name: 1..64 of [A-Za-z0-9_.-], not starting with '.'. kConfig naming share.name otherwise.
Status check_name(std::string_view name);

// The holder's identity: pid and start time (clock ticks after boot, /proc/<pid>/stat field 22).
struct ProcessId {
  int32_t pid = 0;
  uint64_t start_time = 0;
  bool operator==(const ProcessId&) const = default;
};
ProcessId self_id();  // this process, read again after a fork
// False when the process is gone, a zombie, or a later process reusing the pid.
bool alive(const ProcessId& id);

// What every client sharing an origin must agree on: it shapes the slot (the window, the probe slots) or is
// read by every process (the rest). Compared when a client joins a slot another process made.
struct SlotConfig {
  uint32_t window = 20;
  uint32_t probes = 1;
  int64_t open_for_ns = 0;
  int64_t probe_timeout_ns = 0;
  uint32_t max_concurrent = 50;
  int32_t budget_policy = 0;  // retry::BudgetPolicy
  double tokens = 10;
  double ratio = 0.1;
  double min_per_second = 1;
  int64_t budget_window_ns = 0;
};

struct Report;
Result<Report> inspect(std::string_view name);
struct Slot;    // one origin's state, in the segment
struct Header;  // the segment's first bytes

// One process's mapping of one segment, and its entry in the segment's process table. Thread-safe.
class Segment {
 public:
  // Opens the segment `name` (creating it when it does not exist) and enters this process in its table.
  // Mappings are shared within a process: clients of one name and process hold the same Segment.
  // Errors (kConfig, share.name): a bad name, a layout version or size that is not this library's ("segment
  // \"api\" has layout version 2; this library uses version 1"), a full process table, shm_open failing.
  static Result<std::shared_ptr<Segment>> attach(std::string_view name);
  ~Segment();
  Segment(const Segment&) = delete;
  Segment& operator=(const Segment&) = delete;

  const std::string& name() const { return name_; }
  // The slot of `origin`, made with `config` when no process has made it yet. kConfig when a process made it
  // with other settings (names the first field that differs), or when every slot is taken.
  Result<Slot*> slot(std::string_view origin, const SlotConfig& config);
  // Gives back what dead processes held: their bulkhead permits and probe slots, and their table entries.
  // Reads /proc, so never called with a slot's lock held. At most once per kReapInterval per process unless
  // `force`. True when it freed anything.
  bool reap(bool force = false);
  static constexpr Duration kReapInterval = std::chrono::milliseconds(1);
  // Processes in the table that are alive, this one included.
  uint32_t live_processes();
  uint32_t index() const { return index_; }  // this process's entry
  const ProcessId& id() const { return id_; }

  // Locks `slot`'s robust mutex; repairs it when the last holder died holding it.
  void lock(Slot& slot);
  void unlock(Slot& slot);

  Header& header() { return *header_; }

 private:
  friend Result<Report> inspect(std::string_view name);
  Segment(std::string name, void* base, size_t size, uint32_t index, ProcessId id);
  void lock_table();
  void unlock_table();
  void reclaim_locked(uint32_t entry);  // table lock held

  const std::string name_;
  void* const base_;
  const size_t size_;
  Header* const header_;
  const uint32_t index_;
  const ProcessId id_;
  std::atomic<int64_t> last_reap_ns_{0};
};

// One client's view of its origin's slot: the breaker's lock and reclaim, the bulkhead's host-wide permits,
// and the budget's shared balance or buckets. Thread-safe.
class OriginShare final : public breaker::External, public bulkhead::External {
 public:
  OriginShare(std::shared_ptr<Segment> segment, Slot& slot);
  ~OriginShare() override;
  OriginShare(const OriginShare&) = delete;
  OriginShare& operator=(const OriginShare&) = delete;

  breaker::Core& core();
  std::unique_ptr<retry::Budget> make_budget(const SlotConfig& config);

  // breaker::External
  void lock() override;
  void unlock() override;
  bool reclaim() override;
  uint32_t processes() override;
  // bulkhead::External
  bool try_acquire() override;
  void release() override;

  Segment& segment() { return *segment_; }

 private:
  const std::shared_ptr<Segment> segment_;
  Slot& slot_;
};

// A segment's state as a tool or a test reads it: read under its locks (a slot whose holder died is repaired
// on the way, as any process's lock would), nothing else changed.
struct OriginReport {
  std::string origin;
  breaker::State state = breaker::State::kClosed;
  uint64_t generation = 0;
  breaker::Counts counts;
  uint32_t probes_in_flight = 0;
  double budget_tokens = 0;
  int32_t budget_policy = 0;
  uint32_t in_flight = 0;
  uint32_t max_concurrent = 0;
};
struct ProcessReport {
  ProcessId id;
  uint32_t clients = 0;
  bool alive = false;
};
struct Report {
  std::string name;
  uint32_t version = 0;
  uint64_t repairs = 0;  // EOWNERDEAD recoveries so far
  std::vector<ProcessReport> processes;
  std::vector<OriginReport> origins;
};
// Reads segment `name` without entering this process in its table. kInvalidArgument when there is none.
Result<Report> inspect(std::string_view name);
// The names of the segments on this host (the /dev/shm entries with kNamePrefix), sorted.
std::vector<std::string> list();
// Removes segment `name` (processes attached keep their mapping until they detach). kInvalidArgument when
// absent.
Status remove(std::string_view name);

}  // namespace humus::shared
