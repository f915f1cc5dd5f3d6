#include "support/cupti_timer.hpp"

#include <cupti.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

namespace cujit::bench {
namespace {

// One buffer holds a whole repetition of the longest chain (21 000 kernel records of 216
// bytes), so no buffer normally completes inside a timed window.
constexpr std::size_t buffer_size = std::size_t{16} << 20;
constexpr int pooled_buffers = 4;

std::atomic<bool> attached_flag{false};

void check(CUptiResult result, const char* call) {
  if (result == CUPTI_SUCCESS) return;
  const char* text = nullptr;
  cuptiGetResultString(result, &text);
  throw std::runtime_error(std::string("CUPTI ") + call + " failed: " + (text ? text : "unknown"));
}

// ---- activity buffers ----------------------------------------------------------------------

// Buffers are pooled, never freed: a fresh allocation (and its first-touch page faults) in
// the middle of a timed chain showed up as a 300 us gap between kernels.
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
      // Touch every page now. A failed allocation hands CUPTI no buffer: it drops records,
      // and collect() reports the drop.
      if (*buffer != nullptr) std::fill(*buffer, *buffer + buffer_size, uint8_t{0});
    }
  }
  *size = *buffer != nullptr ? buffer_size : 0;
  *max_records = 0;
}

void release(uint8_t* buffer) {
  std::lock_guard<std::mutex> lock(pool_mutex);
  pool.push_back(buffer);
}

// Records delivered since the last collect()/discard(), kept only while windows are
// pending (traced work outside any repetition, such as cupti/overhead/tracing_on, would
// otherwise pile up).
std::mutex records_mutex;
std::vector<ActivityRecord> delivered;
std::string delivery_error;  // the first failure reading a buffer
std::atomic<bool> keep_records{false};

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  const bool keep = keep_records.load(std::memory_order_acquire);
  std::lock_guard<std::mutex> lock(records_mutex);
  CUpti_Activity* record = nullptr;
  for (;;) {
    const CUptiResult status = cuptiActivityGetNextRecord(buffer, valid, &record);
    if (status == CUPTI_ERROR_MAX_LIMIT_REACHED) break;
    if (status != CUPTI_SUCCESS) {
      if (delivery_error.empty()) {
        const char* text = nullptr;
        cuptiGetResultString(status, &text);
        delivery_error = std::string("reading an activity buffer: ") + (text ? text : "unknown error");
      }
      break;
    }
    if (!keep) continue;
    switch (record->kind) {
      case CUPTI_ACTIVITY_KIND_KERNEL:
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
        const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
        delivered.push_back({k->correlationId, RecordKind::kernel, k->start, k->end});
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
        delivered.push_back({m->correlationId, RecordKind::copy, m->start, m->end});
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMSET: {
        const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(record);
        delivered.push_back({m->correlationId, RecordKind::copy, m->start, m->end});
        break;
      }
      default:
        break;
    }
  }
  release(buffer);
}

// ---- API callbacks: which calls belong to which window -------------------------------------

// What each traced callback id is, per domain; filled once when attaching, read-only after.
std::vector<std::optional<CallKind>> driver_kinds;
std::vector<std::optional<CallKind>> runtime_kinds;

std::atomic<long> open_window_index{-1};  // -1: no window open
std::mutex calls_mutex;
std::vector<IssuedCall> issued;
std::vector<WindowExpectation> expectations;  // one per window since the last collect; main thread
std::atomic<CUcontext> last_context{nullptr};

std::optional<CallKind> kind_of(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  const auto& table = domain == CUPTI_CB_DOMAIN_DRIVER_API ? driver_kinds : runtime_kinds;
  return cbid < table.size() ? table[cbid] : std::nullopt;
}

void CUPTIAPI on_api_call(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  if (domain != CUPTI_CB_DOMAIN_DRIVER_API && domain != CUPTI_CB_DOMAIN_RUNTIME_API) return;
  const auto* info = static_cast<const CUpti_CallbackData*>(data);
  // Nesting: the runtime's cudaLaunchKernel may call cuLaunchKernel; both are traced, and
  // the pair is one group named by the outer call's id.
  thread_local int depth = 0;
  thread_local std::uint32_t group = 0;
  if (info->callbackSite == CUPTI_API_ENTER) {
    if (depth++ == 0) group = info->correlationId;
    return;
  }
  depth = std::max(depth - 1, 0);
  const long window = open_window_index.load(std::memory_order_acquire);
  if (window < 0) return;
  const std::optional<CallKind> kind = kind_of(domain, cbid);
  if (!kind) return;
  int status = 0;
  if (info->functionReturnValue != nullptr) std::memcpy(&status, info->functionReturnValue, sizeof status);
  if (info->context != nullptr) last_context.store(info->context, std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(calls_mutex);
  issued.push_back({.correlation_id = info->correlationId,
                    .group = depth == 0 ? info->correlationId : group,
                    .kind = *kind,
                    .status = status,
                    .function = info->functionName,
                    .window = static_cast<std::size_t>(window)});
}

// Enables the callbacks of every launch and copy function of `domain` (classify_api by
// CUPTI's own names, so new variants such as _ptsz or Ex are included); returns how many
// launch functions were enabled.
int enable_traced_callbacks(CUpti_SubscriberHandle subscriber, CUpti_CallbackDomain domain, std::uint32_t count,
                            std::vector<std::optional<CallKind>>& table) {
  table.assign(count, std::nullopt);
  int launches = 0;
  for (std::uint32_t cbid = 1; cbid < count; ++cbid) {
    const char* name = nullptr;
    if (cuptiGetCallbackName(domain, cbid, &name) != CUPTI_SUCCESS || name == nullptr) continue;
    const std::optional<CallKind> kind = classify_api(name);
    if (!kind) continue;
    table[cbid] = kind;  // before the callback can fire
    check(cuptiEnableCallback(1, subscriber, domain, cbid), "cuptiEnableCallback");
    if (*kind != CallKind::copy) ++launches;
  }
  return launches;
}

std::size_t dropped_records() {
  std::size_t dropped = 0;
  check(cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped), "cuptiActivityGetNumDroppedRecords");
  // The per-context count too, where CUPTI keeps one (older releases did).
  if (CUcontext context = last_context.load(std::memory_order_relaxed); context != nullptr) {
    std::size_t in_context = 0;
    if (cuptiActivityGetNumDroppedRecords(context, 0, &in_context) == CUPTI_SUCCESS) dropped += in_context;
  }
  return dropped;
}

// Everything delivered and issued so far, handed over and forgotten.
struct Taken {
  std::vector<ActivityRecord> records;
  std::vector<IssuedCall> calls;
  std::vector<WindowExpectation> expectations;
  std::string delivery_error;
};

Taken take_all() {
  Taken out;
  {
    std::lock_guard<std::mutex> lock(records_mutex);
    out.records.swap(delivered);
    out.delivery_error.swap(delivery_error);
    delivered.reserve(out.records.capacity());
  }
  {
    std::lock_guard<std::mutex> lock(calls_mutex);
    out.calls.swap(issued);
    issued.reserve(std::max<std::size_t>(out.calls.capacity(), std::size_t{1} << 17));
  }
  out.expectations.swap(expectations);
  keep_records.store(false, std::memory_order_release);
  return out;
}

}  // namespace

bool cupti_attached() { return attached_flag.load(); }

CuptiTimer& CuptiTimer::attach() {
  static CuptiTimer timer;  // a failed attach throws and is tried again by the next caller
  return timer;
}

CuptiTimer::CuptiTimer() {
  // Set before the first CUPTI call: even a failed attach may have changed the process.
  attached_flag.store(true);
  for (int i = 0; i < pooled_buffers; ++i) {
    uint8_t* buffer = nullptr;
    size_t size = 0, records = 0;
    buffer_requested(&buffer, &size, &records);
    if (buffer != nullptr) release(buffer);
  }
  issued.reserve(std::size_t{1} << 17);
  delivered.reserve(std::size_t{1} << 16);
  check(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed), "cuptiActivityRegisterCallbacks");
  for (CUpti_ActivityKind kind :
       {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET}) {
    check(cuptiActivityEnable(kind), "cuptiActivityEnable");
  }
  CUpti_SubscriberHandle subscriber = nullptr;
  check(cuptiSubscribe(&subscriber, on_api_call, nullptr), "cuptiSubscribe");
  const int driver_launches =
      enable_traced_callbacks(subscriber, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_SIZE, driver_kinds);
  (void)enable_traced_callbacks(subscriber, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_SIZE,
                                runtime_kinds);
  if (driver_launches == 0) {
    throw std::runtime_error("CUPTI named no driver launch function (cuptiGetCallbackName): cannot correlate launches");
  }
}

void CuptiTimer::open_window(WindowExpectation expected) {
  if (open_window_index.load() >= 0) throw std::logic_error("CuptiTimer: a window is already open");
  keep_records.store(true, std::memory_order_release);
  expectations.push_back(expected);
  open_window_index.store(static_cast<long>(expectations.size() - 1), std::memory_order_release);
}

void CuptiTimer::close_window() { open_window_index.store(-1, std::memory_order_release); }

Attribution CuptiTimer::collect() {
  if (open_window_index.load() >= 0) throw std::logic_error("CuptiTimer::collect with a window open");
  // The one flush of the repetition. Forced, so that the buffer still being filled comes
  // back too; the caller synchronised, so its records are complete.
  check(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), "cuptiActivityFlushAll");
  const std::size_t dropped = dropped_records();
  Taken taken = take_all();
  if (!taken.delivery_error.empty()) throw std::runtime_error(taken.delivery_error);
  if (dropped > 0) {
    throw std::runtime_error("CUPTI dropped " + std::to_string(dropped) +
                             " activity records (no buffer space): the figures would be incomplete");
  }
  return attribute_records(taken.records, taken.calls, taken.expectations);
}

void CuptiTimer::discard() {
  close_window();
  check(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), "cuptiActivityFlushAll");
  (void)dropped_records();  // reads and resets the count: earlier drops are not the next figure's
  (void)take_all();
}

void time_on_gpu(benchmark::State& state, GpuMetric metric, WindowExpectation expected,
                 const std::function<void()>& work) {
  CuptiTimer* attached = nullptr;
  try {
    CuptiTimer& timer = CuptiTimer::attach();
    attached = &timer;
    timer.discard();  // whatever earlier benchmarks left behind
    work();           // warm-up: traced, but in no window, so its records are ignored
    for (auto _ : state) {
      timer.open_window(expected);
      work();
      timer.close_window();
    }
    if (state.error_occurred()) {  // the work reported its own failure
      timer.discard();
      return;
    }
    const Attribution result = timer.collect();
    const std::size_t iterations = result.windows.size();
    if (iterations != static_cast<std::size_t>(state.iterations())) {
      state.SkipWithError(("CUPTI: " + std::to_string(iterations) + " windows for " +
                           std::to_string(state.iterations()) + " iterations").c_str());
      return;
    }
    double total_ns = 0;
    std::uint64_t records = 0;
    for (std::size_t i = 0; i < iterations; ++i) {
      const WindowResult& window = result.windows[i];
      if (!window.ok()) {
        state.SkipWithError(("CUPTI, iteration " + std::to_string(i + 1) + " of " + std::to_string(iterations) +
                             ": " + window.error)
                                .c_str());
        return;
      }
      total_ns += metric == GpuMetric::span ? window.times.span_ns : window.times.busy_ns();
      records += window.times.kernels + window.times.copies;
    }
    if (iterations == 0 || total_ns <= 0) {
      state.SkipWithError("CUPTI: no GPU time in the correlated records");
      return;
    }
    // The figures exist only after the flush, so the loop's manual time is given once, as
    // the sum of the iterations' figures (Google Benchmark adds SetIterationTime calls up).
    state.SetIterationTime(total_ns * 1e-9);
    state.counters["gpu_records"] = static_cast<double>(records) / static_cast<double>(iterations);
    state.counters["uncorrelated_records"] = static_cast<double>(result.uncorrelated);
  } catch (const std::exception& error) {
    if (attached != nullptr) {
      try {
        attached->discard();  // closes the window and forgets the repetition's records
      } catch (const std::exception&) {
        // the first failure is the one reported
      }
    }
    state.SkipWithError((std::string("CUPTI GPU timing failed: ") + error.what()).c_str());
  }
}

bool host_time_refused(benchmark::State& state) {
  if (!cupti_attached()) return false;
  state.SkipWithError(
      "CUPTI is already attached in this process, so this host-time figure would include its cost: host-time "
      "families must run before the GPU-time ones (registration order, no random interleaving) or in a process of "
      "their own (--benchmark_filter)");
  return true;
}

}  // namespace cujit::bench
