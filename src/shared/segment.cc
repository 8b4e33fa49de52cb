#include "shared/segment.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <map>
#include <new>
#include <thread>

#include "common/mutex.h"

namespace humus::shared {

// --- The layout (docs/shared.md §22.1). Plain data and lock-free atomics only: every process maps it at its
// own address, so nothing in it is a pointer.

namespace {

constexpr char kMagic[8] = {'H', 'U', 'M', 'U', 'S', 'S', 'H', 'M'};
constexpr uint32_t kReady = 0x52454459;  // written last by the creator

constexpr size_t kCoreBytes = breaker::Core::size(kMaxWindow, kMaxProbes);

}  // namespace

// Named, not in the anonymous namespace: Header and Slot, declared in segment.h, hold them.
struct ProcEntry {
  std::atomic<int32_t> pid;       // 0: free. Written last when claimed, first when freed
  std::atomic<uint32_t> clients;  // clients of this process attached (for the report)
  std::atomic<uint64_t> start_time;
};

struct Bucket {
  int64_t epoch;
  int64_t requests;
  int64_t retries;
};

// The first bytes, the same in every layout version, so a mismatch can be read and named.
struct Prefix {
  char magic[8];
  uint32_t version;
  uint32_t header_size;
  uint64_t segment_size;
};

struct Header {
  Prefix prefix;
  uint32_t slot_size;
  uint32_t max_processes;
  uint32_t max_origins;
  std::atomic<uint32_t> ready;
  std::atomic<uint64_t> repairs;  // EOWNERDEAD recoveries
  pthread_mutex_t table_mu;       // guards procs' claiming and freeing, and slots' claiming
  ProcEntry procs[kMaxProcesses];
};

struct Slot {
  std::atomic<uint32_t> used;  // 1 once made (release): its config and origin are then fixed
  char origin[kOriginBytes];
  SlotConfig config;
  pthread_mutex_t mu;  // robust, process-shared: guards everything below but the budget's atomic
  // The bulkhead: in_flight == sum(held), each process's permits counted apart so a dead one's can be given back.
  uint32_t in_flight;
  uint32_t held[kMaxProcesses];
  // The retry budget: the token bucket's balance (lock-free), or the ratio budget's buckets (under mu).
  std::atomic<int64_t> budget_units;
  int64_t ratio_origin_ns;
  int64_t ratio_latest_epoch;
  Bucket buckets[retry::RatioBudget::kBuckets];
  alignas(16) unsigned char core[kCoreBytes];
};

namespace {

static_assert(std::atomic<int64_t>::is_always_lock_free && std::atomic<uint32_t>::is_always_lock_free &&
                  std::atomic<int32_t>::is_always_lock_free && std::atomic<uint64_t>::is_always_lock_free,
              "the segment's atomics must be lock-free to work across processes");

constexpr size_t slots_offset() { return (sizeof(Header) + 63) / 64 * 64; }
constexpr size_t slot_size() { return (sizeof(Slot) + 63) / 64 * 64; }
constexpr size_t segment_size() { return slots_offset() + slot_size() * kMaxOrigins; }

Slot& slot_at(Header& header, uint32_t i) {
  return *reinterpret_cast<Slot*>(reinterpret_cast<unsigned char*>(&header) + slots_offset() + slot_size() * i);
}

std::string shm_name(std::string_view name) { return "/" + std::string(kNamePrefix) + std::string(name); }

void init_robust(pthread_mutex_t& mu) {
  pthread_mutexattr_t attr;
  pthread_mutexattr_init(&attr);
  pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
  pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
  pthread_mutex_init(&mu, &attr);
  pthread_mutexattr_destroy(&attr);
}

// Locks a robust mutex; true when the previous holder died holding it (the caller repairs, then marks it
// consistent).
bool lock_robust(pthread_mutex_t& mu) {
  const int rc = pthread_mutex_lock(&mu);
  if (rc == 0) return false;
  if (rc == EOWNERDEAD) return true;
  // ENOTRECOVERABLE cannot happen (every EOWNERDEAD is made consistent before the unlock); anything else is a
  // corrupted segment, and going on would corrupt what it guards.
  std::fprintf(stderr, "humus_http: shared segment lock failed: %s\n", std::strerror(rc));
  std::terminate();
}

int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Parses /proc/<pid>/stat: field 3 (state) and field 22 (start time). The command (field 2) may hold spaces
// and parentheses, so fields are counted after its last ')'.
bool read_stat(int32_t pid, char* state, uint64_t* start_time) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[1024];
  const ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return false;
  buf[n] = '\0';
  const char* p = std::strrchr(buf, ')');
  if (p == nullptr) return false;
  ++p;
  // Now at " S ppid ...": field 3 is the first token.
  int field = 2;
  const char* token = p;
  while (*token != '\0') {
    while (*token == ' ') ++token;
    if (*token == '\0') break;
    ++field;
    if (field == 3) *state = *token;
    if (field == 22) {
      *start_time = std::strtoull(token, nullptr, 10);
      return true;
    }
    while (*token != ' ' && *token != '\0') ++token;
  }
  return false;
}

}  // namespace

Status check_name(std::string_view name) {
  bool ok = !name.empty() && name.size() <= kMaxNameLength && name.front() != '.';
  for (const char c : name) {
    const bool allowed = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                         c == '-' || c == '.';
    ok = ok && allowed;
  }
  if (ok) return Status();
  return Status(Code::kConfig,
                "share.name \"" + std::string(name) +
                    "\": a segment name is 1 to 64 letters, digits, '_', '-' or '.', not starting with '.'",
                {"share.name"});
}

ProcessId self_id() {
  ProcessId id;
  id.pid = static_cast<int32_t>(::getpid());
  char state = 0;
  if (!read_stat(id.pid, &state, &id.start_time)) id.start_time = 0;
  return id;
}

bool alive(const ProcessId& id) {
  if (id.pid <= 0) return false;
  if (::kill(id.pid, 0) != 0 && errno == ESRCH) return false;
  char state = 0;
  uint64_t start = 0;
  if (!read_stat(id.pid, &state, &start)) return false;
  if (state == 'Z' || state == 'X') return false;  // killed, not yet waited for: holds nothing any more
  return start == id.start_time;
}

// --- Locks and reclaiming, on a mapped header

namespace {

void lock_slot(Header& header, Slot& slot) {
  if (!lock_robust(slot.mu)) return;
  // Its holder died holding it, perhaps halfway through an update: make the slot consistent again.
  breaker::repair(*reinterpret_cast<breaker::Core*>(slot.core));
  uint32_t in_flight = 0;
  for (const uint32_t held : slot.held) in_flight += held;
  slot.in_flight = in_flight;
  header.repairs.fetch_add(1, std::memory_order_relaxed);
  pthread_mutex_consistent(&slot.mu);
}

void lock_table(Header& header) {
  if (lock_robust(header.table_mu)) {
    // Entries are written pid last when claimed and freed (pid cleared) only after what they held was given
    // back, and slots are marked used last:
    // an interrupted claim or free leaves nothing half-visible. A reclaim cut short is redone by the next
    // reap, as its process is still dead.
    header.repairs.fetch_add(1, std::memory_order_relaxed);
    pthread_mutex_consistent(&header.table_mu);
  }
}

void unlock_table(Header& header) { pthread_mutex_unlock(&header.table_mu); }

// Gives back what table entry `entry`'s process held in every slot, then frees the entry. Table lock held.
void reclaim_entry(Header& header, uint32_t entry) {
  ProcEntry& e = header.procs[entry];
  const ProcessId id{e.pid.load(std::memory_order_relaxed), e.start_time.load(std::memory_order_relaxed)};
  for (uint32_t i = 0; i < kMaxOrigins; ++i) {
    Slot& s = slot_at(header, i);
    if (s.used.load(std::memory_order_acquire) == 0) continue;
    lock_slot(header, s);
    s.in_flight -= std::min(s.in_flight, s.held[entry]);
    s.held[entry] = 0;
    if (id.pid != 0) breaker::release_probes_of(*reinterpret_cast<breaker::Core*>(s.core), id.pid, id.start_time);
    pthread_mutex_unlock(&s.mu);
  }
  e.pid.store(0, std::memory_order_release);
  e.clients.store(0, std::memory_order_relaxed);
}

}  // namespace

// --- Segment

namespace {

// This process's mappings by name, so its clients of one name share one table entry. After a fork the child
// is another process: it attaches afresh (the pid differs).
struct Registry {
  Mutex mu;
  std::map<std::string, std::weak_ptr<Segment>, std::less<>> by_name GUARDED_BY(mu);
  int32_t pid GUARDED_BY(mu) = 0;
};
Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: a client may outlive static destruction
  return *r;
}

Status layout_error(std::string_view name, const Prefix& prefix, size_t file_size) {
  if (std::memcmp(prefix.magic, kMagic, sizeof kMagic) != 0) {
    return Status(Code::kConfig, "share.name \"" + std::string(name) + "\": /dev/shm" + shm_name(name) +
                                     " is not a humus_http segment", {"share.name"});
  }
  if (prefix.version != kLayoutVersion) {
    return Status(Code::kConfig, "share.name \"" + std::string(name) + "\": segment has layout version " +
                                     std::to_string(prefix.version) + "; this library uses version " +
                                     std::to_string(kLayoutVersion) +
                                     " (processes of both versions cannot share it: give them other names, or "
                                     "remove /dev/shm" + shm_name(name) + " once no process uses it)",
                  {"share.name"});
  }
  if (prefix.header_size != sizeof(Header) || prefix.segment_size != segment_size() || file_size != segment_size()) {
    return Status(Code::kConfig, "share.name \"" + std::string(name) + "\": segment has layout version " +
                                     std::to_string(prefix.version) + " but a size of " +
                                     std::to_string(prefix.segment_size) + " bytes; this library's version " +
                                     std::to_string(kLayoutVersion) + " layout has " +
                                     std::to_string(segment_size()),
                  {"share.name"});
  }
  return Status();
}

// Maps segment `name`, creating it if absent; `create` false: only an existing one.
Result<std::pair<void*, size_t>> map_segment(std::string_view name, bool create) {
  const std::string path = shm_name(name);
  int fd = -1;
  bool creator = false;
  if (create) {
    fd = ::shm_open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd >= 0) {
      creator = true;
    } else if (errno != EEXIST) {
      return Status(Code::kConfig, "share.name \"" + std::string(name) + "\": cannot create /dev/shm" + path + ": " +
                                       std::strerror(errno), {"share.name"});
    }
  }
  if (fd < 0) {
    fd = ::shm_open(path.c_str(), O_RDWR | O_CLOEXEC, 0);
    if (fd < 0) {
      const int e = errno;
      return Status(e == ENOENT ? Code::kInvalidArgument : Code::kConfig,
                    "share.name \"" + std::string(name) + "\": cannot open /dev/shm" + path + ": " + std::strerror(e),
                    {"share.name"});
    }
  }
  const size_t size = segment_size();
  if (creator) {
    if (::ftruncate(fd, static_cast<off_t>(size)) != 0) {
      const int e = errno;
      ::close(fd);
      ::shm_unlink(path.c_str());
      return Status(Code::kConfig, "share.name: cannot size /dev/shm" + path + ": " + std::strerror(e),
                    {"share.name"});
    }
    void* base = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ::close(fd);
    if (base == MAP_FAILED) {
      ::shm_unlink(path.c_str());
      return Status(Code::kConfig, "share.name: cannot map /dev/shm" + path, {"share.name"});
    }
    // Fresh pages are zero: every slot unused, every table entry free.
    Header* h = new (base) Header{};
    std::memcpy(h->prefix.magic, kMagic, sizeof kMagic);
    h->prefix.version = kLayoutVersion;
    h->prefix.header_size = sizeof(Header);
    h->prefix.segment_size = size;
    h->slot_size = static_cast<uint32_t>(slot_size());
    h->max_processes = kMaxProcesses;
    h->max_origins = kMaxOrigins;
    init_robust(h->table_mu);
    for (uint32_t i = 0; i < kMaxOrigins; ++i) init_robust(slot_at(*h, i).mu);
    h->ready.store(kReady, std::memory_order_release);  // publishes everything above
    return std::make_pair(base, size);
  }
  // Another process made it: wait for it to finish (it takes microseconds; its creator may have died in it).
  struct stat st {};
  for (int i = 0;; ++i) {
    if (::fstat(fd, &st) != 0) {
      ::close(fd);
      return Status(Code::kConfig, "share.name: cannot stat /dev/shm" + path, {"share.name"});
    }
    if (static_cast<size_t>(st.st_size) >= sizeof(Prefix)) break;
    if (i == 200) {
      ::close(fd);
      return Status(Code::kConfig, "share.name \"" + std::string(name) +
                                       "\": segment was never set up (its creator died?): remove /dev/shm" + shm_name(name),
                    {"share.name"});
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  const size_t file_size = static_cast<size_t>(st.st_size);
  void* base = ::mmap(nullptr, file_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (base == MAP_FAILED) return Status(Code::kConfig, "share.name: cannot map /dev/shm" + path, {"share.name"});
  if (file_size >= sizeof(Header)) {
    auto* h = static_cast<Header*>(base);
    for (int i = 0; h->ready.load(std::memory_order_acquire) != kReady; ++i) {
      if (i == 200 || std::memcmp(h->prefix.magic, kMagic, sizeof kMagic) != 0 ||
          h->prefix.version != kLayoutVersion) {
        break;  // not one of this layout's: named below, without waiting
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  Prefix prefix{};
  std::memcpy(&prefix, base, sizeof prefix);
  Status layout = layout_error(name, prefix, file_size);
  if (layout.ok() && static_cast<Header*>(base)->ready.load(std::memory_order_acquire) != kReady) {
    layout = Status(Code::kConfig, "share.name \"" + std::string(name) +
                                       "\": segment was never set up (its creator died?): remove /dev/shm" + shm_name(name),
                    {"share.name"});
  }
  if (!layout.ok()) {
    ::munmap(base, file_size);
    return layout;
  }
  return std::make_pair(base, file_size);
}

}  // namespace

Result<std::shared_ptr<Segment>> Segment::attach(std::string_view name) {
  if (Status st = check_name(name); !st.ok()) return st;
  Registry& r = registry();
  MutexLock lock(r.mu);
  const ProcessId me = self_id();
  if (r.pid != me.pid) {  // a forked child: the parent's mappings are not its entries
    r.by_name.clear();
    r.pid = me.pid;
  }
  if (auto it = r.by_name.find(name); it != r.by_name.end()) {
    if (std::shared_ptr<Segment> segment = it->second.lock()) return segment;
  }
  Result<std::pair<void*, size_t>> mapped = map_segment(name, /*create=*/true);
  if (!mapped.ok()) return mapped.status();
  auto* header = static_cast<Header*>(mapped->first);
  // Enter this process in the table: a free entry, or one a dead process left.
  uint32_t index = kMaxProcesses;
  for (int pass = 0; pass < 2 && index == kMaxProcesses; ++pass) {
    if (pass == 1) {
      // Full: look for dead entries, with no lock held while /proc is read, then free them under it.
      std::vector<uint32_t> dead;
      for (uint32_t i = 0; i < kMaxProcesses; ++i) {
        const ProcessId id{header->procs[i].pid.load(std::memory_order_acquire),
                           header->procs[i].start_time.load(std::memory_order_relaxed)};
        if (id.pid != 0 && !alive(id)) dead.push_back(i);
      }
      shared::lock_table(*header);
      for (const uint32_t i : dead) reclaim_entry(*header, i);
      shared::unlock_table(*header);
    }
    shared::lock_table(*header);
    for (uint32_t i = 0; i < kMaxProcesses; ++i) {
      ProcEntry& e = header->procs[i];
      if (e.pid.load(std::memory_order_relaxed) != 0) continue;
      // Whatever a dead holder of this entry left was given back before it was freed (reclaim_locked).
      e.start_time.store(me.start_time, std::memory_order_relaxed);
      e.clients.store(0, std::memory_order_relaxed);
      e.pid.store(me.pid, std::memory_order_release);
      index = i;
      break;
    }
    shared::unlock_table(*header);
  }
  if (index == kMaxProcesses) {
    ::munmap(mapped->first, mapped->second);
    return Status(Code::kConfig, "share.name \"" + std::string(name) + "\": " + std::to_string(kMaxProcesses) +
                                     " processes are attached already", {"share.name"});
  }
  std::shared_ptr<Segment> segment(new Segment(std::string(name), mapped->first, mapped->second, index, me));
  r.by_name[std::string(name)] = segment;
  return segment;
}

Segment::Segment(std::string name, void* base, size_t size, uint32_t index, ProcessId id)
    : name_(std::move(name)),
      base_(base),
      size_(size),
      header_(static_cast<Header*>(base)),
      index_(index),
      id_(id) {}

Segment::~Segment() {
  if (base_ == nullptr) return;
  if (index_ < kMaxProcesses && static_cast<int32_t>(::getpid()) == id_.pid) {
    // Leaves the table. Every client of this mapping is gone, so this process holds no permit and no probe
    // of it; whatever it still held (a leak would be a bug) is given back as a dead process's would be.
    lock_table();
    reclaim_locked(index_);
    unlock_table();
  }
  ::munmap(base_, size_);
}

void Segment::lock_table() { shared::lock_table(*header_); }
void Segment::unlock_table() { shared::unlock_table(*header_); }
void Segment::reclaim_locked(uint32_t entry) { reclaim_entry(*header_, entry); }

bool Segment::reap(bool force) {
  const int64_t now = steady_ns();
  if (!force) {
    int64_t last = last_reap_ns_.load(std::memory_order_relaxed);
    // One look per interval per process is enough: a dead process stays dead.
    if (now - last < kReapInterval.count() ||
        !last_reap_ns_.compare_exchange_strong(last, now, std::memory_order_relaxed)) {
      return false;
    }
  }
  std::vector<std::pair<uint32_t, ProcessId>> dead;
  for (uint32_t i = 0; i < kMaxProcesses; ++i) {
    if (i == index_) continue;
    const ProcessId id{header_->procs[i].pid.load(std::memory_order_acquire),
                       header_->procs[i].start_time.load(std::memory_order_relaxed)};
    if (id.pid != 0 && !alive(id)) dead.emplace_back(i, id);
  }
  if (dead.empty()) return false;
  lock_table();
  bool freed = false;
  for (const auto& [i, id] : dead) {
    ProcEntry& e = header_->procs[i];
    // Still that dead process's entry (another reaper may have freed it, and a new process taken it).
    if (e.pid.load(std::memory_order_relaxed) != id.pid || e.start_time.load(std::memory_order_relaxed) != id.start_time) {
      continue;
    }
    reclaim_locked(i);
    freed = true;
  }
  unlock_table();
  return freed;
}

uint32_t Segment::live_processes() {
  uint32_t n = 0;
  for (uint32_t i = 0; i < kMaxProcesses; ++i) {
    const ProcessId id{header_->procs[i].pid.load(std::memory_order_acquire),
                       header_->procs[i].start_time.load(std::memory_order_relaxed)};
    if (id.pid == 0) continue;
    if (i == index_ || alive(id)) ++n;
  }
  return n;
}

void Segment::lock(Slot& slot) { lock_slot(*header_, slot); }
void Segment::unlock(Slot& slot) { pthread_mutex_unlock(&slot.mu); }

namespace {

const char* config_difference(const SlotConfig& a, const SlotConfig& b, std::string* theirs, std::string* ours) {
  auto num = [&](const char* field, auto x, auto y) -> const char* {
    *theirs = std::to_string(x);
    *ours = std::to_string(y);
    return field;
  };
  if (a.window != b.window) return num("breaker.window", a.window, b.window);
  if (a.probes != b.probes) return num("breaker.probes", a.probes, b.probes);
  if (a.open_for_ns != b.open_for_ns) return num("breaker.open_for (ns)", a.open_for_ns, b.open_for_ns);
  if (a.probe_timeout_ns != b.probe_timeout_ns) {
    return num("breaker.probe_timeout (ns)", a.probe_timeout_ns, b.probe_timeout_ns);
  }
  if (a.max_concurrent != b.max_concurrent) return num("bulkhead.max_concurrent", a.max_concurrent, b.max_concurrent);
  if (a.budget_policy != b.budget_policy) {
    *theirs = retry::budget_policy_name(static_cast<retry::BudgetPolicy>(a.budget_policy));
    *ours = retry::budget_policy_name(static_cast<retry::BudgetPolicy>(b.budget_policy));
    return "retry_budget.policy";
  }
  if (a.tokens != b.tokens) return num("retry_budget.tokens", a.tokens, b.tokens);
  if (a.ratio != b.ratio) return num("retry_budget.ratio", a.ratio, b.ratio);
  if (a.min_per_second != b.min_per_second) return num("retry_budget.min_per_second", a.min_per_second, b.min_per_second);
  if (a.budget_window_ns != b.budget_window_ns) {
    return num("retry_budget.window (ns)", a.budget_window_ns, b.budget_window_ns);
  }
  return nullptr;
}

}  // namespace

Result<Slot*> Segment::slot(std::string_view origin, const SlotConfig& config) {
  if (origin.size() >= kOriginBytes) {
    return Status(Code::kConfig, "share: origin too long to share (at most 255 bytes)", {"share.name"});
  }
  lock_table();
  Slot* found = nullptr;
  Slot* free_slot = nullptr;
  for (uint32_t i = 0; i < kMaxOrigins && found == nullptr; ++i) {
    Slot& s = slot_at(*header_, i);
    if (s.used.load(std::memory_order_acquire) == 0) {
      if (free_slot == nullptr) free_slot = &s;
    } else if (std::string_view(s.origin) == origin) {
      found = &s;
    }
  }
  if (found != nullptr) {
    unlock_table();
    std::string theirs;
    std::string ours;
    if (const char* field = config_difference(found->config, config, &theirs, &ours)) {
      return Status(Code::kConfig,
                    "share.name \"" + name_ + "\": " + std::string(origin) + " is shared with " + field + " " + theirs +
                        "; this client has " + ours + " (every client sharing an origin must agree)",
                    {"share.name", std::string(field).substr(0, std::string(field).find(' '))});
    }
    return found;
  }
  if (free_slot == nullptr) {
    unlock_table();
    return Status(Code::kConfig, "share.name \"" + name_ + "\": every one of its " + std::to_string(kMaxOrigins) +
                                     " origin slots is taken", {"share.name"});
  }
  Slot& s = *free_slot;
  // Made under the table's lock, marked used last: no process sees it before it is whole.
  std::memcpy(s.origin, origin.data(), origin.size());
  s.origin[origin.size()] = '\0';
  s.config = config;
  s.in_flight = 0;
  std::fill(std::begin(s.held), std::end(s.held), 0u);
  s.budget_units.store(retry::TokenBucketBudget::initial_units(config.tokens), std::memory_order_relaxed);
  s.ratio_origin_ns = steady_ns();
  s.ratio_latest_epoch = 0;
  for (Bucket& b : s.buckets) b = Bucket{-1, 0, 0};
  breaker::Core::init(s.core, config.window, config.probes);
  s.used.store(1, std::memory_order_release);
  unlock_table();
  return &s;
}

// --- The shared ratio budget: RatioBudget's rule (docs/retries.md §6.4) on the slot's buckets, under its lock,
// on CLOCK_MONOTONIC (steady_clock), which every process of the host reads alike.

namespace {

class SharedRatioBudget final : public retry::Budget {
 public:
  SharedRatioBudget(OriginShare& share, Slot& slot, const SlotConfig& config)
      : share_(share),
        slot_(slot),
        ratio_units_(std::llround(config.ratio * retry::kBudgetUnitsPerToken)),
        reserve_units_(std::llround(config.min_per_second * (static_cast<double>(config.budget_window_ns) / 1e9) *
                                    retry::kBudgetUnitsPerToken)),
        width_ns_(std::max<int64_t>(config.budget_window_ns / retry::RatioBudget::kBuckets, 1)) {}

  void on_request() override {
    const int64_t epoch = epoch_now();
    share_.lock();
    ++current_locked(epoch).requests;
    share_.unlock();
  }
  void on_success() override {}
  Charge on_retryable() override { return {}; }
  bool try_withdraw(const Charge& /*charge*/) override {
    const int64_t epoch = epoch_now();
    share_.lock();
    const bool allowed = headroom_locked(epoch) >= retry::kBudgetUnitsPerToken;
    if (allowed) ++current_locked(epoch).retries;
    share_.unlock();
    return allowed;
  }
  void refund() override {
    const int64_t epoch = epoch_now();
    share_.lock();
    Bucket& b = current_locked(epoch);
    if (b.retries > 0) --b.retries;
    share_.unlock();
  }
  double tokens() const override {
    const int64_t epoch = epoch_now();
    share_.lock();
    const int64_t headroom = headroom_locked(epoch);
    share_.unlock();
    return static_cast<double>(std::max<int64_t>(headroom, 0)) / retry::kBudgetUnitsPerToken;
  }

 private:
  int64_t epoch_now() const {
    const int64_t since = steady_ns() - slot_.ratio_origin_ns;
    return since > 0 ? since / width_ns_ : 0;
  }
  Bucket& current_locked(int64_t epoch) const {
    slot_.ratio_latest_epoch = std::max(slot_.ratio_latest_epoch, epoch);
    Bucket& b = slot_.buckets[slot_.ratio_latest_epoch % retry::RatioBudget::kBuckets];
    if (b.epoch != slot_.ratio_latest_epoch) b = Bucket{slot_.ratio_latest_epoch, 0, 0};
    return b;
  }
  int64_t headroom_locked(int64_t epoch) const {
    slot_.ratio_latest_epoch = std::max(slot_.ratio_latest_epoch, epoch);
    int64_t requests = 0;
    int64_t retries = 0;
    for (const Bucket& b : slot_.buckets) {
      if (b.epoch > slot_.ratio_latest_epoch - retry::RatioBudget::kBuckets) {
        requests += b.requests;
        retries += b.retries;
      }
    }
    return ratio_units_ * requests + reserve_units_ - retries * retry::kBudgetUnitsPerToken;
  }

  OriginShare& share_;
  Slot& slot_;
  const int64_t ratio_units_;
  const int64_t reserve_units_;
  const int64_t width_ns_;
};

}  // namespace

// --- OriginShare

OriginShare::OriginShare(std::shared_ptr<Segment> segment, Slot& slot)
    : segment_(std::move(segment)), slot_(slot) {
  pid = segment_->id().pid;
  start_time = segment_->id().start_time;
  segment_->header().procs[segment_->index()].clients.fetch_add(1, std::memory_order_relaxed);
}

OriginShare::~OriginShare() {
  segment_->header().procs[segment_->index()].clients.fetch_sub(1, std::memory_order_relaxed);
}

breaker::Core& OriginShare::core() { return *reinterpret_cast<breaker::Core*>(slot_.core); }

std::unique_ptr<retry::Budget> OriginShare::make_budget(const SlotConfig& config) {
  if (config.budget_policy == static_cast<int32_t>(retry::BudgetPolicy::kRatio)) {
    return std::make_unique<SharedRatioBudget>(*this, slot_, config);
  }
  return std::make_unique<retry::TokenBucketBudget>(config.tokens, config.ratio, slot_.budget_units);
}

void OriginShare::lock() { segment_->lock(slot_); }
void OriginShare::unlock() { segment_->unlock(slot_); }
bool OriginShare::reclaim() { return segment_->reap(); }
uint32_t OriginShare::processes() { return segment_->live_processes(); }

bool OriginShare::try_acquire() {
  segment_->lock(slot_);
  const bool ok = slot_.in_flight < slot_.config.max_concurrent;
  if (ok) {
    ++slot_.in_flight;
    ++slot_.held[segment_->index()];
  }
  segment_->unlock(slot_);
  return ok;
}

void OriginShare::release() {
  segment_->lock(slot_);
  uint32_t& held = slot_.held[segment_->index()];
  if (held > 0) {  // zero only if a reaper took this process for dead (it is not): nothing to give back
    --held;
    --slot_.in_flight;
  }
  segment_->unlock(slot_);
}

// --- Inspection

Result<Report> inspect(std::string_view name) {
  if (Status st = check_name(name); !st.ok()) return st;
  Result<std::pair<void*, size_t>> mapped = map_segment(name, /*create=*/false);
  if (!mapped.ok()) return mapped.status();
  // A Segment with no table entry: it locks (and repairs) slots as any process does, and leaves no trace.
  Segment view(std::string(name), mapped->first, mapped->second, kMaxProcesses, ProcessId{});
  Header& h = view.header();
  Report report;
  report.name = std::string(name);
  report.version = h.prefix.version;
  for (uint32_t i = 0; i < kMaxProcesses; ++i) {
    const ProcessId id{h.procs[i].pid.load(std::memory_order_acquire),
                       h.procs[i].start_time.load(std::memory_order_relaxed)};
    if (id.pid == 0) continue;
    report.processes.push_back(ProcessReport{id, h.procs[i].clients.load(std::memory_order_relaxed), alive(id)});
  }
  for (uint32_t i = 0; i < kMaxOrigins; ++i) {
    Slot& s = slot_at(h, i);
    if (s.used.load(std::memory_order_acquire) == 0) continue;
    OriginReport o;
    o.origin = s.origin;
    o.budget_policy = s.config.budget_policy;
    o.max_concurrent = s.config.max_concurrent;
    view.lock(s);
    const auto& core = *reinterpret_cast<const breaker::Core*>(s.core);
    o.state = core.state;
    o.generation = core.generation;
    o.counts = core.counts;
    o.probes_in_flight = core.probe_count;
    o.in_flight = s.in_flight;
    int64_t requests = 0;
    int64_t retries = 0;
    for (const Bucket& b : s.buckets) {
      if (b.epoch > s.ratio_latest_epoch - retry::RatioBudget::kBuckets) {
        requests += b.requests;
        retries += b.retries;
      }
    }
    view.unlock(s);
    if (s.config.budget_policy == static_cast<int32_t>(retry::BudgetPolicy::kRatio)) {
      const double allowance = s.config.ratio * static_cast<double>(requests) +
                               s.config.min_per_second * static_cast<double>(s.config.budget_window_ns) / 1e9;
      o.budget_tokens = std::max(0.0, allowance - static_cast<double>(retries));
    } else {
      o.budget_tokens = static_cast<double>(s.budget_units.load(std::memory_order_relaxed)) /
                        static_cast<double>(retry::kBudgetUnitsPerToken);
    }
    report.origins.push_back(std::move(o));
  }
  report.repairs = h.repairs.load(std::memory_order_relaxed);
  return report;
}

std::vector<std::string> list() {
  std::vector<std::string> names;
  DIR* dir = ::opendir("/dev/shm");
  if (dir == nullptr) return names;
  const std::string_view prefix(kNamePrefix);
  while (const dirent* entry = ::readdir(dir)) {
    const std::string_view file(entry->d_name);
    if (file.size() > prefix.size() && file.substr(0, prefix.size()) == prefix) {
      names.emplace_back(file.substr(prefix.size()));
    }
  }
  ::closedir(dir);
  std::sort(names.begin(), names.end());
  return names;
}

Status remove(std::string_view name) {
  if (Status st = check_name(name); !st.ok()) return st;
  if (::shm_unlink(shm_name(name).c_str()) != 0) {
    const int e = errno;
    return Status(e == ENOENT ? Code::kInvalidArgument : Code::kConfig,
                  "shared segment \"" + std::string(name) + "\": " + std::strerror(e), {"share.name"});
  }
  return Status();
}

}  // namespace humus::shared
