#include "cujit/linker.hpp"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <regex>
#include <set>

#include "cujit/cache_key.hpp"
#include "cujit/error.hpp"
#include "detail/defined_symbols.hpp"
#include "detail/link_session.hpp"

namespace cujit {
namespace {

// An input as messages name it; an unnamed in-memory input is described by what it is,
// so an error still identifies it.
std::string describe_input(const LinkableCode& code) {
  if (code.name().empty()) {
    return "unnamed " + std::string(to_string(code.format())) + " input (" +
           std::to_string(code.bytes().size()) + " bytes, sha256 " +
           sha256_hex(code.bytes()).substr(0, 12) + ")";
  }
  return "'" + code.name() + "' (" + std::string(to_string(code.format())) + ")";
}

std::string describe_inputs(const std::vector<const LinkableCode*>& inputs) {
  std::string out;
  for (const LinkableCode* code : inputs) {
    if (!out.empty()) out += ", ";
    out += describe_input(*code);
  }
  return out.empty() ? std::string("no inputs") : out;
}

// Symbols named by a log line matching `pattern` (first capture group), each once.
std::vector<std::string> symbols_matching(const std::string& log, const std::regex& pattern) {
  std::set<std::string> found;
  for (std::sregex_iterator it(log.begin(), log.end(), pattern), end; it != end; ++it) {
    found.insert((*it)[1].str());
  }
  return {found.begin(), found.end()};
}

std::vector<std::string> unresolved_symbols(const std::string& log) {
  // nvJitLink: "Undefined reference to 'f' in 'x.ptx'"; ptxas (LTO, driver):
  // "Unresolved extern function 'f'".
  static const std::regex pattern(
      R"((?:Undefined reference to|Unresolved extern (?:function|variable)) '([^']+)')");
  return symbols_matching(log, pattern);
}

std::vector<std::string> duplicate_symbols(const std::string& log) {
  static const std::regex pattern(
      R"((?:Multiple definition of|Linking globals named) '([^']+)')");
  return symbols_matching(log, pattern);
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

[[noreturn]] void throw_link_error(const detail::LinkSession& session,
                                   const detail::StepStatus& step, const std::string& what,
                                   const std::string& error_log, const std::string& info_log) {
  std::vector<std::string> unresolved = unresolved_symbols(error_log);
  std::vector<std::string> duplicates = duplicate_symbols(error_log);
  std::string message = what + " failed: " + step.status;
  if (step.status.find("OUTDATED_LIBRARY") != std::string::npos) {
    message += "; the input was made by a newer toolkit than this nvJitLink (" + nvjitlink_version() +
               ") can read";
  }
  if (!unresolved.empty()) message += "; unresolved symbol(s): " + join(unresolved);
  if (!duplicates.empty()) message += "; symbol(s) defined more than once: " + join(duplicates);
  std::string log = error_log;
  if (!info_log.empty()) log += (log.empty() ? "" : "\n") + std::string("info log:\n") + info_log;
  throw LinkError(session.backend_name() + " (" + step.api_call + ")", std::move(message),
                  std::move(log), std::move(unresolved), std::move(duplicates));
}

// The same symbol defined by two inputs, found before any backend sees them where the
// inputs can be read (PTX, cubin). Both backends then fail the same way, and nvJitLink 13.0
// never reaches its multiple-definition path, which crashes the process once an LTO link
// has run in it.
void check_duplicate_definitions(const std::vector<const LinkableCode*>& inputs, const std::string& what) {
  std::map<std::string, const LinkableCode*> first;
  std::vector<std::string> duplicates;
  std::string detail;
  for (const LinkableCode* code : inputs) {
    const auto names = detail::defined_symbols(*code);
    if (!names) continue;
    for (const std::string& name : *names) {
      const auto [at, inserted] = first.emplace(name, code);
      if (inserted) continue;
      duplicates.push_back(name);
      detail += (detail.empty() ? "" : "; ") + std::string("'") + name + "' in " + describe_input(*code) +
                " and " + describe_input(*at->second);
    }
  }
  if (duplicates.empty()) return;
  throw LinkError("Linker (definitions check, before the backend)",
                  what + " failed: symbol(s) defined more than once: " + detail, {}, {},
                  std::move(duplicates));
}

std::unique_ptr<detail::LinkSession> open_session(LinkerBackend backend,
                                                  const LinkOptions& options, bool lto) {
  if (backend == LinkerBackend::driver) return detail::open_driver_session(options.arch);
  return detail::open_nvjitlink_session(options.arch, lto, options.nvjitlink_options);
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

LinkerBackend choose_backend(std::optional<LinkerBackend> requested,
                             std::string_view environment_value) {
  if (requested) return *requested;
  if (environment_value.empty()) return LinkerBackend::nvjitlink;
  if (const auto parsed = parse_linker_backend(environment_value)) return *parsed;
  throw Error(ErrorKind::usage, "choose_backend",
              "CUJIT_LINKER='" + std::string(environment_value) +
                  "' is not a linker backend; expected 'nvjitlink' or 'driver'");
}

bool backend_accepts(LinkerBackend backend, Format format) noexcept {
  if (format == Format::cu) return true;
  return backend == LinkerBackend::driver ? traits(format).driver_input >= 0
                                          : traits(format).nvjitlink_input >= 0;
}

CompileTarget cu_compile_target(LinkerBackend backend, bool lto) noexcept {
  return lto && backend_accepts(backend, Format::ltoir) ? CompileTarget::ltoir
                                                        : CompileTarget::ptx;
}

namespace {
const char* environment_backend() {
  const char* value = std::getenv("CUJIT_LINKER");
  return value != nullptr ? value : "";
}
}  // namespace

Linker::Linker(LinkOptions options)
    : options_(std::move(options)),
      backend_(choose_backend(options_.backend, environment_backend())) {}

Linker::~Linker() = default;
Linker::Linker(Linker&&) noexcept = default;
Linker& Linker::operator=(Linker&&) noexcept = default;

// Code built for one architecture refused for another, the same way on both backends: the
// driver linker alone would accept sm_90a PTX for sm_90, and nvJitLink says only "bad
// input" for a cubin of another architecture.
void Linker::check_target_arch(const LinkableCode& code, const std::string& component) const {
  const Arch& target = options_.arch;
  if (code.format() == Format::cubin) {
    const auto sm = cubin_sm_number(code.bytes());
    if (!sm || sass_runs_on(Arch(*sm / 10, *sm % 10), target)) return;
    throw Error(ErrorKind::link, component,
                describe_input(code) + " holds SASS for sm_" + std::to_string(*sm) +
                    ", which cannot run on " + target.sm() +
                    "; rebuild it for that architecture or link PTX / LTO-IR instead");
  }
  if (code.format() == Format::ptx) {
    const auto declared = ptx_target(code.bytes());
    if (!declared) return;
    Arch ptx_arch;
    try {
      ptx_arch = Arch::parse(*declared);
    } catch (const Error&) {
      return;  // an unusual .target is left to the backend to judge
    }
    if (ptx_compiles_for(ptx_arch, target)) return;
    throw Error(ErrorKind::link, component,
                describe_input(code) + ": PTX with .target '" + *declared +
                    "' cannot be compiled for architecture '" + target.sm() + "'");
  }
}

LinkableCode compile_for_link(LinkableCode code, const LinkOptions& options,
                              LinkerBackend backend) {
  if (code.format() != Format::cu) return code;
  CompileOptions compile;
  compile.arch = options.arch;
  compile.target = cu_compile_target(backend, options.lto);
  compile.include_paths = options.include_paths;
  compile.headers = options.headers;
  compile.options = options.compile_options;
  const bool nrt = code.nrt();
  LinkableCode compiled = Program(code.bytes(), code.name()).compile(compile).code;
  return std::move(compiled).set_nrt(nrt);
}

Linker& Linker::add(LinkableCode code) {
  code = compile_for_link(std::move(code), options_, backend_);
  const std::string component = "Linker::add (" + std::string(to_string(backend_)) + ")";
  if (backend_ == LinkerBackend::driver && carries_ltoir(code.format(), code.bytes()) &&
      (code.format() == Format::ltoir || needs_lto(code.format(), code.bytes()))) {
    throw Error(ErrorKind::unsupported, component,
                describe_input(code) +
                    " holds only LTO-IR, which the driver linker (cuLink*) does not take; "
                    "link it with the nvjitlink backend and lto = true");
  }
  if (backend_ == LinkerBackend::nvjitlink && !options_.lto &&
      needs_lto(code.format(), code.bytes())) {
    throw Error(ErrorKind::unsupported, component,
                describe_input(code) +
                    " holds only LTO-IR, which links only with LTO: set LinkOptions::lto = true");
  }
  check_target_arch(code, component);
  inputs_.push_back(std::move(code));
  return *this;
}

Linker& Linker::add_data(Format format, Bytes bytes, std::string name) {
  return add(LinkableCode::from_bytes(format, std::move(bytes), std::move(name)));
}

Linker& Linker::add_file(const std::filesystem::path& path) {
  return add(LinkableCode::from_path(path));
}

LinkResult Linker::link() const {
  LinkResult result;
  result.backend = backend_;
  // Identical inputs (same format and bytes) are linked once: a second copy would only
  // produce duplicate-definition errors.
  std::vector<const LinkableCode*> unique;
  for (const LinkableCode& code : inputs_) {
    const bool seen = std::any_of(unique.begin(), unique.end(), [&](const LinkableCode* kept) {
      return kept->format() == code.format() && kept->bytes() == code.bytes();
    });
    if (seen) {
      result.dropped_duplicates.push_back(code.name());
    } else {
      unique.push_back(&code);
    }
  }
  const std::string what = "linking " + describe_inputs(unique) + " for " + options_.arch.sm();
  if (unique.empty()) {
    throw Error(ErrorKind::usage, "Linker::link", what + ": nothing was added");
  }
  check_duplicate_definitions(unique, what);
  // nvJitLink fails an LTO link that has no LTO-IR (NO_MODULE_IN_PROGRAM): LTO is asked
  // for only when there is IR to optimise.
  const bool lto = options_.lto && std::any_of(unique.begin(), unique.end(), [](const auto* c) {
                     return carries_ltoir(c->format(), c->bytes());
                   });
  auto session = open_session(backend_, options_, lto);
  for (const LinkableCode* code : unique) {
    const detail::StepStatus step = session->add(*code);
    // Logs first, status second: the log is wanted whatever the status.
    const std::string error_log = session->error_log();
    if (!step.ok) {
      throw_link_error(*session, step, "adding " + describe_input(*code) + " for " +
                                           options_.arch.sm(),
                       error_log, session->info_log());
    }
  }
  const detail::StepStatus step = session->complete();
  const std::string error_log = session->error_log();
  result.info_log = session->info_log();
  if (!step.ok) throw_link_error(*session, step, what, error_log, result.info_log);
  result.cubin = session->cubin();
  return result;
}

std::string nvjitlink_version() { return detail::nvjitlink_version_string(); }

}  // namespace cujit
