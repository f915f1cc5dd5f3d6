#pragma once
// A test body run in a process of its own, for links whose outcome depends on what ran
// before them in the process: once an LTO link has run, nvJitLink 13.0 may die inside
// nvJitLinkAddData where it would report a prototype mismatch of a binary input (the named
// vendor difference, docs/linking.md). ctest runs each test in its own process, but
// `cujit conformance` runs an area's tests together, and there such a test killed the whole
// area.

#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>

namespace cujit::test {

// Runs `body` in a new process that gtest starts by executing this test binary again (a
// "threadsafe" death test), so it inherits no state from earlier tests; a failed assertion
// in it (printed by the child) fails this test.
inline void in_fresh_process(const std::function<void()>& body) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        body();
        std::_Exit(::testing::Test::HasFailure() ? 1 : 0);
      },
      ::testing::ExitedWithCode(0), "")
      << "the test's body failed in its own process (its messages are above)";
}

}  // namespace cujit::test
