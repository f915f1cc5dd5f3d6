# Tests of the package and the docs (label cpu, no GPU):
# - Package.ConsumerBuildsAgainstInstall: `cmake --install` into a temporary prefix, then an
#   external project (ci/consumer) finds cujit 0.2, compiles a kernel to a cubin and runs.
#   Not in sanitizer or fuzz builds: their libcujit needs the sanitizer runtime, which an
#   ordinary consumer does not link.
if(NOT CUJIT_SANITIZE AND NOT CUJIT_FUZZ)
  add_test(NAME Package.ConsumerBuildsAgainstInstall
    COMMAND ${CMAKE_COMMAND} -DBUILD_DIR=${PROJECT_BINARY_DIR}
      -DWORK_DIR=${PROJECT_BINARY_DIR}/package-test
      -DSOURCE_DIR=${PROJECT_SOURCE_DIR}/ci/consumer "-DGENERATOR=${CMAKE_GENERATOR}"
      -DCXX_COMPILER=${CMAKE_CXX_COMPILER} -DLIBDIR=${CMAKE_INSTALL_LIBDIR}
      -P ${PROJECT_SOURCE_DIR}/ci/consumer/check_install.cmake)
  set_tests_properties(Package.ConsumerBuildsAgainstInstall PROPERTIES LABELS cpu TIMEOUT 300)
endif()
