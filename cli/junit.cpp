#include "junit.hpp"

#include <map>
#include <sstream>
#include <string_view>
#include <utility>

#include "input_file.hpp"
#include "output.hpp"

namespace cujit::cli {
namespace {

// One pass, left to right: each entity is replaced where it starts, never searched for again
// (replacing in place moved the rest of the text per entity: a 2.5 MB message of "&lt;"
// took 21 s, red-team finding F10). "&amp;lt;" stays "&lt;", as XML says.
std::string unescape(std::string_view text) {
  static constexpr std::pair<std::string_view, char> entities[] = {
      {"&quot;", '"'}, {"&apos;", '\''}, {"&lt;", '<'}, {"&gt;", '>'}, {"&#x0A;", ' '}, {"&#x0D;", ' '}, {"&amp;", '&'}};
  std::string out;
  out.reserve(text.size());
  for (std::size_t at = 0; at < text.size();) {
    bool replaced = false;
    if (text[at] == '&') {
      for (const auto& [entity, character] : entities) {
        if (text.substr(at, entity.size()) == entity) {
          out += character;
          at += entity.size();
          replaced = true;
          break;
        }
      }
    }
    if (!replaced) out += text[at++];
  }
  return out;
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
  return unescape(std::string_view(element).substr(from, element.find('"', from) - from));
}

}  // namespace

std::vector<TestCase> parse_junit(const std::string& text) {
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
      test.message = without_source_location(test.message);
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

namespace {
// ECMAScript's \s, as the regular expression this scan replaced used it.
bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
}  // namespace

bool is_source_location(std::string_view text) {
  const std::size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == text.size()) return false;
  for (std::size_t k = 0; k < colon; ++k) {
    if (is_space(text[k])) return false;
  }
  for (std::size_t k = colon + 1; k < text.size(); ++k) {
    if (text[k] < '0' || text[k] > '9') return false;
  }
  return true;
}

std::string without_source_location(const std::string& message) {
  std::size_t end = 0;
  while (end < message.size() && !is_space(message[end])) ++end;
  if (end == message.size() || !is_source_location(std::string_view(message).substr(0, end))) return message;
  while (end < message.size() && is_space(message[end])) ++end;
  return message.substr(end);
}

std::vector<TestCase> read_junit(const std::filesystem::path& xml) {
  std::string ignored;
  const auto text = read_input_file(xml, ignored);
  return text ? parse_junit(*text) : std::vector<TestCase>{};
}

void write_junit(const std::filesystem::path& xml, const std::vector<TestCase>& cases) {
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

}  // namespace cujit::cli
