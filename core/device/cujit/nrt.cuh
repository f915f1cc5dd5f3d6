// cujit's NRT: reference-counted device allocations, the runtime that numba-cuda's
// compiled code calls. External device code that allocates through NRT includes this
// header and is linked with `nrt = true` on its LinkableCode (cujit does not scan
// external code; see docs/nrt.md).
#pragma once

#ifndef __CUDACC_RTC__
#include <cstddef>
#endif

typedef void (*NRT_dtor_function)(void* data, size_t size, void* dtor_info);

// An allocator external code can supply to NRT_Allocate_External.
struct NRT_ExternalAllocator {
  void* (*malloc)(size_t size, void* opaque_data);
  void* (*realloc)(void* ptr, size_t size, void* opaque_data);
  void (*free)(void* ptr, void* opaque_data);
  void* opaque_data;
};

// One reference-counted allocation. `refct` is only ever changed atomically through
// NRT_incref / NRT_decref.
struct NRT_MemInfo {
  size_t refct;
  NRT_dtor_function dtor;
  void* dtor_info;
  void* data;
  size_t size;
  NRT_ExternalAllocator* external_allocator;
};

// Memory-system statistics, counted on the device while enabled. The host reads them
// after a launch with cujit::nrt::read_stats(module).
struct NRT_MemSysStats {
  unsigned long long alloc;
  unsigned long long free;
  unsigned long long mi_alloc;
  unsigned long long mi_free;
};

#define CUJIT_NRT_FUNCTION(ret, name, params) extern "C" __device__ ret name params;
#include "cujit/nrt_functions.def"
#undef CUJIT_NRT_FUNCTION
