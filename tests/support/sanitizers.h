// Which sanitizer runtime a test binary is built with: a few tests measure what a runtime distorts.
#pragma once

// GCC names the sanitizers by macros, clang by __has_feature; the sanitizer presets may be built by either.
#if defined(__SANITIZE_ADDRESS__)
#define HUMUS_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HUMUS_TEST_ASAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define HUMUS_TEST_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define HUMUS_TEST_TSAN 1
#endif
#endif

namespace humus::test {

// ASan and TSan keep freed memory in quarantine (TSan shadows all of it): memory bounds are asserted in the
// plain build, where they measure the client.
#if defined(HUMUS_TEST_ASAN) || defined(HUMUS_TEST_TSAN)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif

// TSan runs every instrumented instruction 5-15 times slower: wall-clock bounds of a few hundred ms and
// gigabyte transfers are measured in the other builds.
#if defined(HUMUS_TEST_TSAN)
inline constexpr bool kThreadSanitized = true;
#else
inline constexpr bool kThreadSanitized = false;
#endif

}  // namespace humus::test
