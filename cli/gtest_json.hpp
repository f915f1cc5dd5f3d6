#pragma once
// Google Test's own JSON report (--gtest_output=json:FILE), which `cujit conformance`
// reads its results from: a test run's report, and the listing that --gtest_list_tests
// writes in the same format. The JUnit XML the command leaves is written from what is
// read here (junit.hpp), never from console text.

#include <string>
#include <string_view>
#include <vector>

#include "junit.hpp"

namespace cujit::cli {

// The tests a run report holds, each passed, failed (its first failure's text as the
// message) or skipped. Tests that did not run (disabled, status NOTRUN) are left out.
// Throws CliError naming `where` for text that is not such a report.
std::vector<TestCase> parse_gtest_report(const std::string& text, const std::string& where);

// The full names ("Suite.Test", as --gtest_filter takes them) of a --gtest_list_tests
// report, disabled tests left out. Throws CliError naming `where` for text that is not one.
std::vector<std::string> parse_gtest_listing(const std::string& text, const std::string& where);

// Google Test 1.12's JSON report has no reason for a skip: the reason is what the test
// printed after its "file:line: Skipped" line, before "[  SKIPPED ] Suite.Test" in its
// console output `log`. Empty when the log does not show it.
std::string skip_reason_from_log(std::string_view log, const std::string& suite, const std::string& name);

}  // namespace cujit::cli
