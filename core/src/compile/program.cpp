#include "cujit/program.hpp"

#include "compile/nvrtc_api.hpp"
#include "cujit/error.hpp"
#include "support/handle_counts.hpp"
#include "support/planted_slowdown.hpp"
#include "support/trace_range.hpp"

namespace cujit {
namespace {

constexpr const char* component = "NVRTC";
using detail::nvrtc;

// Owner of an nvrtcProgram; created on the line that creates the handle. It holds the
// table it was created with, so its destructor never loads anything.
class NvrtcProgram {
 public:
  NvrtcProgram(const std::string& source, const std::string& name,
               const std::vector<Header>& headers)
      : api_(nvrtc()) {
    std::vector<const char*> header_sources, header_names;
    for (const Header& header : headers) {
      header_sources.push_back(header.content.c_str());
      header_names.push_back(header.name.c_str());
    }
    const nvrtcResult result = api_.nvrtcCreateProgram(
        &handle_, source.c_str(), name.c_str(), static_cast<int>(headers.size()),
        header_sources.data(), header_names.data());
    if (result != NVRTC_SUCCESS) {
      handle_ = nullptr;
      throw Error(ErrorKind::compile, "NVRTC (nvrtcCreateProgram)",
                  "creating the program for '" + name + "' failed: " +
                      api_.nvrtcGetErrorString(result));
    }
    detail::handle_created(detail::HandleKind::program);
  }
  ~NvrtcProgram() {
    if (handle_ != nullptr) {
      api_.nvrtcDestroyProgram(&handle_);
      detail::handle_released(detail::HandleKind::program);
    }
  }
  NvrtcProgram(const NvrtcProgram&) = delete;
  NvrtcProgram& operator=(const NvrtcProgram&) = delete;
  nvrtcProgram get() const noexcept { return handle_; }

 private:
  const detail::NvrtcApi& api_;
  nvrtcProgram handle_ = nullptr;
};

void check(nvrtcResult result, const char* api_call, const std::string& what,
           const std::string& log = {}) {
  if (result == NVRTC_SUCCESS) return;
  throw Error(ErrorKind::compile, std::string(component) + " (" + api_call + ")",
              what + ": " + nvrtc().nvrtcGetErrorString(result), log);
}

std::string program_log(nvrtcProgram program) {
  std::size_t size = 0;
  if (nvrtc().nvrtcGetProgramLogSize(program, &size) != NVRTC_SUCCESS || size <= 1) return {};
  std::string log(size, '\0');
  if (nvrtc().nvrtcGetProgramLog(program, log.data()) != NVRTC_SUCCESS) return {};
  log.resize(size - 1);  // drop the terminating NUL
  return log;
}

Bytes compiled_output(nvrtcProgram program, CompileTarget target, const std::string& name) {
  const detail::NvrtcApi& api = nvrtc();
  const auto* size_fn = &api.nvrtcGetPTXSize;
  const auto* get_fn = &api.nvrtcGetPTX;
  if (target == CompileTarget::ltoir) {
    size_fn = &api.nvrtcGetLTOIRSize;
    get_fn = &api.nvrtcGetLTOIR;
  } else if (target == CompileTarget::cubin) {
    size_fn = &api.nvrtcGetCUBINSize;
    get_fn = &api.nvrtcGetCUBIN;
  }
  std::size_t size = 0;
  check((*size_fn)(program, &size), "output size", "reading the output of '" + name + "'");
  Bytes bytes(size, '\0');
  check((*get_fn)(program, bytes.data()), "output", "reading the output of '" + name + "'");
  // PTX comes NUL-terminated; the NUL is not part of the text.
  if (target == CompileTarget::ptx && !bytes.empty() && bytes.back() == '\0') bytes.pop_back();
  return bytes;
}

}  // namespace

std::string_view to_string(CompileTarget target) noexcept {
  switch (target) {
    case CompileTarget::ptx: return "ptx";
    case CompileTarget::ltoir: return "ltoir";
    case CompileTarget::cubin: return "cubin";
  }
  return "unknown";
}

std::optional<CompileTarget> parse_compile_target(std::string_view name) noexcept {
  for (CompileTarget target : {CompileTarget::ptx, CompileTarget::ltoir, CompileTarget::cubin}) {
    if (name == to_string(target)) return target;
  }
  return std::nullopt;
}

std::vector<std::string> nvrtc_options(const CompileOptions& options) {
  std::vector<std::string> out;
  // A cubin needs a real architecture; PTX and LTO-IR a virtual one.
  out.push_back("-arch=" + (options.target == CompileTarget::cubin ? options.arch.sm()
                                                                   : options.arch.compute()));
  if (options.target == CompileTarget::ltoir) out.push_back("-dlto");
  out.push_back(options.relocatable ? "-rdc=true" : "-rdc=false");
  for (const std::string& path : options.include_paths) out.push_back("-I" + path);
  for (const std::string& option : options.options) out.push_back(option);
  return out;
}

CompileResult Program::compile(const CompileOptions& options) const {
  // A compile takes milliseconds: naming the source in the range costs nothing that shows.
  const detail::TraceRange range("cujit compile " + name_);
  const detail::PlantedDelay planted;
  NvrtcProgram program(source_, name_, options.headers);
  for (const std::string& expression : options.name_expressions) {
    check(nvrtc().nvrtcAddNameExpression(program.get(), expression.c_str()), "nvrtcAddNameExpression",
          "adding name expression '" + expression + "' to '" + name_ + "'");
  }
  std::vector<std::string> option_strings = nvrtc_options(options);
  std::vector<const char*> option_pointers;
  for (const std::string& option : option_strings) option_pointers.push_back(option.c_str());

  const nvrtcResult result = nvrtc().nvrtcCompileProgram(
      program.get(), static_cast<int>(option_pointers.size()), option_pointers.data());
  // The log is read before the status is looked at: it is wanted either way.
  std::string log = program_log(program.get());
  if (result != NVRTC_SUCCESS) {
    std::string joined;
    for (const std::string& option : option_strings) joined += " " + option;
    throw Error(ErrorKind::compile, "NVRTC (nvrtcCompileProgram)",
                "compiling '" + name_ + "' to " + std::string(to_string(options.target)) +
                    " for " + options.arch.sm() + " failed: " + nvrtc().nvrtcGetErrorString(result) +
                    " (options:" + joined + ")",
                log);
  }

  std::map<std::string, std::string> lowered;
  for (const std::string& expression : options.name_expressions) {
    const char* lowered_name = nullptr;
    check(nvrtc().nvrtcGetLoweredName(program.get(), expression.c_str(), &lowered_name),
          "nvrtcGetLoweredName", "lowering name expression '" + expression + "' of '" + name_ + "'",
          log);
    lowered.emplace(expression, lowered_name);
  }

  LinkableCode code = compiled_code(compiled_output(program.get(), options.target, name_), name_,
                                    options.target);
  return CompileResult{std::move(code).set_lowered_names(std::move(lowered)), std::move(log),
                       std::move(option_strings)};
}

LinkableCode compiled_code(Bytes bytes, const std::string& source_name, CompileTarget target) {
  const std::string stem = source_name.size() > 3 && source_name.ends_with(".cu")
                               ? source_name.substr(0, source_name.size() - 3)
                               : source_name;
  switch (target) {
    case CompileTarget::ptx: return LinkableCode::ptx(std::move(bytes), stem + ".ptx");
    case CompileTarget::ltoir: return LinkableCode::ltoir(std::move(bytes), stem + ".ltoir");
    case CompileTarget::cubin: return LinkableCode::cubin(std::move(bytes), stem + ".cubin");
  }
  throw Error(ErrorKind::usage, "compiled_code", "unknown compile target");
}

const std::string& nvrtc_identity() {
  static const std::string identity = "nvrtc: " + detail::nvrtc_library_identity();
  return identity;
}

std::string nvrtc_version() {
  static const std::string version = [] {
    try {
      int major = 0, minor = 0;
      if (nvrtc().nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) return std::string("unknown");
      return std::to_string(major) + "." + std::to_string(minor);
    } catch (const Error& error) {
      return "unavailable (" + error.message() + ")";
    }
  }();
  return version;
}

}  // namespace cujit
