// Which sanitizer runtime a test binary is built with: a few tests measure what a runtime distorts.
#pragma once

namespace humus::test {

// ASan and TSan keep freed memory in quarantine (TSan shadows all of it): memory bounds are asserted in the
// plain build, where they measure the client.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif

// TSan runs every instrumented instruction 5-15 times slower: wall-clock bounds of a few hundred ms and
// gigabyte transfers are measured in the other builds.
#if defined(__SANITIZE_THREAD__)
inline constexpr bool kThreadSanitized = true;
#else
inline constexpr bool kThreadSanitized = false;
#endif

}  // namespace humus::test
