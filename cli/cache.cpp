// cujit cache: the build cache's statistics, path, or clear. `stats` reads the persistent
// counters of the cache directory (read_cache_counters: what every process using it
// counted, as `ccache -s` shows), with the hit rate of each tier and sizes in binary units;
// --zero sets them to 0 after showing them; --json prints one object (docs/cli.md).
// `explain` prints the recorded explanations of recent misses (CUJIT_CACHE_EXPLAIN=1), and
// `stats` counts them by the field that differed, per build kind.
#include <ctime>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>

#include "byte_units.hpp"
#include "commands.hpp"
#include "cujit/build_cache.hpp"
#include "json_output.hpp"
#include "output.hpp"
#include "read_only_cache.hpp"

namespace cujit::cli {
namespace {

std::string percent(double rate) {
  std::ostringstream text;
  text << std::fixed << std::setprecision(1) << rate * 100.0 << "%";
  return text.str();
}

std::string utc(std::int64_t seconds) {
  const std::time_t time = static_cast<std::time_t>(seconds);
  std::tm parts{};
  ::gmtime_r(&time, &parts);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S UTC", &parts);
  return text;
}

nlohmann::json tier_json(const TierCounters& tier) {
  return {{"hits", tier.hits}, {"misses", tier.misses}, {"hit_rate", tier.hit_rate()}};
}

nlohmann::json remote_json(BuildCache& cache) {
  if (!BuildCache::remote_built_in()) return {{"built_in", false}};
  if (cache.remote_url().empty()) return {{"built_in", true}, {"url", nullptr}};
  std::string why;
  const bool reachable = cache.remote_reachable(&why);
  return {{"built_in", true},
          {"url", cache.remote_url()},
          {"prefix", cache.remote_prefix()},
          {"reachable", reachable},
          {"why_not_reachable", reachable ? nlohmann::json() : nlohmann::json(why)}};
}

nlohmann::json stats_json(BuildCache& cache, const CacheCounters& counters) {
  const CacheConfig& config = cache.config();
  std::vector<std::string> warnings = counters.warnings;
  for (const std::string& warning : cache.warnings()) warnings.push_back(warning);
  return {{"schema", 1},
          {"mode", to_string(config.mode)},
          {"directory", config.directory.string()},
          {"disk_usable", cache.disk_usable()},
          {"max_disk_bytes", config.max_disk_bytes},
          {"max_memory_bytes", config.max_memory_bytes},
          {"entries", counters.entries},
          {"bytes", counters.bytes},
          {"tiers",
           {{"memo", tier_json(counters.memo)},
            {"memory", tier_json(counters.memory)},
            {"disk", tier_json(counters.disk)},
            {"remote", tier_json(counters.remote)}}},
          {"hit_rate", counters.hit_rate()},
          {"builds", counters.builds},
          {"stores", counters.stores},
          {"evictions", counters.evictions},
          {"corrupt_entries", counters.corrupt_entries},
          {"remote_unverified", counters.remote_unverified},
          {"remote_waits", counters.remote_waits},
          {"remote_lock_timeouts", counters.remote_lock_timeouts},
          {"remote_errors", counters.remote_errors},
          {"remote_wait_ms", counters.remote_wait_ms},
          // Every way a Redis call or value failed, one count each (remote_errors is "unavailable").
          {"remote_errors_by_kind",
           {{"unavailable", counters.remote_errors},
            {"skipped", counters.remote_skipped},
            {"corrupt", counters.remote_corrupt},
            {"unverified", counters.remote_unverified},
            {"write_refused", counters.remote_write_failures},
            {"forbidden", counters.remote_forbidden}}},
          {"remote_repairs", counters.remote_repairs},
          {"remote_bytes_saved", counters.remote_bytes_saved},
          {"process_waits", counters.process_waits},
          {"process_wait_ms", counters.process_wait_ms},
          {"lock_timeouts", counters.lock_timeouts},
          {"zeroed_at", counters.zeroed_at != 0 ? nlohmann::json(counters.zeroed_at) : nlohmann::json()},
          {"remote", remote_json(cache)},
          {"warnings", warnings}};
}

nlohmann::json miss_json(const MissExplanation& miss) {
  nlohmann::json differences = nlohmann::json::array();
  for (const FieldDifference& difference : miss.differences) {
    differences.push_back({{"field", difference.field}, {"change", difference.change}, {"text", difference.text},
                           {"category", difference.category()}});
  }
  return {{"time", miss.time},
          {"kind", miss.kind},
          {"name", miss.name},
          {"key", miss.digest},
          {"nearest", miss.nearest.empty() ? nlohmann::json() : nlohmann::json(miss.nearest)},
          {"nearest_tier", miss.nearest.empty() ? nlohmann::json() : nlohmann::json(miss.nearest_tier)},
          {"differences", differences},
          {"text", miss.text()}};
}

// Explained misses counted per build kind by what differed: each miss counts once under
// each category it names ("options added"), "no candidate" or "entry gone".
nlohmann::json misses_by_field(const std::vector<MissExplanation>& misses) {
  nlohmann::json out = nlohmann::json::object();
  for (const MissExplanation& miss : misses) {
    std::set<std::string> categories;
    if (miss.nearest.empty()) categories.insert("no candidate");
    if (!miss.nearest.empty() && miss.differences.empty()) categories.insert("entry gone");
    for (const FieldDifference& difference : miss.differences) categories.insert(difference.category());
    for (const std::string& category : categories) {
      nlohmann::json& count = out[miss.kind][category];
      count = count.is_null() ? 1 : count.get<std::uint64_t>() + 1;
    }
  }
  return out;
}

void print_stats(const nlohmann::json& stats) {
  std::cout << "cache directory: " << stats["directory"].get<std::string>() << " (mode "
            << stats["mode"].get<std::string>() << (stats["disk_usable"].get<bool>() ? "" : ", disk tier not used")
            << ")\n";
  std::cout << "counted since:   "
            << (stats["zeroed_at"].is_null() ? std::string("the directory's first use")
                                             : "zeroed " + utc(stats["zeroed_at"].get<std::int64_t>()))
            << "\n";
  for (const char* tier : {"memo", "memory", "disk", "remote"}) {
    const auto& counts = stats["tiers"][tier];
    std::cout << std::left << std::setw(8) << tier << std::right << std::setw(10) << counts["hits"].get<std::uint64_t>()
              << " hits " << std::setw(10) << counts["misses"].get<std::uint64_t>() << " misses  hit rate "
              << percent(counts["hit_rate"].get<double>()) << "\n";
  }
  std::cout << "builds:          " << stats["builds"].get<std::uint64_t>() << " (overall hit rate "
            << percent(stats["hit_rate"].get<double>()) << ")\n"
            << "stores:          " << stats["stores"].get<std::uint64_t>() << ", evictions "
            << stats["evictions"].get<std::uint64_t>() << ", unsound entries dropped "
            << stats["corrupt_entries"].get<std::uint64_t>() << ", remote values refused (no trusted signature) "
            << stats["remote_unverified"].get<std::uint64_t>() << "\n"
            << "entries:         " << stats["entries"].get<std::uint64_t>() << ", "
            << human_bytes(stats["bytes"].get<std::uint64_t>()) << " of "
            << human_bytes(stats["max_disk_bytes"].get<std::uint64_t>()) << " (CUJIT_CACHE_MAX_BYTES)\n"
            << "memory cap:      " << human_bytes(stats["max_memory_bytes"].get<std::uint64_t>())
            << " (CUJIT_CACHE_MEMORY_BYTES)\n";
  const auto& remote = stats["remote"];
  std::cout << "remote:          ";
  if (!remote["built_in"].get<bool>()) {
    std::cout << "not built in (this cujit was built without hiredis)\n";
  } else if (remote["url"].is_null()) {
    std::cout << "none (CUJIT_CACHE_REMOTE=redis://[[user]:password@]host[:port][/db])\n";
  } else {
    std::cout << remote["url"].get<std::string>() << ", keys " << remote["prefix"].get<std::string>() << "*, "
              << (remote["reachable"].get<bool>() ? std::string("reachable")
                                                  : "not reachable: " + remote["why_not_reachable"].get<std::string>())
              << "\n";
  }
  const auto counted = [&](const char* name) { return stats[name].get<std::uint64_t>(); };
  std::cout << "processes:       " << counted("process_waits") << " waits for another process's build ("
            << counted("process_wait_ms") << " ms), " << counted("lock_timeouts") << " gave up (lock timeout)\n";
  std::cout << "fleet:           " << counted("remote_waits") << " waits for another machine's build ("
            << counted("remote_wait_ms") << " ms), " << counted("remote_lock_timeouts") << " gave up (lock timeout), "
            << counted("remote_repairs") << " bad values repaired, " << human_bytes(counted("remote_bytes_saved"))
            << " saved by compression\n";
  const auto& errors = stats["remote_errors_by_kind"];
  std::cout << "Redis errors:    " << errors["unavailable"].get<std::uint64_t>() << " unavailable (down, timed out), "
            << errors["skipped"].get<std::uint64_t>() << " calls skipped in back-off, "
            << errors["corrupt"].get<std::uint64_t>() << " unsound values, " << errors["unverified"].get<std::uint64_t>()
            << " failed verification, " << errors["write_refused"].get<std::uint64_t>() << " writes refused, "
            << errors["forbidden"].get<std::uint64_t>() << " writes forbidden (NOPERM)\n";
  std::cout << "explained misses: " << stats["explained_misses"].get<std::uint64_t>()
            << " (CUJIT_CACHE_EXPLAIN=1; `cujit cache explain` shows them)\n";
  for (const auto& [kind, categories] : stats["misses_by_field"].items()) {
    for (const auto& [category, count] : categories.items()) {
      std::cout << "  " << std::left << std::setw(22) << kind << std::setw(28) << category << std::right
                << count.get<std::uint64_t>() << "\n";
    }
  }
  for (const auto& warning : stats["warnings"]) std::cout << "warning: " << warning.get<std::string>() << "\n";
}

}  // namespace

int cache(const CacheOptions& options) {
  if (!options.key.empty() && options.action != "explain") {
    throw CliError("cache " + options.action + ": a KEY goes with `cache explain`");
  }
  if (options.zero && options.action != "stats") {
    throw CliError("cache " + options.action + ": --zero goes with `cache stats`");
  }
  // `stats` and `path` only read: they create no directory (read_only_cache.hpp).
  const bool read_only = options.action != "clear" && !options.zero;
  ReadOnlyCache opened;
  if (read_only) open_read_only_cache(opened);
  const bool missing = read_only && opened.directory_missing;
  BuildCache& cache = read_only ? opened.cache() : BuildCache::global();
  const CacheConfig& configured = read_only ? opened.configured : cache.config();
  const std::string directory = configured.directory.string();
  if (options.action == "path") {
    if (options.json) {
      print_json({{"schema", 1}, {"directory", directory}});
    } else {
      std::cout << directory << "\n";
    }
    return exit_ok;
  }
  if (options.action == "explain") {
    // The log is read whole (it is bounded: explain/misses.log and one older file).
    std::vector<MissExplanation> misses = read_miss_log(configured.directory, static_cast<std::size_t>(-1));
    if (!options.key.empty()) {
      std::erase_if(misses, [&](const MissExplanation& miss) { return miss.digest.rfind(options.key, 0) != 0; });
    }
    if (misses.size() > options.last) misses.erase(misses.begin(), misses.end() - static_cast<std::ptrdiff_t>(options.last));
    if (options.json) {
      nlohmann::json list = nlohmann::json::array();
      for (const MissExplanation& miss : misses) list.push_back(miss_json(miss));
      print_json({{"schema", 1}, {"directory", directory}, {"misses", list}});
    } else if (misses.empty()) {
      std::cout << "no explained misses in " << directory
                << (options.key.empty() ? "" : " for key " + options.key) << " (run with CUJIT_CACHE_EXPLAIN=1)\n";
    } else {
      for (const MissExplanation& miss : misses) {
        std::cout << utc(miss.time) << "  " << miss.digest.substr(0, 16) << "  " << miss.text() << "\n";
      }
    }
    return exit_ok;
  }
  if (options.action == "clear") {
    const std::size_t removed = cache.clear();
    if (options.json) {
      print_json({{"schema", 1}, {"directory", directory}, {"removed", removed}});
    } else {
      std::cout << "removed " << removed << " entries from " << directory << "\n";
    }
    return exit_ok;
  }
  nlohmann::json stats = stats_json(cache, missing ? CacheCounters{} : read_cache_counters(cache.config().directory));
  if (missing) {
    stats["mode"] = to_string(configured.mode);
    stats["warnings"].push_back("the cache directory " + directory +
                                " does not exist: nothing is cached there yet (cache stats creates nothing)");
  }
  const std::vector<MissExplanation> misses =
      missing ? std::vector<MissExplanation>{} : read_miss_log(configured.directory, static_cast<std::size_t>(-1));
  stats["explained_misses"] = misses.size();
  stats["misses_by_field"] = misses_by_field(misses);
  if (options.zero) {
    zero_cache_counters(cache.config().directory);
    // The counts of misses by field come from the misses log: zeroed with the rest.
    std::error_code ignored;
    for (const char* file : {"misses.log", "misses.log.1"}) {
      std::filesystem::remove(cache.config().directory / "explain" / file, ignored);
    }
  }
  stats["zeroed"] = options.zero;
  if (options.json) {
    print_json(stats);
  } else {
    print_stats(stats);
    if (options.zero) std::cout << "zeroed the counters of " << directory << " (entries kept)\n";
  }
  return exit_ok;
}

}  // namespace cujit::cli
