// cujit conformance: runs each conformance executable with JUnit-compatible XML output and
// prints a one-screen summary: passed / failed / skipped by area, and why tests skipped.
// A suite that dies (a vendor library crashing on an input) is a failure naming the
// signal and the test it was in; with --isolate each test runs in its own process, so a
// crash costs only the test that crashed and the others still count.
#include <algorithm>
#include <chrono>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <regex>
#include <sstream>

#include "commands.hpp"
#include "output.hpp"
#include "paths.hpp"
#include "spawn.hpp"

namespace cujit::cli {
namespace {

namespace fs = std::filesystem;

const std::vector<std::string> all_areas = {"format", "program", "linking", "module", "nrt", "abi",
                                            "graph", "cache", "scenarios", "reliability", "mutation", "cli"};

enum class Result { passed, failed, skipped };

struct TestCase {
  std::string suite, name;  // classname and name as Google Test writes them
  Result result = Result::passed;
  std::string message;  // why it failed or was skipped
  std::string time = "0";
};

struct AreaResult {
  int passed = 0, failed = 0, skipped = 0;
  std::map<std::string, int> skip_reasons;
  std::vector<std::string> failures;
};

std::string unescape(std::string text) {
  for (const auto& [from, to] : {std::pair<std::string, std::string>{"&quot;", "\""}, {"&apos;", "'"},
                                 {"&lt;", "<"}, {"&gt;", ">"}, {"&#x0A;", " "}, {"&#x0D;", " "}, {"&amp;", "&"}}) {
    for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
      text.replace(at, from.size(), to);
    }
  }
  return text;
}

std::string escape(const std::string& text) {
  std::string out;
  for (const char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      case '\n': out += "&#x0A;"; break;
      case '\r': out += "&#x0D;"; break;
      default:
        // XML 1.0 has no other control characters.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t') out += '?';
        else out += c;
    }
  }
  return out;
}

std::string attribute(const std::string& element, const std::string& name) {
  const std::string key = " " + name + "=\"";
  const std::size_t start = element.find(key);
  if (start == std::string::npos) return {};
  const std::size_t from = start + key.size();
  return unescape(element.substr(from, element.find('"', from) - from));
}

// Reads a Google Test XML report: each <testcase> is passed, failed (has <failure>) or
// skipped (result="skipped", with the reason in <skipped message=...>).
std::vector<TestCase> read_report(const fs::path& xml) {
  std::ifstream in(xml);
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  std::vector<TestCase> cases;
  std::size_t at = 0;
  while ((at = text.find("<testcase ", at)) != std::string::npos) {
    const std::size_t end_open = text.find('>', at);
    if (end_open == std::string::npos) break;
    const bool self_closing = text[end_open - 1] == '/';
    const std::size_t close = self_closing ? end_open : text.find("</testcase>", at);
    const std::size_t end = close == std::string::npos ? text.size() : close;
    const std::string element = text.substr(at, end - at);
    const std::string open = text.substr(at, end_open - at);
    TestCase test;
    test.name = attribute(open, "name");
    test.suite = attribute(open, "classname");
    if (const std::string time = attribute(open, "time"); !time.empty()) test.time = time;
    if (attribute(open, "result") == "skipped") {
      test.result = Result::skipped;
      const std::size_t skipped = element.find("<skipped ");
      test.message = skipped == std::string::npos ? "" : attribute(element.substr(skipped), "message");
      // Google Test puts the source location first ("file.cpp:42 reason"): group by reason.
      static const std::regex location(R"(^\S+:\d+\s+)");
      test.message = std::regex_replace(test.message, location, "");
      if (test.message.empty()) test.message = "no reason given";
    } else if (const std::size_t failure = element.find("<failure"); failure != std::string::npos) {
      test.result = Result::failed;
      test.message = attribute(element.substr(failure), "message");
    }
    cases.push_back(std::move(test));
    at = end;
  }
  return cases;
}

void count(AreaResult& area, const TestCase& test) {
  switch (test.result) {
    case Result::passed: ++area.passed; break;
    case Result::skipped:
      ++area.skipped;
      ++area.skip_reasons[test.message];
      break;
    case Result::failed: {
      ++area.failed;
      const bool crashed = test.message.rfind("crashed", 0) == 0 || test.message.rfind("exited", 0) == 0;
      area.failures.push_back(test.suite + "." + test.name + (crashed ? " (" + test.message + ")" : ""));
      break;
    }
  }
}

// The test names an executable lists (--gtest_list_tests), as --gtest_filter takes them.
std::vector<std::string> parse_test_list(const std::string& listing) {
  std::vector<std::string> names;
  std::istringstream lines(listing);
  std::string line, suite;
  auto disabled = [](const std::string& name) {
    return name.rfind("DISABLED_", 0) == 0 || name.find("/DISABLED_") != std::string::npos ||
           name.find(".DISABLED_") != std::string::npos;
  };
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    if (line[0] != ' ') {
      suite = line.substr(0, line.find(' '));
      continue;
    }
    const std::size_t first = line.find_first_not_of(' ');
    const std::string test = line.substr(first, line.find(' ', first) - first);
    if (suite.empty() || suite.back() != '.' || test.empty()) continue;
    const std::string name = suite + test;
    if (!disabled(name)) names.push_back(name);
  }
  return names;
}

struct Area {
  std::string name;
  fs::path executable, xml, log, out;
};

ChildSpec suite_child(const Area& area, std::vector<std::string> args) {
  ChildSpec child = child_spec({area.executable.string()});
  child.argv.insert(child.argv.end(), args.begin(), args.end());
  child.environment = {{"CUJIT_CACHE_DIR", (area.out / "cache").string()}};
  child.out = Sink::capture;
  child.err_to_out = true;
  return child;
}

// One process for the whole executable, its output into the log.
AreaResult run_whole(const Area& area) {
  AreaResult result;
  std::error_code ignored;
  fs::remove(area.xml, ignored);  // an earlier run's report must not pass for this one's
  OutputFile log(area.log);
  Tail tail;
  const ChildExit exit = run_child(suite_child(area, {"--gtest_output=xml:" + area.xml.string()}),
                                   [&](Stream, std::string_view text) {
                                     log.write(text);
                                     tail.append(text);
                                   });
  log.finish();
  const bool reported = fs::exists(area.xml);
  if (reported) {
    for (const TestCase& test : read_report(area.xml)) count(result, test);
  }
  if (exit.exited() && reported) return result;
  // Died (or never wrote its report): one failure naming how, and the test it was in.
  const std::string running = tail.last_line_starting("[ RUN      ] ");
  std::string why = exit.exited() ? "exited with status " + std::to_string(exit.exit_code) + " without a report"
                                  : describe(exit);
  if (!running.empty() && !reported) why += " in " + running;
  std::cerr << "cujit conformance: " << area.name << " " << why << ", see " << shown(area.log.string()) << "\n";
  ++result.failed;
  result.failures.push_back("(" + why + ": see " + area.log.string() + ")");
  return result;
}

void write_junit(const fs::path& xml, const std::vector<TestCase>& cases) {
  std::map<std::string, std::vector<const TestCase*>> suites;
  int failures = 0, skipped = 0;
  for (const TestCase& test : cases) {
    suites[test.suite].push_back(&test);
    failures += test.result == Result::failed;
    skipped += test.result == Result::skipped;
  }
  std::ostringstream out;
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites tests=\"" << cases.size() << "\" failures=\""
      << failures << "\" disabled=\"0\" errors=\"0\" name=\"AllTests\">\n";
  for (const auto& [suite, tests] : suites) {
    out << "  <testsuite name=\"" << escape(suite) << "\" tests=\"" << tests.size() << "\">\n";
    for (const TestCase* test : tests) {
      out << "    <testcase name=\"" << escape(test->name) << "\" status=\"run\" result=\""
          << (test->result == Result::skipped ? "skipped" : "completed") << "\" time=\"" << escape(test->time)
          << "\" classname=\"" << escape(suite) << "\"";
      if (test->result == Result::passed) {
        out << " />\n";
        continue;
      }
      const char* tag = test->result == Result::failed ? "failure" : "skipped";
      out << ">\n      <" << tag << " message=\"" << escape(test->message) << "\" type=\"\"></" << tag
          << ">\n    </testcase>\n";
    }
    out << "  </testsuite>\n";
  }
  out << "</testsuites>\n";
  write_file(xml, out.str());
}

// One process per test: a test that crashes is a failure naming its signal; the others
// still count. The area's JUnit XML is merged from the per-test reports.
AreaResult run_isolated(const Area& area) {
  AreaResult result;
  OutputFile log(area.log);
  std::string listing;
  const ChildExit listed = run_child(suite_child(area, {"--gtest_list_tests"}),
                                     [&](Stream, std::string_view text) {
                                       log.write(text);
                                       if (listing.size() < (64u << 20)) listing.append(text);
                                     });
  if (!listed.exited() || listed.exit_code != 0) {
    log.finish();
    const std::string why = "listing its tests: " + describe(listed);
    std::cerr << "cujit conformance: " << area.name << " " << why << ", see " << shown(area.log.string()) << "\n";
    ++result.failed;
    result.failures.push_back("(" + why + ": see " + area.log.string() + ")");
    return result;
  }
  const fs::path reports = area.out / "isolated" / area.name;
  make_output_dir(reports, "conformance: --out");
  std::vector<TestCase> cases;
  int index = 0;
  for (const std::string& name : parse_test_list(listing)) {
    const fs::path xml = reports / (std::to_string(index++) + ".xml");
    std::error_code ignored;
    fs::remove(xml, ignored);
    log.write("=== " + name + "\n");
    Tail tail;
    const ChildExit exit = run_child(suite_child(area, {"--gtest_filter=" + name, "--gtest_output=xml:" + xml.string()}),
                                     [&](Stream, std::string_view text) {
                                       log.write(text);
                                       tail.append(text);
                                     });
    const bool reported = exit.exited() && fs::exists(xml);
    if (reported) {
      for (TestCase& test : read_report(xml)) cases.push_back(std::move(test));
      continue;
    }
    TestCase test;
    const std::size_t dot = name.rfind('.');
    test.suite = name.substr(0, dot);
    test.name = name.substr(dot + 1);
    test.result = Result::failed;
    test.message = exit.exited() ? "exited with status " + std::to_string(exit.exit_code) + " without a report"
                                 : describe(exit);
    if (const std::string last = tail.last_line(); !last.empty()) test.message += "; last output: " + last;
    std::cerr << "cujit conformance: " << area.name << " " << name << " " << test.message << "\n";
    cases.push_back(std::move(test));
  }
  log.finish();
  write_junit(area.xml, cases);
  for (const TestCase& test : cases) count(result, test);
  return result;
}

bool valid_area(const std::string& area) {
  return !area.empty() && std::all_of(area.begin(), area.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

}  // namespace

int conformance(const ConformanceOptions& options) {
  const std::vector<std::string> areas = options.areas.empty() ? all_areas : options.areas;
  for (const std::string& area : areas) {
    if (!valid_area(area)) {
      throw CliError("conformance: --area " + shown(area) + ": an area is a name of lowercase letters, digits and _");
    }
  }
  const fs::path junit = options.out / "junit";
  make_output_dir(junit, "conformance: --out");
  std::map<std::string, AreaResult> results;
  const auto start = std::chrono::steady_clock::now();
  int index = 0;
  for (const std::string& name : areas) {
    ++index;
    const Area area{name, build_dir() / "conformance" / ("conformance_" + name), junit / (name + ".xml"),
                    options.out / ("conformance_" + name + ".log"), options.out};
    if (!fs::exists(area.executable)) {
      std::cerr << "cujit conformance: no suite " << shown(name) << " (" << area.executable << ")\n";
      return exit_usage;
    }
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::cerr << "[" << index << "/" << areas.size() << "] conformance " << name
              << (options.isolate ? " (each test isolated)" : "") << " (" << std::fixed << std::setprecision(1)
              << elapsed << " s elapsed)\n";
    results[name] = options.isolate ? run_isolated(area) : run_whole(area);
  }

  int passed = 0, failed = 0, skipped = 0;
  std::map<std::string, int> reasons;
  std::cout << "\n" << std::left << std::setw(12) << "area" << std::right << std::setw(8) << "passed"
            << std::setw(8) << "failed" << std::setw(9) << "skipped" << "\n";
  for (const auto& [area, r] : results) {
    std::cout << std::left << std::setw(12) << area << std::right << std::setw(8) << r.passed << std::setw(8)
              << r.failed << std::setw(9) << r.skipped << "\n";
    passed += r.passed;
    failed += r.failed;
    skipped += r.skipped;
    for (const auto& [why, n] : r.skip_reasons) reasons[why] += n;
  }
  std::cout << std::left << std::setw(12) << "total" << std::right << std::setw(8) << passed << std::setw(8)
            << failed << std::setw(9) << skipped << "\n";
  for (const auto& [why, n] : reasons) std::cout << "skipped " << n << ": " << why << "\n";
  for (const auto& [area, r] : results) {
    for (const std::string& name : r.failures) std::cout << "FAILED " << area << ": " << name << "\n";
  }
  std::cout << "JUnit XML: " << junit.string() << "\n";
  std::cout << "conformance: " << passed << " passed, " << failed << " failed, " << skipped << " skipped\n";
  return failed > 0 ? exit_failures : exit_ok;
}

}  // namespace cujit::cli
