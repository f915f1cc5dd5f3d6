#include "support/concurrently.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <thread>
#include <vector>

namespace cujit::detail {
namespace {
std::atomic<std::size_t> started{0};
}  // namespace

std::size_t threads_started() noexcept { return started.load(); }

std::size_t concurrency_for(std::size_t count) noexcept {
  if (count < 2) return 1;  // no question to ask the system
  // Read once, on the first call that needs it: glibc reads /sys/devices/system/cpu/online
  // on every call.
  static const std::size_t hardware = std::max<std::size_t>(1, std::thread::hardware_concurrency());
  return std::min(count, hardware);
}

void run_concurrently(std::size_t count, const std::function<void(std::size_t)>& work) {
  if (count == 0) return;
  std::vector<std::exception_ptr> failures(count);
  std::atomic<std::size_t> next{0};
  const auto worker = [&] {
    for (std::size_t i = next++; i < count; i = next++) {
      try {
        work(i);
      } catch (...) {
        failures[i] = std::current_exception();
      }
    }
  };
  std::vector<std::thread> helpers;
  for (std::size_t t = 1; t < concurrency_for(count); ++t) {
    helpers.emplace_back(worker);
    ++started;
  }
  worker();
  for (std::thread& helper : helpers) helper.join();
  for (const std::exception_ptr& failure : failures) {
    if (failure) std::rethrow_exception(failure);
  }
}

}  // namespace cujit::detail
