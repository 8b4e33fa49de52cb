#include "retry/backoff.h"

#include <algorithm>
#include <cstdint>

namespace humus::retry {

Backoff::Backoff(Duration base, Duration max)
    : base_(std::max(base, Duration::zero())), max_(std::max(max, Duration::zero())) {}

Duration Backoff::cap(int attempt) const {
  const int shift = std::max(attempt, 1) - 1;
  const int64_t base = base_.count();
  const int64_t max = max_.count();
  // base << shift <= max  <=>  base <= max >> shift, which cannot overflow; past 62 bits even base 1
  // exceeds any positive int64, so the cap is max.
  if (shift >= 63 || base > (max >> shift)) return max_;
  return Duration(base << shift);
}

Duration Backoff::draw(int attempt, Random& random) const {
  const uint64_t span = static_cast<uint64_t>(cap(attempt).count()) + 1;  // <= 2^63: fits
  // Lemire's multiply-shift: the high 64 bits of next·span are uniform in [0, span) up to a bias of
  // span/2^64 (about 1e-10 for a 2 s cap), with no division and no rejection loop, so one draw always
  // consumes exactly one random value.
  __extension__ using Uint128 = unsigned __int128;
  const auto ns = static_cast<uint64_t>((static_cast<Uint128>(random.next()) * span) >> 64);
  return Duration(static_cast<int64_t>(ns));
}

}  // namespace humus::retry
