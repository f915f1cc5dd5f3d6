#include "cujit/vendor_time.hpp"

#include <chrono>

#include "support/vendor_call.hpp"

namespace cujit {
namespace {

// Constant-initialised, so a thread's first use needs no guard.
thread_local VendorTime totals{};
thread_local bool in_vendor_call = false;

std::int64_t now_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

namespace detail {

VendorCallScope::VendorCallScope(VendorLibrary library) noexcept
    : library_(library), outermost_(!in_vendor_call) {
  if (outermost_) {
    in_vendor_call = true;
    start_ns_ = now_ns();
  }
}

VendorCallScope::~VendorCallScope() {
  const std::uint64_t elapsed =
      outermost_ ? static_cast<std::uint64_t>(now_ns() - start_ns_) : 0;
  if (outermost_) in_vendor_call = false;
  switch (library_) {
    case VendorLibrary::nvrtc: totals.nvrtc_ns += elapsed; ++totals.nvrtc_calls; break;
    case VendorLibrary::nvjitlink: totals.nvjitlink_ns += elapsed; ++totals.nvjitlink_calls; break;
    case VendorLibrary::driver: totals.driver_ns += elapsed; ++totals.driver_calls; break;
  }
}

}  // namespace detail

VendorTime vendor_time() noexcept { return totals; }

}  // namespace cujit
