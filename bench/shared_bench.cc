// What sharing the breaker across processes costs (docs/shared.md §22): one admission plus its result through
// the shared segment, uncontended and with 4 processes on one origin's slot, against the in-process breaker
// (alone and with 4 threads); and a bulkhead slot taken and given back, both ways. The goal (issue 36): the
// shared path <= 2x the in-process cost and <= 100 ns uncontended. Printed, never asserted.
// Run: build/<release>/bench/shared_bench [iterations]
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "breaker/breaker.h"
#include "bulkhead/bulkhead.h"
#include "common/clock.h"
#include "shared/segment.h"

namespace {

using namespace humus;  // NOLINT(google-build-using-namespace): a benchmark file
using Steady = std::chrono::steady_clock;

shared::SlotConfig slot_config() {
  shared::SlotConfig c;
  c.open_for_ns = std::chrono::nanoseconds(std::chrono::seconds(10)).count();
  c.probe_timeout_ns = c.open_for_ns;
  c.max_concurrent = 1000;
  return c;
}

breaker::Breaker::Options options() { return breaker::Breaker::Options{}; }

double ns_per_op(Steady::duration d, long n) { return std::chrono::duration<double, std::nano>(d).count() / static_cast<double>(n); }

template <typename F>
double time_loop(long n, F step) {
  for (long i = 0; i < n / 10; ++i) step();  // warm up
  const Steady::time_point start = Steady::now();
  for (long i = 0; i < n; ++i) step();
  return ns_per_op(Steady::now() - start, n);
}

void admit_record(breaker::Breaker& b) {
  const breaker::Admission a = b.admit();
  if (b.record(a.permit, breaker::Outcome::kSuccess).ok()) return;
  std::abort();
}

// A client's shared objects in this process: the segment, the slot, the breaker and the bulkhead on it.
struct SharedSide {
  explicit SharedSide(const std::string& name)
      : segment(shared::Segment::attach(name).value()),
        share(segment, *segment->slot("http://bench:80", slot_config()).value()),
        breaker(options(), nullptr, RealClock::instance(), &share.core(), &share),
        bulkhead(slot_config().max_concurrent, Duration::zero(), RealClock::instance(), &share) {}
  std::shared_ptr<shared::Segment> segment;
  shared::OriginShare share;
  breaker::Breaker breaker;
  bulkhead::Bulkhead bulkhead;
};

// `workers` processes each run `n` admissions + results on one slot, started together; the mean of their
// per-operation times.
double shared_processes(const std::string& name, int workers, long n) {
  int go[2];
  int out[2];
  if (::pipe(go) != 0 || ::pipe(out) != 0) std::abort();
  std::vector<pid_t> pids;
  for (int w = 0; w < workers; ++w) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      SharedSide side(name);
      char g = 0;
      if (::read(go[0], &g, 1) != 1) ::_exit(1);
      const double ns = time_loop(n, [&] { admit_record(side.breaker); });
      if (::write(out[1], &ns, sizeof ns) != static_cast<ssize_t>(sizeof ns)) ::_exit(1);
      ::_exit(0);
    }
    pids.push_back(pid);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // every worker attached and waiting
  for (int w = 0; w < workers; ++w) {
    if (::write(go[1], "g", 1) != 1) std::abort();
  }
  double sum = 0;
  for (int w = 0; w < workers; ++w) {
    double ns = 0;
    if (::read(out[0], &ns, sizeof ns) != static_cast<ssize_t>(sizeof ns)) std::abort();
    sum += ns;
  }
  for (const pid_t pid : pids) ::waitpid(pid, nullptr, 0);
  for (const int fd : {go[0], go[1], out[0], out[1]}) ::close(fd);
  return sum / workers;
}

double in_process_threads(int threads, long n) {
  breaker::Breaker b(options(), nullptr, RealClock::instance());
  std::vector<double> results(static_cast<size_t>(threads));
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] { results[static_cast<size_t>(t)] = time_loop(n, [&] { admit_record(b); }); });
  }
  for (std::thread& t : pool) t.join();
  double sum = 0;
  for (const double r : results) sum += r;
  return sum / threads;
}

}  // namespace

int main(int argc, char** argv) {
  const long n = argc > 1 ? std::atol(argv[1]) : 2'000'000;
  const std::string name = "bench_" + std::to_string(::getpid());
  (void)shared::remove(name);

  breaker::Breaker own(options(), nullptr, RealClock::instance());
  const double in_process = time_loop(n, [&] { admit_record(own); });
  SharedSide side(name);
  const double shared_one = time_loop(n, [&] { admit_record(side.breaker); });
  const double in_process_4 = in_process_threads(4, n / 4);
  const double shared_4 = shared_processes(name, 4, n / 4);

  bulkhead::Bulkhead own_bulkhead(1000, Duration::zero(), RealClock::instance());
  const double bulkhead_own = time_loop(n, [&] {
    Result<bulkhead::Slot> s = own_bulkhead.acquire();
    if (!s.ok()) std::abort();
  });
  const double bulkhead_shared = time_loop(n, [&] {
    Result<bulkhead::Slot> s = side.bulkhead.acquire();
    if (!s.ok()) std::abort();
  });

  std::printf("breaker admit + record, ns per operation (%ld operations; lower is better)\n", n);
  std::printf("  %-40s %8.1f\n", "in-process, 1 thread", in_process);
  std::printf("  %-40s %8.1f   %.2fx in-process\n", "shared segment, 1 process", shared_one, shared_one / in_process);
  std::printf("  %-40s %8.1f\n", "in-process, 4 threads (mean per thread)", in_process_4);
  std::printf("  %-40s %8.1f   %.2fx in-process 4 threads\n", "shared segment, 4 processes (mean)", shared_4,
              shared_4 / in_process_4);
  std::printf("bulkhead acquire + release, ns per operation\n");
  std::printf("  %-40s %8.1f\n", "in-process", bulkhead_own);
  std::printf("  %-40s %8.1f   %.2fx in-process\n", "shared segment, 1 process", bulkhead_shared,
              bulkhead_shared / bulkhead_own);
  (void)shared::remove(name);
  return 0;
}
