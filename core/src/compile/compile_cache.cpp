#include "cujit/compile_cache.hpp"

#include <map>
#include <optional>

#include "compile/compile_batch.hpp"
#include "compile/compile_worker.hpp"
#include "compile/hermetic_inputs.hpp"
#include "cujit/error.hpp"
#include "support/planted_slowdown.hpp"
#include "support/record.hpp"
#include "cache/library_content.hpp"

namespace cujit {
namespace {

constexpr const char* lowered_prefix = "lowered:";

std::string_view not_stored_prefix() { return "compile not cached: "; }

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

// The stored result of a hermetic compile, if any. An entry that does not decode is dropped.
std::optional<CachedCompile> stored_result(const Program& program, const CompileOptions& options, BuildCache& cache,
                                           const CacheKey& key, CacheSource& from, BuildCache::Count count) {
  const auto payload = cache.find(key, &from, count);
  if (!payload) return std::nullopt;
  auto hit = decode(*payload, program, options, from);
  if (!hit) cache.drop(key, "the compiled result of '" + program.name() + "' does not decode");
  return hit;
}

CacheKey recipe_key(const Program& program, const CompileOptions& options, const detail::HermeticInputs& inputs) {
  CacheKey key("nvrtc-compile");
  key.add("nvrtc", detail::content_identity(nvrtc_identity()));
  key.add("name", program.name());
  key.add("target", to_string(options.target));
  // What NVRTC is given, verbatim and in order: an option NVRTC rejects is never keyed
  // like one it accepts.
  key.add_list("options", inputs.nvrtc_options());
  key.add_list("files", inputs.key_fields(), 3);  // (name, content, include targets): the recipe names files
  key.add_list("name-expressions", options.name_expressions);
  return key;
}

// Runs NVRTC on the hermetic inputs; the result names the options the caller gave and a log
// that names headers as they were written.
CompileResult compile_hermetic(const CompileOptions& options,
                               const detail::HermeticInputs& inputs) {
  try {
    CompileResult result = detail::compile_program(inputs.program(), inputs.options());
    result.options = nvrtc_options(options);
    result.log = detail::HermeticInputs::readable_log(std::move(result.log));
    return result;
  } catch (const Error& error) {
    if (error.kind() != ErrorKind::compile) throw;
    throw Error(error.kind(), error.component(), detail::HermeticInputs::readable_log(error.message()),
                detail::HermeticInputs::readable_log(error.log()));
  }
}

// A compile that cannot be made hermetic runs as given and is never stored.
CachedCompile compile_as_given(const Program& program, const CompileOptions& options, BuildCache& cache,
                               const std::string& why) {
  std::optional<CompileResult> made;
  cache.run_once({}, [&](CacheSource&) {  // no flight: counts the build
    made = detail::compile_program(program, options);
    return std::string();
  });
  if (cache.config().mode != CacheMode::off) {
    cache.note_not_stored(std::string(not_stored_prefix()) + "'" + program.name() + "': " + why);
  }
  return CachedCompile{std::move(*made), CacheSource::built, {}};
}

}  // namespace

CacheKey compile_key(const Program& program, const CompileOptions& options) {
  const detail::HermeticInputs inputs = detail::HermeticInputs::resolve(program, options);
  if (!inputs.refusal().empty()) {
    CacheKey key("nvrtc-compile-not-hermetic");
    key.add("why", inputs.refusal());
    key.add("name", program.name());
    key.add("source", program.source());
    return key;
  }
  return recipe_key(program, options, inputs);
}

CachedCompile compile_cached(const Program& program, const CompileOptions& options, BuildCache& cache) {
  const detail::PlantedDelay planted;
  const detail::HermeticInputs inputs = detail::HermeticInputs::resolve(program, options);
  if (!inputs.refusal().empty()) return compile_as_given(program, options, cache, inputs.refusal());
  if (cache.config().mode == CacheMode::off) {
    std::optional<CompileResult> made;
    cache.run_once({}, [&](CacheSource&) {  // no flight with the cache off: counts the build
      made = compile_hermetic(options, inputs);
      return std::string();
    });
    return CachedCompile{std::move(*made), CacheSource::built, {}};
  }
  const CacheKey key = recipe_key(program, options, inputs);
  // The first look counts hits and misses, the second (in the flight) only hits. The key's
  // digest is taken by the lookup; a hit takes it once (it hashes every header's content).
  CacheSource from = CacheSource::built;
  if (auto hit = stored_result(program, options, cache, key, from, BuildCache::Count::hit)) return std::move(*hit);
  const std::string digest = key.digest();

  const std::string payload = cache.run_once(digest, [&](CacheSource& source) {
    if (auto hit = stored_result(program, options, cache, key, source, BuildCache::Count::retry)) {
      return encode(hit->result, hit->key);
    }
    source = CacheSource::built;
    CompileResult result = compile_hermetic(options, inputs);
    if (!inputs.uncacheable().empty()) {
      cache.note_not_stored(std::string(not_stored_prefix()) + "'" + program.name() + "': " + inputs.uncacheable() +
                            " (its output would change with the clock)");
      return encode(result, {});
    }
    std::string encoded = encode(result, digest);
    cache.put(key, encoded);
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
  const HermeticInputs inputs = HermeticInputs::resolve(program, options);
  if (!inputs.refusal().empty() || !inputs.uncacheable().empty()) return std::nullopt;
  CacheSource from = CacheSource::built;
  return stored_result(program, options, cache, recipe_key(program, options, inputs), from, BuildCache::Count::retry);
}

}  // namespace detail
}  // namespace cujit
