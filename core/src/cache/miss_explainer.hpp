#pragma once
// Miss explanations (issue 30): each stored entry's recipe (CacheKey::recipe(), field names,
// sizes and digests, never the bytes) is kept in a small index per build kind and name, in
// the disk tier (explain/index/<digest>) and in Redis (a signed value under
// "recipes:<digest>"). On a miss, the nearest stored recipe of the same kind and name says
// which fields changed. A lookup by name, never a scan; nothing of it runs on a hit.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cujit/build_cache.hpp"
#include "cujit/cache_key.hpp"

namespace cujit::detail {

/// The most recipes one index keeps (the most recent), the most fields one recipe keeps and
/// the most bytes its text may take: a recipe past either bound is cut, with a note.
constexpr std::size_t recipes_per_index = 8;
constexpr std::size_t fields_per_recipe = 256;
constexpr std::size_t bytes_per_recipe = 16 * 1024;
/// The misses log is renamed to misses.log.1 (one older file kept) past this size.
constexpr std::uintmax_t miss_log_bytes = 512 * 1024;

/// A recipe as an index keeps it.
struct StoredRecipe {
  std::string digest;  ///< the key's digest
  std::vector<RecipeField> fields;
  bool truncated = false;  ///< fields were cut to the bounds
};

/// The name a key's recipes are indexed by: its "name" (compile: the program), "kernel",
/// "spec" or "provider" field, else empty (every key of the kind shares one index).
std::string recipe_name(const CacheKey& key);
/// The index's file name and Redis key suffix for `kind` and `name`.
std::string index_id(std::string_view kind, std::string_view name);
/// `index` (the text of an index, may be empty or damaged) with `recipe` added as its most
/// recent, any older copy of the same digest removed, and at most recipes_per_index kept.
std::string add_to_index(std::string_view index, const StoredRecipe& recipe);
/// The recipes of an index's text, most recent first; damaged parts are skipped.
std::vector<StoredRecipe> read_index(std::string_view index);

/// The differences between the recipe `now` and a stored recipe `was`, in words.
std::vector<FieldDifference> compare_recipes(const std::vector<RecipeField>& now, const StoredRecipe& was);

/// The index file of `id` under the disk tier's directory; empty when there is none.
std::string read_disk_index(const std::filesystem::path& cache_dir, const std::string& id);
/// Writes it (a temporary file renamed over it); a problem in words, else empty.
std::string write_disk_index(const std::filesystem::path& cache_dir, const std::string& id, const std::string& text);

/// One line of the misses log for `explanation` (tab-separated, escaped), and back.
std::string encode_miss(const MissExplanation& explanation);
std::optional<MissExplanation> decode_miss(std::string_view line);
/// Appends a line to explain/misses.log (O_APPEND: lines of concurrent processes do not
/// interleave), rotating it past miss_log_bytes. A problem in words, else empty.
std::string append_miss_log(const std::filesystem::path& cache_dir, const MissExplanation& explanation);

}  // namespace cujit::detail
