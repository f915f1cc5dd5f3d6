#pragma once
// The choke point behind cujit::vendor_time(): every entry of the three vendor tables (the
// driver table in driver/driver_api.hpp, NVRTC's in compile/nvrtc_api.hpp, nvJitLink's in
// link/nvjitlink_session.cpp) is a VendorEntry, so a call through a table is timed and
// counted on the calling thread without touching any call site.

#include <cstdint>

namespace cujit::detail {

enum class VendorLibrary : std::uint8_t { nvrtc, nvjitlink, driver };

// Times one vendor call on this thread: two steady_clock reads, thread-local counters, no
// locks, no allocation. Only the outermost scope on a thread adds time (see
// cujit/vendor_time.hpp); every scope adds a call.
class VendorCallScope {
 public:
  explicit VendorCallScope(VendorLibrary library) noexcept;
  ~VendorCallScope();
  VendorCallScope(const VendorCallScope&) = delete;
  VendorCallScope& operator=(const VendorCallScope&) = delete;

 private:
  VendorLibrary library_;
  bool outermost_;
  std::int64_t start_ns_ = 0;
};

// A table entry: the library's function, called through a VendorCallScope. It has the
// function's exact parameter list, so call sites read as the plain call (api.cuLinkCreate(...)).
template <VendorLibrary library, class Function>
struct VendorEntry;

template <VendorLibrary library, class Result, class... Args>
struct VendorEntry<library, Result (*)(Args...)> {
  Result (*function)(Args...) = nullptr;

  Result operator()(Args... args) const {
    const VendorCallScope scope(library);
    return function(args...);
  }
};

}  // namespace cujit::detail
