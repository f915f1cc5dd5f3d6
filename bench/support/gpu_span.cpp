#include "support/gpu_span.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <unordered_map>
#include <utility>

namespace cujit::bench {
namespace {

bool starts_with(std::string_view text, std::string_view prefix) { return text.substr(0, prefix.size()) == prefix; }

// Driver names begin "cu", runtime names "cuda"; both families are spelled alike after it.
bool api_starts_with(std::string_view function, std::string_view stem) {
  return starts_with(function, std::string("cu") + std::string(stem)) ||
         starts_with(function, std::string("cuda") + std::string(stem));
}

// What one group of nested calls received.
struct GroupTally {
  std::size_t window = 0;
  CallKind kind = CallKind::kernel_launch;
  std::uint32_t group = 0;
  const char* function = nullptr;
  std::uint64_t kernels = 0;
  std::uint64_t copies = 0;
};

// Per-window accumulation before the checks.
struct WindowTally {
  std::uint64_t first_start = std::numeric_limits<std::uint64_t>::max();
  std::uint64_t last_end = 0;
  std::uint64_t calls = 0;
  std::uint64_t untimed = 0;  // records without valid timestamps
  std::string failed;         // the first failed call, described
  // Groups whose records do not fit their kind: how many, and the first one described.
  std::uint64_t misfits = 0;
  std::string first_misfit;
};

std::string name_of(const char* function) { return function != nullptr ? function : "an API call"; }

std::string describe_misfit(const GroupTally& group) {
  const std::string who = name_of(group.function) + " (correlation id " + std::to_string(group.group) + ")";
  const std::string got = std::to_string(group.kernels) + " kernel and " + std::to_string(group.copies) +
                          " memcpy/memset records";
  switch (group.kind) {
    case CallKind::kernel_launch:
      return who + " has " + got + ", expected exactly 1 kernel record";
    case CallKind::graph_launch:
      return who + " has no records, expected at least 1";
    case CallKind::copy:
      return who + " has " + got + ", expected at least 1 memcpy/memset record and no kernel";
  }
  return who;
}

bool fits(const GroupTally& group) {
  switch (group.kind) {
    case CallKind::kernel_launch:
      return group.kernels == 1 && group.copies == 0;
    case CallKind::graph_launch:
      return group.kernels + group.copies >= 1;
    case CallKind::copy:
      return group.copies >= 1 && group.kernels == 0;
  }
  return false;
}

std::string window_error(const WindowTally& tally, const GpuTimes& times, const WindowExpectation& expectation) {
  if (tally.calls == 0) {
    return "no launch or copy call was seen inside the window (CUPTI API callbacks not delivered)";
  }
  if (!tally.failed.empty()) return tally.failed;
  if (tally.untimed > 0) {
    return std::to_string(tally.untimed) + " of the window's records have no valid timestamps";
  }
  if (tally.misfits > 0) {
    return std::to_string(tally.misfits) + " call(s) did not get the records they issue after the flush; first: " +
           tally.first_misfit;
  }
  if (expectation.kernels && times.kernels != *expectation.kernels) {
    return "expected " + std::to_string(*expectation.kernels) + " kernel records in the window, got " +
           std::to_string(times.kernels);
  }
  return {};
}

}  // namespace

std::optional<CallKind> classify_api(std::string_view function) {
  if (api_starts_with(function, "LaunchHostFunc")) return std::nullopt;  // host work: no record
  if (api_starts_with(function, "GraphLaunch")) return CallKind::graph_launch;
  if (api_starts_with(function, "Launch")) {
    // One call, a kernel on each of several devices.
    if (function.find("MultiDevice") != std::string_view::npos) return CallKind::graph_launch;
    return CallKind::kernel_launch;
  }
  if (api_starts_with(function, "Memcpy") || api_starts_with(function, "Memset")) return CallKind::copy;
  return std::nullopt;
}

Attribution attribute_records(const std::vector<ActivityRecord>& records, const std::vector<IssuedCall>& calls,
                              const std::vector<WindowExpectation>& expectations) {
  Attribution out;
  out.windows.resize(expectations.size());
  std::vector<WindowTally> tallies(expectations.size());

  // Groups keyed by (window, outermost correlation id); each call points at its group.
  std::map<std::pair<std::size_t, std::uint32_t>, GroupTally> groups;
  std::unordered_map<std::uint32_t, GroupTally*> group_of_call;
  group_of_call.reserve(calls.size());
  for (const IssuedCall& call : calls) {
    if (call.window >= expectations.size()) continue;  // a window nobody asked about
    WindowTally& tally = tallies[call.window];
    ++tally.calls;
    if (call.status != 0 && tally.failed.empty()) {
      tally.failed = name_of(call.function) + " (correlation id " + std::to_string(call.correlation_id) +
                     ") failed inside the window with status " + std::to_string(call.status);
    }
    auto [it, inserted] = groups.try_emplace({call.window, call.group});
    GroupTally& group = it->second;
    // The outermost call names the group's kind; until it is seen, the first call does.
    if (inserted || call.correlation_id == call.group) {
      group.window = call.window;
      group.group = call.group;
      group.kind = call.kind;
      group.function = call.function;
    }
    group_of_call.emplace(call.correlation_id, &group);
  }

  for (const ActivityRecord& record : records) {
    const auto found = group_of_call.find(record.correlation_id);
    if (found == group_of_call.end()) {
      ++out.uncorrelated;
      continue;
    }
    GroupTally& group = *found->second;
    WindowTally& tally = tallies[group.window];
    GpuTimes& times = out.windows[group.window].times;
    if (record.start == 0 || record.end < record.start) {
      ++tally.untimed;
      continue;
    }
    const auto duration = static_cast<double>(record.end - record.start);
    if (record.kind == RecordKind::kernel) {
      ++group.kernels;
      ++times.kernels;
      times.kernel_ns += duration;
    } else {
      ++group.copies;
      ++times.copies;
      times.copy_ns += duration;
    }
    tally.first_start = std::min(tally.first_start, record.start);
    tally.last_end = std::max(tally.last_end, record.end);
  }

  for (const auto& [key, group] : groups) {
    if (fits(group)) continue;
    WindowTally& tally = tallies[group.window];
    if (tally.misfits++ == 0) tally.first_misfit = describe_misfit(group);
  }

  for (std::size_t w = 0; w < expectations.size(); ++w) {
    WindowResult& result = out.windows[w];
    const WindowTally& tally = tallies[w];
    if (tally.last_end > tally.first_start) {
      result.times.span_ns = static_cast<double>(tally.last_end - tally.first_start);
    }
    result.error = window_error(tally, result.times, expectations[w]);
  }
  return out;
}

}  // namespace cujit::bench
