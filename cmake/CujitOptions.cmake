# Options of the cujit build. Every option is prefixed CUJIT_.
option(CUJIT_BUILD_TESTS "Build the conformance suites and their fixtures" ON)
option(CUJIT_WARNINGS_AS_ERRORS "Treat compiler warnings as errors on cujit targets" ON)
set(CUJIT_FIXTURE_ARCH "90" CACHE STRING
    "Compute capability the fixtures are built for (SASS plus PTX for JIT), e.g. 90")
set(CUJIT_SANITIZE "" CACHE STRING
    "Sanitizers for cujit targets: empty, 'address,undefined' or 'thread'")
option(CUJIT_BUILD_CLI "Build the cujit command" ON)
option(CUJIT_FUZZ "Build the libFuzzer targets (clang)" OFF)
option(CUJIT_WITH_HIREDIS "Build the Redis remote cache tier when hiredis (libhiredis-dev) is found" ON)
