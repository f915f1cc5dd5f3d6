#include "cache/miss_explainer.hpp"

#include <signal.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>

#include "cache/blocked_signal.hpp"
#include "support/file_io.hpp"

namespace cujit {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view index_magic = "cujit-recipe 1";
constexpr std::string_view miss_magic = "cujit-miss-1";

// Tabs, newlines, '%' and other control bytes as %XX: every field stays on its line.
std::string escape(std::string_view text) {
  static constexpr char hex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f || c == '%') {
      out += '%';
      out += hex[byte >> 4];
      out += hex[byte & 15];
    } else {
      out += c;
    }
  }
  return out;
}

std::string unescape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    unsigned value = 0;
    if (text[i] == '%' && i + 2 < text.size() &&
        std::from_chars(text.data() + i + 1, text.data() + i + 3, value, 16).ec == std::errc{}) {
      out += static_cast<char>(value);
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  while (true) {
    const std::size_t at = text.find(separator, start);
    parts.push_back(text.substr(start, at == std::string_view::npos ? std::string_view::npos : at - start));
    if (at == std::string_view::npos) return parts;
    start = at + 1;
  }
}

// "cujit-recipe 1 <digest> <fields> <truncated>\n" then one "label\tsize\tdigest\tshown" line
// per field, then "end\n".
std::string encode_recipe(const detail::StoredRecipe& recipe) {
  std::string body;
  std::size_t kept = 0;
  bool truncated = recipe.truncated;
  for (const RecipeField& field : recipe.fields) {
    std::string line = escape(field.label) + '\t' + std::to_string(field.size) + '\t' + escape(field.digest) + '\t' +
                       escape(field.shown) + '\n';
    if (kept == detail::fields_per_recipe || body.size() + line.size() > detail::bytes_per_recipe) {
      truncated = true;
      break;
    }
    body += line;
    ++kept;
  }
  return std::string(index_magic) + ' ' + recipe.digest + ' ' + std::to_string(kept) + ' ' + (truncated ? "1" : "0") +
         '\n' + body + "end\n";
}

// The word for a field's label in an explanation.
std::string field_word(std::string_view label) {
  static const std::map<std::string_view, std::string_view> words{
      {"nvrtc", "NVRTC library"}, {"linker", "linker"},  {"cujit", "cujit version"},
      {"target", "target"},       {"arch", "arch"},      {"backend", "link backend"},
      {"nrt", "NRT decision"},    {"nrt_override", "NRT decision"}, {"lto", "LTO"},
      {"cwd", "working directory"}, {"key-schema", "key schema"},     {"name", "name"}};
  const auto found = words.find(label);
  return std::string(found == words.end() ? label : found->second);
}

// "options" -> "option", "name-expressions" -> "name expression": one item of a list.
std::string item_word(std::string_view list) {
  std::string word(list);
  std::replace(word.begin(), word.end(), '-', ' ');
  std::replace(word.begin(), word.end(), '_', ' ');
  if (word.size() > 1 && word.back() == 's') word.pop_back();
  return word;
}

std::string quoted_value(const RecipeField& field) {
  return field.shown.empty() && field.size != 0 ? "<" + std::to_string(field.size) + " bytes>" : field.shown;
}

// A list item's label "options#3": the list and the (1-based) place.
bool list_item(std::string_view label, std::string& list, std::size_t& place) {
  const std::size_t hash = label.rfind('#');
  if (hash == std::string_view::npos || label.find(':') != std::string_view::npos) return false;
  const std::string_view digits = label.substr(hash + 1);
  if (std::from_chars(digits.data(), digits.data() + digits.size(), place).ec != std::errc{}) return false;
  list = std::string(label.substr(0, hash));
  return true;
}

// A grouped list's label "files:inc/val.h#2": the list, the tuple's name and the item (1 for
// the content, 2... for the others).
bool tuple_item(std::string_view label, std::string& list, std::string& name, std::size_t& item) {
  const std::size_t colon = label.find(':');
  if (colon == std::string_view::npos) return false;
  list = std::string(label.substr(0, colon));
  std::string_view rest = label.substr(colon + 1);
  item = 1;
  if (const std::size_t hash = rest.rfind('#'); hash != std::string_view::npos) {
    std::size_t parsed = 0;
    const std::string_view digits = rest.substr(hash + 1);
    if (std::from_chars(digits.data(), digits.data() + digits.size(), parsed).ec == std::errc{} && parsed > 1) {
      item = parsed;
      rest = rest.substr(0, hash);
    }
  }
  name = std::string(rest);
  return true;
}

// A tuple of the "files" list: the first is the program, the others headers.
std::string file_word(std::string_view list, bool first) {
  if (list == "files") return first ? "source" : "header";
  return item_word(list);
}

struct ListItems {
  std::vector<RecipeField> now, was;
};

void compare_list(const std::string& list, const ListItems& items, std::vector<FieldDifference>& out) {
  const auto same = [](const RecipeField& a, const RecipeField& b) { return a.digest == b.digest && a.size == b.size; };
  if (std::equal(items.now.begin(), items.now.end(), items.was.begin(), items.was.end(), same)) return;
  const std::string word = item_word(list);
  const auto sorted_digests = [](const std::vector<RecipeField>& fields) {
    std::vector<std::string> digests;
    for (const RecipeField& field : fields) digests.push_back(field.digest);
    std::sort(digests.begin(), digests.end());
    return digests;
  };
  const auto joined = [](const std::vector<RecipeField>& fields) {
    std::string text;
    for (const RecipeField& field : fields) text += (text.empty() ? "" : " ") + quoted_value(field);
    return text;
  };
  if (sorted_digests(items.now) == sorted_digests(items.was)) {
    out.push_back({list, "order", list + ": order changed: " + joined(items.now) + " was " + joined(items.was)});
    return;
  }
  // Items only added or only removed (the rest in order): say which; else item by item.
  const auto is_subsequence = [&](const std::vector<RecipeField>& small, const std::vector<RecipeField>& large) {
    std::size_t at = 0;
    for (const RecipeField& field : large) {
      if (at < small.size() && same(small[at], field)) ++at;
    }
    return at == small.size();
  };
  const bool grew = items.now.size() > items.was.size();
  const std::vector<RecipeField>& large = grew ? items.now : items.was;
  const std::vector<RecipeField>& small = grew ? items.was : items.now;
  if (items.now.size() != items.was.size() && is_subsequence(small, large)) {
    std::size_t at = 0;
    for (std::size_t i = 0; i < large.size(); ++i) {
      if (at < small.size() && same(small[at], large[i])) {
        ++at;
        continue;
      }
      out.push_back({list, grew ? "added" : "removed",
                     word + " " + std::to_string(i + 1) + (grew ? " added: " : " removed: ") + quoted_value(large[i])});
    }
    return;
  }
  for (std::size_t i = 0; i < std::max(items.now.size(), items.was.size()); ++i) {
    const std::string place = word + " " + std::to_string(i + 1);
    if (i >= items.was.size()) {
      out.push_back({list, "added", place + " added: " + quoted_value(items.now[i])});
    } else if (i >= items.now.size()) {
      out.push_back({list, "removed", place + " removed: " + quoted_value(items.was[i])});
    } else if (!same(items.now[i], items.was[i])) {
      out.push_back({list, "changed", place + ": " + quoted_value(items.now[i]) + " was " + quoted_value(items.was[i])});
    }
  }
}

}  // namespace

std::string FieldDifference::category() const {
  const std::size_t colon = field.find(':');
  return field.substr(0, colon) + " " + change;
}

std::string MissExplanation::text() const {
  std::string out = kind + (name.empty() ? "" : " '" + name + "'") + " missed: ";
  if (nearest.empty()) return out + "no stored recipe of this kind and name";
  if (differences.empty()) {
    return out + "its recipe was stored (" + nearest_tier + ") but its entry is gone (evicted, cleared or dropped)";
  }
  out += "nearest stored recipe (" + nearest_tier + ", " + nearest.substr(0, 12) + ") differs in ";
  for (std::size_t i = 0; i < differences.size(); ++i) out += (i == 0 ? "" : "; ") + differences[i].text;
  return out;
}

namespace detail {

std::string recipe_name(const CacheKey& key) {
  for (const char* label : {"name", "kernel", "spec", "provider"}) {
    std::string value = key.field(label);
    if (!value.empty()) return value;
  }
  return {};
}

std::string index_id(std::string_view kind, std::string_view name) {
  std::string both(kind);
  both += '\0';
  both += name;
  return sha256_hex(both).substr(0, 32);
}

std::vector<StoredRecipe> read_index(std::string_view index) {
  std::vector<StoredRecipe> out;
  std::vector<std::string_view> lines = split(index, '\n');
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::vector<std::string_view> head = split(lines[i], ' ');
    if (head.size() != 5 || std::string(head[0]) + " " + std::string(head[1]) != index_magic) continue;
    StoredRecipe recipe;
    recipe.digest = std::string(head[2]);
    recipe.truncated = head[4] == "1";
    bool sound = true;
    std::size_t j = i + 1;
    for (; j < lines.size() && lines[j] != "end"; ++j) {
      const std::vector<std::string_view> parts = split(lines[j], '\t');
      RecipeField field;
      if (parts.size() != 4 ||
          std::from_chars(parts[1].data(), parts[1].data() + parts[1].size(), field.size).ec != std::errc{}) {
        sound = false;
        break;
      }
      field.label = unescape(parts[0]);
      field.digest = unescape(parts[2]);
      field.shown = unescape(parts[3]);
      recipe.fields.push_back(std::move(field));
    }
    if (sound && j < lines.size()) out.push_back(std::move(recipe));  // a recipe cut short is no candidate
    i = j;
  }
  return out;
}

std::string add_to_index(std::string_view index, const StoredRecipe& recipe) {
  std::string out = encode_recipe(recipe);
  std::size_t kept = 1;
  for (const StoredRecipe& older : read_index(index)) {
    if (kept == recipes_per_index) break;
    if (older.digest == recipe.digest) continue;
    out += encode_recipe(older);
    ++kept;
  }
  return out;
}

std::vector<FieldDifference> compare_recipes(const std::vector<RecipeField>& now, const StoredRecipe& was) {
  std::vector<FieldDifference> out;
  // Lists and grouped lists are compared as wholes; plain fields by label.
  std::map<std::string, ListItems> lists;
  std::vector<std::string> list_order;
  std::map<std::string, std::pair<const RecipeField*, const RecipeField*>> plain;  // label: (now, was)
  std::vector<std::string> plain_order;
  std::map<std::string, std::vector<std::string>> tuple_order;  // grouped list: tuple names in order
  const auto sort_in = [&](const RecipeField& field, bool is_now) {
    std::string list, name;
    std::size_t place = 0;
    if (list_item(field.label, list, place)) {
      if (lists.count(list) == 0) list_order.push_back(list);
      (is_now ? lists[list].now : lists[list].was).push_back(field);
      return;
    }
    if (!plain.count(field.label)) plain_order.push_back(field.label);
    (is_now ? plain[field.label].first : plain[field.label].second) = &field;
    if (tuple_item(field.label, list, name, place) && place == 1 && is_now) tuple_order[list].push_back(name);
  };
  for (const RecipeField& field : now) sort_in(field, true);
  for (const RecipeField& field : was.fields) sort_in(field, false);
  // A recipe of another key layout names its fields otherwise (schema 4 keys the program by
  // its digest, schema 3 by its text): only the layout is said to differ, not every file.
  if (const auto schema = plain.find("key-schema"); schema != plain.end() && schema->second.first != nullptr &&
                                                      schema->second.second != nullptr &&
                                                      schema->second.first->digest != schema->second.second->digest) {
    const RecipeField& is = *schema->second.first;
    const RecipeField& was_field = *schema->second.second;
    out.push_back({"key-schema", "changed",
                   field_word("key-schema") + ": " + quoted_value(is) + " was " + quoted_value(was_field) +
                       " (a recipe of another key layout: its other fields are not compared)"});
    return out;
  }
  // The first file of a grouped list in either recipe is the program.
  std::map<std::string, std::string> first_tuple;
  for (const auto* fields : {&now, &was.fields}) {
    for (const RecipeField& field : *fields) {
      std::string list, name;
      std::size_t item = 0;
      if (tuple_item(field.label, list, name, item) && first_tuple.count(list) == 0) first_tuple[list] = name;
    }
  }
  const auto differs = [&](const std::string& label) {
    const auto found = plain.find(label);
    if (found == plain.end()) return false;
    const auto [is, was_field] = found->second;
    return !(is && was_field && is->digest == was_field->digest && is->size == was_field->size);
  };
  // Another link backend is another linker library: the backend is the one change to name.
  const bool backend_changed = differs("backend");
  for (const std::string& label : plain_order) {
    if (!differs(label) || (label == "linker" && backend_changed)) continue;
    const auto [is, was_field] = plain[label];
    std::string list, name;
    std::size_t item = 0;
    if (tuple_item(label, list, name, item)) {
      const std::string what = file_word(list, first_tuple[list] == name) + " " + name;
      if (item > 1) {
        // The other items of a tuple (a file's include targets): said only when the file
        // itself is in both recipes.
        if (is && was_field) out.push_back({label, "includes", what + ": its includes resolve to other files"});
        continue;
      }
      if (is && was_field) {
        out.push_back({label, "content", what + ": content changed"});
      } else if (list != "files") {
        // Other grouped lists (a link's inputs) are given, not found by reading.
        out.push_back({label, is ? "added" : "removed", what + (is ? ": added" : ": removed")});
      } else if (is) {
        out.push_back({label, "appeared", what + ": appeared (the stored recipe did not read it)"});
      } else {
        out.push_back({label, "gone", what + ": no longer read (the stored recipe read it)"});
      }
      continue;
    }
    const std::string word = field_word(label);
    if (is && was_field) {
      out.push_back({label, "changed",
                     is->shown.empty() && was_field->shown.empty()
                         ? word + ": changed (" + std::to_string(is->size) + " bytes, was " +
                               std::to_string(was_field->size) + ")"
                         : word + ": " + quoted_value(*is) + " was " + quoted_value(*was_field)});
    } else if (is) {
      out.push_back({label, "added", word + " added: " + quoted_value(*is)});
    } else {
      out.push_back({label, "removed", word + " removed: " + quoted_value(*was_field)});
    }
  }
  for (const std::string& list : list_order) compare_list(list, lists[list], out);
  return out;
}

// An index or log as cujit reads every file: opened without blocking, checked on the
// descriptor and bounded, so that a FIFO or device put in its place (a damaged cache, or its
// owner's mistake) reads as nothing, never hangs a build or `cujit cache` (red-team finding,
// 2026-11-28).
namespace {
std::string read_explain_file(const fs::path& path, std::uint64_t limit) {
  FileRead read = read_regular_file(path, limit);
  return read.problem == ReadProblem::none ? std::move(read.bytes) : std::string();
}
}  // namespace

std::string read_disk_index(const fs::path& cache_dir, const std::string& id) {
  return read_explain_file(cache_dir / "explain" / "index" / id, recipes_per_index * (bytes_per_recipe + 1024));
}

std::string write_disk_index(const fs::path& cache_dir, const std::string& id, const std::string& text) {
  const fs::path dir = cache_dir / "explain" / "index";
  std::error_code error;
  fs::create_directories(dir, error);
  if (error) return "cannot create " + dir.string() + ": " + error.message();
  // Last writer wins: two processes storing recipes of one name at once may lose one of
  // them, which costs an explanation, never a build.
  const fs::path temp = dir / ("." + id + "." + std::to_string(::getpid()));
  // Past RLIMIT_FSIZE a write fails (EFBIG) instead of killing the process (SIGXFSZ).
  const detail::BlockedSignal file_size_limit(SIGXFSZ);
  {
    // A new regular file, whatever was left at the temporary name (a FIFO there would
    // block an open for writing until someone read it).
    fs::remove(temp, error);
    const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) return "cannot create " + temp.string() + ": " + std::strerror(errno);
    std::string_view rest(text);
    while (!rest.empty()) {
      const ssize_t wrote = ::write(fd, rest.data(), rest.size());
      if (wrote < 0 && errno == EINTR) continue;
      if (wrote <= 0) break;
      rest.remove_prefix(static_cast<std::size_t>(wrote));
    }
    const bool closed = ::close(fd) == 0;
    if (!rest.empty() || !closed) {
      fs::remove(temp, error);
      return "cannot write " + temp.string();
    }
  }
  fs::rename(temp, dir / id, error);
  if (error) {
    fs::remove(temp, error);
    return "cannot rename " + temp.string() + ": " + error.message();
  }
  return {};
}

std::string encode_miss(const MissExplanation& explanation) {
  std::string line = std::string(miss_magic) + '\t' + std::to_string(explanation.time) + '\t' +
                     escape(explanation.kind) + '\t' + escape(explanation.name) + '\t' + explanation.digest + '\t' +
                     explanation.nearest + '\t' + explanation.nearest_tier;
  for (const FieldDifference& difference : explanation.differences) {
    line += '\t' + escape(difference.field) + '\t' + escape(difference.change) + '\t' + escape(difference.text);
  }
  return line + '\n';
}

std::optional<MissExplanation> decode_miss(std::string_view line) {
  const std::vector<std::string_view> parts = split(line, '\t');
  if (parts.size() < 7 || (parts.size() - 7) % 3 != 0 || parts[0] != miss_magic) return std::nullopt;
  MissExplanation out;
  if (std::from_chars(parts[1].data(), parts[1].data() + parts[1].size(), out.time).ec != std::errc{}) {
    return std::nullopt;
  }
  out.kind = unescape(parts[2]);
  out.name = unescape(parts[3]);
  out.digest = std::string(parts[4]);
  out.nearest = std::string(parts[5]);
  out.nearest_tier = std::string(parts[6]);
  for (std::size_t i = 7; i < parts.size(); i += 3) {
    out.differences.push_back({unescape(parts[i]), unescape(parts[i + 1]), unescape(parts[i + 2])});
  }
  return out;
}

std::string append_miss_log(const fs::path& cache_dir, const MissExplanation& explanation) {
  const fs::path dir = cache_dir / "explain";
  std::error_code error;
  fs::create_directories(dir, error);
  const fs::path log = dir / "misses.log";
  if (const auto size = fs::file_size(log, error); !error && size > miss_log_bytes) {
    fs::rename(log, dir / "misses.log.1", error);  // another process may have rotated it first
  }
  const std::string line = encode_miss(explanation);
  const detail::BlockedSignal file_size_limit(SIGXFSZ);  // EFBIG, not a dead process
  // Without blocking (a FIFO in the log's place would block the open until read) and on a
  // regular file only, checked on the descriptor.
  const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return "cannot open " + log.string() + ": " + std::strerror(errno);
  struct stat info {};
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    ::close(fd);
    return "cannot append to " + log.string() + ": not a regular file";
  }
  // One write of one line: O_APPEND keeps lines of processes appending at once whole.
  const ssize_t written = ::write(fd, line.data(), line.size());
  const int saved = errno;
  ::close(fd);
  if (written != static_cast<ssize_t>(line.size())) return "cannot append to " + log.string() + ": " + std::strerror(saved);
  return {};
}

}  // namespace detail

std::vector<MissExplanation> read_miss_log(const fs::path& cache_dir, std::size_t last) {
  std::vector<MissExplanation> out;
  for (const char* file : {"misses.log.1", "misses.log"}) {
    // Rotated past miss_log_bytes; a line may land after the size check, so twice that.
    const std::string text = detail::read_explain_file(cache_dir / "explain" / file, 2 * detail::miss_log_bytes + 65536);
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
      if (auto miss = detail::decode_miss(line)) out.push_back(std::move(*miss));
    }
  }
  if (out.size() > last) out.erase(out.begin(), out.end() - static_cast<std::ptrdiff_t>(last));
  return out;
}

}  // namespace cujit
