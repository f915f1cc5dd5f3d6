// cujit conformance: runs each conformance executable with JUnit-compatible XML output and
// prints a one-screen summary: passed / failed / skipped by area, and why tests skipped.
#include <chrono>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <regex>
#include <sstream>

#include "commands.hpp"
#include "paths.hpp"

namespace cujit::cli {
namespace {

const std::vector<std::string> all_areas = {"format", "program", "linking", "module", "nrt", "abi",
                                            "graph", "cache", "scenarios", "reliability", "cli"};

struct AreaResult {
  int passed = 0, failed = 0, skipped = 0;
  std::map<std::string, int> skip_reasons;
  std::vector<std::string> failures;
};

std::string unescape(std::string text) {
  for (const auto& [from, to] : {std::pair<std::string, std::string>{"&quot;", "\""}, {"&apos;", "'"},
                                 {"&lt;", "<"}, {"&gt;", ">"}, {"&#x0A;", " "}, {"&amp;", "&"}}) {
    for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
      text.replace(at, from.size(), to);
    }
  }
  return text;
}

// Reads a Google Test XML report: each <testcase> is passed, failed (has <failure>) or
// skipped (result="skipped", with the reason in <skipped message=...>).
AreaResult read_report(const std::filesystem::path& xml) {
  std::ifstream in(xml);
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  AreaResult result;
  static const std::regex reason(R"re(<skipped message="([^"]*)")re");
  std::size_t at = 0;
  while ((at = text.find("<testcase ", at)) != std::string::npos) {
    const std::size_t end_self = text.find("/>", at);
    const std::size_t end_open = text.find('>', at);
    const bool self_closing = end_self != std::string::npos && end_self < end_open + 1 && end_self + 1 == end_open;
    const std::size_t end = self_closing ? end_open : text.find("</testcase>", at);
    const std::string element = text.substr(at, end - at);
    const auto name_start = element.find("name=\"") + 6;
    const std::string name = element.substr(name_start, element.find('"', name_start) - name_start);
    if (element.find("result=\"skipped\"") != std::string::npos) {
      ++result.skipped;
      std::smatch match;
      std::string why = std::regex_search(element, match, reason) ? unescape(match[1].str()) : "no reason given";
      // Google Test puts the source location first ("file.cpp:42 reason"): group by reason.
      static const std::regex location(R"(^\S+:\d+\s+)");
      why = std::regex_replace(why, location, "");
      ++result.skip_reasons[why];
    } else if (element.find("<failure") != std::string::npos) {
      ++result.failed;
      result.failures.push_back(name);
    } else {
      ++result.passed;
    }
    at = end;
  }
  return result;
}

}  // namespace

int conformance(const ConformanceOptions& options) {
  const std::vector<std::string> areas = options.areas.empty() ? all_areas : options.areas;
  const std::filesystem::path junit = options.out / "junit";
  std::filesystem::create_directories(junit);
  std::map<std::string, AreaResult> results;
  const auto start = std::chrono::steady_clock::now();
  int index = 0;
  bool broken = false;
  for (const std::string& area : areas) {
    ++index;
    const auto executable = build_dir() / "conformance" / ("conformance_" + area);
    if (!std::filesystem::exists(executable)) {
      std::cerr << "cujit conformance: no suite '" << area << "' (" << executable << ")\n";
      return exit_usage;
    }
    const auto xml = junit / (area + ".xml");
    const auto log = options.out / ("conformance_" + area + ".log");
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::cerr << "[" << index << "/" << areas.size() << "] conformance " << area << " (" << std::fixed
              << std::setprecision(1) << elapsed << " s elapsed)\n";
    const std::string env = "CUJIT_CACHE_DIR=" + (options.out / "cache").string() + " ";
    const int status = run_command(env + executable.string() + " --gtest_output=xml:" + xml.string() +
                                   " > " + log.string() + " 2>&1");
    if (!std::filesystem::exists(xml)) {
      std::cerr << "cujit conformance: " << area << " crashed (status " << status << "), see " << log << "\n";
      results[area].failed += 1;
      results[area].failures.push_back("(crashed: see " + log.string() + ")");
      broken = true;
      continue;
    }
    results[area] = read_report(xml);
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
    for (const auto& [why, count] : r.skip_reasons) reasons[why] += count;
  }
  std::cout << std::left << std::setw(12) << "total" << std::right << std::setw(8) << passed << std::setw(8)
            << failed << std::setw(9) << skipped << "\n";
  for (const auto& [why, count] : reasons) std::cout << "skipped " << count << ": " << why << "\n";
  for (const auto& [area, r] : results) {
    for (const std::string& name : r.failures) std::cout << "FAILED " << area << ": " << name << "\n";
  }
  std::cout << "JUnit XML: " << junit.string() << "\n";
  std::cout << "conformance: " << passed << " passed, " << failed << " failed, " << skipped << " skipped\n";
  return failed > 0 || broken ? exit_failures : exit_ok;
}

}  // namespace cujit::cli
