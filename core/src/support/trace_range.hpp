#pragma once
// NVTX ranges in the "cujit" domain, so Nsight Systems shows where an application's JIT
// time goes: compile, link, load, cache lookups (tier and result) and whole builds. NVTX 3
// is header-only (the toolkit's nvtx3/); with no tool attached every call is a test of a
// null function pointer, so ranges stay on in release builds.

#include <string>

#include <nvtx3/nvToolsExt.h>

namespace cujit::detail {

// The process's "cujit" domain, created on first use.
inline nvtxDomainHandle_t trace_domain() noexcept {
  static const nvtxDomainHandle_t domain = nvtxDomainCreateA("cujit");
  return domain;
}

inline nvtxEventAttributes_t trace_attributes(const char* message) noexcept {
  nvtxEventAttributes_t attributes{};
  attributes.version = NVTX_VERSION;
  attributes.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  attributes.messageType = NVTX_MESSAGE_TYPE_ASCII;
  attributes.message.ascii = message;
  return attributes;
}

inline void trace_push(const char* message) noexcept {
  const nvtxEventAttributes_t attributes = trace_attributes(message);
  nvtxDomainRangePushEx(trace_domain(), &attributes);
}

// A point event, e.g. a cache lookup's result ("cache hit: disk") inside its range.
inline void trace_mark(const char* message) noexcept {
  const nvtxEventAttributes_t attributes = trace_attributes(message);
  nvtxDomainMarkEx(trace_domain(), &attributes);
}

// One range for the scope: TraceRange range("cujit link"). A message built from a string
// costs its formatting even with no tool attached: keep those off per-call hot paths.
class TraceRange {
 public:
  explicit TraceRange(const char* message) noexcept { trace_push(message); }
  explicit TraceRange(const std::string& message) noexcept { trace_push(message.c_str()); }
  ~TraceRange() { nvtxDomainRangePop(trace_domain()); }
  TraceRange(const TraceRange&) = delete;
  TraceRange& operator=(const TraceRange&) = delete;
};

}  // namespace cujit::detail
