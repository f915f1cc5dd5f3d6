#include "compile/hermetic_inputs.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <atomic>
#include <chrono>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string_view>
#include <unordered_map>

#include "cache/content_digest.hpp"
#include "cujit/cache_key.hpp"
#include "cujit/error.hpp"
#include "compile/header_stamps.hpp"
#include "compile/include_scan.hpp"
#include "support/file_io.hpp"

namespace cujit::detail {
namespace {

// Where an operand that resolved to nothing is sent: "/dev/null" is not a directory, so no
// file can ever exist below it, and NVRTC's lookup fails as it would have.
constexpr std::string_view not_found_prefix = "/dev/null/cujit-not-found/";

// A compile's headers are bounded like any input cujit reads.
constexpr std::size_t max_files = 100000;
constexpr std::uint64_t max_total_bytes = std::uint64_t{1} << 30;

// What a file holds, shared between compiles while its stamp holds.
struct FileData {
  std::string content;
  std::string digest;
  IncludeScan scan;  // without has-include wrappers

  // The scan with the uses of these wrappers of __has_include found too; remembered for the
  // last set of wrappers asked (a compile asks the same set for every file).
  std::shared_ptr<const IncludeScan> scan_with(const std::vector<std::string>& wrappers) const {
    std::string asked;
    for (const std::string& wrapper : wrappers) asked += wrapper + '\0';
    const std::lock_guard<std::mutex> lock(wrapped_mutex);
    if (wrapped && wrapped_for == asked) return wrapped;
    const bool mentioned = std::any_of(wrappers.begin(), wrappers.end(), [&](const std::string& wrapper) {
      return content.find(wrapper) != std::string::npos;
    });
    wrapped = std::make_shared<const IncludeScan>(mentioned ? scan_includes(content, wrappers) : scan);
    wrapped_for = std::move(asked);
    return wrapped;
  }

 private:
  mutable std::mutex wrapped_mutex;
  mutable std::string wrapped_for;
  mutable std::shared_ptr<const IncludeScan> wrapped;
};

struct Stamp {
  dev_t device = 0;
  ino_t inode = 0;
  off_t size = 0;
  std::int64_t mtime_ns = 0;
  std::int64_t ctime_ns = 0;
  bool operator==(const Stamp&) const = default;
};

std::int64_t nanoseconds(const timespec& t) { return std::int64_t{t.tv_sec} * 1000000000 + t.tv_nsec; }

std::atomic<std::size_t> files_read_count{0};

// The per-process memo of header files, by path. A file is read again unless its stamp is
// the one recorded and it had settled (ctime at least a second old) when it was read: no
// write or rename leaves device, inode, size, mtime and ctime all as they were, except
// within the file system's timestamp granularity, which the settling rules out.
class FileMemo {
 public:
  static FileMemo& instance() {
    static FileMemo memo;
    return memo;
  }

  // The file at `path` if it is a regular file (symbolic links followed, as open does).
  std::optional<std::pair<Stamp, std::shared_ptr<const FileData>>> lookup(const std::string& path) {
    struct stat info {};
    if (::stat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode)) return std::nullopt;
    const Stamp stamp{info.st_dev, info.st_ino, info.st_size, nanoseconds(info.st_mtim), nanoseconds(info.st_ctim)};
    {
      std::lock_guard<std::mutex> lock(mutex_);
      const auto it = entries_.find(path);
      if (it != entries_.end() && it->second.settled && it->second.stamp == stamp) return {{stamp, it->second.data}};
    }
    const auto now = std::chrono::system_clock::now().time_since_epoch();
    const bool settled =
        std::chrono::duration_cast<std::chrono::nanoseconds>(now).count() - stamp.ctime_ns > 1000000000;
    auto data = std::make_shared<FileData>();
    try {
      data->content = read_file(path, "hermetic compile (header)");
    } catch (const Error&) {
      return std::nullopt;  // vanished or unreadable between stat and open: not found
    }
    files_read_count.fetch_add(1, std::memory_order_relaxed);
    data->digest = sha256_hex(data->content);
    data->scan = scan_includes(data->content);
    std::lock_guard<std::mutex> lock(mutex_);
    entries_[path] = Entry{stamp, settled, data};
    return {{stamp, std::move(data)}};
  }

 private:
  struct Entry {
    Stamp stamp;
    bool settled = false;
    std::shared_ptr<const FileData> data;
  };
  std::mutex mutex_;
  std::unordered_map<std::string, Entry> entries_;
};

std::string directory_of(const std::string& name) {
  const std::size_t slash = name.rfind('/');
  return slash == std::string::npos ? std::string() : name.substr(0, slash);
}

// The path NVRTC forms for `operand` under `directory` (also what __FILE__ names).
std::string compose(const std::string& directory, const std::string& operand) {
  if (!operand.empty() && operand.front() == '/') return operand;
  if (directory.empty()) return operand;
  return directory.back() == '/' ? directory + operand : directory + "/" + operand;
}

bool writable_in_quotes(const std::string& name) {
  return name.find_first_of("\"\n\r") == std::string::npos && !name.empty();
}

// The caller's NVRTC options taken apart: include directories, pre-includes, and what is
// passed on. Anything include- or PCH-file-shaped that is not one of NVRTC's own spellings
// makes the compile non-hermetic, so NVRTC sees it and judges it.
struct ParsedOptions {
  std::vector<std::string> include_dirs;
  std::vector<std::string> pre_includes;
  std::vector<std::string> passed_on;
  std::string refusal;
};

bool has_value_prefix(std::string_view option, std::string_view name, std::string_view& value) {
  if (option.size() > name.size() && option.substr(0, name.size()) == name && option[name.size()] == '=') {
    value = option.substr(name.size() + 1);
    return true;
  }
  return false;
}

// NVRTC's automatic PCH options: dropped. Serving a compile from a PCH made earlier in the
// process ignores header edits (NVRTC 13.0), and the PCH is not part of any recipe.
bool automatic_pch_option(std::string_view option) {
  std::string_view value;
  for (std::string_view name : {"-pch", "--pch"}) {
    if (option == name) return true;
  }
  for (std::string_view name : {"-pch-dir", "--pch-dir", "-pch-messages", "--pch-messages", "-pch-verbose",
                                "--pch-verbose"}) {
    if (option == name || has_value_prefix(option, name, value)) return true;
  }
  return false;
}

ParsedOptions parse_options(const std::vector<std::string>& options) {
  ParsedOptions parsed;
  for (std::size_t i = 0; i < options.size(); ++i) {
    const std::string& option = options[i];
    std::string_view value;
    const bool has_next = i + 1 < options.size();
    if (option == "-I" || option == "--include-path") {
      if (!has_next) {
        parsed.passed_on.push_back(option);  // NVRTC says what is wrong with it
        continue;
      }
      parsed.include_dirs.push_back(options[++i]);
    } else if (has_value_prefix(option, "--include-path", value) || has_value_prefix(option, "-I", value)) {
      parsed.include_dirs.emplace_back(value);
    } else if (option.size() > 2 && option.compare(0, 2, "-I") == 0) {
      parsed.include_dirs.push_back(option.substr(2));
    } else if (option == "-include" || option == "--pre-include") {
      if (!has_next) {
        parsed.passed_on.push_back(option);
        continue;
      }
      parsed.pre_includes.push_back(options[++i]);
    } else if (has_value_prefix(option, "-include", value) || has_value_prefix(option, "--pre-include", value)) {
      parsed.pre_includes.emplace_back(value);
    } else if (automatic_pch_option(option)) {
      continue;
    } else if (option.find("include") != std::string::npos || option.find("pch") != std::string::npos) {
      // -includeX, --create-pch, --use-pch...: read or write files we do not model.
      parsed.refusal = "option '" + option + "' can make NVRTC read or write a file";
      parsed.passed_on.push_back(option);
    } else {
      parsed.passed_on.push_back(option);
    }
  }
  return parsed;
}

}  // namespace

namespace {
bool has_next_sites(const IncludeScan& scan) {
  return std::any_of(scan.sites.begin(), scan.sites.end(), [](const IncludeSite& site) {
    return site.kind == IncludeKind::include_next || site.kind == IncludeKind::has_include_next;
  });
}
}  // namespace

struct HermeticInputs::File {
  std::string name;        // the in-memory name NVRTC sees
  std::string directory;   // where its quoted includes are looked up first
  int search_index = -1;   // the -I directory it was found in (for #include_next)
  std::shared_ptr<const FileData> data;
  std::vector<IncludeSite> sites;        // with has-include wrappers
  std::vector<std::string> replacements;  // per site: the name written instead
};

namespace {

class Resolver {
 public:
  Resolver(const std::vector<Header>& memory, const std::vector<std::string>& dirs)
      : memory_(memory), dirs_(dirs) {}

  struct Found {
    std::shared_ptr<HermeticInputs::File> file;  // null: not found
    std::string name;                             // what the operand becomes
    bool writable = true;                         // whether `name` can be written in quotes
  };

  // Resolves one operand as NVRTC would. The same question (operand, kind, the includer's
  // directory and search position) is answered once per compile: a CUB kernel asks its
  // ~630 headers' ~6,000 operands, mostly the same few hundred.
  Found resolve(const IncludeSite& site, const HermeticInputs::File& includer, bool pre_include) {
    const bool next = site.kind == IncludeKind::include_next || site.kind == IncludeKind::has_include_next;
    std::string question;
    question.reserve(site.operand.size() + includer.directory.size() + 16);
    question += site.angle ? '<' : '"';
    question += next ? 'n' : (pre_include ? 'p' : 'i');
    if (next) question += std::to_string(includer.search_index);
    if (!site.angle && !next && !pre_include) question += includer.directory;
    question += '\0';
    question += site.operand;
    if (const auto known = answers_.find(question); known != answers_.end()) return known->second;
    Found found = search(site, includer, pre_include, next);
    found.writable = writable_in_quotes(found.name);
    answers_.emplace(std::move(question), found);
    return found;
  }

 private:
  Found search(const IncludeSite& site, const HermeticInputs::File& includer, bool pre_include, bool next) {
    if (!next) {
      for (std::size_t i = 0; i < memory_.size(); ++i) {
        if (memory_[i].name == site.operand) return {user_files_.at(i), memory_[i].name};
      }
    }
    if (!site.operand.empty() && site.operand.front() == '/') return found_at(site.operand, -1);
    if (!site.angle && !next) {
      const std::string own = pre_include ? std::string() : includer.directory;
      if (Found found = found_at(compose(own, site.operand), -1); found.file) return found;
    }
    const std::size_t first = next && includer.search_index >= 0 ? static_cast<std::size_t>(includer.search_index) + 1 : 0;
    for (std::size_t d = first; d < dirs_.size(); ++d) {
      if (Found found = found_at(compose(dirs_[d], site.operand), static_cast<int>(d)); found.file) return found;
    }
    return {nullptr, std::string(not_found_prefix) + site.operand};
  }

 public:
  std::vector<std::shared_ptr<HermeticInputs::File>> user_files_;
  std::vector<std::shared_ptr<HermeticInputs::File>> disk_files_;  // in the order found
  std::string refusal;

 private:
  std::unordered_map<std::string, Found> answers_;

  Found found_at(const std::string& path, int search_index) {
    auto looked = FileMemo::instance().lookup(path);
    note_probe(path, looked ? &looked->first : nullptr);
    if (!looked) return {nullptr, {}};
    const auto& [stamp, data] = *looked;
    const auto identity = std::make_pair(stamp.device, stamp.inode);
    if (const auto it = by_identity_.find(identity); it != by_identity_.end()) {
      // One file, one in-memory header, one rewrite of each operand. An #include_next
      // continues after the directory its file was found in (from the start for a file
      // found beside its includer), so a file reached through two such routes has two
      // answers, and which one NVRTC uses depends on which inclusion comes first.
      if (it->second->search_index != search_index && has_next_sites(data->scan)) {
        refusal = "'" + it->second->name + "' has an #include_next and is reached through two search routes";
      }
      return {it->second, it->second->name};
    }
    if (disk_files_.size() >= max_files || (total_bytes_ += data->content.size()) > max_total_bytes) {
      refusal = "the compile reaches more than " + std::to_string(max_files) + " headers or 1 GiB of them";
      return {nullptr, {}};
    }
    for (const Header& header : memory_) {
      if (header.name == path) refusal = "header '" + path + "' on disk has the name of an in-memory header";
    }
    if (!writable_in_quotes(path)) refusal = "header path '" + path + "' cannot be written in an #include";
    auto file = std::make_shared<HermeticInputs::File>();
    file->name = path;
    file->directory = directory_of(path);
    file->search_index = search_index;
    file->data = data;
    by_identity_.emplace(identity, file);
    disk_files_.push_back(file);
    return {file, path};
  }

  // Every path probed and what it held, for the header stamps (header_stamps.hpp); a path
  // that answered differently within one resolution (it changed meanwhile) spoils them.
  void note_probe(const std::string& path, const Stamp* stamp) {
    HeaderProbe probe;
    probe.path = path;
    if (stamp != nullptr) {
      probe.present = true;
      probe.device = static_cast<std::uint64_t>(stamp->device);
      probe.inode = static_cast<std::uint64_t>(stamp->inode);
      probe.size = static_cast<std::uint64_t>(stamp->size);
      probe.mtime_ns = stamp->mtime_ns;
      probe.ctime_ns = stamp->ctime_ns;
    }
    auto [it, inserted] = probe_index_.try_emplace(path, probes.size());
    if (inserted) {
      probes.push_back(std::move(probe));
    } else if (!(probes[it->second] == probe)) {
      probes_consistent = false;
    }
  }

 public:
  std::vector<HeaderProbe> probes;
  bool probes_consistent = true;

 private:
  std::unordered_map<std::string, std::size_t> probe_index_;
  const std::vector<Header>& memory_;
  const std::vector<std::string>& dirs_;
  std::map<std::pair<dev_t, ino_t>, std::shared_ptr<HermeticInputs::File>> by_identity_;
  std::uint64_t total_bytes_ = 0;
};

// A text given in memory; scanned now, or (`scan` false) when an include first reaches it:
// a KernelBuilder hands every compile NRT's headers, which most sources never include.
std::shared_ptr<HermeticInputs::File> text_file(const std::string& name, const std::string& text, bool scan = true) {
  auto data = std::make_shared<FileData>();
  data->content = text;
  if (scan) data->scan = scan_includes(text);
  auto file = std::make_shared<HermeticInputs::File>();
  file->name = name;
  file->directory = directory_of(name);
  file->data = std::move(data);
  return file;
}

// Wrappers of __has_include among every file's definitions, to a fixed point.
std::vector<std::string> has_include_wrappers(const std::vector<std::shared_ptr<HermeticInputs::File>>& files) {
  std::set<std::string> wrappers;
  std::vector<std::pair<std::string, std::string>> forwards;
  for (const auto& file : files) {
    wrappers.insert(file->data->scan.has_include_wrappers.begin(), file->data->scan.has_include_wrappers.end());
    forwards.insert(forwards.end(), file->data->scan.forwards.begin(), file->data->scan.forwards.end());
  }
  for (bool grew = true; grew;) {
    grew = false;
    for (const auto& [defined, called] : forwards) {
      if (wrappers.count(called) != 0 && wrappers.insert(defined).second) grew = true;
    }
  }
  return {wrappers.begin(), wrappers.end()};
}

// The object-like definitions of a name across a compile's files and -D options, looked up
// when a macro include asks for the name (a handful of names, where CCCL defines thousands).
class Definitions {
 public:
  Definitions(const std::vector<std::shared_ptr<HermeticInputs::File>>& files, std::map<std::string, std::set<std::string>> options)
      : files_(files), known_(std::move(options)) {}

  const std::set<std::string>* find(const std::string& name) {
    auto [it, inserted] = known_.try_emplace(name);
    if (inserted) {
      for (const auto& file : files_) {
        for (const auto& [defined, body] : file->data->scan.object_macros) {
          if (defined == name) it->second.insert(body);
        }
      }
    }
    return it->second.empty() ? nullptr : &it->second;
  }

 private:
  const std::vector<std::shared_ptr<HermeticInputs::File>>& files_;
  std::map<std::string, std::set<std::string>> known_;
};

constexpr std::size_t max_expansions = 64;
constexpr int max_expansion_depth = 16;

// Every text `text` can expand to when each identifier with object-like definitions is
// replaced by each of them in turn; nullopt past the bounds.
std::optional<std::set<std::string>> expansions(const std::string& text, Definitions& definitions, int depth,
                                                std::set<std::string>& active) {
  if (depth > max_expansion_depth) return std::nullopt;
  std::set<std::string> results{""};
  std::size_t i = 0;
  while (i < text.size()) {
    std::size_t end = i + 1;
    const bool identifier = std::isalpha(static_cast<unsigned char>(text[i])) || text[i] == '_';
    if (identifier) {
      while (end < text.size() && (std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '_')) ++end;
    }
    const std::string token = text.substr(i, end - i);
    i = end;
    std::set<std::string> alternatives{token};
    const std::set<std::string>* defined = identifier ? definitions.find(token) : nullptr;
    if (defined != nullptr && active.count(token) == 0) {
      alternatives.clear();
      active.insert(token);
      for (const std::string& body : *defined) {
        auto expanded = expansions(body, definitions, depth + 1, active);
        if (!expanded) return std::nullopt;
        alternatives.insert(expanded->begin(), expanded->end());
      }
      active.erase(token);
    }
    std::set<std::string> next;
    for (const std::string& prefix : results) {
      for (const std::string& alternative : alternatives) {
        next.insert(prefix + alternative);
        if (next.size() > max_expansions) return std::nullopt;
      }
    }
    results = std::move(next);
  }
  return results;
}

// -DNAME=value / -D NAME=value / --define-macro=...: definitions a macro include can use.
void add_option_definitions(const std::vector<std::string>& options, std::map<std::string, std::set<std::string>>& definitions) {
  for (std::size_t i = 0; i < options.size(); ++i) {
    std::string definition;
    std::string_view value;
    if ((options[i] == "-D" || options[i] == "--define-macro") && i + 1 < options.size()) {
      definition = options[++i];
    } else if (has_value_prefix(options[i], "--define-macro", value)) {
      definition = std::string(value);
    } else if (options[i].size() > 2 && options[i].compare(0, 2, "-D") == 0) {
      definition = options[i].substr(2);
    } else {
      continue;
    }
    const std::size_t equals = definition.find('=');
    if (equals == std::string::npos) {
      definitions[definition].insert("1");
    } else {
      definitions[definition.substr(0, equals)].insert(definition.substr(equals + 1));
    }
  }
}

std::string rewritten(const HermeticInputs::File& file) {
  const std::string& text = file.data->content;
  std::string out;
  out.reserve(text.size() + file.sites.size() * 32);
  std::size_t at = 0;
  for (std::size_t i = 0; i < file.sites.size(); ++i) {
    const IncludeSite& site = file.sites[i];
    out.append(text, at, site.begin - at);
    const std::string quoted = "\"" + file.replacements[i] + "\"";
    switch (site.kind) {
      case IncludeKind::include:
      case IncludeKind::include_next: out += "include " + quoted; break;
      case IncludeKind::has_include: out += quoted; break;
      case IncludeKind::has_include_next: out += "__has_include(" + quoted; break;
    }
    // The line count stays: each splice the range held comes back as one.
    for (std::size_t s = 0; s < site.splices; ++s) out += "\\\n";
    at = site.end;
  }
  out.append(text, at, std::string::npos);
  return out;
}

}  // namespace

HermeticInputs HermeticInputs::resolve(const Program& program, const CompileOptions& options) {
  // The header stamps are asked only by a compile that can reach the disk: a source with
  // no include and options that name no file resolves from memory alone (KernelBuilder's
  // in-memory hits), and a digest of its inputs would cost more than it saves. A compile
  // whose only disk reads come through in-memory headers resolves by reading, as before.
  const bool may_read_disk = program.source().find("include") != std::string::npos ||
                             options_name_files(cujit::nvrtc_options(options));
  std::string inputs_key;
  if (may_read_disk && header_stamps_on()) {
    inputs_key = resolution_inputs_key(program, options);
    if (const auto record = recall_resolution(inputs_key); record && probes_hold(*record)) {
      HermeticInputs out;
      out.program_name_ = program.name();
      out.base_options_ = options;
      out.reads_disk_ = record->reads_disk;
      out.uncacheable_ = record->uncacheable;
      out.key_fields_ = record->key_fields;
      out.nvrtc_options_ = record->nvrtc_options;
      out.deferred_ = std::make_shared<Deferred>();
      out.deferred_->source = program.source();
      out.deferred_->inputs_key = std::move(inputs_key);
      return out;
    }
  }
  std::vector<HeaderProbe> probes;
  HermeticInputs out = resolve_reading(program, options, inputs_key.empty() ? nullptr : &probes);
  if (!inputs_key.empty() && out.refusal_.empty() && out.reads_disk_ && !probes.empty()) {
    remember_resolution(inputs_key, ResolutionRecord{std::move(probes), out.uncacheable_, out.reads_disk_,
                                                     out.nvrtc_options_, out.key_fields_});
  }
  return out;
}

// The resolution from the files themselves; `probes` (when given) receives every path
// probed, and is left empty when a path answered differently within the resolution.
HermeticInputs HermeticInputs::resolve_reading(const Program& program, const CompileOptions& options,
                                               std::vector<HeaderProbe>* probes) {
  HermeticInputs out;
  out.program_name_ = program.name();
  out.base_options_ = options;
  ParsedOptions parsed = parse_options(cujit::nvrtc_options(options));
  out.refusal_ = parsed.refusal;
  out.nvrtc_options_ = parsed.passed_on;

  Resolver resolver(options.headers, parsed.include_dirs);
  auto main = text_file(program.name(), program.source());
  for (const Header& header : options.headers) {
    resolver.user_files_.push_back(text_file(header.name, header.content, false));
  }

  // The closure: every file an include can reach, whatever the conditionals around it. An
  // in-memory header is scanned when it is first reached; one never reached is handed to
  // NVRTC (and keyed) as given, and NVRTC never reads it.
  std::vector<std::shared_ptr<File>> scanned{main};
  std::set<const File*> seen{main.get()};
  std::set<const File*> user_files;
  for (const auto& file : resolver.user_files_) user_files.insert(file.get());
  const auto reach = [&](const std::shared_ptr<File>& file) {
    if (!seen.insert(file.get()).second) return;
    if (user_files.count(file.get()) != 0) file->data = text_file(file->name, file->data->content)->data;
    scanned.push_back(file);
  };
  // Pre-includes, as a directive of an empty file in the working directory would find them.
  File command_line;
  for (const std::string& name : parsed.pre_includes) {
    IncludeSite site;
    site.operand = name;
    const Resolver::Found found = resolver.resolve(site, command_line, true);
    if (found.file) reach(found.file);
    out.nvrtc_options_.push_back("-include=" + found.name);
  }
  std::size_t grown = 0;
  const auto grow = [&] {
    for (; grown < scanned.size() && resolver.refusal.empty(); ++grown) {
      const std::shared_ptr<File> file = scanned[grown];  // a copy: scanned grows below
      for (const IncludeSite& site : file->data->scan.sites) {
        if (site.kind != IncludeKind::include && site.kind != IncludeKind::include_next) continue;
        const Resolver::Found found = resolver.resolve(site, *file, false);
        if (found.file) reach(found.file);
      }
    }
  };
  grow();
  // Macro includes, expanded with every definition seen, until no new file turns up.
  std::map<std::string, std::shared_ptr<File>> aliases;
  for (int round = 0; round < 64 && out.refusal_.empty() && resolver.refusal.empty(); ++round) {
    std::map<std::string, std::set<std::string>> from_options;
    add_option_definitions(parsed.passed_on, from_options);
    Definitions definitions(scanned, std::move(from_options));
    const std::size_t files_before = scanned.size();
    for (std::size_t i = 0; i < scanned.size() && out.refusal_.empty(); ++i) {
      const std::shared_ptr<File> file = scanned[i];
      for (const MacroInclude& include : file->data->scan.macro_includes) {
        std::set<std::string> active;
        const auto candidates = expansions(include.tokens, definitions, 0, active);
        if (!candidates) {
          out.refusal_ = "'" + file->name + "' has a computed include (#include " + include.tokens + ") with too many expansions";
          break;
        }
        for (std::string candidate : *candidates) {
          while (!candidate.empty() && std::isspace(static_cast<unsigned char>(candidate.back()))) candidate.pop_back();
          const bool angle = candidate.size() > 2 && candidate.front() == '<' && candidate.back() == '>';
          const bool quoted = candidate.size() > 2 && candidate.front() == '"' && candidate.back() == '"';
          if (!angle && !quoted) {
            out.refusal_ = "'" + file->name + "' has a computed include (#include " + include.tokens +
                           ") that expands to '" + candidate + "', no header name";
            break;
          }
          IncludeSite site;
          site.kind = include.kind;
          site.angle = angle;
          site.operand = candidate.substr(1, candidate.size() - 2);
          const Resolver::Found found = resolver.resolve(site, *file, false);
          if (!found.file) {
            // NVRTC would look for a quoted name next to the includer, on disk.
            if (quoted) out.refusal_ = "the computed include " + candidate + " in '" + file->name + "' finds nothing";
            continue;
          }
          auto [alias, inserted] = aliases.emplace(site.operand, found.file);
          if (!inserted && alias->second != found.file) {
            out.refusal_ = "the computed include " + candidate + " names different files from different includers";
          }
          reach(found.file);
        }
      }
    }
    grow();
    if (scanned.size() == files_before) break;  // no new file, so no new definition either
  }
  for (const auto& [name, file] : aliases) {
    if (name == file->name) continue;
    for (const auto& other : resolver.disk_files_) {
      if (other->name == name && other != file) out.refusal_ = "the computed include name '" + name + "' is another file's name";
    }
    for (const Header& header : options.headers) {
      if (header.name == name) out.refusal_ = "the computed include name '" + name + "' is an in-memory header's name";
    }
    if (!writable_in_quotes(name)) out.refusal_ = "the computed include name '" + name + "' cannot be written";
    out.aliases_.emplace_back(name, file);
  }
  if (out.refusal_.empty()) out.refusal_ = resolver.refusal;

  // Every operand of every file, now with the wrappers known, rewritten.
  const std::vector<std::string> wrappers = has_include_wrappers(scanned);
  std::vector<std::shared_ptr<File>> all = scanned;
  for (const auto& file : resolver.disk_files_) {
    if (seen.insert(file.get()).second) all.push_back(file);  // found only by __has_include
  }
  for (std::size_t i = 0; i < all.size() && out.refusal_.empty(); ++i) {
    const std::shared_ptr<File> file = all[i];  // a copy: all grows below
    const std::shared_ptr<const IncludeScan> wrapped = wrappers.empty() ? nullptr : file->data->scan_with(wrappers);
    const IncludeScan& used = wrapped ? *wrapped : file->data->scan;
    if (!used.computed.empty()) {
      out.refusal_ = "'" + file->name + "' has a computed include (" + used.computed.front() + ")";
      break;
    }
    if (!used.temporal_macros.empty() && out.uncacheable_.empty()) {
      out.uncacheable_ = "'" + file->name + "' uses " + used.temporal_macros.front();
    }
    file->sites = used.sites;
    file->replacements.clear();
    for (const IncludeSite& site : file->sites) {
      Resolver::Found found = resolver.resolve(site, *file, false);
      if (!found.writable) {
        out.refusal_ = "the operand '" + site.operand + "' in '" + file->name + "' cannot be rewritten";
        break;
      }
      if (found.file && seen.insert(found.file.get()).second) {
        if (user_files.count(found.file.get()) != 0) found.file->data = text_file(found.file->name, found.file->data->content)->data;
        all.push_back(found.file);
      }
      file->replacements.push_back(std::move(found.name));
    }
  }
  if (out.refusal_.empty()) out.refusal_ = resolver.refusal;
  out.reads_disk_ = !resolver.disk_files_.empty();
  for (const auto& file : all) {
    for (const std::string& name : file->replacements) {
      if (name.compare(0, not_found_prefix.size(), not_found_prefix) == 0) out.reads_disk_ = true;
    }
  }
  for (const std::string& option : out.nvrtc_options_) {
    if (option.compare(0, 9 + not_found_prefix.size(), "-include=" + std::string(not_found_prefix)) == 0) {
      out.reads_disk_ = true;
    }
  }
  if (!out.refusal_.empty()) {
    out.reads_disk_ = true;
    return out;
  }
  if (probes != nullptr && resolver.probes_consistent) *probes = std::move(resolver.probes);

  // All files in a fixed order: the program, the caller's headers, then the disk's as found.
  out.files_ = {main};
  out.files_.insert(out.files_.end(), resolver.user_files_.begin(), resolver.user_files_.end());
  out.files_.insert(out.files_.end(), resolver.disk_files_.begin(), resolver.disk_files_.end());
  // An include target that is one of the compile's files is written as "#<its index>;" (the
  // first file of that name), anything else as "<length>:<name>": the names are in the key
  // already, so the two say the same, and a CUB compile's ~6,000 targets stay small (its
  // key and its header stamps record are mostly targets).
  std::unordered_map<std::string_view, std::size_t> index_of;
  for (std::size_t i = 0; i < out.files_.size(); ++i) index_of.try_emplace(out.files_[i]->name, i);
  for (const auto& file : out.files_) {
    out.key_fields_.push_back(file->name);
    // Every file by the digest of its content: a file read from disk has one already, the
    // program and the caller's headers get theirs from the memo (a process keys the same
    // texts again and again: NRT's headers in every KernelBuilder compile).
    out.key_fields_.push_back(file->data->digest.empty() ? content_digest(file->data->content) : file->data->digest);
    std::string targets;
    for (const std::string& name : file->replacements) {
      if (const auto found = index_of.find(name); found != index_of.end()) {
        targets += "#" + std::to_string(found->second) + ";";
      } else {
        targets += std::to_string(name.size()) + ":" + name;
      }
    }
    out.key_fields_.push_back(std::move(targets));
  }
  for (const auto& [name, file] : out.aliases_) {
    out.key_fields_.push_back("alias");
    out.key_fields_.push_back(name);
    out.key_fields_.push_back(file->name);
  }
  return out;
}

// A resolution from header stamps holds the key's fields only; the bytes are read when a
// compile needs them (a miss, or the cache off), by resolving again from the files. That
// resolution must give the very fields the key was made of: a header changed since (or a
// record that lied) would otherwise compile other bytes under the key. Then the record is
// dropped and the compile fails, naming why; the next attempt resolves afresh.
const HermeticInputs& HermeticInputs::materialised() const {
  if (!deferred_) return *this;
  const std::lock_guard<std::mutex> lock(deferred_->mutex);
  if (!deferred_->full) {
    auto full = std::make_shared<HermeticInputs>(
        resolve_reading(Program(deferred_->source, program_name_), base_options_, nullptr));
    if (full->refusal_ != refusal_ || full->uncacheable_ != uncacheable_ || full->key_fields_ != key_fields_ ||
        full->nvrtc_options_ != nvrtc_options_) {
      forget_resolution(deferred_->inputs_key);
      throw Error(ErrorKind::cache, "hermetic compile",
                  "the headers of '" + program_name_ + "' read now differ from their header stamps (a header changed "
                  "while the compile started, or a stamps record was wrong); the record is dropped, compile again");
    }
    deferred_->full = std::move(full);
  }
  return *deferred_->full;
}

Program HermeticInputs::program() const {
  const HermeticInputs& full = materialised();
  return Program(rewritten(*full.files_.front()), program_name_);
}

CompileOptions HermeticInputs::options() const {
  const HermeticInputs& full = materialised();
  CompileOptions options = base_options_;
  options.include_paths.clear();
  options.headers.clear();
  for (std::size_t i = 1; i < full.files_.size(); ++i) {
    options.headers.push_back(Header{full.files_[i]->name, rewritten(*full.files_[i])});
  }
  for (const auto& [name, file] : full.aliases_) options.headers.push_back(Header{name, rewritten(*file)});
  // nvrtc_options() puts -arch, -dlto and -rdc first again: pass the rest.
  const std::vector<std::string> leading = cujit::nvrtc_options(CompileOptions{options.arch, options.target, options.relocatable, {}, {}, {}, {}});
  options.options.clear();
  for (std::size_t i = leading.size(); i < nvrtc_options_.size(); ++i) options.options.push_back(nvrtc_options_[i]);
  return options;
}

bool HermeticInputs::options_name_files(const std::vector<std::string>& options) {
  const ParsedOptions parsed = parse_options(options);
  return !parsed.include_dirs.empty() || !parsed.pre_includes.empty() || !parsed.refusal.empty();
}

std::string HermeticInputs::readable_log(std::string log) {
  for (std::size_t at = log.find(not_found_prefix); at != std::string::npos; at = log.find(not_found_prefix, at)) {
    log.erase(at, not_found_prefix.size());
    const std::size_t quote = log.find('"', at);
    static constexpr std::string_view suffix = "\": Not a directory";
    if (quote != std::string::npos && log.compare(quote, suffix.size(), suffix) == 0) {
      log.replace(quote, suffix.size(), "\" (not found by cujit's include search)");
    }
  }
  return log;
}

std::size_t HermeticInputs::files_read() noexcept { return files_read_count.load(std::memory_order_relaxed); }

std::size_t HermeticInputs::resolutions_from_stamps() noexcept { return resolutions_recalled(); }

}  // namespace cujit::detail
