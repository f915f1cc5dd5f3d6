#include "support/vendor_phases.hpp"

#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace cujit::bench {
namespace {

std::string trim(const std::string& text) {
  const auto first = text.find_first_not_of(" \t\r");
  if (first == std::string::npos) return {};
  return text.substr(first, text.find_last_not_of(" \t\r") - first + 1);
}

std::string counter_name(const std::string& library, const std::string& phase) {
  std::string out = library + "_";
  bool gap = false;
  for (const unsigned char c : phase) {
    if (std::isalnum(c) != 0) {
      if (gap && out.back() != '_') out += '_';
      out += static_cast<char>(std::tolower(c));
      gap = false;
    } else {
      gap = true;
    }
  }
  return out + "_ms";
}

// Adds `ms` to the phase named `name`, keeping first-seen order.
void add(PhaseTimes& phases, const std::string& name, double ms) {
  for (auto& [known, total] : phases) {
    if (known == name) {
      total += ms;
      return;
    }
  }
  phases.emplace_back(name, ms);
}

double number(const std::string& text, const std::string& line) {
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !(value >= 0)) {
    throw std::runtime_error("vendor phase times: '" + text + "' is not a time, in: " + line);
  }
  return value;
}

std::string read_all(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

PhaseTimes parse_nvrtc_time_csv(const std::string& csv) {
  PhaseTimes phases;
  std::istringstream lines(csv);
  bool header = true;
  for (std::string line; std::getline(lines, line);) {
    if (trim(line).empty()) continue;
    if (header) {  // "File name, phase name, metric, unit"
      header = false;
      continue;
    }
    std::vector<std::string> fields;
    std::istringstream cells(line);
    for (std::string cell; std::getline(cells, cell, ',');) fields.push_back(trim(cell));
    if (fields.size() != 4) throw std::runtime_error("NVRTC --time: not four fields: " + line);
    const double value = number(fields[2], line);
    double scale = 0;
    if (fields[3] == "ms") scale = 1;
    if (fields[3] == "us") scale = 1e-3;
    if (fields[3] == "s") scale = 1e3;
    if (scale == 0) throw std::runtime_error("NVRTC --time: unknown unit '" + fields[3] + "': " + line);
    add(phases, counter_name("nvrtc", fields[1]), value * scale);
  }
  return phases;
}

PhaseTimes parse_nvjitlink_time_log(const std::string& info_log) {
  PhaseTimes phases;
  std::istringstream lines(info_log);
  for (std::string line; std::getline(lines, line);) {
    const auto time = line.find(" time ");
    const auto colon = line.rfind(':');
    if (time == std::string::npos || colon == std::string::npos || colon < time) continue;
    // "nvJitLink time until Complete" -> "until Complete"; "nvJitLinkComplete time to
    // finish" -> "Complete time to finish" reads as the Complete call's own time.
    std::string what = trim(line.substr(0, colon));
    const std::string prefix = "nvJitLink";
    if (what.rfind(prefix, 0) == 0) what = trim(what.substr(prefix.size()));
    add(phases, counter_name("nvjitlink", what), number(trim(line.substr(colon + 1)), line));
  }
  if (phases.empty()) throw std::runtime_error("nvJitLink -time: no time line in the info log: " + info_log);
  return phases;
}

PhaseTimes nvrtc_phases(const std::string& source, const std::string& name, std::vector<std::string> options,
                        const std::string& target, const std::vector<RawHeader>& headers) {
  // A directory of our own: NVRTC appends to the file it is given, and a name in the shared
  // temporary directory could be taken between choosing it and NVRTC opening it.
  std::string pattern = (std::filesystem::temp_directory_path() / "cujit-nvrtc-time-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) {
    throw std::runtime_error("vendor phase times: cannot create a directory for NVRTC --time");
  }
  const std::filesystem::path directory = pattern;
  options.push_back("--time=" + (directory / "time.csv").string());
  std::string csv;
  try {
    (void)raw_nvrtc(source, name, options, target, headers);
    csv = read_all(directory / "time.csv");
  } catch (...) {
    std::filesystem::remove_all(directory);
    throw;
  }
  std::filesystem::remove_all(directory);
  return parse_nvrtc_time_csv(csv);
}

PhaseTimes nvjitlink_phases(const std::vector<RawInput>& inputs, std::vector<std::string> options) {
  options.emplace_back("-time");
  std::string log;
  (void)raw_nvjitlink(inputs, options, &log);  // throws when the link fails
  return parse_nvjitlink_time_log(log);
}

void add_phase_counters(benchmark::State& state, const PhaseTimes& phases) {
  for (const auto& [name, ms] : phases) state.counters[name] = ms;
}

}  // namespace cujit::bench
