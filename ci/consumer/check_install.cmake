# Package.ConsumerBuildsAgainstInstall: installs the cujit build BUILD_DIR into a fresh
# prefix under WORK_DIR, then configures, builds and runs ci/consumer against it with
# find_package(cujit 0.2 REQUIRED), and checks the pkg-config file when pkg-config exists.
# Run as: cmake -DBUILD_DIR=... -DWORK_DIR=... -DSOURCE_DIR=... -DGENERATOR=...
#               -DCXX_COMPILER=... -DLIBDIR=lib [-DHIREDIS_LIBRARY=...] -P check_install.cmake
foreach(variable BUILD_DIR WORK_DIR SOURCE_DIR GENERATOR CXX_COMPILER LIBDIR)
  if(NOT DEFINED ${variable})
    message(FATAL_ERROR "check_install.cmake: -D${variable}=... is required")
  endif()
endforeach()

function(run_step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE status OUTPUT_VARIABLE output
                  ERROR_VARIABLE output)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "${what} failed (${status}):\n${output}")
  endif()
  set(step_output "${output}" PARENT_SCOPE)
endfunction()

set(prefix ${WORK_DIR}/prefix)
set(consumer_build ${WORK_DIR}/consumer-build)
file(REMOVE_RECURSE ${WORK_DIR})

run_step("cmake --install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
foreach(installed include/cujit/program.hpp include/cujit/nrt.cuh
        include/cujit/nrt_functions.def ${LIBDIR}/cmake/cujit/cujitConfig.cmake
        ${LIBDIR}/cmake/cujit/cujitConfigVersion.cmake ${LIBDIR}/pkgconfig/cujit.pc)
  if(NOT EXISTS ${prefix}/${installed})
    message(FATAL_ERROR "cmake --install did not install ${installed} under ${prefix}")
  endif()
endforeach()

# The package names no file of the machine it was built on: each dependency is a target that
# cujitConfig.cmake finds again (a path breaks on a machine that has the library elsewhere).
file(GLOB exported ${prefix}/${LIBDIR}/cmake/cujit/cujitTargets*.cmake)
foreach(file IN LISTS exported)
  file(READ ${file} text)
  if(text MATCHES "(INTERFACE_[A-Z_]+ \"([^\"\n]*[;:>])?/[^\"\n]*\")")
    message(FATAL_ERROR "${file} names an absolute path: ${CMAKE_MATCH_1}")
  endif()
endforeach()

# The prefix alone: the consumer must not find the build tree or its dependencies' sources.
run_step("configuring the consumer" ${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${consumer_build}
  -G ${GENERATOR} -DCMAKE_CXX_COMPILER=${CXX_COMPILER} -DCMAKE_BUILD_TYPE=Release
  -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF)
file(STRINGS ${consumer_build}/CMakeCache.txt found_at REGEX "^cujit_DIR:")
if(NOT found_at STREQUAL "cujit_DIR:PATH=${prefix}/${LIBDIR}/cmake/cujit")
  message(FATAL_ERROR "the consumer found cujit elsewhere than the prefix: ${found_at}")
endif()
run_step("building the consumer" ${CMAKE_COMMAND} --build ${consumer_build})
run_step("running the consumer" ${consumer_build}/cujit_consumer)
message(STATUS "${step_output}")

# The README's quick start (issue 33), as written: its `cpp quick-start` block is
# quick_start.cpp, its `cmake quick-start` block the CMakeLists.txt, built against the prefix
# alone. Package.QuickStartRuns (label gpu) runs the program this leaves in
# WORK_DIR/quick-start-build/app.
get_filename_component(readme ${SOURCE_DIR}/../../README.md ABSOLUTE)
file(READ ${readme} readme_text)
function(readme_block language out)
  set(marker "```${language} quick-start\n")
  string(FIND "${readme_text}" "${marker}" at)
  if(at LESS 0)
    message(FATAL_ERROR "${readme} has no ${language} quick-start block (```${language} quick-start)")
  endif()
  string(LENGTH "${marker}" marker_length)
  math(EXPR from "${at} + ${marker_length}")
  string(SUBSTRING "${readme_text}" ${from} -1 rest)
  string(FIND "${rest}" "\n```" end)
  if(end LESS 0)
    message(FATAL_ERROR "${readme}: the ${language} quick-start block does not end")
  endif()
  math(EXPR end "${end} + 1")
  string(SUBSTRING "${rest}" 0 ${end} block)
  set(${out} "${block}" PARENT_SCOPE)
endfunction()
readme_block(cpp quick_start_source)
readme_block(cmake quick_start_lists)
file(MAKE_DIRECTORY ${WORK_DIR}/quick-start)
file(WRITE ${WORK_DIR}/quick-start/quick_start.cpp "${quick_start_source}")
file(WRITE ${WORK_DIR}/quick-start/CMakeLists.txt "${quick_start_lists}")
run_step("configuring the README's quick start" ${CMAKE_COMMAND} -S ${WORK_DIR}/quick-start
  -B ${WORK_DIR}/quick-start-build -G ${GENERATOR} -DCMAKE_CXX_COMPILER=${CXX_COMPILER}
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF)
run_step("building the README's quick start" ${CMAKE_COMMAND} --build ${WORK_DIR}/quick-start-build)
message(STATUS "the README's quick start builds against the install: ${WORK_DIR}/quick-start-build/app")

# hiredis only when the remote tier is used (issue 33): libcujit loads it with dlopen, so no
# consumer binary may NEED it (nor anything else of the optional tier). readelf -d lists the
# NEEDED entries the loader resolves at start.
function(hiredis_needed_by binary result)
  find_program(READELF_EXECUTABLE readelf)
  if(NOT READELF_EXECUTABLE)
    message(FATAL_ERROR "readelf (binutils) is needed to check what ${binary} links")
  endif()
  run_step("readelf -d ${binary}" ${READELF_EXECUTABLE} -d ${binary})
  if(NOT step_output MATCHES "\\(NEEDED\\)")
    message(FATAL_ERROR "readelf -d ${binary} lists no NEEDED entry: cannot judge it\n${step_output}")
  endif()
  set(${result} "" PARENT_SCOPE)
  if(step_output MATCHES "NEEDED[^\n]*(libhiredis[.a-z0-9]*)")
    set(${result} "${CMAKE_MATCH_1}" PARENT_SCOPE)
  endif()
endfunction()
function(check_not_needed binary)
  hiredis_needed_by(${binary} needed)
  if(needed)
    message(FATAL_ERROR "${binary} needs ${needed}: a consumer must not need libhiredis "
                        "unless it uses the remote tier (core/src/cache/remote_hiredis.hpp)")
  endif()
  message(STATUS "${binary}: no libhiredis among its NEEDED libraries")
endfunction()
# The check can fail: a program linked with libhiredis on purpose is caught. HIREDIS_LIBRARY
# is the file the build found (a script cannot search the multiarch directories itself);
# without one no consumer could need it either.
set(planted_hiredis "${HIREDIS_LIBRARY}")
if(planted_hiredis)
  file(WRITE ${WORK_DIR}/planted.cpp "int main() { return 0; }\n")
  run_step("linking a program that needs libhiredis" ${CXX_COMPILER} ${WORK_DIR}/planted.cpp
    -o ${WORK_DIR}/planted_needs_hiredis -Wl,--no-as-needed ${planted_hiredis})
  hiredis_needed_by(${WORK_DIR}/planted_needs_hiredis planted_needed)
  if(NOT planted_needed)
    message(FATAL_ERROR "the NEEDED check missed libhiredis in a program linked with it")
  endif()
  message(STATUS "the NEEDED check catches a program linked with it: ${planted_needed}")
else()
  message(STATUS "libhiredis is not installed: the NEEDED check is not shown to catch it here")
endif()
check_not_needed(${consumer_build}/cujit_consumer)
check_not_needed(${WORK_DIR}/quick-start-build/app)

# pkg-config: link the consumer's object file with what cujit.pc says, and run that too.
find_program(PKG_CONFIG_EXECUTABLE pkg-config)
if(NOT PKG_CONFIG_EXECUTABLE)
  message(STATUS "pkg-config not installed: cujit.pc was installed but not read")
  return()
endif()
set(ENV{PKG_CONFIG_PATH} ${prefix}/${LIBDIR}/pkgconfig)
run_step("pkg-config --libs cujit" ${PKG_CONFIG_EXECUTABLE} --print-errors --libs cujit)
string(STRIP "${step_output}" pkg_libs)
separate_arguments(pkg_libs UNIX_COMMAND "${pkg_libs}")
file(GLOB_RECURSE consumer_object ${consumer_build}/CMakeFiles/*compile_to_cubin.cpp.o)
run_step("linking the consumer with pkg-config's flags" ${CXX_COMPILER} ${consumer_object}
  -o ${WORK_DIR}/cujit_consumer_pkgconfig ${pkg_libs})
run_step("running the pkg-config-linked consumer" ${WORK_DIR}/cujit_consumer_pkgconfig)
check_not_needed(${WORK_DIR}/cujit_consumer_pkgconfig)
message(STATUS "pkg-config --libs cujit: ${pkg_libs}")
