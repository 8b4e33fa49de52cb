// The shared segment (docs/shared.md §22) with real processes: fork()ed workers on one segment, no mock. The
// crash test kills workers with SIGKILL at random points and then checks what the segment holds.
#include "shared/segment.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "breaker/default_policy.h"
#include "common/clock.h"

namespace humus::shared {
namespace {
namespace HUMUS_UNITY_ID {

using std::chrono::hours;
using std::chrono::milliseconds;

// A name no other test run uses, removed when the test ends.
class SegmentName {
 public:
  explicit SegmentName(const char* what)
      : name_("test_" + std::string(what) + "_" + std::to_string(::getpid())) {
    (void)remove(name_);
  }
  ~SegmentName() { (void)remove(name_); }
  const std::string& operator*() const { return name_; }

 private:
  std::string name_;
};

// Forked children must not return into the test runner: they _exit with what they found.
template <typename F>
pid_t spawn(F body) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::signal(SIGKILL, SIG_DFL);
    int code = 0;
    try {
      code = body();
    } catch (...) {
      code = 99;
    }
    ::_exit(code);
  }
  return pid;
}

int wait_exit(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// A breaker, budget and bulkhead on one origin's slot, as a client holds them.
struct Shared {
  Shared(const std::string& name, SlotConfig config, breaker::DefaultPolicyParams params = {})
      : segment(Segment::attach(name).value()),
        share(segment, *segment->slot("http://dep:80", config).value()),
        breaker(breaker::Breaker::Options{config.window, Duration(config.open_for_ns), config.probes,
                                          Duration(config.probe_timeout_ns)},
                breaker::make_default_policy(params), RealClock::instance(), &share.core(), &share),
        bulkhead(config.max_concurrent, Duration::zero(), RealClock::instance(), &share),
        budget(share.make_budget(config)) {}
  std::shared_ptr<Segment> segment;
  OriginShare share;
  breaker::Breaker breaker;
  bulkhead::Bulkhead bulkhead;
  std::unique_ptr<retry::Budget> budget;
};

SlotConfig config(uint32_t probes = 1, Duration open_for = hours(1), Duration probe_timeout = hours(1)) {
  SlotConfig c;
  c.window = 20;
  c.probes = probes;
  c.open_for_ns = open_for.count();
  c.probe_timeout_ns = probe_timeout.count();
  c.max_concurrent = 3;
  return c;
}

const OriginReport& only_origin(const Report& r) {
  EXPECT_EQ(r.origins.size(), 1u);
  return r.origins.front();
}

// F156: a bad segment name
TEST(SharedSegmentTest, RefusesBadNamesClearly) {
  for (const char* bad : {"", ".hidden", "a/b", "with space", "x\xc3\xa9"}) {
    Result<std::shared_ptr<Segment>> s = Segment::attach(bad);
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_EQ(s.status().code(), Code::kConfig);
    EXPECT_NE(s.status().message().find("segment name"), std::string::npos) << s.status().message();
    EXPECT_EQ(s.status().fields(), std::vector<std::string>{"share.name"});
  }
  EXPECT_FALSE(Segment::attach(std::string(65, 'a')).ok());
}

// F154, F155: another layout version; a file that is no segment
TEST(SharedSegmentTest, NamesBothVersionsOnALayoutMismatch) {
  const SegmentName name("version");
  const std::string path = "/" + std::string(kNamePrefix) + *name;
  const int fd = ::shm_open(path.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
  ASSERT_GE(fd, 0);
  // The prefix of a future layout: the magic, version 7, and sizes this library does not know.
  struct {
    char magic[8] = {'H', 'U', 'M', 'U', 'S', 'S', 'H', 'M'};
    uint32_t version = 7;
    uint32_t header_size = 12;
    uint64_t segment_size = 4096;
  } prefix;
  ASSERT_EQ(::ftruncate(fd, 4096), 0);
  ASSERT_EQ(::pwrite(fd, &prefix, sizeof prefix, 0), static_cast<ssize_t>(sizeof prefix));
  ::close(fd);
  Result<std::shared_ptr<Segment>> s = Segment::attach(*name);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), Code::kConfig);
  EXPECT_NE(s.status().message().find("layout version 7; this library uses version " + std::to_string(kLayoutVersion)),
            std::string::npos)
      << s.status().message();
  // Neither is something else's file in /dev/shm taken for one.
  ASSERT_EQ(::shm_unlink(path.c_str()), 0);
  const int junk = ::shm_open(path.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
  ASSERT_GE(junk, 0);
  ASSERT_EQ(::ftruncate(junk, 3), 0);  // shorter than the prefix: read as not set up, no crash
  ::close(junk);
  Result<std::shared_ptr<Segment>> short_one = Segment::attach(*name);
  ASSERT_FALSE(short_one.ok());
  EXPECT_EQ(short_one.status().code(), Code::kConfig);
}

// S28: the segment is the user's alone
TEST(SharedSegmentTest, MadeWithMode0600) {
  const SegmentName name("mode");
  std::shared_ptr<Segment> segment = Segment::attach(*name).value();
  struct stat st {};
  ASSERT_EQ(::stat(("/dev/shm/" + std::string(kNamePrefix) + *name).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(list().end() != std::find(list().begin(), list().end(), *name), true);
}

// F157: clients of one origin that disagree
TEST(SharedSegmentTest, RefusesAClientWhoseSettingsDiffer) {
  const SegmentName name("config");
  std::shared_ptr<Segment> segment = Segment::attach(*name).value();
  ASSERT_TRUE(segment->slot("http://dep:80", config(1)).ok());
  Result<Slot*> other = segment->slot("http://dep:80", config(2));
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.status().message().find("breaker.probes 1; this client has 2"), std::string::npos)
      << other.status().message();
  EXPECT_TRUE(segment->slot("http://other:80", config(2)).ok());  // another origin has a slot of its own
}

TEST(SharedSegmentTest, FourProcessesOpenItAfterFiveFailuresInTotal) {
  const SegmentName name("open");
  Shared parent(*name, config());
  constexpr int kWorkers = 4;
  // Each worker fails until it sees the breaker open; together they can fail at most 5 times before it does.
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  std::vector<pid_t> workers;
  for (int w = 0; w < kWorkers; ++w) {
    workers.push_back(spawn([&] {
      Shared s(*name, config());
      char go = 0;
      if (::read(pipe_fds[0], &go, 1) != 1) return 2;
      int failures = 0;
      for (;;) {
        const breaker::Admission a = s.breaker.admit();
        if (!a.admitted) return failures;  // open: the exit code says how many this worker counted
        ++failures;
        (void)s.breaker.record(a.permit, breaker::Outcome::kFailure);
        std::this_thread::yield();
      }
    }));
  }
  ASSERT_EQ(::write(pipe_fds[1], "gggg", kWorkers), kWorkers);
  int total = 0;
  for (const pid_t pid : workers) total += wait_exit(pid);
  ::close(pipe_fds[0]);
  ::close(pipe_fds[1]);
  // Not 5 per worker: the fifth failure on the host opened it (a closed breaker admits every attempt, so each
  // other worker may have had one more admitted when it did).
  EXPECT_GE(total, 5);
  EXPECT_LE(total, 5 + kWorkers - 1);
  EXPECT_EQ(parent.breaker.state(), breaker::State::kOpen);
  const Report report = inspect(*name).value();
  EXPECT_EQ(only_origin(report).state, breaker::State::kOpen);
  EXPECT_EQ(only_origin(report).generation, 2u);
}

// F151: processes that exit holding probe slots
TEST(SharedSegmentTest, HalfOpenAdmitsProbesAcrossProcessesUpToTheLimit) {
  const SegmentName name("probes");
  constexpr uint32_t kProbes = 2;
  Shared parent(*name, config(kProbes, milliseconds(1)));
  for (int i = 0; i < 5; ++i) {
    (void)parent.breaker.record(parent.breaker.admit().permit, breaker::Outcome::kFailure);
  }
  ASSERT_EQ(parent.breaker.state(), breaker::State::kOpen);
  std::this_thread::sleep_for(milliseconds(5));  // open_for is 1 ms: the next look finds it half-open
  // Six processes each try to take a probe and hold it: exactly kProbes get one.
  constexpr int kWorkers = 6;
  int go[2];
  int tried[2];
  ASSERT_EQ(::pipe(go), 0);
  ASSERT_EQ(::pipe(tried), 0);
  std::vector<pid_t> workers;
  for (int w = 0; w < kWorkers; ++w) {
    workers.push_back(spawn([&] {
      Shared s(*name, config(kProbes, milliseconds(1)));
      const breaker::Admission a = s.breaker.admit();
      if (::write(tried[1], "t", 1) != 1) return 2;
      char done = 0;
      if (::read(go[0], &done, 1) != 1) return 2;  // holds its probe until every worker has tried
      return a.admitted ? 1 : 0;
    }));
  }
  for (int w = 0; w < kWorkers; ++w) {
    char t = 0;
    ASSERT_EQ(::read(tried[0], &t, 1), 1);
  }
  EXPECT_EQ(only_origin(inspect(*name).value()).probes_in_flight, kProbes);
  ASSERT_EQ(::write(go[1], "dddddd", kWorkers), kWorkers);
  int admitted = 0;
  for (const pid_t pid : workers) admitted += wait_exit(pid);
  for (const int fd : {go[0], go[1], tried[0], tried[1]}) ::close(fd);
  EXPECT_EQ(admitted, static_cast<int>(kProbes));
  // The workers exited holding their probes, as a crash would leave them: the next admission that finds every
  // slot taken gives them back (probe_timeout is an hour, so nothing else could have).
  const breaker::Admission again = parent.breaker.admit();
  EXPECT_TRUE(again.admitted);
  EXPECT_TRUE(again.permit.probe);
  EXPECT_EQ(parent.breaker.counts().timed_out_probes, kProbes);
}

// F152: a process killed holding bulkhead permits
TEST(SharedSegmentTest, BulkheadCapHoldsAcrossProcessesAndADeadHoldersPermitsComeBack) {
  const SegmentName name("bulkhead");
  Shared parent(*name, config());  // max_concurrent 3
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  // A worker takes two permits and dies holding them.
  const pid_t holder = spawn([&] {
    Shared s(*name, config());
    Result<bulkhead::Slot> a = s.bulkhead.acquire();
    Result<bulkhead::Slot> b = s.bulkhead.acquire();
    if (!a.ok() || !b.ok()) return 1;
    if (::write(pipe_fds[1], "x", 1) != 1) return 2;
    for (;;) ::pause();
  });
  char got = 0;
  ASSERT_EQ(::read(pipe_fds[0], &got, 1), 1);
  EXPECT_EQ(only_origin(inspect(*name).value()).in_flight, 2u);
  Result<bulkhead::Slot> mine = parent.bulkhead.acquire();
  ASSERT_TRUE(mine.ok());
  Result<bulkhead::Slot> over = parent.bulkhead.acquire();  // 3 in flight on the host: the cap holds here
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.status().code(), Code::kBulkheadFull);
  ::kill(holder, SIGKILL);
  EXPECT_EQ(wait_exit(holder), 128 + SIGKILL);
  std::this_thread::sleep_for(Segment::kReapInterval * 2);
  Result<bulkhead::Slot> after = parent.bulkhead.acquire();  // the dead holder's two came back
  ASSERT_TRUE(after.ok()) << after.status().message();
  std::move(mine).value().release();
  std::move(after).value().release();
  EXPECT_EQ(only_origin(inspect(*name).value()).in_flight, 0u);
  ::close(pipe_fds[0]);
  ::close(pipe_fds[1]);
}

TEST(SharedSegmentTest, TokenBucketIsOneBalanceForTheHost) {
  const SegmentName name("budget");
  Shared a(*name, config());
  const pid_t other = spawn([&] {
    Shared b(*name, config());
    for (int i = 0; i < 4; ++i) (void)b.budget->on_retryable();
    return 0;
  });
  ASSERT_EQ(wait_exit(other), 0);
  EXPECT_DOUBLE_EQ(a.budget->tokens(), 6.0);  // 10 - the other process's 4
  EXPECT_DOUBLE_EQ(only_origin(inspect(*name).value()).budget_tokens, 6.0);
}

// F162, F164: a dead process left in the table; a killed one not yet waited for
TEST(SharedSegmentTest, ReadinessCountsTheLiveProcesses) {
  const SegmentName name("processes");
  Shared parent(*name, config());
  EXPECT_EQ(parent.breaker.processes(), 1u);
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  const pid_t child = spawn([&] {
    Shared s(*name, config());
    if (::write(pipe_fds[1], "x", 1) != 1) return 2;
    for (;;) ::pause();
  });
  char got = 0;
  ASSERT_EQ(::read(pipe_fds[0], &got, 1), 1);
  EXPECT_EQ(parent.breaker.processes(), 2u);
  ::kill(child, SIGKILL);
  // Killed but not yet waited for, it is a zombie: not alive, and not counted.
  for (int i = 0; i < 2000 && parent.breaker.processes() != 1u; ++i) std::this_thread::sleep_for(milliseconds(1));
  EXPECT_EQ(parent.breaker.processes(), 1u);
  (void)wait_exit(child);
  EXPECT_EQ(parent.breaker.processes(), 1u);  // a dead one is not counted, reaped or not
  ::close(pipe_fds[0]);
  ::close(pipe_fds[1]);
}

// F153: a pid is the dead holder's only with its start time: the same pid with another start time is a later
// process that reused it, and the holder is dead.
TEST(SharedSegmentTest, AReusedPidIsNotTakenForTheDeadHolder) {
  const ProcessId me = self_id();
  ASSERT_NE(me.start_time, 0u);
  EXPECT_TRUE(alive(me));
  EXPECT_FALSE(alive(ProcessId{me.pid, me.start_time - 1}));
  EXPECT_FALSE(alive(ProcessId{me.pid, me.start_time + 1}));
  EXPECT_FALSE(alive(ProcessId{0, me.start_time}));
}

// F150, F151: the crash rule (docs/shared.md §22.2): 200 SIGKILLs at random points of workers hammering one slot — admit,
// record, bulkhead acquire and release, probes in half-open — and then nothing is leaked or stuck.
TEST(SharedSegmentTest, TwoHundredRandomKillsLeaveTheSegmentConsistent) {
  const SegmentName name("kill");
  constexpr uint32_t kProbes = 2;
  // open_for 200 µs: the slot cycles closed → open → half-open under the load; probes time out only after an
  // hour, so a probe a killed worker held comes back by reclaim alone.
  const SlotConfig cfg = config(kProbes, std::chrono::microseconds(200), hours(1));
  breaker::DefaultPolicyParams params;
  params.successes_to_close = 2;
  Shared parent(*name, cfg, params);
  auto worker = [&](unsigned seed) {
    return spawn([&, seed] {
      Shared s(*name, cfg, params);
      std::minstd_rand rng(seed);
      for (;;) {
        Result<bulkhead::Slot> slot = s.bulkhead.acquire();
        const breaker::Admission a = s.breaker.admit();
        if (a.admitted) {
          const bool fail = rng() % 3 == 0;
          (void)s.budget->on_retryable();
          (void)s.breaker.record(a.permit, fail ? breaker::Outcome::kFailure : breaker::Outcome::kSuccess);
          if (!fail) s.budget->on_success();
        }
        if (slot.ok()) std::move(slot).value().release();
      }
      return 0;
    });
  };
  constexpr int kWorkers = 4;
  constexpr int kKills = 200;
  std::minstd_rand rng(12345);
  std::vector<pid_t> workers;
  for (int w = 0; w < kWorkers; ++w) workers.push_back(worker(static_cast<unsigned>(w + 1)));
  for (int kill = 0; kill < kKills; ++kill) {
    std::this_thread::sleep_for(std::chrono::microseconds(200 + rng() % 3000));
    const size_t victim = rng() % workers.size();
    ASSERT_EQ(::kill(workers[victim], SIGKILL), 0);
    EXPECT_EQ(wait_exit(workers[victim]), 128 + SIGKILL);
    workers[victim] = worker(static_cast<unsigned>(kill + 100));
  }
  for (const pid_t pid : workers) {
    ::kill(pid, SIGKILL);
    (void)wait_exit(pid);
  }
  // Every worker is dead: what they held comes back.
  parent.segment->reap(/*force=*/true);
  const Report report = inspect(*name).value();
  const OriginReport& o = only_origin(report);
  EXPECT_EQ(o.in_flight, 0u) << "a leaked bulkhead permit";
  EXPECT_EQ(o.probes_in_flight, 0u) << "a stuck probe";
  for (const ProcessReport& p : report.processes) {
    EXPECT_TRUE(p.alive) << "a dead process left in the table: " << p.id.pid;
  }
  EXPECT_EQ(report.processes.size(), 1u);  // the test's own
  EXPECT_LE(o.counts.window_results, cfg.window);
  EXPECT_LE(o.counts.window_failures, o.counts.window_results);
  EXPECT_EQ(o.counts.state, o.state);
  EXPECT_GE(o.budget_tokens, 0.0);
  EXPECT_LE(o.budget_tokens, 10.0);
  std::printf("[ info ] %d kills; %llu lock recoveries (EOWNERDEAD); ended %s, generation %llu\n", kKills,
              static_cast<unsigned long long>(report.repairs), breaker::state_name(o.state),
              static_cast<unsigned long long>(o.generation));
  // And the slot still works: the lock is usable, the cap is whole, the breaker goes on cycling.
  std::vector<bulkhead::Slot> slots;
  for (uint32_t i = 0; i < cfg.max_concurrent; ++i) {
    Result<bulkhead::Slot> s = parent.bulkhead.acquire();
    ASSERT_TRUE(s.ok()) << s.status().message();
    slots.push_back(std::move(s).value());
  }
  EXPECT_FALSE(parent.bulkhead.acquire().ok());
  slots.clear();
  bool closed = false;
  for (int i = 0; i < 10000 && !closed; ++i) {
    const breaker::Admission a = parent.breaker.admit();
    if (a.admitted) (void)parent.breaker.record(a.permit, breaker::Outcome::kSuccess);
    closed = parent.breaker.state() == breaker::State::kClosed;
    if (!closed) std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  EXPECT_TRUE(closed);
}

}  // namespace HUMUS_UNITY_ID
}  // namespace
}  // namespace humus::shared
