#pragma once
// JUnit XML as Google Test writes it (--gtest_output=xml): reading its test cases and
// writing a report from them. `cujit conformance --isolate` writes one from its per-test
// reports; `cujit merge` writes one from every shard's.

#include <filesystem>
#include <string>
#include <string_view>
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

// Google Test's source location at the start of a message ("file.cpp:42 reason"): the
// message without "<non-space>:<digits>" and the white space after it (a linear scan; a
// message is as long as a test makes it). Unchanged when it does not start with one.
std::string without_source_location(const std::string& message);

// Whether `text` is exactly "<non-space characters>:<digits>" (a source location).
bool is_source_location(std::string_view text);

// Reads `xml` (a regular file of bounded size); an unreadable file has no test cases.
std::vector<TestCase> read_junit(const std::filesystem::path& xml);

// Writes the cases grouped by suite; throws CliError naming `xml` when it cannot.
void write_junit(const std::filesystem::path& xml, const std::vector<TestCase>& cases);

}  // namespace cujit::cli
