#include "cujit/kernel_builder.hpp"

#include <algorithm>
#include <regex>

#include "cujit/error.hpp"

namespace cujit {
namespace {

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

// Inputs the log says reference an NRT symbol ("Undefined reference to 'NRT_x' in 'y'").
std::vector<std::string> inputs_referencing_nrt(const std::string& log) {
  static const std::regex pattern(R"(Undefined reference to '(NRT_\w+)' in '([^']+)')");
  std::vector<std::string> inputs;
  for (std::sregex_iterator it(log.begin(), log.end(), pattern), end; it != end; ++it) {
    const std::string input = (*it)[2].str();
    if (std::find(inputs.begin(), inputs.end(), input) == inputs.end()) inputs.push_back(input);
  }
  return inputs;
}

}  // namespace

KernelBuilder::KernelBuilder(std::string kernel_name, KernelOptions options)
    : kernel_name_(std::move(kernel_name)), options_(std::move(options)) {}

// The inputs to blame for unresolved NRT symbols. nvJitLink names the module LTO produced
// "ltoPtx": that stands for the unflagged LTO-IR inputs. With no name at all, every
// unflagged external input is a candidate.
std::vector<std::string> KernelBuilder::culprits_of(const std::string& log) const {
  std::vector<std::string> culprits;
  auto add_unflagged = [&](bool only_ltoir) {
    for (const auto* list : {&own_, &external_}) {
      for (const LinkableCode& code : *list) {
        if (code.nrt() || (only_ltoir && !carries_ltoir(code.format(), code.bytes()))) continue;
        if (!only_ltoir && list == &own_) continue;
        culprits.push_back(code.name());
      }
    }
  };
  for (const std::string& input : inputs_referencing_nrt(log)) {
    if (input == "ltoPtx") {
      add_unflagged(/*only_ltoir=*/true);
    } else {
      culprits.push_back(input);
    }
  }
  if (culprits.empty()) add_unflagged(/*only_ltoir=*/false);
  return culprits;
}

LinkOptions KernelBuilder::link_options() const {
  LinkOptions link;
  link.arch = options_.arch;
  link.lto = options_.lto;
  link.backend = options_.backend;
  link.include_paths = options_.include_paths;
  link.headers = nrt::headers();
  link.compile_options = options_.compile_options;
  return link;
}

KernelBuilder& KernelBuilder::source(LinkableCode code) {
  if (code.format() == Format::cu) {
    CompileOptions compile;
    compile.arch = options_.arch;
    compile.target = CompileTarget::ptx;  // the kernel's own PTX is what detection scans
    compile.include_paths = options_.include_paths;
    compile.headers = nrt::headers();
    compile.options = options_.compile_options;
    const bool flagged = code.nrt();
    code = Program(code.bytes(), code.name()).compile(compile).code;
    code.set_nrt(flagged);
  }
  if (code.format() != Format::ptx) {
    throw Error(ErrorKind::usage, "KernelBuilder::source",
                "'" + code.name() + "' is " + std::string(to_string(code.format())) +
                    "; a kernel's own code is PTX or CUDA C++ (add other formats with link())");
  }
  own_.push_back(std::move(code));
  return *this;
}

KernelBuilder& KernelBuilder::link(LinkableCode code) {
  external_.push_back(std::move(code));
  return *this;
}

nrt::Decision KernelBuilder::nrt_decision() const {
  const bool own_references = std::any_of(own_.begin(), own_.end(), [](const LinkableCode& c) {
    return nrt::references_nrt(c.bytes());
  });
  const auto flagged = [](const LinkableCode& c) { return c.nrt(); };
  const bool any_flagged = std::any_of(own_.begin(), own_.end(), flagged) ||
                           std::any_of(external_.begin(), external_.end(), flagged);
  return nrt::decide(nrt::enabled(), options_.nrt, own_references, any_flagged);
}

LinkedKernel KernelBuilder::link_cubin() const {
  if (own_.empty()) {
    throw Error(ErrorKind::usage, "KernelBuilder::link_cubin",
                "kernel '" + kernel_name_ + "' has no source; add its own code with source()");
  }
  const nrt::Decision decision = nrt_decision();
  Linker linker(link_options());
  for (const LinkableCode& code : own_) linker.add(code);
  for (const LinkableCode& code : external_) linker.add(code);
  if (decision.link) {
    const CompileTarget target = cu_compile_target(linker.backend(), options_.lto);
    linker.add(nrt::library(options_.arch, target, options_.compile_options));
  }
  try {
    return LinkedKernel{kernel_name_, decision, linker.link()};
  } catch (const LinkError& error) {
    std::vector<std::string> missing;
    for (const std::string& symbol : error.unresolved_symbols()) {
      if (nrt::is_function_name(symbol)) missing.push_back(symbol);
    }
    if (missing.empty() || decision.link) throw;
    std::vector<std::string> culprits = culprits_of(error.log());
    std::string fix = "mark the input that uses NRT with LinkableCode::set_nrt(true)";
    if (decision.reason == nrt::Reason::disabled) {
      fix += " and enable NRT (cujit::nrt::set_enabled(true), CUJIT_ENABLE_NRT=1, or "
             "KernelOptions::nrt = true for this kernel)";
    }
    throw Error(ErrorKind::nrt, "KernelBuilder (" + error.component() + ")",
                "kernel '" + kernel_name_ + "': unresolved NRT symbol(s) " + join(missing) +
                    " referenced by " + join(culprits) + "; NRT was not linked because " +
                    std::string(nrt::to_string(decision.reason)) + ". To fix: " + fix,
                error.log());
  }
}

BuiltKernel KernelBuilder::build() const {
  LinkedKernel linked = link_cubin();
  std::shared_ptr<Module> module = Module::load(linked.link.cubin, kernel_name_);
  Kernel kernel = module->kernel(kernel_name_);
  return BuiltKernel{std::move(module), std::move(kernel), linked.nrt};
}

}  // namespace cujit
