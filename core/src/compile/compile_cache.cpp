#include "cujit/compile_cache.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>
#include <filesystem>

#include "compile/compile_batch.hpp"
#include "compile/compile_worker.hpp"
#include "compile/header_manifest.hpp"
#include "cujit/error.hpp"
#include "support/file_io.hpp"
#include "support/record.hpp"
#include "support/temp_dir.hpp"

namespace cujit {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::system_clock;

constexpr std::uint64_t trace_limit = std::uint64_t{256} << 20;
constexpr const char* lowered_prefix = "lowered:";

// Long spelling -> short spelling.
constexpr std::array<std::pair<std::string_view, std::string_view>, 12> spellings{{
    {"--gpu-architecture", "-arch"},
    {"--relocatable-device-code", "-rdc"},
    {"--device-debug", "-G"},
    {"--generate-line-info", "-lineinfo"},
    {"--define-macro", "-D"},
    {"--undefine-macro", "-U"},
    {"--include-path", "-I"},
    {"--pre-include", "-include"},
    {"--dlink-time-opt", "-dlto"},
    {"--use_fast_math", "-use_fast_math"},
    {"--std", "-std"},
    {"--extra-device-vectorization", "-extra-device-vectorization"},
}};

// The documented list (compile_cache.hpp): options that change how NVRTC runs, never what
// it produces.
bool output_neutral(std::string_view option) {
  for (std::string_view name : {"-pch", "--pch", "-pch-dir", "--pch-dir", "-pch-verbose",
                                "--pch-verbose", "-pch-messages", "--pch-messages", "-time",
                                "--time", "-fdevice-time-trace", "--fdevice-time-trace",
                                "-no-cache", "--no-cache"}) {
    if (option == name || (option.size() > name.size() && option.substr(0, name.size()) == name &&
                           option[name.size()] == '=')) {
      return true;
    }
  }
  return false;
}

// Options NVRTC accepts with their value as the next token.
bool takes_separate_value(std::string_view option) {
  return option == "-D" || option == "-U" || option == "-I" || option == "-arch" ||
         option == "-include" || option == "-std";
}

// Short spellings that take their value without '=' ("-DX", "-I/dir").
bool value_attached(std::string_view short_form) {
  return short_form == "-D" || short_form == "-U" || short_form == "-I";
}

std::string respell(const std::string& option) {
  for (const auto& [long_form, short_form] : spellings) {
    if (option == long_form) return std::string(short_form);
    if (option.size() > long_form.size() && option.compare(0, long_form.size(), long_form) == 0 &&
        option[long_form.size()] == '=') {
      return std::string(short_form) + (value_attached(short_form) ? "" : "=") +
             option.substr(long_form.size() + 1);
    }
  }
  return option;
}

// -I directories, in order, from a final NVRTC option list.
std::vector<std::string> include_dirs(const std::vector<std::string>& options) {
  std::vector<std::string> dirs;
  for (const std::string& option : key_options(options)) {
    if (option.rfind("-I", 0) == 0) dirs.push_back(option.substr(2));
  }
  return dirs;
}

bool any_relative_path(const std::vector<std::string>& options) {
  for (const std::string& option : key_options(options)) {
    for (std::string_view prefix : {"-I", "-include="}) {
      if (option.rfind(prefix, 0) == 0 && option.size() > prefix.size() &&
          option[prefix.size()] != '/') {
        return true;
      }
    }
  }
  return false;
}

// The operand of every #include directive in `text` (what follows "#include", spaces
// skipped, to the end of the line), read without regex.
std::vector<std::string_view> include_operands(std::string_view text) {
  std::vector<std::string_view> operands;
  for (std::size_t at = text.find('#'); at != std::string_view::npos; at = text.find('#', at + 1)) {
    std::size_t word = text.find_first_not_of(" \t", at + 1);
    if (word == std::string_view::npos || text.compare(word, 7, "include") != 0) continue;
    const std::size_t operand = text.find_first_not_of(" \t", word + 7);
    if (operand == std::string_view::npos) break;
    const std::size_t end = std::min(text.find('\n', operand), text.size());
    operands.push_back(text.substr(operand, end - operand));
  }
  return operands;
}

// Whether the compile can open a file: through an include path or pre-include, or an
// #include that does not name an in-memory header ("<x>" / "\"x\"" exactly). Without
// one, NVRTC has no directory to search and reads nothing but its built-ins, so the
// compile needs no header manifest (and no time trace, which costs NVRTC 13.0 a leak of
// about 12 KB per compile).
bool may_read_files(const Program& program, const CompileOptions& options) {
  for (const std::string& option : key_options(nvrtc_options(options))) {
    if (option.rfind("-I", 0) == 0 || option.rfind("-include", 0) == 0) return true;
  }
  const auto names_in_memory = [&](std::string_view operand) {
    if (operand.size() < 2) return false;
    const char close = operand.front() == '<' ? '>' : operand.front() == '"' ? '"' : '\0';
    const std::size_t end = close == '\0' ? std::string_view::npos : operand.find(close, 1);
    if (end == std::string_view::npos) return false;
    const std::string_view name = operand.substr(1, end - 1);
    return std::any_of(options.headers.begin(), options.headers.end(),
                       [&](const Header& header) { return header.name == name; });
  };
  std::vector<std::string_view> texts{program.source()};
  for (const Header& header : options.headers) texts.push_back(header.content);
  for (std::string_view text : texts) {
    for (std::string_view operand : include_operands(text)) {
      if (!names_in_memory(operand)) return true;
    }
  }
  return false;
}

bool has_own_trace(const std::vector<std::string>& options) {
  for (const std::string& option : options) {
    if (option.find("device-time-trace") != std::string::npos) return true;
  }
  return false;
}

// Both recipes take the compile key's digest, hashed once per lookup: the compile key holds
// the whole source (a large one, NRT's, costs tens of microseconds a hash).
CacheKey manifest_key(const std::string& compile_digest) {
  CacheKey key("nvrtc-header-manifest");
  key.add("compile", compile_digest);
  return key;
}

CacheKey result_key(const std::string& compile_digest, const std::vector<std::string>& header_fields) {
  CacheKey key("nvrtc-compile-result");
  key.add("compile", compile_digest);
  key.add_list("headers", header_fields);
  return key;
}

std::string encode(const CompileResult& result, const std::string& key) {
  detail::Record record{{"code", result.code.bytes()}, {"log", result.log}, {"key", key}};
  for (const auto& [expression, lowered] : result.code.lowered_names()) {
    record[lowered_prefix + expression] = lowered;
  }
  return detail::encode_record(record);
}

std::optional<CachedCompile> decode(std::string_view payload, const Program& program,
                                    const CompileOptions& options, CacheSource source) {
  auto record = detail::decode_record(payload);
  if (!record || record->count("code") == 0) return std::nullopt;
  std::map<std::string, std::string> lowered;
  for (const auto& [field, value] : *record) {
    if (field.rfind(lowered_prefix, 0) == 0) lowered.emplace(field.substr(std::string_view(lowered_prefix).size()), value);
  }
  try {
    LinkableCode code = compiled_code(std::move(record->at("code")), program.name(), options.target);
    CompileResult result{std::move(code).set_lowered_names(std::move(lowered)),
                         record->count("log") ? record->at("log") : std::string{},
                         nvrtc_options(options)};
    return CachedCompile{std::move(result), source, record->count("key") ? record->at("key") : ""};
  } catch (const Error&) {
    return std::nullopt;  // bytes that are not the target's format: a miss
  }
}

// The result stored for the headers as they are now, if one was (the header manifest under
// the compile key says which headers, by content, the result's key holds). An entry that
// does not decode is dropped. `count` as BuildCache::find counts.
std::optional<CachedCompile> stored_result(const Program& program, const CompileOptions& options, BuildCache& cache,
                                           const std::string& compile_digest, CacheSource& from,
                                           BuildCache::Count count) {
  const CacheKey manifest_at = manifest_key(compile_digest);
  const auto stored = cache.find(manifest_at, nullptr, BuildCache::Count::nothing);
  if (!stored) return std::nullopt;
  const auto manifest = detail::HeaderManifest::decode(*stored);
  if (!manifest) {
    cache.drop(manifest_at, "the header manifest of '" + program.name() + "' does not decode");
    return std::nullopt;
  }
  const auto fields = manifest->current_key_fields();
  if (!fields) return std::nullopt;
  const CacheKey result_at = result_key(compile_digest, *fields);
  const auto payload = cache.find(result_at, &from, count);
  if (!payload) return std::nullopt;
  auto hit = decode(*payload, program, options, from);
  if (!hit) cache.drop(result_at, "the compiled result of '" + program.name() + "' does not decode");
  return hit;
}

}  // namespace

std::vector<std::string> key_options(const std::vector<std::string>& options) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < options.size(); ++i) {
    std::string option = respell(options[i]);
    if (takes_separate_value(option) && i + 1 < options.size()) {
      option += (value_attached(option) ? "" : "=") + options[++i];
    }
    if (option == "-rdc") option = "-rdc=true";
    if (!output_neutral(option)) out.push_back(std::move(option));
  }
  return out;
}

CacheKey compile_key(const Program& program, const CompileOptions& options) {
  const std::vector<std::string> final_options = nvrtc_options(options);
  CacheKey key("nvrtc-compile");
  key.add("nvrtc", nvrtc_identity());
  key.add("name", program.name());
  key.add("source", program.source());
  key.add("target", to_string(options.target));
  key.add_list("options", key_options(final_options));
  std::vector<std::string> headers;
  for (const Header& header : options.headers) {
    headers.push_back(header.name);
    headers.push_back(header.content);
  }
  key.add_list("in-memory-headers", headers);
  key.add_list("name-expressions", options.name_expressions);
  if (any_relative_path(final_options)) {
    std::error_code ec;
    key.add("working-directory", fs::current_path(ec).string());
  }
  return key;
}

CachedCompile compile_cached(const Program& program, const CompileOptions& options, BuildCache& cache) {
  if (cache.config().mode == CacheMode::off) {
    std::optional<CompileResult> made;
    cache.run_once({}, [&](CacheSource&) {  // no flight with the cache off: counts the build
      made = detail::compile_program(program, options);
      return std::string();
    });
    return CachedCompile{std::move(*made), CacheSource::built, {}};
  }
  const std::string compile_digest = compile_key(program, options).digest();
  const CacheKey manifest_at = manifest_key(compile_digest);
  // The first look counts hits and misses, the second (in the flight) only hits.
  const auto lookup = [&](CacheSource& from, BuildCache::Count count) {
    return stored_result(program, options, cache, compile_digest, from, count);
  };
  CacheSource from = CacheSource::built;
  if (auto hit = lookup(from, BuildCache::Count::hit)) return std::move(*hit);

  const std::string payload = cache.run_once(compile_digest, [&](CacheSource& source) {
    if (auto hit = lookup(source, BuildCache::Count::retry)) return encode(hit->result, hit->key);
    source = CacheSource::built;
    // A compile that can read files reports the headers it reads through its time trace,
    // written into a private directory (the option is output-neutral: key_options drops it).
    const bool reads_files = may_read_files(program, options);
    const bool traced = reads_files && !has_own_trace(options.options);
    std::optional<detail::TempDir> trace_dir;
    CompileOptions traced_options = options;
    if (traced) {
      trace_dir.emplace("cujit-trace");
      traced_options.options.push_back("--fdevice-time-trace=" + (trace_dir->path() / "trace").string());
    }
    const Clock::time_point started = Clock::now();
    CompileResult result = detail::compile_program(program, traced_options);
    result.options = nvrtc_options(options);
    std::string why_not = "the caller's own -fdevice-time-trace hides the headers read";
    std::optional<detail::HeaderManifest> manifest;
    if (!reads_files) manifest.emplace();  // nothing on disk to key
    if (traced) {
      const auto trace = trace_dir->only_file();
      const auto headers = trace ? detail::headers_in_trace(detail::read_file(*trace, "NVRTC time trace", trace_limit))
                                 : std::nullopt;
      std::vector<std::string> memory_names;
      for (const Header& header : options.headers) memory_names.push_back(header.name);
      why_not = "NVRTC wrote no readable time trace";
      if (headers) {
        manifest = detail::HeaderManifest::capture(*headers, memory_names,
                                                   include_dirs(result.options), started, why_not);
      }
    }
    if (!manifest) {
      cache.note_not_stored("compile of '" + program.name() + "' not cached: " + why_not);
      return encode(result, {});
    }
    const CacheKey result_at = result_key(compile_digest, manifest->key_fields());
    std::string encoded = encode(result, result_at.digest());
    cache.put(result_at, encoded);
    cache.put(manifest_at, manifest->encode());
    return encoded;
  }, &from);
  auto made = decode(payload, program, options, from);
  if (!made) {
    throw Error(ErrorKind::cache, "compile_cached",
                "the result of compiling '" + program.name() + "' could not be decoded");
  }
  return std::move(*made);
}

namespace detail {

std::optional<CachedCompile> find_compiled(const Program& program, const CompileOptions& options, BuildCache& cache) {
  if (cache.config().mode == CacheMode::off) return std::nullopt;
  CacheSource from = CacheSource::built;
  return stored_result(program, options, cache, compile_key(program, options).digest(), from,
                       BuildCache::Count::retry);
}

}  // namespace detail
}  // namespace cujit
