# Tests of the package and the docs (label cpu, no GPU):
# - Package.ConsumerBuildsAgainstInstall: `cmake --install` into a temporary prefix, then an
#   external project (ci/consumer) finds cujit 0.2, compiles a kernel to a cubin and runs.
#   Not in sanitizer or fuzz builds: their libcujit needs the sanitizer runtime, which an
#   ordinary consumer does not link. It also builds the README's quick start from its
#   blocks and checks that no consumer binary needs libhiredis (readelf -d).
# - Package.QuickStartRuns (label gpu): runs that quick start build; skipped (77, with the
#   reason) without a device unless CUJIT_REQUIRE_GPU is set. The install test is its
#   fixture, so `ctest -L gpu` runs it first.
if(NOT CUJIT_SANITIZE AND NOT CUJIT_FUZZ)
  add_test(NAME Package.ConsumerBuildsAgainstInstall
    COMMAND ${CMAKE_COMMAND} -DBUILD_DIR=${PROJECT_BINARY_DIR}
      -DWORK_DIR=${PROJECT_BINARY_DIR}/package-test
      -DSOURCE_DIR=${PROJECT_SOURCE_DIR}/ci/consumer "-DGENERATOR=${CMAKE_GENERATOR}"
      -DCXX_COMPILER=${CMAKE_CXX_COMPILER} -DLIBDIR=${CMAKE_INSTALL_LIBDIR}
      "-DHIREDIS_LIBRARY=$<$<BOOL:${CUJIT_HIREDIS_LIBRARY}>:${CUJIT_HIREDIS_LIBRARY}>"
      -P ${PROJECT_SOURCE_DIR}/ci/consumer/check_install.cmake)
  set_tests_properties(Package.ConsumerBuildsAgainstInstall PROPERTIES LABELS cpu TIMEOUT 300
    FIXTURES_SETUP cujit_package_install)
  if(TARGET cujit_cli)
    find_package(Python3 REQUIRED COMPONENTS Interpreter)
    add_test(NAME Package.QuickStartRuns
      COMMAND Python3::Interpreter ${PROJECT_SOURCE_DIR}/ci/consumer/run_quick_start.py
        --app ${PROJECT_BINARY_DIR}/package-test/quick-start-build/app --cujit $<TARGET_FILE:cujit_cli>)
    # hiredis is loaded by the remote tier's first connection, not at start: a missing
    # library is that tier's typed failure naming the file and where its name came from
    # (core/src/cache/remote_hiredis.hpp), and the command still answers (exit 0).
    if(CUJIT_HIREDIS_INCLUDE_DIR AND CUJIT_HIREDIS_LIBRARY AND CUJIT_WITH_HIREDIS)
      add_test(NAME Package.RemoteTierNamesMissingHiredis
        COMMAND ${CMAKE_COMMAND} -E env CUJIT_CACHE_REMOTE=redis://127.0.0.1:9
          CUJIT_CACHE_REMOTE_UNAUTHENTICATED=1 CUJIT_CACHE_DIR=${PROJECT_BINARY_DIR}/hiredis-test-cache
          CUJIT_HIREDIS_LIBRARY=${PROJECT_BINARY_DIR}/no-such-dir/libhiredis.so
          $<TARGET_FILE:cujit_cli> cache stats --json)
      set_tests_properties(Package.RemoteTierNamesMissingHiredis PROPERTIES LABELS cpu
        PASS_REGULAR_EXPRESSION "hiredis \\(dlopen\\): hiredis could not be loaded from '[^']*/no-such-dir/libhiredis.so' \\(CUJIT_HIREDIS_LIBRARY\\)")
    endif()
    set_tests_properties(Package.QuickStartRuns PROPERTIES LABELS gpu TIMEOUT 300
      SKIP_RETURN_CODE 77 FIXTURES_REQUIRED cujit_package_install RESOURCE_GROUPS "gpus:1")
  endif()
endif()
