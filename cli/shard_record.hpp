#pragma once
// A conformance shard and the record it leaves: `cujit conformance --shard I/N` runs the
// I-th of N shards (0-based, as GTEST_SHARD_INDEX) and writes DIR/shard.json; `cujit merge`
// reads every shard's record and JUnit XML. The record is written twice: unfinished when
// the shard starts and finished at its end, so a shard whose process died reads as crashed
// rather than missing, and neither reads as a smaller pass.

#include <string>
#include <vector>

namespace cujit::cli {

inline constexpr const char* shard_record_file = "shard.json";
inline constexpr int shard_record_schema = 1;
inline constexpr int max_shards = 10000;

struct Shard {
  int index = 0;
  int total = 1;
  std::string str() const { return std::to_string(index) + "/" + std::to_string(total); }
};

// An area's name: lowercase letters, digits and _, at most 64 characters (it names files).
bool valid_area_name(const std::string& name);

// "I/N" with decimal 0 <= I < N <= max_shards; anything else is CliError naming --shard.
Shard parse_shard(const std::string& text);

// One conformance executable's part of a shard.
struct AreaRecord {
  std::string name;  // its JUnit XML is junit/<name>.xml in the shard's directory
  int passed = 0, failed = 0, skipped = 0;
  std::string crashed;  // how the executable died without its report; empty when it did not
};

struct ShardRecord {
  int schema = shard_record_schema;
  Shard shard;
  bool finished = false;
  std::vector<std::string> areas_requested;  // every area the shard was told to run, in order
  std::vector<std::string> devices;           // "NAME (sm_XX)" per device the host showed
  std::vector<AreaRecord> areas;              // the areas it ran (all of them once finished)
  int passed() const;
  int failed() const;
  int skipped() const;
};

std::string to_json(const ShardRecord& record);
// Throws CliError naming `where` (the file) for text that is not a record of this schema.
ShardRecord parse_shard_record(const std::string& text, const std::string& where);

}  // namespace cujit::cli
