#pragma once
// A conformance shard and the record it leaves: `cujit conformance --shard I/N` runs the
// I-th of N shards (0-based, as GTEST_SHARD_INDEX) and writes DIR/shard.json; `cujit merge`
// reads every shard's record and JUnit XML. The record is written twice: unfinished when
// the shard starts and finished at its end, so a shard whose process died reads as crashed
// rather than missing, and neither reads as a smaller pass.
//
// The record says which run the shard belongs to (its --filter, --require-gpu and build)
// and, per area, the whole unsharded selection as well as the tests the shard itself ran:
// the merge refuses shards of different runs and fails a union of shards that is not the
// selection, so that a misspelt or differing filter, overlapping shards or another build
// can never merge into a smaller pass. The shard's own verdict is recorded too, and a
// failed one fails the merge whatever its JUnit XML says.

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "output.hpp"

namespace cujit::cli {

inline constexpr const char* shard_record_file = "shard.json";
// 2: the run's identity (filter, require_gpu, build), the verdict, each area's selection
// and tests. A record of schema 1 has none of them, and merging it would trust them.
inline constexpr int shard_record_schema = 2;
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
  // Every test the unsharded run of this area selects ("Suite.Test", in Google Test's
  // order): what all shards together must run exactly once.
  std::vector<std::string> selected;
  std::vector<std::string> ran;  // the tests this shard ran and reported, in its report's order
};

// What makes shards parts of one run: the same selection of the same build. Each field is
// compared as text: two spellings of one filter are two runs.
struct RunIdentity {
  std::string filter;         // --filter as given; empty: every test
  bool require_gpu = false;   // --require-gpu: GPU tests fail instead of skipping
  std::string source_digest;  // CUJIT_SOURCE_DIGEST (ci/source_digest.py) as the reports record it, or "unknown"
  // Per area, 16 hex digits of SHA-256 over its suite executable's bytes: the build that
  // ran, known even where no one set CUJIT_SOURCE_DIGEST. Per area, so that shards of
  // different areas are told apart as such (the merge's check of areas) rather than as
  // builds.
  std::map<std::string, std::string> suites;
};

inline constexpr const char* verdict_pass = "pass";
inline constexpr const char* verdict_fail = "fail";
inline constexpr const char* verdict_unfinished = "unfinished";

struct ShardRecord {
  int schema = shard_record_schema;
  Shard shard;
  bool finished = false;
  // The shard's own verdict: "unfinished" until it finishes, then "pass" when its
  // `cujit conformance` exited 0, else "fail" (a failed test, a crash, an empty selection).
  std::string verdict = verdict_unfinished;
  RunIdentity run;
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

// "CUJIT_SOURCE_DIGEST" when it is 16 lowercase hex digits (what ci/source_digest.py
// prints, as bench/support/run_record.cpp reads it), else "unknown".
std::string source_digest_from_environment();

// 16 hex digits of SHA-256 over the bytes of the suite executable of `area` at `executable`.
// Throws CliError naming the file when it cannot read it.
std::string suite_digest(const std::string& area, const std::string& executable);

// Shards that are not parts of one run: they differ in a field of their RunIdentity.
// what() names the field and each shard's file with its value.
class ShardsOfDifferentRuns : public CliError {
 public:
  ShardsOfDifferentRuns(std::string field, const std::string& message) : CliError(message), field_(std::move(field)) {}
  // "--filter", "--require-gpu", "source digest", "the suite of area A" or "the selection of area A".
  const std::string& field() const noexcept { return field_; }

 private:
  std::string field_;
};

// Throws ShardsOfDifferentRuns when the records (each with the file it came from) differ
// in their run's identity, or, among finished ones, in an area's selection.
void require_one_run(const std::vector<std::pair<std::string, ShardRecord>>& records);

}  // namespace cujit::cli
