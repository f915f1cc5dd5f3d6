#include "support/cupti_timer.hpp"

#include <cupti.h>

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <vector>

namespace cujit::bench {
namespace {

constexpr std::size_t buffer_size = 8 << 20;

std::mutex records_mutex;
GpuTimes collected;
std::uint64_t first_start = std::numeric_limits<std::uint64_t>::max();
std::uint64_t last_end = 0;

void check(CUptiResult result, const char* call) {
  if (result == CUPTI_SUCCESS) return;
  const char* text = nullptr;
  cuptiGetResultString(result, &text);
  throw std::runtime_error(std::string("CUPTI ") + call + " failed: " + (text ? text : "unknown"));
}

// Buffers are pooled, never freed: a fresh 8 MiB allocation (and its first-touch page
// faults) in the middle of a timed chain showed up as a 300 us gap between kernels.
std::mutex pool_mutex;
std::vector<uint8_t*> pool;

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  {
    std::lock_guard<std::mutex> lock(pool_mutex);
    if (!pool.empty()) {
      *buffer = pool.back();
      pool.pop_back();
    } else {
      *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, buffer_size));
      std::fill(*buffer, *buffer + buffer_size, uint8_t{0});  // touch every page now
    }
  }
  *size = buffer_size;
  *max_records = 0;
}

void release(uint8_t* buffer) {
  std::lock_guard<std::mutex> lock(pool_mutex);
  pool.push_back(buffer);
}

void note(std::uint64_t start, std::uint64_t end) {
  first_start = std::min(first_start, start);
  last_end = std::max(last_end, end);
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  std::lock_guard<std::mutex> lock(records_mutex);
  CUpti_Activity* record = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    switch (record->kind) {
      case CUPTI_ACTIVITY_KIND_KERNEL:
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
        const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
        collected.kernel_ns += static_cast<double>(k->end - k->start);
        ++collected.kernels;
        note(k->start, k->end);
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
        collected.copy_ns += static_cast<double>(m->end - m->start);
        note(m->start, m->end);
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMSET: {
        const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(record);
        collected.copy_ns += static_cast<double>(m->end - m->start);
        note(m->start, m->end);
        break;
      }
      case CUPTI_ACTIVITY_KIND_GRAPH_TRACE: {
        const auto* g = reinterpret_cast<const CUpti_ActivityGraphTrace2*>(record);
        collected.graph_ns += static_cast<double>(g->end - g->start);
        ++collected.graph_launches;
        note(g->start, g->end);
        break;
      }
      default:
        break;
    }
  }
  release(buffer);
}

// Graph launches are timed by the span of their kernels' records. GRAPH_TRACE records are
// opt-in (CUJIT_CUPTI_GRAPH_TRACE=1): enabled with kernel tracing, a graph launch crashed
// inside CUPTI on driver 580 in this project's runs.
std::vector<CUpti_ActivityKind> traced_kinds() {
  std::vector<CUpti_ActivityKind> out{CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                                      CUPTI_ACTIVITY_KIND_MEMSET};
  if (const char* graph = std::getenv("CUJIT_CUPTI_GRAPH_TRACE"); graph != nullptr && graph[0] == '1') {
    out.push_back(CUPTI_ACTIVITY_KIND_GRAPH_TRACE);
  }
  return out;
}

}  // namespace

CuptiTimer& CuptiTimer::instance() {
  static CuptiTimer timer;
  return timer;
}

CuptiTimer::CuptiTimer() {
  check(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed),
        "cuptiActivityRegisterCallbacks");
  for (int i = 0; i < 4; ++i) {  // warm pool
    uint8_t* buffer = nullptr;
    size_t size = 0, records = 0;
    buffer_requested(&buffer, &size, &records);
    release(buffer);
  }
}

void CuptiTimer::enable() {
  if (enabled_) return;
  for (CUpti_ActivityKind kind : traced_kinds()) check(cuptiActivityEnable(kind), "cuptiActivityEnable");
  enabled_ = true;
}

void CuptiTimer::disable() {
  if (!enabled_) return;
  cuptiActivityFlushAll(1);
  for (CUpti_ActivityKind kind : traced_kinds()) cuptiActivityDisable(kind);
  enabled_ = false;
}

void CuptiTimer::mark() {
  cuptiActivityFlushAll(1);
  std::lock_guard<std::mutex> lock(records_mutex);
  collected = GpuTimes{};
  first_start = std::numeric_limits<std::uint64_t>::max();
  last_end = 0;
}

GpuTimes CuptiTimer::read() {
  check(cuptiActivityFlushAll(1), "cuptiActivityFlushAll");
  std::lock_guard<std::mutex> lock(records_mutex);
  GpuTimes out = collected;
  if (last_end > first_start) out.span_ns = static_cast<double>(last_end - first_start);
  return out;
}

}  // namespace cujit::bench
