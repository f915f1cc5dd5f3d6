// cujit report: the HTML report (reports/report.py), run with the Python that has
// matplotlib. Arguments reach the script as an argument vector: "--out=DIR" and the files
// after "--", so that no name can be read as an option.
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "json_output.hpp"
#include "output.hpp"
#include "paths.hpp"

namespace cujit::cli {

int report(const std::vector<std::string>& json_files, const std::filesystem::path& out, bool json,
           nlohmann::json* summary) {
  for (const std::string& file : json_files) require_input_file(file, "report: input");
  make_output_dir(out, "report: --out");
  std::vector<std::string> args{"--out=" + out.string(), "--"};
  args.insert(args.end(), json_files.begin(), json_files.end());
  // With JSON wanted, the script's own lines go to stderr: standard output holds the document.
  const bool quiet_script = json || summary != nullptr;
  const int status = run_report_script("report.py", args, quiet_script);
  // report.py exits 0 or 2 (a file it cannot read); it has no "failures found".
  const int code = status == 0 ? exit_ok : exit_usage;
  const nlohmann::json document = {{"schema", 1},
                                   {"html", (out / "report.html").string()},
                                   {"markdown", (out / "report.md").string()},
                                   {"inputs", json_files},
                                   {"exit_code", code}};
  if (summary != nullptr) {
    *summary = document;
  } else if (json) {
    print_json(document);
  }
  return code;
}

}  // namespace cujit::cli
