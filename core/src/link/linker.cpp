#include "cujit/linker.hpp"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>

#include "cache/content_digest.hpp"
#include "code/linkable_code_access.hpp"
#include "cujit/compile_cache.hpp"
#include "cujit/environment.hpp"
#include "cujit/error.hpp"
#include "driver/driver_api.hpp"
#include "link/defined_symbols.hpp"
#include "link/failure_capture.hpp"
#include "link/link_worker.hpp"
#include "link/link_log.hpp"
#include "compile/compile_batch.hpp"
#include "link/compile_sources.hpp"
#include "link/link_session.hpp"
#include "link/nvjitlink_api.hpp"
#include "link/prototype_check.hpp"
#include "support/library_identity.hpp"
#include "support/ptx_scan.hpp"
#include "support/record.hpp"
#include "support/planted_slowdown.hpp"
#include "support/trace_range.hpp"
#include "cache/library_content.hpp"

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

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

// The inputs that declare `symbol` (.extern .func in PTX): nvJitLink names only where it
// met the definition.
std::string declaring_inputs(const std::vector<const LinkableCode*>& inputs, const std::string& symbol) {
  std::string out;
  for (const LinkableCode* code : inputs) {
    if (code->format() != Format::ptx) continue;
    const std::vector<std::string> declared = detail::extern_functions(code->bytes());
    if (std::find(declared.begin(), declared.end(), symbol) == declared.end()) continue;
    out += (out.empty() ? "" : ", ") + describe_input(*code);
  }
  return out;
}

[[noreturn]] void throw_link_error(const detail::LinkSession& session,
                                   const detail::StepStatus& step, const std::string& what,
                                   const std::string& error_log, const std::string& info_log,
                                   const std::vector<const LinkableCode*>& inputs) {
  std::vector<std::string> unresolved = detail::unresolved_symbols(error_log);
  std::vector<std::string> duplicates = detail::duplicate_symbols(error_log);
  std::string message = what + " failed: " + step.status;
  for (const detail::PrototypeMismatch& mismatch : detail::prototype_mismatches(error_log)) {
    const std::string declared = declaring_inputs(inputs, mismatch.symbol);
    message += "; the prototype of '" + mismatch.symbol + "'" +
               (declared.empty() ? std::string() : " declared in " + declared) +
               " does not match its definition in '" +
               (mismatch.defined_in.empty() ? mismatch.input : mismatch.defined_in) + "'";
  }
  if (step.input_too_new) {
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
// has run in it. A lone PTX input has nothing to be compared with; inputs linked before are
// not scanned again (detail::remembered_definitions).
template <class What>
void check_duplicate_definitions(const std::vector<const LinkableCode*>& inputs, const What& what) {
  std::vector<const LinkableCode*> readable;
  for (const LinkableCode* code : inputs) {
    if (detail::definitions_readable(code->format())) readable.push_back(code);
  }
  // One PTX input names each of its definitions once; one cubin's symbol table can repeat
  // a name, and is still read.
  if (readable.empty() || (readable.size() == 1 && readable.front()->format() == Format::ptx)) return;
  std::map<std::string_view, const LinkableCode*> first;
  std::vector<std::string> duplicates;
  std::string detail;
  std::vector<std::shared_ptr<const std::vector<std::string>>> held;  // keeps the views valid
  for (const LinkableCode* code : readable) {
    auto names = detail::remembered_definitions(*code);
    if (!names) continue;
    for (const std::string& name : *names) {
      const auto [at, inserted] = first.emplace(name, code);
      if (inserted) continue;
      duplicates.push_back(name);
      detail += (detail.empty() ? "" : "; ") + std::string("'") + name + "' in " + describe_input(*code) +
                " and " + describe_input(*at->second);
    }
    held.push_back(std::move(names));
  }
  if (duplicates.empty()) return;
  throw LinkError("Linker (definitions check, before the backend)",
                  what() + " failed: symbol(s) defined more than once: " + detail, {}, {},
                  std::move(duplicates));
}

// A PTX declaration whose PTX definition has another prototype, refused before either
// backend (link/prototype_check.hpp says why), naming both inputs and both prototypes.
template <class What>
void check_prototypes(const std::vector<const LinkableCode*>& inputs, const What& what) {
  const std::vector<detail::PrototypeConflict> conflicts = detail::prototype_conflicts(inputs);
  if (conflicts.empty()) return;
  std::string detail;
  for (const detail::PrototypeConflict& conflict : conflicts) {
    detail += (detail.empty() ? "" : "; ") + std::string("'") + conflict.symbol + "' is declared in " +
              describe_input(*conflict.declaring) + " as " + detail::to_string(conflict.declared) +
              " but defined in " + describe_input(*conflict.defining) + " as " +
              detail::to_string(conflict.defined);
    const std::string cause = detail::likely_cause(conflict.declared, conflict.defined);
    if (!cause.empty()) detail += " (likely cause: " + cause + ")";
  }
  throw LinkError("Linker (prototype check, before the backend)",
                  what() + " failed: a declaration does not match its definition's prototype: " + detail,
                  {}, {}, {});
}

std::unique_ptr<detail::LinkSession> open_session(LinkerBackend backend, const LinkOptions& options,
                                                  const Arch& arch, bool lto) {
  if (backend == LinkerBackend::driver) return detail::open_driver_session(arch, options.flags);
  return detail::open_nvjitlink_session(arch, lto, nvjitlink_option_strings(options, lto));
}

// The architecture a link uses: the one asked for, or for a link for the device
// (LinkOptions::arch_is_device) its arch-specific variant where a PTX input's .target is
// that variant (link_arch_for_device).
Arch linked_arch(const LinkOptions& options, const std::vector<const LinkableCode*>& inputs) {
  if (!options.arch_is_device) return options.arch;
  std::vector<Arch> built;
  for (const LinkableCode* code : inputs) {
    if (code->format() != Format::ptx) continue;
    const auto declared = ptx_target(code->bytes());
    if (!declared) continue;
    try {
      built.push_back(Arch::parse(*declared));
    } catch (const Error&) {
      // an unusual .target is left to the backend to judge
    }
  }
  return link_arch_for_device(options.arch, built);
}

// A step the backend reports as done, with an error in its log, failed: nvJitLink 13.0
// answers NVJITLINK_SUCCESS to a link where LTO-IR and PTX or a cubin define the same
// symbol, writing "error   : Multiple definition of ..." into the error log.
detail::StepStatus judged_by_log(detail::StepStatus step, const std::string& error_log) {
  if (step.ok && detail::has_error_line(error_log)) {
    step.ok = false;
    step.status = "errors in the error log of a step that reported success";
  }
  return step;
}

// The NVTX range of one link, named by its backend: literals, so no formatting per link.
const char* link_range_name(LinkerBackend backend) noexcept {
  return backend == LinkerBackend::driver ? "cujit link driver" : "cujit link nvjitlink";
}

}  // namespace

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
std::string environment_backend() {
  return environment::choice("CUJIT_LINKER", {"nvjitlink", "driver"}, "");
}
}  // namespace

LinkerBackend backend_for(const LinkOptions& options) {
  // The environment is read only when no backend was asked for: a bad CUJIT_LINKER cannot
  // fail a link that names its backend.
  return choose_backend(options.backend, options.backend ? "" : environment_backend());
}

Linker::Linker(LinkOptions options, BuildCache& cache)
    : options_(std::move(options)), backend_(backend_for(options_)), cache_(&cache) {
  check_link_options(options_, backend_);
}

Linker::~Linker() = default;
Linker::Linker(Linker&&) noexcept = default;
Linker& Linker::operator=(Linker&&) noexcept = default;

// Code built for one architecture refused for another, the same way on both backends: the
// driver linker alone would accept sm_90a PTX for sm_90, and nvJitLink says only "bad
// input" for a cubin of another architecture.
void Linker::check_target_arch(const LinkableCode& code, const char* component) const {
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
    // A link for the device takes its arch-specific variant (linked_arch), which it runs.
    if (options_.arch_is_device && ptx_arch == link_arch_for_device(target, {ptx_arch})) return;
    throw Error(ErrorKind::link, component,
                describe_input(code) + ": PTX with .target '" + *declared +
                    "' cannot be compiled for architecture '" + target.sm() + "'");
  }
}

CompileOptions cu_compile_options(const LinkOptions& options, CompileTarget target) {
  CompileOptions compile = options.compile;
  compile.arch = options.arch;
  compile.target = target;
  for (std::string& option : link_nvrtc_options(options.flags)) compile.options.push_back(std::move(option));
  return compile;
}

LinkableCode compile_for_link(LinkableCode code, const LinkOptions& options,
                              LinkerBackend backend, BuildCache& cache) {
  if (code.format() != Format::cu) return code;
  const CompileOptions compile = cu_compile_options(options, cu_compile_target(backend, options.lto));
  const bool nrt = code.nrt();
  LinkableCode compiled =
      compile_cached(Program(code.bytes(), code.name()), compile, cache).result.code;
  return std::move(compiled).set_nrt(nrt);
}

Linker& Linker::add(LinkableCode code) {
  code = compile_for_link(std::move(code), options_, backend_, *cache_);
  const char* component = backend_ == LinkerBackend::driver ? "Linker::add (driver)" : "Linker::add (nvjitlink)";
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

Linker& Linker::add_all(std::vector<LinkableCode> codes) {
  // What the cache holds is taken first, so that only misses start threads.
  const CompileOptions compile = cu_compile_options(options_, cu_compile_target(backend_, options_.lto));
  detail::compile_sources(
      codes,
      [&](const LinkableCode& code) -> std::optional<LinkableCode> {
        std::optional<CachedCompile> hit = detail::find_compiled(Program(code.bytes(), code.name()), compile, *cache_);
        if (!hit) return std::nullopt;
        return std::move(hit->result.code).set_nrt(code.nrt());
      },
      [&](const LinkableCode& code) { return compile_for_link(code, options_, backend_, *cache_); });
  for (LinkableCode& code : codes) add(std::move(code));
  return *this;
}

Linker& Linker::add_data(Format format, Bytes bytes, std::string name) {
  return add(LinkableCode::from_bytes(format, std::move(bytes), std::move(name)));
}

Linker& Linker::add_file(const std::filesystem::path& path) {
  return add(LinkableCode::from_path(path));
}

namespace {

// Identical inputs (same format and bytes) are linked once: a second copy would only
// produce duplicate-definition errors.
std::vector<const LinkableCode*> distinct_inputs(const std::vector<LinkableCode>& inputs,
                                                 std::vector<std::string>* dropped) {
  std::vector<const LinkableCode*> unique;
  for (const LinkableCode& code : inputs) {
    const bool seen = std::any_of(unique.begin(), unique.end(), [&](const LinkableCode* kept) {
      return kept->format() == code.format() && kept->bytes() == code.bytes();
    });
    if (!seen) {
      unique.push_back(&code);
    } else if (dropped != nullptr) {
      dropped->push_back(code.name());
    }
  }
  return unique;
}

std::map<std::string, std::string> lowered_names_of(const std::vector<const LinkableCode*>& inputs) {
  std::map<std::string, std::string> names;
  for (const LinkableCode* code : inputs) names.insert(code->lowered_names().begin(), code->lowered_names().end());
  return names;
}

std::string encode_link(const LinkResult& result) {
  detail::Record record{{"cubin", result.code.bytes()}, {"name", result.code.name()},
                        {"info_log", result.info_log},
                        {"dropped", std::to_string(result.dropped_duplicates.size())},
                        {"arch", result.arch.sm()}};
  for (std::size_t i = 0; i < result.dropped_duplicates.size(); ++i) {
    record["dropped." + std::to_string(i)] = result.dropped_duplicates[i];
  }
  for (const auto& [expression, lowered] : result.code.lowered_names()) record["lowered:" + expression] = lowered;
  return detail::encode_record(record);
}

std::optional<LinkResult> decode_link(std::string_view payload, LinkerBackend backend) {
  auto record = detail::decode_record(payload);
  if (!record || record->count("cubin") == 0 || record->count("name") == 0 ||
      record->count("dropped") == 0 || record->count("arch") == 0) {
    return std::nullopt;
  }
  Arch arch;
  try {
    arch = Arch::parse(record->at("arch"));
  } catch (const Error&) {
    return std::nullopt;  // not an architecture: a miss
  }
  std::map<std::string, std::string> lowered;
  std::vector<std::string> dropped;
  for (const auto& [field, value] : *record) {
    if (field.rfind("lowered:", 0) == 0) lowered.emplace(field.substr(8), value);
    if (field.rfind("dropped.", 0) == 0) dropped.push_back(value);
  }
  if (std::to_string(dropped.size()) != record->at("dropped")) return std::nullopt;
  try {
    LinkableCode code = LinkableCode::cubin(std::move(record->at("cubin")), record->at("name"));
    return LinkResult{std::move(code).set_lowered_names(std::move(lowered)),
                      record->count("info_log") ? record->at("info_log") : std::string{}, backend,
                      std::move(dropped), arch};
  } catch (const Error&) {
    return std::nullopt;  // not a cubin: a miss
  }
}

}  // namespace

CacheKey link_key(const std::vector<LinkableCode>& inputs, const LinkOptions& options,
                  LinkerBackend backend) {
  const std::vector<const LinkableCode*> unique = distinct_inputs(inputs, nullptr);
  CacheKey key("link");
  key.add("backend", to_string(backend));
  key.add("linker", detail::content_identity(backend == LinkerBackend::driver ? detail::driver_identity()
                                                                             : nvjitlink_identity()));
  key.add("arch", linked_arch(options, unique).sm());
  key.add("lto", options.lto && std::any_of(unique.begin(), unique.end(), [](const auto* c) {
                   return carries_ltoir(c->format(), c->bytes());
                 }) ? 1 : 0);
  add_link_flags(key, options.flags);
  // The driver backend refuses verbatim nvJitLink options (check_link_options).
  key.add_list("nvjitlink-options", backend == LinkerBackend::nvjitlink ? options.nvjitlink_options
                                                                        : std::vector<std::string>{});
  for (const LinkableCode* code : unique) {
    // A tuple named by the input, its format and bytes its content: a miss explanation says
    // "input min_i32.ptx: content changed" rather than which hash replaced which.
    key.add_list("input", {code->name(), std::string(to_string(code->format())) + ":" + detail::content_digest(code->bytes())}, 2);
  }
  return key;
}

// With CUJIT_CAPTURE_DIR set, a failed link is saved as a scenario (link/failure_capture.hpp).
LinkResult Linker::link() const try {
  const detail::TraceRange range(link_range_name(backend_));
  const detail::PlantedDelay planted;
  std::vector<std::string> dropped;
  const std::vector<const LinkableCode*> unique = distinct_inputs(inputs_, &dropped);
  const Arch arch = linked_arch(options_, unique);
  // Built only when a message needs it: describing an unnamed input hashes its bytes.
  const auto what = [&] { return "linking " + describe_inputs(unique) + " for " + arch.sm(); };
  if (unique.empty()) {
    throw Error(ErrorKind::usage, "Linker::link", what() + ": nothing was added");
  }
  if (detail::link_isolated(options_, backend_)) {
    detail::WorkerLimits limits;
    limits.timeout = options_.isolation.timeout;
    limits.memory_limit_bytes = options_.isolation.memory_limit_bytes;
    detail::IsolatedLink isolated =
        detail::link_in_worker(inputs_, options_, {detail::link_worker_path()}, limits, what());
    LinkableCode code = detail::LinkableCodeAccess::linker_output(std::move(isolated.cubin), std::move(isolated.name));
    return LinkResult{std::move(code).set_lowered_names(lowered_names_of(unique)), std::move(isolated.info_log),
                      backend_, std::move(isolated.dropped_duplicates), isolated.arch};
  }
  check_duplicate_definitions(unique, what);
  check_prototypes(unique, what);
  // nvJitLink fails an LTO link that has no LTO-IR (NO_MODULE_IN_PROGRAM): LTO is asked
  // for only when there is IR to optimise.
  const bool lto = options_.lto && std::any_of(unique.begin(), unique.end(), [](const auto* c) {
                     return carries_ltoir(c->format(), c->bytes());
                   });
  auto session = open_session(backend_, options_, arch, lto);
  for (const LinkableCode* code : unique) {
    // The error log accumulates: what an add writes under a success status is judged after
    // completion, with the whole log, so a successful add reads no log.
    const detail::StepStatus step = session->add(*code);
    if (!step.ok) {
      throw_link_error(*session, step, "adding " + describe_input(*code) + " for " + arch.sm(),
                       session->error_log(), session->info_log(), unique);
    }
  }
  const detail::StepStatus completed = session->complete();
  const std::string error_log = session->error_log();
  const std::string info_log = session->info_log();
  detail::StepStatus step = judged_by_log(completed, error_log);
  if (!step.ok) throw_link_error(*session, step, what(), error_log, info_log, unique);
  Bytes image;
  step = session->cubin(image);
  if (!step.ok) {
    throw_link_error(*session, step, what() + " (reading the linked cubin)", error_log, info_log, unique);
  }
  const std::string& first = unique.front()->name();
  const std::string stem = first.substr(0, first.rfind('.') == std::string::npos ? first.size() : first.rfind('.'));
  LinkableCode code = detail::LinkableCodeAccess::linker_output(
      std::move(image), (stem.empty() ? "linked" : stem) + ".linked.cubin");
  return LinkResult{std::move(code).set_lowered_names(lowered_names_of(unique)), info_log, backend_,
                    std::move(dropped), arch};
} catch (const Error& error) {
  detail::capture_failure_of([&] { return detail::failed_link(*this); }, error);
  throw;
}

CachedLink Linker::link_cached() const {
  const CacheKey key = link_key(inputs_, options_, backend_);
  CacheSource source = CacheSource::built;
  std::string payload = cache_->get_or_build(key, [&] { return encode_link(link()); }, &source);
  auto result = decode_link(payload, backend_);
  if (!result) {
    // An entry whose checksum holds but whose record does not decode: dropped everywhere
    // and linked afresh in the key's flight, stored over it and counted as a miss and a
    // repair (it would fail every later build otherwise).
    payload = cache_->rebuild(key, "the cached link does not decode", [&] { return encode_link(link()); }, &source);
    result = decode_link(payload, backend_);
    if (!result) return CachedLink{link(), CacheSource::built, key.digest()};
  }
  return CachedLink{std::move(*result), source, key.digest()};
}

const std::string& nvjitlink_identity() {
  // The file, not the version it reports: naming it needs no load, so a cache hit never
  // maps nvJitLink (and the file pins the exact release, which major.minor does not).
  static const std::string identity = "nvjitlink: " + detail::nvjitlink_library_identity();
  return identity;
}

std::string nvjitlink_version() { return detail::nvjitlink_version_string(); }

}  // namespace cujit
