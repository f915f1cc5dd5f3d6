// cujit compare: the regression gate (reports/compare.py): exit 1 when a benchmark slowed
// beyond the threshold. The markdown table is written by compare.py into a private
// directory and copied to --markdown here, so that a path compare.py cannot write (which
// Python would report as an exception, exit 1, read as "a regression") is an error naming
// the path, exit 2.
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "json_output.hpp"
#include "output.hpp"
#include "paths.hpp"

namespace cujit::cli {
namespace {

// A directory of its own under TMPDIR, removed with everything in it.
class PrivateDir {
 public:
  PrivateDir() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/cujit-compare-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) throw CliError("cannot create a directory under " + shown(pattern));
    path_ = pattern;
  }
  ~PrivateDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  PrivateDir(const PrivateDir&) = delete;
  PrivateDir& operator=(const PrivateDir&) = delete;
  const std::filesystem::path& path() const noexcept { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace

int compare(const CompareOptions& options) {
  require_input_file(options.baseline, "compare: baseline");
  require_input_file(options.current, "compare: current");
  if (!std::isfinite(options.threshold) || options.threshold < 0) {
    throw CliError("compare: --threshold " + std::to_string(options.threshold) + ": must be a finite number >= 0");
  }
  const PrivateDir scratch;
  const std::filesystem::path table = scratch.path() / "table.md";
  std::vector<std::string> args{"--threshold=" + std::to_string(options.threshold)};
  if (!options.markdown.empty()) args.push_back("--markdown=" + table.string());
  args.insert(args.end(), {"--", options.baseline, options.current});
  std::string printed;
  const int status = run_report_script("compare.py", args, false, options.json ? &printed : nullptr);
  if (status > exit_usage) return exit_usage;
  if (!options.markdown.empty() && status != exit_usage) {
    std::ifstream in(table, std::ios::binary);
    if (!in) throw CliError("compare: compare.py wrote no markdown table");
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    try {
      write_file(options.markdown, text);
    } catch (const CliError& error) {
      throw CliError("compare: --markdown: " + std::string(error.what()));
    }
  }
  if (options.json) {
    print_json({{"schema", 1},
                {"baseline", options.baseline},
                {"current", options.current},
                {"threshold", options.threshold},
                {"verdict", status == exit_ok ? "pass" : status == exit_failures ? "fail" : "cannot compare"},
                {"table", printed},
                {"exit_code", status}});
  }
  return status;
}

}  // namespace cujit::cli
