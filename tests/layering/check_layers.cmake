# Fails when an include of src/ runs back up the layers (README.md, "Layout"; STYLE.md "Below the ABI"):
#  - only src/capi/ includes the public header (humus_http.h) or anything of capi/: the core declares the
#    interfaces it needs and the C ABI adapts to them;
#  - only src/transport/ includes libcurl (<curl/...>);
#  - a module includes only modules of its own layer or of the layers below it.
# Run as: cmake -DSOURCE_DIR=<repository> -P check_layers.cmake
# From the bottom up; the modules of one layer are separated by commas.
set(HUMUS_LAYERS
  "common"
  "transport"
  "breaker,bulkhead,classify,faults,plugin,retry,settings,telemetry,testing"
  "shared"
  "client"
  "upstreams"
  "capi")

# A module's rank is the index of its layer in HUMUS_LAYERS.
list(LENGTH HUMUS_LAYERS layer_count)
math(EXPR last "${layer_count} - 1")
foreach(i RANGE ${last})
  list(GET HUMUS_LAYERS ${i} layer)
  string(REPLACE "," ";" modules "${layer}")
  foreach(module IN LISTS modules)
    set(rank_of_${module} ${i})
  endforeach()
endforeach()

file(GLOB_RECURSE sources RELATIVE ${SOURCE_DIR}/src ${SOURCE_DIR}/src/*.h ${SOURCE_DIR}/src/*.cc)
set(problems "")
foreach(source IN LISTS sources)
  string(REGEX REPLACE "/.*" "" module "${source}")
  if(NOT DEFINED rank_of_${module})
    string(APPEND problems "\n  src/${source}: module ${module}/ is in no layer (add it to tests/layering/check_layers.cmake)")
    continue()
  endif()
  file(STRINGS ${SOURCE_DIR}/src/${source} includes REGEX "^#include ")
  foreach(line IN LISTS includes)
    if(line MATCHES "^#include <curl/" AND NOT module STREQUAL "transport")
      string(APPEND problems "\n  src/${source}: ${line} (libcurl belongs to src/transport/)")
    elseif(line MATCHES "^#include \"humus_http.h\"" AND NOT module STREQUAL "capi")
      string(APPEND problems "\n  src/${source}: ${line} (the public header belongs to src/capi/)")
    elseif(line MATCHES "^#include \"([a-z_]+)/")
      set(target "${CMAKE_MATCH_1}")
      if(NOT DEFINED rank_of_${target})
        string(APPEND problems "\n  src/${source}: ${line} (module ${target}/ is in no layer)")
      elseif(rank_of_${target} GREATER rank_of_${module})
        string(APPEND problems "\n  src/${source}: ${line} (${module}/ is below ${target}/)")
      endif()
    endif()
  endforeach()
endforeach()
if(problems)
  message(FATAL_ERROR "includes that run back up the layers:${problems}")
endif()
list(LENGTH sources count)
message(STATUS "layering: ${count} files of src/ include only downward")
