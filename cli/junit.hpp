#pragma once
// JUnit XML as Google Test writes it (--gtest_output=xml): reading its test cases and
// writing a report from them. `cujit conformance --isolate` writes one from its per-test
// reports; `cujit merge` writes one from every shard's.

#include <filesystem>
#include <string>
#include <vector>

namespace cujit::cli {

enum class Result { passed, failed, skipped };

struct TestCase {
  std::string suite, name;  // classname and name as Google Test writes them
  Result result = Result::passed;
  std::string message;      // why it failed or was skipped
  std::string time = "0";
};

// The test cases of a report's text: each <testcase> is passed, failed (has <failure>) or
// skipped (result="skipped", with the reason in <skipped message=...>, its source location
// removed so that skips group by reason).
std::vector<TestCase> parse_junit(const std::string& text);

// Reads `xml` (a regular file of bounded size); an unreadable file has no test cases.
std::vector<TestCase> read_junit(const std::filesystem::path& xml);

// Writes the cases grouped by suite; throws CliError naming `xml` when it cannot.
void write_junit(const std::filesystem::path& xml, const std::vector<TestCase>& cases);

}  // namespace cujit::cli
