#include "shard_record.hpp"

#include <nlohmann/json.hpp>

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
                     {"skipped", area.skipped}, {"crashed", area.crashed}});
  }
  const nlohmann::json json = {
      {"schema", record.schema},
      {"shard", {{"index", record.shard.index}, {"total", record.shard.total}}},
      {"finished", record.finished},
      {"verdict", !record.finished ? "unfinished" : record.failed() > 0 ? "fail" : "pass"},
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
    record.areas_requested = json.at("areas_requested").get<std::vector<std::string>>();
    record.devices = json.at("devices").get<std::vector<std::string>>();
    for (const nlohmann::json& area : json.at("areas")) {
      AreaRecord each{area.at("name").get<std::string>(), area.at("passed").get<int>(), area.at("failed").get<int>(),
                      area.at("skipped").get<int>(), area.at("crashed").get<std::string>()};
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

}  // namespace cujit::cli
