#pragma once
// Program: NVRTC compilation of CUDA C++ to PTX, LTO-IR or cubin. The log is kept on
// success and failure; lowered names are returned for every name expression.

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cujit/arch.hpp"
#include "cujit/linkable_code.hpp"

namespace cujit {

/// What NVRTC produces: PTX, LTO-IR (-dlto) or a cubin.
enum class CompileTarget { ptx, ltoir, cubin };

/// "ptx" / "ltoir" / "cubin".
std::string_view to_string(CompileTarget target) noexcept;
/// "ptx" / "ltoir" / "cubin"; nullopt otherwise.
std::optional<CompileTarget> parse_compile_target(std::string_view name) noexcept;

/// An in-memory header the source can include.
struct Header {
  std::string name;     ///< as written in `#include "..."`
  std::string content;  ///< its text
};

/// How Program::compile() compiles; each field goes into the NVRTC option list
/// (nvrtc_options()) and so into compile cache keys.
struct CompileOptions {
  Arch arch;                                  ///< -arch (sm_ or compute_ by target)
  CompileTarget target = CompileTarget::ptx;  ///< what to produce
  /// Separate compilation (-rdc=true): needed whenever the code calls or exports device
  /// functions across inputs, which is what linking is for; on by default.
  bool relocatable = true;
  std::vector<std::string> include_paths;     ///< -I directories, in order
  std::vector<Header> headers;                ///< in-memory headers, in order
  /// Expressions ("kernel<int>") whose lowered names the result reports.
  std::vector<std::string> name_expressions;
  /// Extra NVRTC options, passed through verbatim after cujit's own.
  std::vector<std::string> options;
};

/// What a compile produced.
struct CompileResult {
  /// The output; its lowered_names() map each name expression to its lowered symbol.
  LinkableCode code;
  std::string log;  ///< NVRTC's log (warnings), kept on success
  /// The NVRTC options used, for diagnostics.
  std::vector<std::string> options;
};

/// A CUDA C++ source and its name, compiled with NVRTC.
class Program {
 public:
  /// The source and the name used in NVRTC's messages and cujit's errors.
  Program(std::string source, std::string name)
      : source_(std::move(source)), name_(std::move(name)) {}

  /// Compiles the source with `options`.
  /// \throws Error (compile) with the NVRTC log when the source does not compile;
  /// Error (unsupported) when NVRTC cannot be loaded.
  CompileResult compile(const CompileOptions& options) const;

  /// The CUDA C++ source.
  const std::string& source() const noexcept { return source_; }
  /// The program's name.
  const std::string& name() const noexcept { return name_; }

 private:
  std::string source_;
  std::string name_;
};

/// The NVRTC option list compile() uses for these options (pure; tested without a GPU).
std::vector<std::string> nvrtc_options(const CompileOptions& options);

/// The output of compiling `source_name` to `target`, named after it ("x.cu" -> "x.ptx",
/// "x.ltoir", "x.cubin"): the one place that maps a compile target to a format and a name.
LinkableCode compiled_code(Bytes bytes, const std::string& source_name, CompileTarget target);

/// NVRTC is loaded on first use, not at start: from CUJIT_NVRTC_LIBRARY (an absolute path)
/// when set, else from the toolkit cujit was built with. A library that cannot be loaded is
/// Error(unsupported) from "NVRTC (dlopen)" or "NVRTC (dlsym)" naming the path and the
/// loader's reason, thrown by every call that needs NVRTC.

/// "13.0" etc., of the NVRTC loaded (loads it); "unavailable (<reason>)" when it cannot be.
std::string nvrtc_version();
/// The exact NVRTC in use: "nvrtc: " and the path, size and time of the library file this
/// process loads and of the builtins libraries beside it (what cache keys name; see
/// support/library_identity). Named without loading the library, so a cache hit never maps
/// it; throws the loading error when the library cannot be found.
const std::string& nvrtc_identity();

}  // namespace cujit
