#include "shard_record.hpp"

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cujit/cache_key.hpp"
#include "output.hpp"

namespace cujit::cli {
namespace {

// A decimal of digits only, at most `max`, or -1.
int bounded_decimal(const std::string& text, int max) {
  if (text.empty() || text.size() > 9) return -1;
  int value = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') return -1;
    value = value * 10 + (c - '0');
  }
  return value <= max ? value : -1;
}

bool sixteen_hex(const std::string& text) {
  if (text.size() != 16) return false;
  for (const char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

std::string joined(const std::vector<std::string>& items) {
  std::string text;
  for (const std::string& item : items) text += (text.empty() ? "" : ", ") + item;
  return text;
}

}  // namespace

bool valid_area_name(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  for (const char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

Shard parse_shard(const std::string& text) {
  const std::size_t slash = text.find('/');
  const int index = slash == std::string::npos ? -1 : bounded_decimal(text.substr(0, slash), max_shards);
  const int total = slash == std::string::npos ? -1 : bounded_decimal(text.substr(slash + 1), max_shards);
  if (index < 0 || total < 1 || index >= total) {
    throw CliError("conformance: --shard " + shown(text) + ": expected I/N with 0 <= I < N <= " +
                   std::to_string(max_shards) + " (I counts from 0, as GTEST_SHARD_INDEX)");
  }
  return Shard{index, total};
}

int ShardRecord::passed() const {
  int n = 0;
  for (const AreaRecord& area : areas) n += area.passed;
  return n;
}
int ShardRecord::failed() const {
  int n = 0;
  for (const AreaRecord& area : areas) n += area.failed;
  return n;
}
int ShardRecord::skipped() const {
  int n = 0;
  for (const AreaRecord& area : areas) n += area.skipped;
  return n;
}

std::string to_json(const ShardRecord& record) {
  nlohmann::json areas = nlohmann::json::array();
  for (const AreaRecord& area : record.areas) {
    areas.push_back({{"name", area.name}, {"passed", area.passed}, {"failed", area.failed},
                     {"skipped", area.skipped}, {"crashed", area.crashed}, {"selected", area.selected},
                     {"ran", area.ran}});
  }
  const nlohmann::json json = {
      {"schema", record.schema},
      {"shard", {{"index", record.shard.index}, {"total", record.shard.total}}},
      {"finished", record.finished},
      {"verdict", record.verdict},
      {"run",
       {{"filter", record.run.filter},
        {"require_gpu", record.run.require_gpu},
        {"source_digest", record.run.source_digest},
        {"suites", record.run.suites}}},
      {"passed", record.passed()},
      {"failed", record.failed()},
      {"skipped", record.skipped()},
      {"areas_requested", record.areas_requested},
      {"devices", record.devices},
      {"areas", areas},
  };
  // Replacement characters rather than an exception for a device name that is not UTF-8.
  return json.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

ShardRecord parse_shard_record(const std::string& text, const std::string& where) {
  auto bad = [&](const std::string& why) { return CliError(shown(where) + ": " + why); };
  const nlohmann::json json = nlohmann::json::parse(text, nullptr, false);
  if (json.is_discarded() || !json.is_object()) throw bad("not a JSON object");
  try {
    ShardRecord record;
    record.schema = json.at("schema").get<int>();
    if (record.schema != shard_record_schema) {
      throw bad("schema " + std::to_string(record.schema) + ", this cujit reads schema " +
                std::to_string(shard_record_schema));
    }
    record.shard.index = json.at("shard").at("index").get<int>();
    record.shard.total = json.at("shard").at("total").get<int>();
    if (record.shard.total < 1 || record.shard.total > max_shards || record.shard.index < 0 ||
        record.shard.index >= record.shard.total) {
      throw bad("shard " + record.shard.str() + " is not I/N with 0 <= I < N <= " + std::to_string(max_shards));
    }
    record.finished = json.at("finished").get<bool>();
    record.verdict = json.at("verdict").get<std::string>();
    // A verdict the record's state does not bear out is a record that could mislead.
    if (record.finished ? record.verdict != verdict_pass && record.verdict != verdict_fail
                        : record.verdict != verdict_unfinished) {
      throw bad("verdict " + shown(record.verdict) + " of a " + (record.finished ? "finished" : "unfinished") +
                " shard (expected " + (record.finished ? "pass or fail" : "unfinished") + ")");
    }
    const nlohmann::json& run = json.at("run");
    record.run.filter = run.at("filter").get<std::string>();
    record.run.require_gpu = run.at("require_gpu").get<bool>();
    record.run.source_digest = run.at("source_digest").get<std::string>();
    record.run.suites = run.at("suites").get<std::map<std::string, std::string>>();
    record.areas_requested = json.at("areas_requested").get<std::vector<std::string>>();
    record.devices = json.at("devices").get<std::vector<std::string>>();
    for (const nlohmann::json& area : json.at("areas")) {
      AreaRecord each{area.at("name").get<std::string>(), area.at("passed").get<int>(), area.at("failed").get<int>(),
                      area.at("skipped").get<int>(), area.at("crashed").get<std::string>(),
                      area.at("selected").get<std::vector<std::string>>(),
                      area.at("ran").get<std::vector<std::string>>()};
      if (!valid_area_name(each.name)) throw bad("area " + shown(each.name) + " is not an area name");
      if (each.passed < 0 || each.failed < 0 || each.skipped < 0) throw bad("negative counts in area " + each.name);
      record.areas.push_back(std::move(each));
    }
    for (const std::string& name : record.areas_requested) {
      if (!valid_area_name(name)) throw bad("area " + shown(name) + " is not an area name");
    }
    return record;
  } catch (const nlohmann::json::exception& error) {
    throw bad(std::string("not a shard record: ") + error.what());
  }
}

std::string source_digest_from_environment() {
  const char* value = std::getenv("CUJIT_SOURCE_DIGEST");
  return value != nullptr && sixteen_hex(value) ? std::string(value) : std::string("unknown");
}

std::string suite_digest(const std::string& area, const std::string& executable) {
  // The whole file: a suite is tens of MB at most, read once per run.
  std::ifstream in(executable, std::ios::binary);
  std::ostringstream bytes;
  if (in) bytes << in.rdbuf();
  if (!in || in.bad()) {
    throw CliError("conformance: cannot read the suite of area " + shown(area) + " at " + shown(executable) +
                   " to record the build it ran");
  }
  return sha256_hex(bytes.str()).substr(0, 16);
}

namespace {

// Throws ShardsOfDifferentRuns when the (file, value) pairs hold more than one value.
void refuse_if_they_differ(const std::string& field, const std::vector<std::pair<std::string, std::string>>& values) {
  std::map<std::string, std::vector<std::string>> files_by_value;
  for (const auto& [file, value] : values) files_by_value[value].push_back(shown(file));
  if (files_by_value.size() <= 1) return;
  std::string message = "merge: the shards are not parts of one run: they differ in " + field + ":";
  for (const auto& [value, files] : files_by_value) message += " " + value + " in " + joined(files) + ";";
  message.pop_back();
  message += " (run every shard with the same options on the same build)";
  throw ShardsOfDifferentRuns(field, message);
}

// A selection as shown in a message: its size and digest (the lists are thousands of names).
std::string selection_summary(const std::vector<std::string>& selected) {
  std::string list;
  for (const std::string& test : selected) list += test + '\n';
  return std::to_string(selected.size()) + " tests (digest " + sha256_hex(list).substr(0, 16) + ")";
}

}  // namespace

void require_one_run(const std::vector<std::pair<std::string, ShardRecord>>& records) {
  auto each = [&](auto value_of) {
    std::vector<std::pair<std::string, std::string>> values;
    for (const auto& [file, record] : records) values.emplace_back(file, value_of(record));
    return values;
  };
  refuse_if_they_differ("--filter", each([](const ShardRecord& r) { return shown(r.run.filter); }));
  refuse_if_they_differ("--require-gpu", each([](const ShardRecord& r) { return std::string(r.run.require_gpu ? "on" : "off"); }));
  refuse_if_they_differ("source digest", each([](const ShardRecord& r) { return shown(r.run.source_digest); }));
  // Per area, among the shards that have it: shards of other areas fail the merge's check
  // of areas, naming the areas; and an unfinished record has no selection yet.
  std::map<std::string, std::vector<std::pair<std::string, std::string>>> suites, selections;
  for (const auto& [file, record] : records) {
    for (const auto& [area, digest] : record.run.suites) suites[area].emplace_back(file, shown(digest));
    for (const AreaRecord& area : record.areas) selections[area.name].emplace_back(file, selection_summary(area.selected));
  }
  for (const auto& [area, values] : suites) refuse_if_they_differ("the suite of area " + area, values);
  for (const auto& [area, values] : selections) refuse_if_they_differ("the selection of area " + area, values);
}

}  // namespace cujit::cli
