// The cost of the C ABI's handle armor (src/capi/handle.h): every function given a handle first asks the
// registry of live handles, under one of its shard locks. humus_error_status is the thinnest function that
// takes a handle — a check and one load — so the pair below isolates the check: NULL returns before the
// registry is consulted, a live error pays for it. Each thread uses its own error, as callers do.
#include <benchmark/benchmark.h>

#include <vector>

#include "humus_http.h"

namespace {

humus_error* make_error() {
  humus_error* err = nullptr;
  (void)humus_request_new("GET", nullptr, nullptr, &err);  // url NULL: refused with an error to read
  return err;
}

void BM_ErrorStatusNull(benchmark::State& state) {
  const humus_error* none = nullptr;
  for (auto _ : state) {
    benchmark::DoNotOptimize(none);
    benchmark::DoNotOptimize(humus_error_status(none));
  }
}
BENCHMARK(BM_ErrorStatusNull)->Threads(1)->Threads(2);

void BM_ErrorStatusLive(benchmark::State& state) {
  humus_error* err = make_error();
  for (auto _ : state) benchmark::DoNotOptimize(humus_error_status(err));
  humus_error_free(err);
}
BENCHMARK(BM_ErrorStatusLive)->Threads(1)->Threads(2);

// A freed handle: the registry is asked and says no (the path a buggy caller takes).
void BM_ErrorStatusFreed(benchmark::State& state) {
  humus_error* err = make_error();
  humus_error_free(err);
  for (auto _ : state) benchmark::DoNotOptimize(humus_error_status(err));
}
BENCHMARK(BM_ErrorStatusFreed)->Threads(1)->Threads(2);

// A handle made and freed: the registry adds its address, then removes it. The cancel token is the thinnest
// handle (one allocation of its own); every call of every binding makes and frees several handles (its
// request, its response, often a token).
void BM_CancelNewFree(benchmark::State& state) {
  for (auto _ : state) {
    humus_cancel* token = nullptr;
    (void)humus_cancel_new(&token);
    benchmark::DoNotOptimize(token);
    humus_cancel_free(token);
  }
}
BENCHMARK(BM_CancelNewFree)->Threads(1)->Threads(2);

// A lookup among 100,000 live handles, as in a process with many calls in flight: the registry's tables are
// large, so a lookup reaches memory the cache does not hold.
void BM_ErrorStatusAmongMany(benchmark::State& state) {
  static const std::vector<humus_cancel*>* crowd = [] {
    auto* tokens = new std::vector<humus_cancel*>(100000);
    for (auto*& token : *tokens) (void)humus_cancel_new(&token);
    return tokens;
  }();
  benchmark::DoNotOptimize(crowd);
  humus_error* err = make_error();
  for (auto _ : state) benchmark::DoNotOptimize(humus_error_status(err));
  humus_error_free(err);
}
BENCHMARK(BM_ErrorStatusAmongMany)->Threads(1)->Threads(2);

}  // namespace

BENCHMARK_MAIN();
