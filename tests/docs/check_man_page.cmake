# Renders one man page with groff, every warning on, and fails on any line groff writes to stderr (groff
# exits 0 on warnings, so its status alone would let a broken macro through).
execute_process(
  COMMAND ${GROFF} -man -Tutf8 -ww -z ${PAGE}
  RESULT_VARIABLE rc
  ERROR_VARIABLE warnings)
if(NOT rc EQUAL 0 OR NOT warnings STREQUAL "")
  message(FATAL_ERROR "${PAGE}: groff exited ${rc}:\n${warnings}")
endif()
message(STATUS "${PAGE}: renders without warnings")
