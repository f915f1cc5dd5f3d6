// The differential stale-code fuzzer (issue 25): a search for builds the cache serves that
// a fresh build would not produce. It grows a program with an include tree over several
// directories (symbolic links, quoted and angle includes, `#include_next`, `__has_include`,
// `%:include`, a spliced directive, a pre-include, macros from options) and applies one
// random change per step: edit, add, remove or rename a header, retarget a symbolic link,
// edit and restore a file's mtime, change the working directory, reorder or respell the
// options, set an environment variable. After each step the compile runs with the cache
// off and through the cache: a cache held for the whole run (memory tier, file memo), a
// fresh cache on the same directory (disk tier), every few steps a new process, and a
// KernelBuilder linking the program (the in-process memo). The bytes must be identical, or
// every side must fail with the same error kind. Each miss it causes is explained
// (issue 30): the explanation must name only fields the step's change can change, and be
// at least as near as the previous step's recipe, which that step stored.
//
// CUJIT_STALE_FUZZ_SEED (default: from the clock, printed), CUJIT_STALE_FUZZ_STEPS (default 2000) and
// CUJIT_STALE_FUZZ_SECONDS (a budget; the run stops early when it is spent, after at least 200
// steps) set a run. A failure prints the seed, the step and every change so far: replaying
// the seed reproduces it, and the case becomes a StaleCodeRegression test.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "cache/miss_explainer.hpp"
#include "compile/header_stamps.hpp"
#include "compile/hermetic_inputs.hpp"
#include "cujit/compile_cache.hpp"
#include "cujit/error.hpp"
#include "cujit/kernel_builder.hpp"
#include "support/cache_helpers.hpp"
#include "support/child_process.hpp"
#include "support/fixtures.hpp"
#include "support/scoped_variable.hpp"

namespace cujit {
namespace {

namespace fs = std::filesystem;

constexpr const char* program_text =
    "%:if __has_include(\"a.h\")\n%:include \"a.h\"\n#endif\n#ifndef A_V\n#define A_V 0\n#endif\n"
    "#if __has_include(<b.h>)\n#inc\\\nlude <b.h>\n#endif\n"
    "#if __has_include(\"sub/c.h\")\n#include \"sub/c.h\"\n#endif\n"
    "#if __has_include(\"opt.h\")\n#  include \"opt.h\"\n#endif\n"
    "#if __has_include(<n.h>)\n#include <n.h>\n#endif\n"
    "#ifndef B_V\n#define B_V 0\n#endif\n#ifndef C_V\n#define C_V 0\n#endif\n"
    "#ifndef D_V\n#define D_V 0\n#endif\n#ifndef O_V\n#define O_V 0\n#endif\n"
    "#ifndef N_V\n#define N_V 0\n#endif\n#ifndef M_V\n#define M_V 0\n#endif\n"
    "#ifndef P_V\n#define P_V 0\n#endif\n#ifndef SEL\n#define SEL 0\n#endif\n"
    "extern \"C\" __device__ int fuzz_value(int i) {\n"
    "  const int v[9] = {A_V, B_V, C_V, D_V, O_V, N_V, M_V, P_V, SEL};\n"
    "  return v[i];\n}\n"
    "extern \"C\" __global__ void k(int* o) { for (int i = 0; i < 9; ++i) o[i] = fuzz_value(i); }\n";

// Where headers may live, relative to the world's root, and the names they may have.
const std::vector<std::string> places{"cwd1", "cwd2", "inc1", "inc2", "inc3", "real", "real/sub"};
const std::vector<std::string> names{"a.h", "b.h", "sub/c.h", "c.h", "d.h", "opt.h", "n.h", "pre.h"};

std::optional<int> env_int(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::atoi(value);
}

class World {
 public:
  World(const fs::path& root, unsigned seed) : root_(root), random_(seed) {
    for (const std::string& place : places) fs::create_directories(root_ / place);
    fs::create_directory_symlink(root_ / "inc2", root_ / "link");
    fs::create_directory_symlink(root_ / "real/sub", root_ / "inc1/sub");
    write("inc1/a.h", "#define A_V 1\n");
    write("inc2/b.h", "#define B_V 2\n");
    write("real/sub/c.h", "#if __has_include(\"../d.h\")\n#include \"../d.h\"\n#endif\n#define C_V 3\n");
    write("real/d.h", "#define D_V 4\n");
    write("inc1/n.h", "#if __has_include_next(<n.h>)\n#include_next <n.h>\n#endif\n#define M_V 5\n");
    write("inc3/n.h", "#define N_V 6\n");
    write("cwd1/pre.h", "#define P_V 7\n");
    write("inc3/pre.h", "#define P_V 8\n");
    write("inc3/a.h", "#define A_V 9\n");
    fs::create_directories(root_ / "program");
    source_ = root_ / "program" / "k.cu";
    std::ofstream(source_) << program_text;
    dirs_ = {{"inc1", 0}, {"link", 0}, {"inc3", 0}};
  }

  // One random change; returns what it did. A change the world refuses (a header below a
  // dangling symbolic link) is skipped and said so.
  std::string mutate() {
    try {
      return change();
    } catch (const fs::filesystem_error& error) {
      return std::string("skipped: ") + error.what();
    }
  }

  std::string change() {
    switch (pick(10)) {
      case 0: return edit(false);
      case 1: return edit(true);
      case 2: return add();
      case 3: return remove();
      case 4: return rename();
      case 5: return retarget();
      case 6: cwd_ = cwd_ == "cwd1" ? "cwd2" : "cwd1"; return "working directory " + cwd_;
      case 7: return options_change();
      case 8: return environment();
      default: return edit(false);
    }
  }

  std::vector<std::string> options() const {
    std::vector<std::string> out;
    for (const auto& [dir, spelling] : dirs_) {
      const std::string path = dir == "relative-inc2" ? "../inc2" : (root_ / dir).string();
      if (spelling == 0) out.push_back("-I" + path);
      if (spelling == 1) out.insert(out.end(), {"-I", path});
      if (spelling == 2) out.push_back("--include-path=" + path);
    }
    if (select_ != 0) out.push_back("-DSEL=" + std::to_string(select_));
    if (pre_include_ == 1) out.push_back("-include=pre.h");
    if (pre_include_ == 2) out.insert(out.end(), {"-include", "pre.h"});
    return out;
  }

  fs::path cwd() const { return root_ / cwd_; }
  const fs::path& source() const { return source_; }
  // The program's name as the compile sees it: relative, so its quoted includes look in
  // the working directory.
  static std::string program_name() { return "k.cu"; }

  std::string describe() const {
    std::ostringstream out;
    out << "working directory " << cwd_ << "; options:";
    for (const std::string& option : options()) out << " " << option;
    out << "\nfiles:\n";
    for (auto it = fs::recursive_directory_iterator(root_); it != fs::recursive_directory_iterator(); ++it) {
      const fs::path relative = fs::relative(it->path(), root_);
      if (relative.string().rfind("cache", 0) == 0 || relative.string().rfind("program", 0) == 0) continue;
      if (it->is_symlink()) {
        out << "  " << relative.string() << " -> " << fs::read_symlink(it->path()).string() << "\n";
        if (it->is_directory()) it.disable_recursion_pending();
      } else if (it->is_regular_file()) {
        out << "  " << relative.string() << ": " << test::read_bytes(it->path());
      }
    }
    return out.str();
  }

 private:
  std::size_t pick(std::size_t n) { return std::uniform_int_distribution<std::size_t>(0, n - 1)(random_); }

  void write(const std::string& relative, const std::string& text) {
    fs::create_directories((root_ / relative).parent_path());
    std::ofstream(root_ / relative, std::ios::trunc) << text;
  }

  // Few values, so that states recur and the cache has earlier builds to (wrongly) serve.
  std::string content_for(const std::string& name) {
    const int value = static_cast<int>(pick(3));
    if (name == "sub/c.h" || name == "c.h") {
      return (pick(2) ? "#if __has_include(\"../d.h\")\n#include \"../d.h\"\n#endif\n" : "") + std::string("#define C_V ") + std::to_string(value) + "\n";
    }
    if (name == "n.h") {
      return pick(2) ? "#if __has_include_next(<n.h>)\n#include_next <n.h>\n#endif\n#define M_V " + std::to_string(value) + "\n"
                     : "#define N_V " + std::to_string(value) + "\n";
    }
    std::string macro = name.substr(0, 1) == "o" ? "O_V" : name.substr(0, 1) == "p" ? "P_V" : std::string(1, static_cast<char>(std::toupper(name[0]))) + "_V";
    return "#define " + macro + " " + std::to_string(value) + "\n";
  }

  std::vector<fs::path> headers() const {
    std::vector<fs::path> found;
    for (const std::string& place : places) {
      for (const auto& entry : fs::recursive_directory_iterator(root_ / place)) {
        if (entry.is_regular_file() && !entry.is_symlink()) found.push_back(entry.path());
      }
    }
    return found;
  }

  std::string edit(bool keep_mtime) {
    const std::vector<fs::path> all = headers();
    if (all.empty()) return add();
    const fs::path path = all[pick(all.size())];
    struct stat before {};
    ::stat(path.c_str(), &before);
    const std::string name = path.filename().string();
    std::ofstream(path, std::ios::trunc) << content_for(name == "c.h" && path.parent_path().filename() == "sub" ? "sub/c.h" : name);
    if (keep_mtime) {
      const timespec times[2] = {before.st_atim, before.st_mtim};
      ::utimensat(AT_FDCWD, path.c_str(), times, 0);
    }
    return std::string(keep_mtime ? "edit, mtime restored, " : "edit ") + fs::relative(path, root_).string();
  }

  std::string add() {
    const std::string place = places[pick(places.size())];
    const std::string name = names[pick(names.size())];
    write(place + "/" + name, content_for(name));
    return "add " + place + "/" + name;
  }

  std::string remove() {
    const std::vector<fs::path> all = headers();
    if (all.empty()) return add();
    const fs::path path = all[pick(all.size())];
    fs::remove(path);
    return "remove " + fs::relative(path, root_).string();
  }

  std::string rename() {
    const std::vector<fs::path> all = headers();
    if (all.empty()) return add();
    const fs::path from = all[pick(all.size())];
    const fs::path to = root_ / places[pick(places.size())] / from.filename();
    fs::rename(from, to);
    return "rename " + fs::relative(from, root_).string() + " to " + fs::relative(to, root_).string();
  }

  std::string retarget() {
    const bool link = pick(2) == 0;
    const fs::path at = link ? root_ / "link" : root_ / "inc1/sub";
    const std::vector<std::string> targets = link ? std::vector<std::string>{"inc2", "inc3", "real", "missing"}
                                                  : std::vector<std::string>{"real/sub", "inc3", "real", "missing"};
    const std::string target = targets[pick(targets.size())];
    fs::remove(at);
    fs::create_directory_symlink(root_ / target, at);
    return "symlink " + fs::relative(at, root_).string() + " -> " + target;
  }

  std::string options_change() {
    switch (pick(5)) {
      case 0:
        if (dirs_.size() > 1) {
          const std::size_t i = pick(dirs_.size() - 1);
          std::swap(dirs_[i], dirs_[i + 1]);
        }
        return "reorder include directories";
      case 1: {
        auto& dir = dirs_[pick(dirs_.size())];
        dir.second = (dir.second + 1) % 3;
        return "respell -I " + dir.first;
      }
      case 2:
        if (dirs_.size() < 5 && pick(2)) {
          const std::vector<std::string> extra{"inc2", "real", "relative-inc2", "cwd2"};
          dirs_.emplace_back(extra[pick(extra.size())], static_cast<int>(pick(3)));
          return "add include directory " + dirs_.back().first;
        }
        if (dirs_.size() > 1) dirs_.erase(dirs_.begin() + static_cast<long>(pick(dirs_.size())));
        return "drop an include directory";
      case 3: select_ = static_cast<int>(pick(4)); return "-DSEL=" + std::to_string(select_);
      default: pre_include_ = static_cast<int>(pick(3)); return "pre-include " + std::to_string(pre_include_);
    }
  }

  std::string environment() {
    const char* name = pick(2) ? "CUDA_CACHE_DISABLE" : "CUJIT_FUZZ_NOISE";
    if (pick(2)) {
      ::setenv(name, std::to_string(pick(2)).c_str(), 1);
      return std::string("set ") + name;
    }
    ::unsetenv(name);
    return std::string("unset ") + name;
  }

  fs::path root_;
  std::mt19937 random_;
  fs::path source_;
  std::string cwd_ = "cwd1";
  std::vector<std::pair<std::string, int>> dirs_;  // include directory, spelling
  int select_ = 0;
  int pre_include_ = 0;
};

// What a compile gave: its bytes, or the kind of its failure.
struct Outcome {
  std::string bytes;
  std::string failure;  // empty on success
  std::string message;  // the error, for the log; not compared
  bool operator==(const Outcome& other) const { return bytes == other.bytes && failure == other.failure; }
};

std::string show(const Outcome& outcome) {
  return outcome.failure.empty() ? std::to_string(outcome.bytes.size()) + " bytes" : "failed " + outcome.failure;
}

Outcome compile_with(BuildCache& cache, const std::vector<std::string>& options, const std::string& source) {
  CompileOptions compile;
  compile.arch = Arch::parse("sm_90");
  compile.options = options;
  try {
    return {compile_cached(Program(source, World::program_name()), compile, cache).result.code.bytes(), {}, {}};
  } catch (const Error& error) {
    return {{}, std::string(to_string(error.kind())), error.what()};
  }
}

Outcome link_with(BuildCache& cache, const std::vector<std::string>& options, const std::string& source) {
  KernelOptions kernel;
  kernel.link.arch = Arch::parse("sm_90");
  kernel.link.compile.options = options;
  try {
    KernelBuilder builder("kk", kernel, cache);
    builder.source(LinkableCode::cuda_source(
        "extern \"C\" __device__ int fuzz_value(int);\n"
        "extern \"C\" __global__ void kk(int* o) { for (int i = 0; i < 9; ++i) o[i] = fuzz_value(i); }\n", "kk.cu"));
    builder.link(LinkableCode::cuda_source(source, World::program_name()));
    return {builder.link_cubin().link.code.bytes(), {}, {}};
  } catch (const Error& error) {
    return {{}, std::string(to_string(error.kind())), error.what()};
  }
}

// Whether a change of this kind (World::mutate's words) can change the recipe field of
// this category: files resolve anew after any change of files, directories or options; the
// options (which name resolved pre-includes) after a change of options or directory.
bool change_can_touch(const std::string& change, const std::string& category, bool pre_include) {
  const auto starts = [&](const char* prefix) { return change.rfind(prefix, 0) == 0; };
  if (category.rfind("files ", 0) == 0) return !starts("set ") && !starts("unset ") && !starts("skipped");
  if (category.rfind("options ", 0) == 0) {
    const bool option_change = starts("reorder include") || starts("respell") || starts("add include directory") ||
                               starts("drop an include") || starts("-DSEL") || starts("pre-include");
    return option_change || ((starts("working directory") || starts("edit") || starts("add ") || starts("remove") ||
                              starts("rename") || starts("symlink")) && pre_include);
  }
  return false;  // the toolkit, the name, the target: the fuzzer never changes them
}

Outcome in_new_process(const fs::path& cache, const World& world) {
  const fs::path out = cache.parent_path() / "child.out";
  std::vector<std::string> args{CUJIT_CACHE_CHILD, "compile-file", cache.string(), out.string(),
                                world.cwd().string(), world.source().string(), World::program_name()};
  const std::vector<std::string> options = world.options();
  args.insert(args.end(), options.begin(), options.end());
  const test::ChildResult child = test::run_child(args);
  std::string last = child.output;
  while (!last.empty() && (last.back() == '\n' || last.back() == '\r')) last.pop_back();
  last = last.substr(last.rfind('\n') == std::string::npos ? 0 : last.rfind('\n') + 1);
  if (child.exit_code != 0) return {{}, "child exit " + std::to_string(child.exit_code), child.output};
  if (last.rfind("failed ", 0) == 0) return {{}, last.substr(7), child.output};
  return {test::read_bytes(out), {}, {}};
}

TEST(StaleCodeFuzz, TheCacheServesWhatAFreshBuildProduces) {
  const unsigned seed = static_cast<unsigned>(
      env_int("CUJIT_STALE_FUZZ_SEED").value_or(static_cast<int>(std::random_device{}() & 0x7fffffff)));
  const int steps = env_int("CUJIT_STALE_FUZZ_STEPS").value_or(2000);
  const int seconds = env_int("CUJIT_STALE_FUZZ_SECONDS").value_or(600);
  constexpr int child_every = 20, builder_every = 10, minimum_steps = 200;
  std::printf("stale-code fuzz: seed %u, %d steps, budget %d s (replay with CUJIT_STALE_FUZZ_SEED=%u)\n", seed, steps,
              seconds, seed);
  RecordProperty("seed", std::to_string(seed));

  test::TempDir dir;
  // Header stamps of the run's own (the new processes inherit it): every resolution whose
  // probes still hold is answered from a record, in this process and in the new ones, so
  // each change is also a change under remembered stamps (compile/header_stamps.hpp).
  const test::ScopedVariable stamps("CUJIT_HEADER_STAMPS", (dir.path() / "stamps").string());
  const std::size_t stamps_recalled = detail::HermeticInputs::resolutions_from_stamps();
  const std::size_t stamps_stored = detail::resolutions_stored();
  World world(dir.path(), seed);
  const fs::path cache_dir = dir.path() / "cache";
  // The held cache explains each miss as it happens (CUJIT_CACHE_EXPLAIN's path: a line of
  // the misses log), before the build stores the key's own recipe.
  CacheConfig held_config = test::disk_cache_at(cache_dir);
  held_config.explain = true;
  BuildCache held(held_config);
  const std::string source = test::read_bytes(world.source());
  const fs::path before = fs::current_path();
  const auto started = std::chrono::steady_clock::now();
  std::vector<std::string> history;
  int step = 0, children = 0, builders = 0, hits = 0, failures = 0, explained = 0;
  std::optional<CacheKey> stored_last;  // the key the previous step built and stored
  std::string first_failure;
  for (; step < steps; ++step) {
    if (step >= minimum_steps && std::chrono::steady_clock::now() - started > std::chrono::seconds(seconds)) break;
    if (step > 0) history.push_back(world.mutate());
    fs::current_path(world.cwd());
    const std::vector<std::string> options = world.options();
    const Outcome fresh = compile_with(BuildCache::disabled(), options, source);
    failures += fresh.failure.empty() ? 0 : 1;
    if (!fresh.failure.empty() && first_failure.empty()) first_failure = "step " + std::to_string(step) + ": " + fresh.message;
    bool stale = false;
    std::vector<std::pair<std::string, Outcome>> cached;
    const std::uint64_t held_hits = held.stats().memory_hits + held.stats().disk_hits;
    const std::uint64_t held_builds = held.stats().builds;
    cached.emplace_back("held cache", compile_with(held, options, source));
    hits += held.stats().memory_hits + held.stats().disk_hits > held_hits ? 1 : 0;
    {
      // Explain the held cache's miss, if this step caused one (a hermetic compile built).
      CompileOptions compile;
      compile.arch = Arch::parse("sm_90");
      compile.options = options;
      const CacheKey key = compile_key(Program(source, World::program_name()), compile);
      const std::vector<MissExplanation> logged = read_miss_log(cache_dir, 1);
      const std::optional<MissExplanation> why =
          logged.empty() ? std::nullopt : std::optional<MissExplanation>(logged.back());
      const bool missed = held.stats().builds > held_builds && why && why->digest == key.digest();
      if (missed && fresh.failure.empty() && stored_last && step > 0) {
        ++explained;
        const std::vector<FieldDifference> since_last =
            detail::compare_recipes(key.recipe(), {stored_last->digest(), stored_last->recipe(), false});
        bool pre_include = false;
        for (const std::string& option : options) pre_include = pre_include || option.rfind("-include", 0) == 0;
        for (const FieldDifference& difference : since_last) {
          if (!change_can_touch(history.back(), difference.category(), pre_include)) {
            ADD_FAILURE() << "seed " << seed << ", step " << step << ": the change '" << history.back()
                          << "' is explained by " << difference.category() << ": " << difference.text;
          }
        }
        if (why->nearest.empty()) {
          ADD_FAILURE() << "seed " << seed << ", step " << step << ": no candidate, though the previous step stored "
                        << stored_last->digest();
        } else if (why->differences.size() > since_last.size() || (since_last.empty() != why->differences.empty())) {
          ADD_FAILURE() << "seed " << seed << ", step " << step << ": the nearest recipe is farther than the previous "
                        << "step's (" << why->differences.size() << " fields, " << since_last.size() << "): " << why->text();
        }
      }
      // The next step compares with this one only if this one stored its recipe (a hit, a
      // failure or a compile that is not hermetic leaves none to compare with).
      if (missed && fresh.failure.empty()) {
        stored_last = key;
      } else {
        stored_last.reset();
      }
    }
    {
      BuildCache fresh_cache(test::disk_cache_at(cache_dir));
      cached.emplace_back("new cache on the same directory", compile_with(fresh_cache, options, source));
    }
    if (step % child_every == 0) {
      cached.emplace_back("new process", in_new_process(cache_dir, world));
      ++children;
    }
    if (step % builder_every == 0) {
      const Outcome linked_fresh = link_with(BuildCache::disabled(), options, source);
      const Outcome linked = link_with(held, options, source);
      ++builders;
      if (!(linked == linked_fresh)) {
        stale = true;
        ADD_FAILURE() << "seed " << seed << ", step " << step << ": KernelBuilder through the cache gave "
                      << show(linked) << ", a fresh build " << show(linked_fresh);
      }
    }
    fs::current_path(before);
    for (const auto& [side, outcome] : cached) {
      if (!(outcome == fresh)) {
        stale = true;
        ADD_FAILURE() << "seed " << seed << ", step " << step << ": the " << side << " gave " << show(outcome)
                      << ", a fresh build " << show(fresh) << "\n" << outcome.message << "\n" << fresh.message;
      }
    }
    if (stale) {
      std::string changes;
      for (std::size_t i = 0; i < history.size(); ++i) changes += "  " + std::to_string(i + 1) + ". " + history[i] + "\n";
      ADD_FAILURE() << "changes so far:\n" << changes << world.describe();
      break;
    }
  }
  fs::current_path(before);
  ::unsetenv("CUDA_CACHE_DISABLE");
  ::unsetenv("CUJIT_FUZZ_NOISE");
  std::printf("stale-code fuzz: seed %u: %d steps (%d new processes, %d KernelBuilder links), %d held-cache hits, "
              "%d steps where the fresh build failed, %d misses explained, %.1f s\n",
              seed, step, children, builders, hits, failures, explained,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  std::printf("stale-code fuzz: header stamps: %zu resolutions recalled, %zu records stored in this process\n",
              detail::HermeticInputs::resolutions_from_stamps() - stamps_recalled,
              detail::resolutions_stored() - stamps_stored);
  if (!first_failure.empty()) std::printf("stale-code fuzz: the first failing fresh build, %s\n", first_failure.c_str());
  RecordProperty("steps", step);
  EXPECT_GE(step, std::min(steps, minimum_steps));
  // A fuzzer that never hits or never fails explores nothing: both must happen.
  EXPECT_GT(hits, 0);
  EXPECT_LT(failures, step);
}

}  // namespace
}  // namespace cujit
