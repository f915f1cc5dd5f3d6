#pragma once
// The hermetic compile: cujit resolves every include of a compile itself and hands NVRTC
// the source and in-memory headers only, so what the cache key names is exactly what NVRTC
// compiles (docs/cache.md, "Recipes").
//
// Resolution follows NVRTC 13's own search (checked against NVRTC on a corpus by
// conformance/test_hermetic_inputs.cpp): an in-memory header whose name is the operand
// first; then, for "quoted" includes, the includer's directory (for the program itself the
// directory of its name, the working directory for a bare name); then each -I directory in
// order; `#include_next` continues after the directory the includer was found in; a
// pre-include (-include) is looked up in the working directory, then the -I directories.
// Every operand (includes, `__has_include`, CCCL's `_CCCL_HAS_INCLUDE`) is rewritten to the
// name of the in-memory header it resolved to, or to a path that cannot exist
// ("/dev/null/...") when nothing was found, so NVRTC opens no file at all. The -I and
// -include options are not passed on (their effect is in the rewritten text), nor is NVRTC's
// automatic PCH (-pch), which serves stale headers within a process.
//
// A computed include (`#include MACRO`, as Thrust's system headers) is expanded with every
// object-like definition of its macros the compile's files and -D options hold (all of them:
// conditionals are not evaluated), and each header it can name is handed to NVRTC under
// that name too. What cannot be made hermetic is compiled as given and not cached
// (`refusal`): a computed include that expands to no literal or to a quoted name found
// nowhere, a `__has_include` of a macro, a header name that cannot be written in a quoted include, a
// resolved path that collides with an in-memory header's name, a PCH file option. A compile
// that uses __TIME__, __DATE__ or __TIMESTAMP__ is hermetic but not cached (`uncacheable`).

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "compile/header_stamps.hpp"
#include "cujit/program.hpp"

namespace cujit::detail {

class HermeticInputs {
 public:
  // Reads every header the compile can reach (a file unchanged since it was last read in
  // this process, by device, inode, size, mtime and ctime, is not read again), or, when
  // header stamps (header_stamps.hpp) hold for these inputs, reads none: then the files are
  // read only if program() or options() is asked.
  static HermeticInputs resolve(const Program& program, const CompileOptions& options);

  // Empty when the compile is hermetic; else why not (the compile then runs as given).
  const std::string& refusal() const noexcept { return refusal_; }
  // Empty when the result may be stored; else why not (temporal macros).
  const std::string& uncacheable() const noexcept { return uncacheable_; }

  // The key fields: everything NVRTC will be given, headers by digest (name, SHA-256 of the
  // file's bytes, the names its operands were rewritten to). Valid when refusal() is empty.
  const std::vector<std::string>& key_fields() const noexcept { return key_fields_; }
  // The NVRTC options the compile runs with (no -I, -include, -pch).
  const std::vector<std::string>& nvrtc_options() const noexcept { return nvrtc_options_; }

  // The program and options NVRTC compiles: the rewritten source, every header in memory,
  // no include path. Built on demand (a cache hit never needs them); after a resolution
  // from header stamps, by reading the files (an Error of kind cache if they no longer
  // give the same key fields).
  Program program() const;
  CompileOptions options() const;

  // Whether the compile depends on the file system at all: a header found on disk, or an
  // operand that found nothing there (a file appearing later would change the compile).
  // A compile that does not can be remembered in memory by its inputs alone.
  bool reads_disk() const noexcept { return reads_disk_; }

  // Whether NVRTC options name files (include directories, pre-includes, PCH files): a
  // cheap test for callers that know their source includes nothing.
  static bool options_name_files(const std::vector<std::string>& options);

  // NVRTC's log with the not-found marker paths turned back into the names written.
  static std::string readable_log(std::string log);

  // Files this process has read for hermetic compiles (a test's view of the file memo).
  static std::size_t files_read() noexcept;

  // Resolutions this process answered from header stamps, reading no header
  // (header_stamps.hpp).
  static std::size_t resolutions_from_stamps() noexcept;

  struct File;  // one file of the compile (defined in the .cpp)

 private:
  static HermeticInputs resolve_reading(const Program& program, const CompileOptions& options,
                                        std::vector<HeaderProbe>* probes);
  // This resolution with its files: itself, or (answered from header stamps) the same
  // resolution made again by reading the files, once.
  const HermeticInputs& materialised() const;
  struct Deferred {
    std::mutex mutex;
    std::string source;
    std::string inputs_key;
    std::shared_ptr<const HermeticInputs> full;
  };
  std::shared_ptr<Deferred> deferred_;  // set when answered from header stamps

  std::string refusal_;
  std::string uncacheable_;
  bool reads_disk_ = false;
  std::vector<std::string> key_fields_;
  std::vector<std::string> nvrtc_options_;
  std::string program_name_;
  CompileOptions base_options_;
  // [0] is the program's source, then the caller's in-memory headers, then the files found.
  std::vector<std::shared_ptr<const File>> files_;
  // `#include MACRO` finds its header by the name the macro expands to: that name, as an
  // in-memory header with the file's content.
  std::vector<std::pair<std::string, std::shared_ptr<const File>>> aliases_;
};

}  // namespace cujit::detail
