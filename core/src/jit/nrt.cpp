#include "cujit/nrt.hpp"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdlib>
#include <map>
#include <mutex>
#include <tuple>

#include "cujit/environment.hpp"
#include "cujit/error.hpp"
#include "cujit/compile_cache.hpp"
#include "cujit/module.hpp"
#include "code/device_references.hpp"
#include "support/ptx_scan.hpp"

namespace cujit::embedded {
extern const std::string_view nrt_header;
extern const std::string_view nrt_functions;
extern const std::string_view nrt_source;
}  // namespace cujit::embedded

namespace cujit::nrt {
namespace {

constexpr std::string_view names[] = {
#define CUJIT_NRT_FUNCTION(ret, name, params) #name,
#include "cujit/nrt_functions.def"
#undef CUJIT_NRT_FUNCTION
};

constexpr std::string_view common_prefix = "NRT_";
constexpr bool all_have_common_prefix() {
  for (std::string_view name : names) {
    if (name.substr(0, common_prefix.size()) != common_prefix) return false;
  }
  return true;
}
static_assert(all_have_common_prefix(), "referenced_functions() looks for the prefix every NRT function has");

// -1: not read from the environment yet; then 0 or 1. A bad CUJIT_ENABLE_NRT is a usage
// error each time it is read, until set_enabled() decides.
std::atomic<int>& global_switch() {
  static std::atomic<int> state{-1};
  return state;
}

std::atomic<std::uint64_t> compilations{0};

constexpr const char* stats_symbol = "cujit_nrt_stats";
constexpr const char* stats_enabled_symbol = "cujit_nrt_stats_enabled";

GlobalSymbol require_global(const Module& module, const char* symbol) {
  const auto found = module.global(symbol);
  if (!found) {
    throw Error(ErrorKind::nrt, "nrt statistics",
                "module '" + module.name() + "' has no '" + symbol +
                    "': NRT was not linked into it");
  }
  return *found;
}

}  // namespace

std::span<const std::string_view> function_names() noexcept { return names; }

bool is_function_name(std::string_view name) noexcept {
  return std::find(std::begin(names), std::end(names), name) != std::end(names);
}

std::vector<std::string> referenced_functions(std::string_view ptx) {
  // Every NRT function's name holds the prefix: PTX without it references none, and is not
  // tokenized (tens of microseconds for a few kilobytes).
  if (ptx.find(common_prefix) == std::string_view::npos) return {};
  std::vector<std::string> found = detail::extern_functions(ptx);
  std::erase_if(found, [](const std::string& name) { return !is_function_name(name); });
  return found;
}

bool references_nrt(std::string_view ptx) { return !referenced_functions(ptx).empty(); }

InputScan scan(const LinkableCode& code, const Arch& target) {
  detail::DeviceReferences found = detail::device_references(code.format(), code.bytes(), target);
  std::erase_if(found.symbols, [](const std::string& name) { return !is_function_name(name); });
  return InputScan{std::move(found.symbols), std::move(found.unread)};
}

std::string_view to_string(Reason reason) noexcept {
  switch (reason) {
    case Reason::disabled: return "NRT is disabled";
    case Reason::not_used: return "nothing uses NRT";
    case Reason::own_ptx: return "the kernel's own PTX references NRT";
    case Reason::flagged_input: return "an input is marked nrt = true";
  }
  return "unknown";
}

Decision decide(bool globally_enabled, std::optional<bool> kernel_override,
                bool own_ptx_references_nrt, bool any_input_flagged) noexcept {
  if (!kernel_override.value_or(globally_enabled)) return {false, Reason::disabled};
  if (own_ptx_references_nrt) return {true, Reason::own_ptx};
  if (any_input_flagged) return {true, Reason::flagged_input};
  return {false, Reason::not_used};
}

bool enabled() {
  const int state = global_switch().load();
  if (state >= 0) return state != 0;
  const bool on = environment::flag("CUJIT_ENABLE_NRT", false);
  int unread = -1;
  global_switch().compare_exchange_strong(unread, on ? 1 : 0);
  return global_switch().load() != 0;
}
void set_enabled(bool on) noexcept { global_switch().store(on ? 1 : 0); }

std::vector<Header> headers() {
  return {Header{"cujit/nrt.cuh", std::string(embedded::nrt_header)},
          Header{"cujit/nrt_functions.def", std::string(embedded::nrt_functions)}};
}

std::string_view header_source() noexcept { return embedded::nrt_header; }

LinkableCode library(const Arch& arch, CompileTarget target,
                     const std::vector<std::string>& options, BuildCache& cache) {
  CompileOptions compile;
  compile.arch = arch;
  compile.target = target;
  compile.headers = headers();
  compile.options = options;
  CachedCompile compiled =
      compile_cached(Program(std::string(embedded::nrt_source), "cujit_nrt.cu"), compile, cache);
  if (compiled.source == CacheSource::built) ++compilations;
  return std::move(compiled.result.code);
}

std::uint64_t library_compilations() noexcept { return compilations.load(); }

Stats read_stats(const Module& module) {
  const GlobalSymbol symbol = require_global(module, stats_symbol);
  unsigned long long counters[4] = {};
  copy_to_host(counters, symbol.ptr, sizeof counters);
  return Stats{counters[0], counters[1], counters[2], counters[3]};
}

void set_stats_enabled(const Module& module, bool on) {
  const GlobalSymbol symbol = require_global(module, stats_enabled_symbol);
  const int value = on ? 1 : 0;
  copy_to_device(symbol.ptr, &value, sizeof value);
}

void reset_stats(const Module& module) {
  const GlobalSymbol symbol = require_global(module, stats_symbol);
  const unsigned long long zeros[4] = {};
  copy_to_device(symbol.ptr, zeros, sizeof zeros);
}

}  // namespace cujit::nrt
