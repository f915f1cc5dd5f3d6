#pragma once
// Linker: one interface, two backends (nvJitLink and the Driver API linker) that share all
// logic except the API calls. Inputs are validated when added and linked in link(); the
// info and error logs are read before any status is checked and travel in the result or
// the error.

#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "cujit/arch.hpp"
#include "cujit/build_cache.hpp"
#include "cujit/cache_key.hpp"
#include "cujit/link_options.hpp"
#include "cujit/linkable_code.hpp"
#include "cujit/program.hpp"

namespace cujit {

/// Pure: the backend for a link. An explicit request wins; then the CUJIT_LINKER
/// environment value ("nvjitlink" / "driver", passed in so this stays pure); otherwise
/// nvJitLink, the only backend that takes every format and needs no GPU.
/// Throws Error(usage) for an unknown environment value.
LinkerBackend choose_backend(std::optional<LinkerBackend> requested,
                             std::string_view environment_value);

/// The backend a Linker with `options` uses: choose_backend() with CUJIT_LINKER read only
/// when the options name no backend.
LinkerBackend backend_for(const LinkOptions& options);

/// Pure: whether `backend` accepts `format` directly (cu is accepted by both: compiled first).
bool backend_accepts(LinkerBackend backend, Format format) noexcept;

/// What a `cu` input is compiled to before it is linked with these options on this backend:
/// LTO-IR when LTO is on and the backend takes LTO-IR, otherwise PTX.
CompileTarget cu_compile_target(LinkerBackend backend, bool lto) noexcept;

/// How a `cu` input of a link with `options` is compiled to `target`: options.compile with
/// the link's architecture, the target, and link_nvrtc_options(options.flags) appended.
CompileOptions cu_compile_options(const LinkOptions& options, CompileTarget target);

/// A `cu` input compiled the way a link with these options on this backend needs it
/// (cu_compile_target, cu_compile_options), through compile_cached, keeping its name stem
/// and nrt flag. Other formats are returned unchanged.
LinkableCode compile_for_link(LinkableCode code, const LinkOptions& options,
                              LinkerBackend backend, BuildCache& cache = BuildCache::global());

/// What a link produced.
struct LinkResult {
  /// The linked cubin, carrying the lowered names of every input's compile.
  LinkableCode code;
  std::string info_log;   ///< the backend's info log
  LinkerBackend backend;  ///< the backend that linked
  /// Inputs that were dropped because an identical input (same format and bytes) came first.
  std::vector<std::string> dropped_duplicates;
  /// The architecture linked for: LinkOptions::arch, or its arch-specific variant where a
  /// link for the device took an input built for it (LinkOptions::arch_is_device).
  Arch arch;
};

/// A link through the cache (Linker::link_cached).
struct CachedLink {
  LinkResult result;                        ///< the link, built or recalled
  CacheSource source = CacheSource::built;  ///< where it came from
  std::string key;  ///< the cache key's digest
};

/// The one key recipe for links ("link"; docs/cache.md): the linker's identity (nvJitLink
/// library, or the driver for the driver backend), the backend, the architecture with its
/// suffix, whether LTO runs, the typed flags (add_link_flags), the verbatim nvJitLink
/// options in order, and each distinct input in order by format, name and content digest.
CacheKey link_key(const std::vector<LinkableCode>& inputs, const LinkOptions& options,
                  LinkerBackend backend);

/// Links inputs of any format into a cubin through either backend (see the file comment).
class Linker {
 public:
  /// `cache` holds the compiles of `cu` inputs and, for link_cached(), the link. Throws
  /// what check_link_options throws for options the chosen backend cannot honour.
  explicit Linker(LinkOptions options, BuildCache& cache = BuildCache::global());
  ~Linker();
  /// Moves the inputs and options.
  Linker(Linker&&) noexcept;
  /// Moves the inputs and options.
  Linker& operator=(Linker&&) noexcept;
  Linker(const Linker&) = delete;
  Linker& operator=(const Linker&) = delete;

  /// Adds an input. `cu` is compiled here (errors surface now, with the NVRTC log); LTO-IR
  /// into a backend or mode that cannot take it is Error(unsupported) naming the input.
  Linker& add(LinkableCode code);
  /// In-memory bytes of a given format, checked like LinkableCode::from_bytes.
  Linker& add_data(Format format, Bytes bytes, std::string name);
  /// A file, format from its extension and content.
  Linker& add_file(const std::filesystem::path& path);
  /// add() of each in order, the CUDA C++ among them compiled side by side first: NVRTC 13.0
  /// runs one compile at a time per process, so those that miss the cache compile in worker
  /// processes (compile/compile_worker.hpp; CUJIT_COMPILE_IN_PROCESS=1 keeps them here).
  Linker& add_all(std::vector<LinkableCode> codes);

  /// Links everything added so far into a cubin. Throws LinkError with both logs, the
  /// inputs, the backend and the API call on failure. The linker can link again.
  LinkResult link() const;
  /// As link(), through the cache (link_key): a hit returns the cubin, lowered names,
  /// info log and dropped duplicates the link produced.
  CachedLink link_cached() const;

  /// The backend chosen at construction (backend_for).
  LinkerBackend backend() const noexcept { return backend_; }
  /// The options given at construction.
  const LinkOptions& options() const noexcept { return options_; }
  /// The inputs added so far, `cu` ones compiled.
  const std::vector<LinkableCode>& inputs() const noexcept { return inputs_; }

 private:
  void check_target_arch(const LinkableCode& code, const char* component) const;

  LinkOptions options_;
  LinkerBackend backend_;
  BuildCache* cache_;
  std::vector<LinkableCode> inputs_;
};

/// "13.0" etc.
std::string nvjitlink_version();
/// The exact nvJitLink in use: version and the library file this process loaded.
const std::string& nvjitlink_identity();

}  // namespace cujit
