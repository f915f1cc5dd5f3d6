#pragma once
// Where a thread's time goes: the running totals of the time the calling thread has spent
// inside NVRTC, nvJitLink and the CUDA Driver API on cujit's behalf, and how many calls it
// made into each. A benchmark takes vendor_time() before and after the work it times and
// subtracts; the wall time of the work minus total_ns() of the difference is cujit's own
// time, so its overhead is a figure with a trend of its own.
//
// What is counted: every call cujit makes into the three libraries (NVRTC through its
// table in compile/nvrtc_api.hpp, nvJitLink through its table in link/nvjitlink_session.cpp,
// the driver through the driver table in driver/driver_api.hpp), timed with two reads of
// std::chrono::steady_clock around the call, on the thread that makes it. Loading NVRTC,
// which cujit does on its first NVRTC call in a process (dlopen: mapping, relocation, its
// constructors), counts as one NVRTC call. Calls that code outside cujit makes directly (a
// benchmark's floor, a peer) are not counted.
//
// Semantics:
//   - Per thread. Each thread starts at zero; vendor_time() reads the calling thread's own
//     totals without locks. Vendor calls made on another thread (a worker the caller
//     started, or the thread that runs a build other callers share) count on that thread.
//   - Waiting is not vendor time. A caller of BuildCache::run_once / get_or_build (or of
//     compile_cached, link_cached, Module::shared...) that waits for another thread's build
//     of the same key, or for a lock, accrues no vendor time while it waits: the wait shows
//     as cujit's own time (wall - vendor) of the waiting thread, and the vendor time of the
//     build on the building thread only. The same holds for cujit's own work around a
//     vendor call (reading logs into strings, capturing nvJitLink's stderr, hashing keys).
//   - Nested calls never count twice. Only the outermost vendor call on a thread's stack is
//     timed; a vendor call made while another is in progress on the same thread (a callback
//     into cujit that calls a vendor again) adds to its library's call count but not to
//     any time: that time is already in the outer call's library.
//   - Wall time, not CPU time: work a library hands to threads of its own (nvJitLink's
//     thread pool, the driver's threads) counts as the time the caller spends in the call.
//   - Totals are monotonic and wrap only after 584 years of nanoseconds.

#include <cstdint>

namespace cujit {

/// A thread's time and call counts inside NVRTC, nvJitLink and the Driver API (see the
/// semantics above); a snapshot, or the difference of two.
struct VendorTime {
  std::uint64_t nvrtc_ns = 0;      ///< inside nvrtc* calls
  std::uint64_t nvjitlink_ns = 0;  ///< inside nvJitLink* calls
  std::uint64_t driver_ns = 0;     ///< inside cu* Driver API calls (linker, modules, launches...)
  std::uint64_t nvrtc_calls = 0;       ///< calls into NVRTC (its loading counts as one)
  std::uint64_t nvjitlink_calls = 0;   ///< calls into nvJitLink
  std::uint64_t driver_calls = 0;      ///< calls into the Driver API

  /// The time inside all three libraries.
  std::uint64_t total_ns() const noexcept { return nvrtc_ns + nvjitlink_ns + driver_ns; }
  /// The calls into all three libraries.
  std::uint64_t total_calls() const noexcept { return nvrtc_calls + nvjitlink_calls + driver_calls; }

  /// later - earlier: what happened between two snapshots of one thread.
  friend VendorTime operator-(const VendorTime& later, const VendorTime& earlier) noexcept {
    return {later.nvrtc_ns - earlier.nvrtc_ns,         later.nvjitlink_ns - earlier.nvjitlink_ns,
            later.driver_ns - earlier.driver_ns,       later.nvrtc_calls - earlier.nvrtc_calls,
            later.nvjitlink_calls - earlier.nvjitlink_calls,
            later.driver_calls - earlier.driver_calls};
  }
  /// Sums of differences, e.g. over the worker threads of a benchmark.
  friend VendorTime operator+(const VendorTime& a, const VendorTime& b) noexcept {
    return {a.nvrtc_ns + b.nvrtc_ns,       a.nvjitlink_ns + b.nvjitlink_ns,
            a.driver_ns + b.driver_ns,     a.nvrtc_calls + b.nvrtc_calls,
            a.nvjitlink_calls + b.nvjitlink_calls, a.driver_calls + b.driver_calls};
  }
  /// Equal when every field is.
  friend bool operator==(const VendorTime&, const VendorTime&) = default;
};

/// The calling thread's totals since it started. Never throws, never allocates or locks.
VendorTime vendor_time() noexcept;

}  // namespace cujit
