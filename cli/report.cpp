// cujit report / compare: the Python reports (reports/), run with the Python that has
// matplotlib.
#include <iostream>

#include "commands.hpp"
#include "paths.hpp"

namespace cujit::cli {
namespace {

std::string quoted(const std::string& text) { return "'" + text + "'"; }

}  // namespace

int report(const std::vector<std::string>& json_files, const std::filesystem::path& out) {
  std::string command = python() + " " + quoted((source_dir() / "reports" / "report.py").string()) +
                        " --out " + quoted(out.string());
  for (const std::string& file : json_files) command += " " + quoted(file);
  const int status = run_command(command);
  return status == 0 ? exit_ok : (status == 1 ? exit_failures : exit_usage);
}

int compare(const std::string& baseline, const std::string& current, double threshold,
            const std::string& markdown) {
  std::string command = python() + " " + quoted((source_dir() / "reports" / "compare.py").string()) +
                        " " + quoted(baseline) + " " + quoted(current) +
                        " --threshold " + std::to_string(threshold);
  if (!markdown.empty()) command += " --markdown " + quoted(markdown);
  const int status = run_command(command);
  return status <= 2 ? status : exit_usage;
}

}  // namespace cujit::cli
