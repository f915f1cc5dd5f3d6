#include "cujit/diagnostics.hpp"

#include <array>
#include <atomic>

#include "support/handle_counts.hpp"

namespace cujit {
namespace {

std::array<std::atomic<std::int64_t>, 5>& counts() {
  static std::array<std::atomic<std::int64_t>, 5> values{};
  return values;
}

}  // namespace

namespace detail {
void handle_created(HandleKind kind) noexcept { ++counts()[static_cast<std::size_t>(kind)]; }
void handle_released(HandleKind kind) noexcept { --counts()[static_cast<std::size_t>(kind)]; }
}  // namespace detail

LiveHandles live_handles() noexcept {
  auto& c = counts();
  return LiveHandles{c[0].load(), c[1].load(), c[2].load(), c[3].load(), c[4].load()};
}

}  // namespace cujit
