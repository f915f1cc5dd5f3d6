#include "cujit/link_options.hpp"

#include <algorithm>
#include <cctype>

#include "cujit/error.hpp"

namespace cujit {
namespace {

constexpr unsigned max_register_limit = 255;
constexpr unsigned max_optimization_level = 3;
// The nvJitLink release whose handling of each option was checked (docs/linking.md).
constexpr const char* nvjitlink_version_tested = "13.0";

std::string bool_value(bool value) { return value ? "1" : "0"; }
std::string nvrtc_bool(bool value) { return value ? "true" : "false"; }

// A math flag: its option, value and nvJitLink / NVRTC spellings.
struct MathFlag {
  LinkOption option;
  const std::optional<bool>* value;
  const char* nvjitlink;  // "-ftz="
  const char* nvrtc;      // "--ftz="
  const char* driver;     // "CU_JIT_FTZ"
};

std::vector<MathFlag> math_flags(const LinkFlags& flags) {
  return {{LinkOption::ftz, &flags.ftz, "-ftz=", "--ftz=", "CU_JIT_FTZ"},
          {LinkOption::prec_div, &flags.prec_div, "-prec-div=", "--prec-div=", "CU_JIT_PREC_DIV"},
          {LinkOption::prec_sqrt, &flags.prec_sqrt, "-prec-sqrt=", "--prec-sqrt=", "CU_JIT_PREC_SQRT"},
          {LinkOption::fma, &flags.fma, "-fma=", "--fmad=", "CU_JIT_FMA"}};
}

// Names and ptxas options become single nvJitLink option strings: whitespace or a control
// character could smuggle a second option into one, and an empty one means nothing.
void check_word(LinkOption option, const std::string& word) {
  const bool bad = word.empty() || std::any_of(word.begin(), word.end(), [](unsigned char c) {
                     return std::isspace(c) != 0 || std::iscntrl(c) != 0;
                   });
  if (!bad) return;
  throw Error(ErrorKind::usage, "LinkOptions",
              std::string(to_string(option)) + ": '" + word +
                  "' is empty or holds whitespace or control characters; give one name or "
                  "option per entry");
}

[[noreturn]] void refuse(LinkOption option, LinkerBackend backend, const std::string& why) {
  throw Error(ErrorKind::unsupported, "Linker (" + std::string(to_string(backend)) + ")",
              "link option '" + std::string(to_string(option)) + "' is not honoured by the " +
                  std::string(to_string(backend)) + " backend: " + why);
}

void check_values(const LinkOptions& options) {
  const LinkFlags& flags = options.flags;
  if (flags.max_registers && (*flags.max_registers == 0 || *flags.max_registers > max_register_limit)) {
    throw Error(ErrorKind::usage, "LinkOptions",
                "max_registers = " + std::to_string(*flags.max_registers) + " is outside 1 to " +
                    std::to_string(max_register_limit));
  }
  if (flags.optimization_level && *flags.optimization_level > max_optimization_level) {
    throw Error(ErrorKind::usage, "LinkOptions",
                "optimization_level = " + std::to_string(*flags.optimization_level) +
                    " is outside 0 to " + std::to_string(max_optimization_level));
  }
  for (const std::string& name : flags.kernels_used) check_word(LinkOption::kernels_used, name);
  for (const std::string& name : flags.variables_used) check_word(LinkOption::variables_used, name);
  for (const std::string& option : flags.ptxas_options) check_word(LinkOption::ptxas_options, option);
  for (const std::string& option : options.nvjitlink_options) check_word(LinkOption::nvjitlink_options, option);
}

void check_nvjitlink(const LinkOptions& options) {
  const LinkFlags& flags = options.flags;
  const LinkerBackend backend = LinkerBackend::nvjitlink;
  if (flags.optimization_level && *flags.optimization_level != 0 &&
      *flags.optimization_level != max_optimization_level) {
    refuse(LinkOption::optimization_level, backend,
           "nvJitLink takes -O0 and -O3 only (optimization_level = " +
               std::to_string(*flags.optimization_level) + ")");
  }
  if (flags.prec_sqrt) {
    refuse(LinkOption::prec_sqrt, backend,
           "nvJitLink " + std::string(nvjitlink_version_tested) +
               " links LTO-IR with the square root it was compiled with, whatever -prec-sqrt= "
               "says; compile with NVRTC's --prec-sqrt= (CompileOptions::options) instead");
  }
  if (options.lto) return;
  for (const MathFlag& math : math_flags(flags)) {
    if (*math.value) {
      refuse(math.option, backend,
             "it applies only where nvJitLink generates code from LTO-IR: set lto = true "
             "(PTX and cubin inputs keep the setting they were compiled with)");
    }
  }
  if (!flags.variables_used.empty()) {
    refuse(LinkOption::variables_used, backend,
           "nvJitLink removes unused variables only with LTO (without it, -variables-used "
           "removes every kernel): set lto = true");
  }
}

void check_driver(const LinkOptions& options) {
  const LinkFlags& flags = options.flags;
  const LinkerBackend backend = LinkerBackend::driver;
  for (const MathFlag& math : math_flags(flags)) {
    if (*math.value) {
      refuse(math.option, backend,
             std::string(math.driver) +
                 " acts only on LTO-IR from toolkits before CUDA 12.0, which the driver "
                 "linker here never takes; compile with NVRTC's " + math.nvrtc +
                 " (CompileOptions::options) or link with nvjitlink and lto = true");
    }
  }
  if (!flags.kernels_used.empty()) {
    refuse(LinkOption::kernels_used, backend,
           "CU_JIT_REFERENCED_KERNEL_NAMES acts only on pre-CUDA 12.0 LTO-IR; use nvjitlink");
  }
  if (!flags.variables_used.empty()) {
    refuse(LinkOption::variables_used, backend,
           "CU_JIT_REFERENCED_VARIABLE_NAMES acts only on pre-CUDA 12.0 LTO-IR; use nvjitlink "
           "with lto = true");
  }
  if (!flags.ptxas_options.empty()) {
    refuse(LinkOption::ptxas_options, backend,
           "cuLink* has no way to pass ptxas options; use a typed flag or nvjitlink");
  }
  if (!options.nvjitlink_options.empty()) {
    refuse(LinkOption::nvjitlink_options, backend,
           "they are nvJitLink option strings; use the typed flags (LinkOptions::flags)");
  }
}

}  // namespace

std::string_view to_string(LinkerBackend backend) noexcept {
  return backend == LinkerBackend::driver ? "driver" : "nvjitlink";
}

std::optional<LinkerBackend> parse_linker_backend(std::string_view name) noexcept {
  if (name == "nvjitlink") return LinkerBackend::nvjitlink;
  if (name == "driver") return LinkerBackend::driver;
  return std::nullopt;
}

std::string_view to_string(LinkOption option) noexcept {
  switch (option) {
    case LinkOption::debug: return "debug";
    case LinkOption::line_info: return "line_info";
    case LinkOption::max_registers: return "max_registers";
    case LinkOption::optimization_level: return "optimization_level";
    case LinkOption::ftz: return "ftz";
    case LinkOption::prec_div: return "prec_div";
    case LinkOption::prec_sqrt: return "prec_sqrt";
    case LinkOption::fma: return "fma";
    case LinkOption::kernels_used: return "kernels_used";
    case LinkOption::variables_used: return "variables_used";
    case LinkOption::split_compile: return "split_compile";
    case LinkOption::verbose: return "verbose";
    case LinkOption::ptxas_options: return "ptxas_options";
    case LinkOption::nvjitlink_options: return "nvjitlink_options";
  }
  return "unknown";
}

std::vector<LinkOption> options_set(const LinkOptions& options) {
  const LinkFlags& flags = options.flags;
  std::vector<LinkOption> set;
  if (flags.debug) set.push_back(LinkOption::debug);
  if (flags.line_info) set.push_back(LinkOption::line_info);
  if (flags.max_registers) set.push_back(LinkOption::max_registers);
  if (flags.optimization_level) set.push_back(LinkOption::optimization_level);
  for (const MathFlag& math : math_flags(flags)) {
    if (*math.value) set.push_back(math.option);
  }
  if (!flags.kernels_used.empty()) set.push_back(LinkOption::kernels_used);
  if (!flags.variables_used.empty()) set.push_back(LinkOption::variables_used);
  if (flags.split_compile) set.push_back(LinkOption::split_compile);
  if (flags.verbose) set.push_back(LinkOption::verbose);
  if (!flags.ptxas_options.empty()) set.push_back(LinkOption::ptxas_options);
  if (!options.nvjitlink_options.empty()) set.push_back(LinkOption::nvjitlink_options);
  return set;
}

void check_link_options(const LinkOptions& options, LinkerBackend backend) {
  check_values(options);
  if (backend == LinkerBackend::driver) {
    check_driver(options);
  } else {
    check_nvjitlink(options);
  }
}

LinkOptions link_options_for_device(int ordinal) {
  LinkOptions options;
  options.arch = Arch::of_device(ordinal);
  options.arch_is_device = true;
  return options;
}

std::vector<std::string> nvjitlink_option_strings(const LinkOptions& options, bool lto) {
  const LinkFlags& flags = options.flags;
  std::vector<std::string> out;
  if (flags.debug) out.emplace_back("-g");
  if (flags.line_info) out.emplace_back("-lineinfo");
  if (flags.max_registers) out.push_back("-maxrregcount=" + std::to_string(*flags.max_registers));
  if (flags.optimization_level) out.push_back("-O" + std::to_string(*flags.optimization_level));
  if (lto) {
    for (const MathFlag& math : math_flags(flags)) {
      if (*math.value) out.push_back(math.nvjitlink + bool_value(**math.value));
    }
  }
  for (const std::string& name : flags.kernels_used) out.push_back("-kernels-used=" + name);
  if (lto) {
    for (const std::string& name : flags.variables_used) out.push_back("-variables-used=" + name);
  }
  if (flags.split_compile) out.push_back("-split-compile=" + std::to_string(*flags.split_compile));
  if (flags.verbose) out.emplace_back("-verbose");
  for (const std::string& option : flags.ptxas_options) out.push_back("-Xptxas=" + option);
  out.insert(out.end(), options.nvjitlink_options.begin(), options.nvjitlink_options.end());
  return out;
}

std::vector<std::string> link_nvrtc_options(const LinkFlags& flags) {
  std::vector<std::string> out;
  if (flags.debug) out.emplace_back("-G");
  if (flags.line_info) out.emplace_back("-lineinfo");
  for (const MathFlag& math : math_flags(flags)) {
    if (*math.value) out.push_back(math.nvrtc + nvrtc_bool(**math.value));
  }
  return out;
}

void add_link_flags(CacheKey& key, const LinkFlags& flags) {
  const auto optional_number = [](const std::optional<unsigned>& value) {
    return value ? static_cast<long long>(*value) : -1LL;
  };
  const auto optional_bool = [](const std::optional<bool>& value) {
    return value ? (*value ? 1LL : 0LL) : -1LL;
  };
  const auto sorted = [](std::vector<std::string> names) {
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    return names;
  };
  key.add("flag-debug", flags.debug ? 1 : 0)
      .add("flag-line-info", flags.line_info ? 1 : 0)
      .add("flag-max-registers", optional_number(flags.max_registers))
      .add("flag-optimization-level", optional_number(flags.optimization_level))
      .add("flag-ftz", optional_bool(flags.ftz))
      .add("flag-prec-div", optional_bool(flags.prec_div))
      .add("flag-prec-sqrt", optional_bool(flags.prec_sqrt))
      .add("flag-fma", optional_bool(flags.fma))
      .add_list("flag-kernels-used", sorted(flags.kernels_used))
      .add_list("flag-variables-used", sorted(flags.variables_used))
      .add("flag-split-compile", optional_number(flags.split_compile))
      .add("flag-verbose", flags.verbose ? 1 : 0)
      .add_list("flag-ptxas-options", flags.ptxas_options);
}

}  // namespace cujit
