// Randomness as the policies see it: injected, so backoff draws and fault probabilities are reproducible
// from a seed in tests and conformance vectors.
#pragma once

#include <atomic>
#include <cstdint>

namespace humus {

class Random {
 public:
  virtual ~Random() = default;
  // 64 uniformly distributed bits. Thread-safe.
  virtual uint64_t next() = 0;
  // Uniform in [0, 1), with 53 bits of precision.
  double uniform01() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
};

// SplitMix64 over an atomic counter: one fetch_add per draw, so it is lock-free and thread-safe, and a single
// thread sees the same sequence for the same seed. Relaxed order suffices: draws need distinct counter values,
// not ordering with other memory.
class SeededRandom final : public Random {
 public:
  explicit SeededRandom(uint64_t seed) : state_(seed) {}
  uint64_t next() override {
    uint64_t z = state_.fetch_add(0x9e3779b97f4a7c15ULL, std::memory_order_relaxed) + 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

 private:
  std::atomic<uint64_t> state_;
};

// A process-wide source seeded from std::random_device, for production clients.
Random& system_random();

}  // namespace humus
