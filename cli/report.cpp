// cujit report: the HTML report (reports/report.py), run with the Python that has
// matplotlib.
#include "commands.hpp"
#include "paths.hpp"

namespace cujit::cli {

int report(const std::vector<std::string>& json_files, const std::filesystem::path& out) {
  std::string command = python() + " " + quoted((source_dir() / "reports" / "report.py").string()) +
                        " --out " + quoted(out.string());
  for (const std::string& file : json_files) command += " " + quoted(file);
  const int status = run_command(command);
  return status == 0 ? exit_ok : (status == 1 ? exit_failures : exit_usage);
}

}  // namespace cujit::cli
