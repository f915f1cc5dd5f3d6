#pragma once
// Failure capture: with CUJIT_CAPTURE_DIR set, a failing link (Linker::link, and so
// link_cached) or kernel build (KernelBuilder) writes its inputs, options and error as a
// scenario file (docs/scenario-format.md) into a new directory of its own there, so that
// `cujit repro <that file>` gives the same verdict: a user's failure becomes a maintainer's
// repro without hand work. Capturing never throws and never changes the error that is
// thrown; a capture that cannot be written is skipped with one line on stderr.

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "cujit/error.hpp"
#include "cujit/linkable_code.hpp"
#include "cujit/linker.hpp"

namespace cujit::detail {

/// The environment variable naming the directory captures go into.
inline constexpr const char* capture_dir_variable = "CUJIT_CAPTURE_DIR";
/// At most this many captures per process: a program failing in a loop fills no disk.
inline constexpr int max_captures_per_process = 16;
/// Inputs larger than this in total are not captured.
inline constexpr std::uint64_t max_capture_bytes = std::uint64_t{256} << 20;

/// A link or build that failed, as a scenario describes it.
struct FailedBuild {
  /// "linker" or "kernel" (the scenario builders).
  std::string builder;
  /// The scenario's name; for a kernel build the kernel's name, which the runner builds.
  std::string name;
  const LinkOptions* options = nullptr;
  LinkerBackend backend = LinkerBackend::nvjitlink;
  /// The kernel's NRT override.
  std::optional<bool> nrt;
  /// Inputs in link order; `sources` are the kernel's own code.
  std::vector<const LinkableCode*> inputs;
  std::vector<const LinkableCode*> sources;
  /// What the scenario cannot carry (link providers, verbatim options), said in its text.
  std::vector<std::string> not_captured;
};

/// Writes `build` and `error` as a scenario into a new directory under CUJIT_CAPTURE_DIR
/// (0700; files 0600, created exclusively, never through a symlink) and returns the
/// scenario file's path. Does nothing and returns nullopt when the variable is unset or
/// empty, inside a CaptureSuppressed scope, past max_captures_per_process, or when the
/// directory cannot be used. Never throws.
std::optional<std::filesystem::path> capture_failure(const FailedBuild& build,
                                                     const Error& error) noexcept;

/// Whether a failure would be captured now: the variable set, not suppressed. Never throws.
bool capture_enabled() noexcept;

/// capture_failure(describe(), error) when capture_enabled(), where anything `describe`
/// throws only skips the capture: for the catch handlers of the Linker and KernelBuilder,
/// which must rethrow their own error untouched. Never throws.
template <class Describe>
std::optional<std::filesystem::path> capture_failure_of(Describe&& describe,
                                                        const Error& error) noexcept {
  if (!capture_enabled()) return std::nullopt;
  try {
    return capture_failure(describe(), error);
  } catch (...) {
    return std::nullopt;
  }
}

/// A failed Linker::link as a "linker" scenario: its inputs, options and backend.
FailedBuild failed_link(const Linker& linker);

/// Adds to `out` what of `options` a scenario file cannot carry (verbatim nvJitLink and
/// NVRTC options, kernels_used, variables_used, split_compile, ptxas_options).
void not_captured_options(const LinkOptions& options, std::vector<std::string>& out);

/// While one exists on this thread, capture_failure does nothing: a KernelBuilder's inner
/// links can fail and be retried, and its own failure is the one to capture.
class CaptureSuppressed {
 public:
  CaptureSuppressed() noexcept;
  ~CaptureSuppressed();
  CaptureSuppressed(const CaptureSuppressed&) = delete;
  CaptureSuppressed& operator=(const CaptureSuppressed&) = delete;
};

}  // namespace cujit::detail
