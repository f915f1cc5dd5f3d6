// cujit report: the HTML report (reports/report.py), run with the Python that has
// matplotlib. Arguments reach the script as an argument vector: "--out=DIR" and the files
// after "--", so that no name can be read as an option.
#include "commands.hpp"
#include "output.hpp"
#include "paths.hpp"

namespace cujit::cli {

int report(const std::vector<std::string>& json_files, const std::filesystem::path& out) {
  for (const std::string& file : json_files) require_input_file(file, "report: input");
  make_output_dir(out, "report: --out");
  std::vector<std::string> args{"--out=" + out.string(), "--"};
  args.insert(args.end(), json_files.begin(), json_files.end());
  const int status = run_report_script("report.py", args);
  // report.py exits 0 or 2 (a file it cannot read); it has no "failures found".
  return status == 0 ? exit_ok : exit_usage;
}

}  // namespace cujit::cli
