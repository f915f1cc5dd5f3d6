#pragma once
// Counts of the handles cujit holds right now: NVRTC programs, link sessions (nvJitLink
// handles and cuLink states), loaded modules, graphs and graph executions. Tests read them
// around error paths to show nothing leaks.

#include <cstdint>

namespace cujit {

/// How many handles of each kind cujit holds at one moment.
struct LiveHandles {
  std::int64_t programs = 0;       ///< NVRTC programs
  std::int64_t link_sessions = 0;  ///< nvJitLink handles and driver cuLink states
  std::int64_t modules = 0;        ///< loaded modules (CUlibrary)
  std::int64_t graphs = 0;         ///< CUDA graphs
  std::int64_t graph_execs = 0;    ///< executable graphs
  /// Equal when every count is.
  friend bool operator==(const LiveHandles&, const LiveHandles&) = default;
};

/// The handles alive in this process now, counted as cujit creates and destroys them.
/// Never throws.
LiveHandles live_handles() noexcept;

}  // namespace cujit
