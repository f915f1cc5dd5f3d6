// cujit compare: the regression gate (reports/compare.py): exit 1 when a benchmark slowed
// beyond the threshold.
#include "commands.hpp"
#include "paths.hpp"

namespace cujit::cli {

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
