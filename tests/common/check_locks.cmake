# Fails when code of src/ locks with a standard type that clang's thread-safety analysis cannot see
# (libstdc++'s mutexes are not annotated): a member guarded by one would be checked against nothing. The
# core's locks are those of src/common/mutex.h (Mutex, RecursiveMutex, MutexLock, CondVar), which wraps the
# standard ones and is the only file allowed to name them. Comments may name them.
# Run as: cmake -DSOURCE_DIR=<repository> -P check_locks.cmake
set(standard_locks "std::(mutex|recursive_mutex|timed_mutex|shared_mutex|condition_variable|condition_variable_any|lock_guard|unique_lock|scoped_lock|shared_lock)([^a-z_]|$)")

file(GLOB_RECURSE sources RELATIVE ${SOURCE_DIR}/src ${SOURCE_DIR}/src/*.h ${SOURCE_DIR}/src/*.cc)
set(problems "")
foreach(source IN LISTS sources)
  if(source STREQUAL "common/mutex.h")
    continue()
  endif()
  file(STRINGS ${SOURCE_DIR}/src/${source} lines REGEX "std::")
  foreach(line IN LISTS lines)
    string(REGEX REPLACE "//.*" "" code "${line}")
    if(code MATCHES "${standard_locks}")
      string(STRIP "${line}" shown)
      string(APPEND problems "\n  src/${source}: ${shown}")
    endif()
  endforeach()
endforeach()

if(problems)
  message(FATAL_ERROR "standard locks outside src/common/mutex.h (use humus::Mutex, MutexLock, CondVar, and "
    "GUARDED_BY what they guard):${problems}")
endif()
list(LENGTH sources checked)
message(STATUS "${checked} files of src/: every lock is one the thread-safety analysis sees")
