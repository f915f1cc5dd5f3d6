#include "cujit/kernel_builder.hpp"

#include <algorithm>
#include <deque>
#include <map>
#include <tuple>

#include "cache/content_digest.hpp"
#include "cujit/abi.hpp"
#include "cujit/compile_cache.hpp"
#include "cujit/error.hpp"
#include "compile/compile_batch.hpp"
#include "compile/hermetic_inputs.hpp"
#include "link/compile_sources.hpp"
#include "link/failure_capture.hpp"
#include "link/link_log.hpp"
#include "support/ptx_scan.hpp"
#include "support/planted_slowdown.hpp"
#include "support/trace_range.hpp"

namespace cujit {
namespace {

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

// Inputs the log says reference an NRT function ("Undefined reference to 'NRT_x' in 'y'").
std::vector<std::string> inputs_referencing_nrt(const std::string& log) {
  std::vector<std::string> inputs;
  for (const detail::LogMention& mention : detail::mentions(log, {"Undefined reference to"})) {
    if (!nrt::is_function_name(mention.symbol) || mention.input.empty()) continue;
    if (std::find(inputs.begin(), inputs.end(), mention.input) == inputs.end()) inputs.push_back(mention.input);
  }
  return inputs;
}

bool same_code(const LinkableCode& a, const LinkableCode& b) {
  return a.format() == b.format() && a.bytes() == b.bytes();
}

// Whether `code` visibly references `symbol`. PTX is read token-exactly; ELF-based formats
// keep symbol names as plain strings, so a byte search finds every real reference (and,
// rarely, a longer name containing it: an unneeded request, never a missing one). LTO-IR
// is compressed and shows nothing: its references surface as unresolved symbols when it is
// linked, and link_cubin resolves those and links again.
bool references(const LinkableCode& code, const std::vector<std::string>& ptx_externs,
                const std::string& symbol) {
  if (code.format() == Format::ptx) {
    return std::find(ptx_externs.begin(), ptx_externs.end(), symbol) != ptx_externs.end();
  }
  if (code.format() == Format::ltoir) return false;
  return code.bytes().find(symbol) != std::string::npos;
}

// What KernelBuilder compiles CUDA C++ with: the link's compile options for `target`, and
// the builder's headers.
CompileOptions compile_options(const LinkOptions& link, std::vector<Header> headers, CompileTarget target) {
  CompileOptions compile = cu_compile_options(link, target);
  for (Header& header : headers) compile.headers.push_back(std::move(header));
  return compile;
}

}  // namespace

// Everything one build links, in order, each distinct code once.
struct KernelBuilder::LinkSet {
  std::vector<LinkableCode> codes;
  std::vector<ResolvedCall> resolved;
  std::size_t provider_requests = 0;

  // Adds unless the same bytes are already there; true when added.
  bool add(LinkableCode code) {
    const bool seen = std::any_of(codes.begin(), codes.end(),
                                  [&](const LinkableCode& kept) { return same_code(kept, code); });
    if (!seen) codes.push_back(std::move(code));
    return !seen;
  }
};

KernelBuilder::KernelBuilder(std::string kernel_name, KernelOptions options, BuildCache& cache)
    : kernel_name_(std::move(kernel_name)), options_(std::move(options)), cache_(&cache) {
  const detail::PlantedDelay planted;
  const LinkOptions& link = options_.link;
  const CompileOptions& compile = link.compile;
  memo_fields_.add("kernel", kernel_name_)
      .add("arch", link.arch.sm())
      .add("arch_is_device", link.arch_is_device ? 1 : 0)
      .add("lto", link.lto ? 1 : 0)
      .add("backend", link.backend ? std::string(to_string(*link.backend)) : "unset")
      .add("relocatable", compile.relocatable ? 1 : 0)
      .add_list("name_expressions", compile.name_expressions)
      .add_list("nvrtc_options", compile.options)
      .add_list("nvjitlink_options", link.nvjitlink_options)
      .add("nrt_override", options_.nrt ? (*options_.nrt ? 1 : 0) : -1);
  add_link_flags(memo_fields_, link.flags);
  for (const Header& header : compile.headers) {
    memo_fields_.add("header", header.name).add("header_digest", detail::content_digest(header.content));
  }
  seal_memo_fields();
}

void KernelBuilder::name_in_memo(std::string_view role, const LinkableCode& code) {
  // CUDA C++ compiled at link time whose compile depends on files (a header on disk, an
  // include that found nothing there) is keyed by those files' content in the cache's
  // tiers; its source bytes alone cannot name it here.
  if (code.format() == Format::cu && !reads_disk_) {
    const CompileOptions compile = compile_options(options_.link, headers(), cu_compile_target(LinkerBackend::nvjitlink, options_.link.lto));
    reads_disk_ = detail::HermeticInputs::resolve(Program(code.bytes(), code.name()), compile).reads_disk();
  }
  memo_fields_.add("input", role)
      .add("format", to_string(code.format()))
      .add("name", code.name())
      .add("nrt", code.nrt() ? 1 : 0)
      .add("digest", detail::content_digest(code.bytes()));
}

// A build that depends on files that can change while the process runs goes through the
// cache's tiers, whose keys cover those files, every time.
void KernelBuilder::seal_memo_fields() { memo_digest_ = reads_disk_ ? std::string() : memo_fields_.digest(); }

std::vector<Header> KernelBuilder::headers() const {
  std::vector<Header> out = nrt::headers();
  out.push_back(Header{"cujit/declarations.cuh", declarations_header(declared_)});
  return out;
}

KernelBuilder& KernelBuilder::declare(DeclaredFunction function) {
  function.validate();
  for (const DeclaredFunction& existing : declared_) {
    for (const Signature& a : existing.signatures) {
      for (const Signature& b : function.signatures) {
        if (existing.symbol(a) == function.symbol(b)) {
          throw Error(ErrorKind::usage, "KernelBuilder::declare",
                      "'" + function.name + "' with " + b.str() + " has the symbol '" +
                          function.symbol(b) + "', already declared by '" + existing.name + "'");
        }
      }
    }
  }
  memo_fields_.add("declared", function.name)
      .add("module", function.module)
      .add("abi", abi::to_string(function.abi))
      .add("abi_name", function.abi_name.value_or(""))
      .add("numba_flags", function.numba_flags.summary())
      .add("numba_uid", std::to_string(function.numba_uid));
  for (const Signature& signature : function.signatures) memo_fields_.add("signature", signature.str());
  for (const LinkableCode& item : function.link) name_in_memo("declared_link", item);
  if (function.provider) {
    // A provider with a version is named by it (any object with that name and version
    // gives the same code); one without, by its object's identity.
    memo_fields_.add("provider", function.provider->name())
        .add("provider_memory_name", function.provider->memory_name());
  }
  seal_memo_fields();
  declared_.push_back(std::move(function));
  return *this;
}

// CUDA C++ compiled through the one cached compile, with the kernel's compile options and
// the headers the builder provides ("cujit/nrt.cuh", "cujit/declarations.cuh").
LinkableCode KernelBuilder::compile(const LinkableCode& code, CompileTarget target) const {
  return compile_cached(Program(code.bytes(), code.name()), compile_options(options_.link, headers(), target), *cache_)
      .result.code.set_nrt(code.nrt());
}

KernelBuilder& KernelBuilder::source(LinkableCode code) {
  const detail::PlantedDelay planted;
  // The kernel's own PTX is what NRT detection scans.
  if (code.format() == Format::cu) code = compile(code, CompileTarget::ptx);
  if (code.format() != Format::ptx && code.format() != Format::ltoir) {
    throw Error(ErrorKind::usage, "KernelBuilder::source",
                "'" + code.name() + "' is " + std::string(to_string(code.format())) +
                    "; a kernel's own code is PTX, LTO-IR or CUDA C++ (add other formats "
                    "with link())");
  }
  name_in_memo("own", code);
  seal_memo_fields();
  own_.push_back(std::move(code));
  return *this;
}

KernelBuilder& KernelBuilder::link(LinkableCode code) {
  const detail::PlantedDelay planted;
  name_in_memo("external", code);
  seal_memo_fields();
  external_.push_back(std::move(code));
  return *this;
}

nrt::Decision KernelBuilder::decision_for(const LinkSet& set, bool globally_enabled) const {
  // With NRT off for this kernel nothing else decides: its PTX is not scanned.
  const bool on = options_.nrt.value_or(globally_enabled);
  const bool own_references = on && std::any_of(own_.begin(), own_.end(), [](const LinkableCode& c) {
    return c.format() == Format::ptx && nrt::references_nrt(c.bytes());
  });
  // The whole transitive link set counts: own code, explicit items, declared functions'
  // items and provider items that were actually pulled in.
  const bool any_flagged = on && std::any_of(set.codes.begin(), set.codes.end(),
                                             [](const LinkableCode& c) { return c.nrt(); });
  return nrt::decide(globally_enabled, options_.nrt, own_references, any_flagged);
}

nrt::Decision KernelBuilder::nrt_decision() const {
  return decision_for(resolve(Linker(options_.link, *cache_).backend()), nrt::enabled());
}

// Resolution of declared functions for one build: scans what is in the link set, adds
// explicit items and provider code for every declared symbol referenced, and rescans what
// it added, to a fixed point. Symbols that scanning cannot see (LTO-IR) are handed in by
// resolve_symbols() from a link's unresolved-symbol report.
class KernelBuilder::Resolver {
 public:
  Resolver(const KernelBuilder& builder, LinkerBackend backend)
      : builder_(builder), backend_(backend), lto_(builder.options_.link.lto) {
    for (const DeclaredFunction& function : builder.declared_) {
      for (const Signature& signature : function.signatures) {
        by_symbol_.emplace(function.symbol(signature), std::make_pair(&function, signature));
      }
    }
    for (const LinkableCode& code : builder.own_) add(code);
    // External CUDA C++ compiles side by side before anything is scanned; what the cache
    // holds is taken first, so that only misses start threads (link/compile_sources.hpp).
    std::vector<LinkableCode> external = builder.external_;
    const CompileTarget target = cu_compile_target(backend_, lto_);
    const CompileOptions options = compile_options(builder.options_.link, builder.headers(), target);
    detail::compile_sources(
        external,
        [&](const LinkableCode& code) -> std::optional<LinkableCode> {
          std::optional<CachedCompile> hit = detail::find_compiled(Program(code.bytes(), code.name()), options, *builder.cache_);
          if (!hit) return std::nullopt;
          return std::move(hit->result.code).set_nrt(code.nrt());
        },
        [&](const LinkableCode& code) { return builder.compile(code, target); });
    for (LinkableCode& code : external) add(std::move(code));
    run();
  }

  // Resolves those of `symbols` that are declared and not resolved yet; true if any was.
  bool resolve_symbols(const std::vector<std::string>& symbols) {
    bool any = false;
    for (const std::string& symbol : symbols) {
      const auto entry = by_symbol_.find(symbol);
      if (entry == by_symbol_.end() || is_done(symbol)) continue;
      resolve(symbol, entry->second.first, entry->second.second);
      any = true;
    }
    run();
    return any;
  }

  LinkSet set;

 private:
  bool is_done(const std::string& symbol) const {
    return std::find(done_.begin(), done_.end(), symbol) != done_.end();
  }

  void add(LinkableCode code) {
    // CUDA C++ is compiled first: what it references is only known from its output.
    if (code.format() == Format::cu) code = builder_.compile(code, cu_compile_target(backend_, lto_));
    if (set.add(std::move(code))) to_scan_.push_back(set.codes.size() - 1);
  }

  void run() {
    while (!to_scan_.empty()) {
      // Scanning only finds declared symbols: with all of them resolved (or none declared)
      // there is nothing left to find.
      if (done_.size() == by_symbol_.size()) {
        to_scan_.clear();
        return;
      }
      const LinkableCode scanned = set.codes[to_scan_.front()];
      to_scan_.pop_front();
      const std::vector<std::string> externs =
          scanned.format() == Format::ptx ? detail::extern_functions(scanned.bytes())
                                          : std::vector<std::string>{};
      for (const auto& [symbol, entry] : by_symbol_) {
        if (!is_done(symbol) && references(scanned, externs, symbol)) {
          resolve(symbol, entry.first, entry.second);
        }
      }
    }
  }

  void resolve(const std::string& symbol, const DeclaredFunction* function, const Signature& signature) {
    done_.push_back(symbol);
    set.resolved.push_back(ResolvedCall{symbol, function->name, signature,
                                        function->provider ? function->provider->name() : ""});
    for (const LinkableCode& item : function->link) add(item);
    if (!function->provider) return;
    const auto key = std::make_pair(function->provider.get(), signature);
    auto found = asked_.find(key);
    if (found == asked_.end()) found = asked_.emplace(key, ask(*function, signature)).first;
    for (const LinkableCode& item : *found->second) add(item);
  }

  // The provider's code, remembered across builds (remembered_code_for): a request counts
  // only when the provider is actually called.
  std::shared_ptr<const std::vector<LinkableCode>> ask(const DeclaredFunction& function,
                                                       const Signature& signature) {
    const std::string component = "LinkProvider '" + function.provider->name() + "'";
    const std::string what = "supplying '" + function.name + "' for " + signature.str() + " failed: ";
    try {
      bool asked = false;
      auto items = remembered_code_for(*function.provider, signature, *builder_.cache_, &asked);
      if (asked) ++set.provider_requests;
      return items;
    } catch (const Error& error) {
      error.rethrow_with_context(component, what);
    } catch (const std::exception& error) {
      throw Error(ErrorKind::link, component, what + error.what());
    }
  }

  const KernelBuilder& builder_;
  LinkerBackend backend_;
  bool lto_;
  std::map<std::string, std::pair<const DeclaredFunction*, Signature>> by_symbol_;
  // One request per distinct (provider, signature) in this build.
  std::map<std::pair<const LinkProvider*, Signature>, std::shared_ptr<const std::vector<LinkableCode>>> asked_;
  std::vector<std::string> done_;
  std::deque<std::size_t> to_scan_;
};

KernelBuilder::LinkSet KernelBuilder::resolve(LinkerBackend backend) const {
  return Resolver(*this, backend).set;
}

// The inputs to blame for unresolved NRT symbols. nvJitLink names the module LTO produced
// "ltoPtx": that stands for the unflagged LTO-IR inputs. With no name at all, every
// unflagged input that is not the kernel's own code is a candidate.
std::vector<std::string> KernelBuilder::culprits_of(const std::string& log,
                                                    const LinkSet& set) const {
  const auto own = [&](const LinkableCode& code) {
    return std::any_of(own_.begin(), own_.end(),
                       [&](const LinkableCode& o) { return o.name() == code.name(); });
  };
  std::vector<std::string> culprits;
  // First the inputs whose code for this architecture visibly leaves NRT functions
  // undefined (every format but LTO-IR, nrt::scan): linkers name inputs in their own ways
  // (a fatbin's entry, an archive's member), or not at all.
  for (const LinkableCode& code : set.codes) {
    if (nrt::scan(code, options_.link.arch).uses_nrt()) culprits.push_back(code.name());
  }
  const bool scanned = !culprits.empty();
  for (const std::string& input : inputs_referencing_nrt(log)) {
    if (input != "ltoPtx") {
      if (!scanned) culprits.push_back(input);
      continue;
    }
    for (const LinkableCode& code : set.codes) {
      const bool listed = std::find(culprits.begin(), culprits.end(), code.name()) != culprits.end();
      if (!code.nrt() && !listed && carries_ltoir(code.format(), code.bytes())) culprits.push_back(code.name());
    }
  }
  if (culprits.empty()) {
    for (const LinkableCode& code : set.codes) {
      if (!code.nrt() && !own(code)) culprits.push_back(code.name());
    }
  }
  return culprits;
}

std::shared_ptr<const LinkedKernel> KernelBuilder::linked(CacheSource& from) const {
  // A literal: a memo hit pays no formatting for its range.
  const detail::TraceRange range("cujit kernel build");
  if (own_.empty()) {
    throw Error(ErrorKind::usage, "KernelBuilder::link_cubin",
                "kernel '" + kernel_name_ + "' has no source; add its own code with source()");
  }
  // The settings a build depends on are read here, once: the memo's key and the build
  // itself see the same values even if another thread changes them meanwhile.
  const Settings settings{backend_for(options_.link), nrt::enabled()};
  std::string pre_key;
  if (!memo_digest_.empty()) {
    pre_key.reserve(memo_digest_.size() + 16);
    pre_key += memo_digest_;
    pre_key += settings.nrt_enabled ? "+nrt:" : "-nrt:";
    pre_key += to_string(settings.backend);
    if (std::shared_ptr<const LinkedKernel> memorized = cache_->recall<LinkedKernel>(pre_key)) {
      from = CacheSource::memo;
      // The planted slowdown repeats the whole hit (support/planted_slowdown.hpp).
      if (detail::planted_repeat()) return linked(from);
      return memorized;
    }
  }
  const detail::PlantedDelay planted;
  auto fresh = std::make_shared<const LinkedKernel>(link_fresh(settings));
  from = fresh->source;
  if (!pre_key.empty()) {
    cache_->memorize(pre_key, fresh, fresh->link.code.bytes().size() + fresh->link.info_log.size());
  }
  return fresh;
}

std::shared_ptr<const LinkedKernel> KernelBuilder::link_shared() const {
  CacheSource from = CacheSource::built;
  return linked(from);
}

LinkedKernel KernelBuilder::link_cubin() const {
  CacheSource from = CacheSource::built;
  LinkedKernel copy = *linked(from);
  copy.source = from;
  return copy;
}

// With CUJIT_CAPTURE_DIR set, a failed build is saved as a scenario (link/failure_capture.hpp);
// the links it retries are not.
LinkedKernel KernelBuilder::link_fresh(const Settings& settings) const try {
  const detail::CaptureSuppressed retried_links;
  Resolver resolver(*this, settings.backend);
  for (;;) {
    try {
      return link_set(resolver.set, settings);
    } catch (const LinkError& error) {
      // Declared functions referenced from code scanning cannot read (LTO-IR): resolve
      // what the link reports missing and link again; stop when nothing new is declared.
      if (!resolver.resolve_symbols(error.unresolved_symbols())) throw;
    }
  }
} catch (const Error& error) {
  detail::capture_failure_of(
      [&] {
        detail::FailedBuild failed{"kernel", kernel_name_, &options_.link, settings.backend, options_.nrt, {}, {}, {}};
        detail::not_captured_options(options_.link, failed.not_captured);
        for (const LinkableCode& code : own_) failed.sources.push_back(&code);
        for (const LinkableCode& code : external_) failed.inputs.push_back(&code);
        for (const DeclaredFunction& function : declared_) {
          for (const LinkableCode& code : function.link) failed.inputs.push_back(&code);
          if (function.provider) failed.not_captured.push_back("link provider " + function.provider->name());
        }
        return failed;
      },
      error);
  throw;
}

LinkedKernel KernelBuilder::link_set(LinkSet& set, const Settings& settings) const {
  const LinkerBackend backend = settings.backend;
  const nrt::Decision decision = decision_for(set, settings.nrt_enabled);
  std::optional<LinkableCode> runtime;
  if (decision.link) {
    runtime = nrt::library(options_.link.arch, cu_compile_target(backend, options_.link.lto),
                           options_.link.compile.options, *cache_);
  }
  try {
    LinkOptions link_options = options_.link;
    link_options.backend = backend;  // as chosen when the build started, not chosen again
    Linker linker(link_options, *cache_);
    for (const LinkableCode& code : set.codes) linker.add(code);
    if (runtime) linker.add(*runtime);
    CachedLink link = linker.link_cached();
    return LinkedKernel{kernel_name_, decision, std::move(link.result), set.resolved,
                        set.provider_requests, link.source, std::move(link.key)};
  } catch (const LinkError& error) {
    std::vector<std::string> missing;
    for (const std::string& symbol : error.unresolved_symbols()) {
      if (nrt::is_function_name(symbol)) missing.push_back(symbol);
    }
    if (missing.empty() || decision.link) throw;
    std::string fix = "mark the input that uses NRT with LinkableCode::set_nrt(true)";
    if (decision.reason == nrt::Reason::disabled) {
      fix += " and enable NRT (cujit::nrt::set_enabled(true), CUJIT_ENABLE_NRT=1, or "
             "KernelOptions::nrt = true for this kernel)";
    }
    throw Error(ErrorKind::nrt, "KernelBuilder (" + error.component() + ")",
                "kernel '" + kernel_name_ + "': unresolved NRT symbol(s) " + join(missing) +
                    " referenced by " + join(culprits_of(error.log(), set)) +
                    "; NRT was not linked because " + std::string(nrt::to_string(decision.reason)) +
                    ". To fix: " + fix,
                error.log());
  }
}

BuiltKernel KernelBuilder::build() const {
  const std::shared_ptr<const LinkedKernel> linked = link_shared();
  std::shared_ptr<Module> module = Module::shared(linked->link.code, linked->key);
  Kernel kernel = module->kernel(kernel_name_);
  return BuiltKernel{std::move(module), std::move(kernel), linked->nrt};
}

}  // namespace cujit
