# Included by ctest after the discovered GoogleTest lists (TEST_INCLUDE_FILES): every test
# whose name contains "Hostile" and not "Gpu" is labelled cpu and hostile.
file(GLOB lists "@CMAKE_CURRENT_BINARY_DIR@/*_tests.cmake")
foreach(list IN LISTS lists)
  file(STRINGS "${list}" lines REGEX "^add_test\\(\\[=\\[[^]]*Hostile")
  foreach(line IN LISTS lines)
    string(REGEX MATCH "^add_test\\(\\[=\\[([^]]*)\\]=\\]" unused "${line}")
    set(name "${CMAKE_MATCH_1}")
    if(NOT name MATCHES "Gpu")
      set_tests_properties("${name}" PROPERTIES LABELS "cpu;hostile")
    endif()
  endforeach()
endforeach()
