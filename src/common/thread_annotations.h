// Clang's thread-safety analysis (-Wthread-safety): which lock guards which state, and which functions
// expect it held, written where the compiler checks it rather than in comments it cannot read. Under clang
// each macro is its attribute; elsewhere (GCC) it is nothing, so GCC builds the same code unchecked and CI's
// clang builds (the sanitizer presets) do the checking. STYLE.md: "Concurrency is visible".
//
// The names are the ones clang's documentation uses. This header is internal to the core (never installed),
// so unprefixed macros meet no other library's.
#pragma once

#if defined(__clang__)
#define HUMUS_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define HUMUS_THREAD_ANNOTATION(x)
#endif

// A type that is a lock ("mutex"): its objects can be named in the annotations below.
#define CAPABILITY(x) HUMUS_THREAD_ANNOTATION(capability(x))
// An RAII type whose constructor takes a lock and whose destructor gives it back.
#define SCOPED_CAPABILITY HUMUS_THREAD_ANNOTATION(scoped_lockable)

// A member (or global) read and written only with lock `x` held.
#define GUARDED_BY(x) HUMUS_THREAD_ANNOTATION(guarded_by(x))
// A pointer whose pointee is read and written only with lock `x` held (the pointer itself is not).
#define PT_GUARDED_BY(x) HUMUS_THREAD_ANNOTATION(pt_guarded_by(x))

// The function expects the locks held when it is called, and leaves them held.
#define REQUIRES(...) HUMUS_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
// The function takes the locks itself: calling it with one held would deadlock.
#define EXCLUDES(...) HUMUS_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))

// The function takes (ACQUIRE) or gives back (RELEASE) the locks, or `*this` when none is named.
#define ACQUIRE(...) HUMUS_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define RELEASE(...) HUMUS_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
// The function takes the lock when it returns `result`.
#define TRY_ACQUIRE(...) HUMUS_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))

// The function is not checked: for code whose locking the analysis cannot follow. Each use says why.
#define NO_THREAD_SAFETY_ANALYSIS HUMUS_THREAD_ANNOTATION(no_thread_safety_analysis)
