#pragma once
// Counts of the handles cujit holds right now: NVRTC programs, link sessions (nvJitLink
// handles and cuLink states), loaded modules, graphs and graph executions. Tests read them
// around error paths to show nothing leaks.

#include <cstdint>

namespace cujit {

struct LiveHandles {
  std::int64_t programs = 0;
  std::int64_t link_sessions = 0;
  std::int64_t modules = 0;
  std::int64_t graphs = 0;
  std::int64_t graph_execs = 0;
  friend bool operator==(const LiveHandles&, const LiveHandles&) = default;
};

LiveHandles live_handles() noexcept;

}  // namespace cujit
